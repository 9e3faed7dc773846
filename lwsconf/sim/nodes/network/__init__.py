"""The pod network of a simulated cluster and the names in it, as a CNI plugin and CoreDNS would provide them.

`ipam` (one 127.X.0.0/16 per cluster, reserved with a lock file: node IPs, each node's pod /24, the Service range),
`podnet` (how pod addresses appear in the API: as they are on the sim, as 198.18 stand-ins on `--cluster=local`),
`dns` (the cluster's one DNS: the A records CoreDNS would answer, written into the hosts files of process pods).

Of the node packages it may import `lwsconf.sim.nodes.aio` only: the kubelet, the layout and the fleet use the
network, never the reverse.
"""
