"""What the sim API server keeps and how a write changes it.

`store` (objects per storage key, one global resourceVersion, indexes, bounded event history, watcher
fan-out), `storage` (create/update/delete with their Kubernetes meaning: system metadata, preconditions,
generation, finalizers, graceful deletion, namespace lifecycle), `resources` (the `Registry` of served
types), `conversion` (objects served in another form than stored).

`jobs` is the part of the Job strategy that runs when a Job is stored (its generated selector), as
kube-apiserver's registry runs `PrepareForCreate`; defaulting and validation of Jobs are `admission`'s.

May import `apimachinery` only.
"""
