"""kube-proxy's part: `kubeproxy` (follows Services and their endpoints) and `forward`
(its data plane: one TCP listener per ClusterIP and port, forwarding to ready endpoints).

May import `scheduler`, `endpoints` and `common`; no other controller.
"""
