"""The StatefulSet controller: `statefulset` (the controller), `pods` (pods and claims as values:
names, identity, storage), `revisions` (ControllerRevisions), `update` (one sync: create, recreate,
scale and roll pods).

May import `scheduler`, `endpoints` and `common`; no other controller.
"""
