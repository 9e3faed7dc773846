"""What happens to objects over their life, and to pods when nodes fail: `namespace` (deleting a namespace's
content), `garbage_collector` (owner references), `podgc`, `nodelifecycle` (node health, taints),
`taint_eviction`, and `disruption` (PodDisruptionBudget status).

May import `scheduler`, `endpoints` and `common`; no other controller.
"""
