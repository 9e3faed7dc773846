"""The reference DisaggregatedSet controller (disaggregatedset.x-k8s.io/v1), written from
`docs/disaggregatedset-contract.md` (issue 34).

Built like the LWS reconciler above it: a pure core that computes decisions from plain dicts and frozen
dataclasses, under one I/O layer that reads the API and applies them. So far the core:

* `planner`: the coordinated rolling update's next step (contract 4.7.3), one slice at a time, all roles
  together; its worked traces (contract 4.7.4) are its tests.
* `objects`: names, labels and the revision (2.1-2.5), the LWS, Service and scaler it makes, placement terms
  (4.5), a role's target and a new scaler's seed (4.6). API names come from `lwsconf.disaggapi`.
* `status`: per-role sums and the Available/Progressing pair (1.4, 4.8), as upstream's main writes them.
* `slices`: what one slice needs next (2.3, 4.1-4.3, 4.7.2): drained revisions deleted, the simple path or the
  rollout's start, gate and step (newest old revision drained first, coordinated drain), the role Services.

* `sets`: what the whole set needs next: removed slices deleted, scalers made (seeded), refused (a foreign one)
  or deleted, each slice decided, the scalers' and the set's status (2.4, 4.4, 4.6, 4.8). Legacy slice-0
  adoption (v0.9.0's names) is left out on purpose: the reference never made such objects.
* `crd`: the two CRDs, built from our LWS CRD (`python -m lwsconf.disaggcrds` writes them).

The I/O layer is `runtime` (informers on sets, their LWS, Services and scalers; the writes; events), started
beside the LWS controller by `lwsconf.reconciler.run.serve(..., disaggregated=True)`; the harness installs the CRDs
and starts it with the reference (`fixtures/implementations/bundled.py`), and the LWS-DISAGGREGATED profile
(`conformance/test_disaggregated_*.py`) checks it. Rules the CRD does not express yet are `crd.NOT_YET`. The core
imports only the standard library and the API-name modules (`lwsconf.lwsapi`, `lwsconf.disaggapi`).
"""
