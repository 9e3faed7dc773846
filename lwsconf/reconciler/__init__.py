"""The reference LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1), written from the contract.

The reconciler knows nothing of the simulator: it is an ordinary Kubernetes client and must work
unchanged on any cluster (the sim, kind, a real one). It never imports `lwsconf.sim`.

Two layers, kept apart on purpose (design rules 12-13):

* The pure core computes desired state from a LeaderWorkerSet and its observed children and does no
  I/O: `names` and `labels` (keys, hashes, name helpers), `spec` (a defaulted view of an LWS),
  `revision` (ControllerRevision snapshot, key, semantic equality, retention), `podtemplate` (labels,
  annotations, env and placement stamped into pod templates), `tpu` (TPU env, contract 3.5),
  `desired` (StatefulSets, Services),
  `groups` (what a leader pod's group needs next), `pods` (pod predicates and the labels to patch onto
  pods), `rollout` (partition and surge), `status` (counters and conditions), `restart` (group
  recreation), `events` (event texts). Inputs and outputs are plain dicts as the API serves them, plus
  frozen dataclasses for decisions; no client objects.
* The runtime (`runtime`, `leaderelection`, the informers and API calls) reads caches, calls the core
  and applies the differences.

There is no admission webhook. What upstream's pod webhook stamps at pod admission is produced here by
the pod templates (env through the downward API, placement terms) plus labels the runtime patches onto
pods right after they appear, and two MutatingAdmissionPolicies for what neither can do (a UniquePerReplica
leader's subdomain, TPU workers' per-pod env); `README.md` ("Design choices") lists every place this differs.
"""
