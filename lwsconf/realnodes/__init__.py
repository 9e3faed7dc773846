"""Real nodes under the real control plane: real kubelets, containerd with runc, CNI and kube-proxy (issue 31).

Where the simulated nodes (`lwsconf.sim.nodes`) run pods as processes of ours, a real node runs them as containers
of a real runtime, so every node-side claim of the sim can be measured against the real kubelet. Layers, each
module one job (imports go down only; nothing here imports the simulator or the reconciler, .importlinter):

    cluster    RealNodeCluster: control plane + network + nodes + DNS, started and stopped as one
    dns        the cluster's DNS: CoreDNS (nodes/coredns) behind kube-dns, objects made through the API
    node       RealNode: the processes of one node and their configuration (pure builders + start/stop)
    network    one network namespace per node on a bridge of the run's own; pure plan + `ip` commands
    forward    the API server reached from inside a node's namespace; netns: sockets in another namespace
    catalog    the images nodes hold, made offline; images: OCI archives from files (reproducible)
    build      the parts built from our Go modules under nodes/; hostpaths: the few compiled-in host paths
    cli        `lwsconf nodes build`
"""
