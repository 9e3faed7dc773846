"""Deployments through ReplicaSets, as upstream: `deployment` (the controller), `util` (new/old ReplicaSets,
revisions, status and conditions, pure), `rolling` (maxSurge/maxUnavailable steps), `replicaset` (the
ReplicaSet controller owning the pods), `claims` (adoption and release by controller reference).

May import `scheduler`, `endpoints` and `common`; no other controller.
"""
