"""The DaemonSet controller: `daemonset` (the controller) and `nodes` (where its pods belong: the node predicates).

May import `scheduler`, `endpoints` and `common`; no other controller.
"""
