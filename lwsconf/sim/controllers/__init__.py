"""The sim's controllers (kube-controller-manager's, kube-scheduler's and kube-proxy's part).

Each one is an HTTP client of the API server. They share no Python state with the server or with
each other; they talk to it only through `lwsconf.kubeclient`, as kube-controller-manager's
controllers talk through client-go.

One package per concept, in layers (`.importlinter`'s `controllers-layers`): the controllers
(`statefulset`, `deployment` with ReplicaSets, `daemonset`, `batch`, `lifecycle`, `kubeproxy`) over
`scheduler` (whose predicates others reuse) and `endpoints`, over `common` (what the workload controllers
share). Controllers of the top layer never import each other.
"""
