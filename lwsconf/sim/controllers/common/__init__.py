"""What the workload controllers share, as kube-controller-manager's `pkg/controller` helpers are shared.

`workloads` (pod predicates, owner references, the informers-then-workers loop) and `workload_tracking` (events and
expectations). The bottom layer of the controllers: imports no other controller package.
"""
