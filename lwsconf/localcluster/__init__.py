"""The `local` cluster: the real control plane (`lwsconf.controlplane`) with the sim's nodes (issue 14).

`cluster.LocalCluster` starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler as child
processes and runs, on a background event loop, the same simulated node agents, fake GPU device plugins
and kube-proxy that `SimCluster` runs against our own API server, here as clients of the real one. The
sim's control-plane controllers (StatefulSet, EndpointSlice, garbage collector, scheduler, ...) are not
run: the real kube-controller-manager and kube-scheduler do their work. `cli` is `lwsconf local up|down`.
This package may import both the simulator's nodes and the control plane; `lwsconf.controlplane` may not
import the simulator.
"""
