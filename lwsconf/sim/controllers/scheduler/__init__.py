"""kube-scheduler's part: `scheduler` (binds pending pods to nodes), `decision` (one pod's placement),
`filters` (the filter plugins' predicates, word for word reasons; also read by the DaemonSet, disruption,
taint eviction and claims code), `resource_requests` (what a pod requests, as the scheduler counts it).

May import `common`; never a controller of the top layer.
"""
