"""The reference DisaggregatedSet controller (disaggregatedset.x-k8s.io/v1), written from
`docs/disaggregatedset-contract.md` (issue 34).

Built like the LWS reconciler above it: a pure core that computes decisions from plain dicts and frozen
dataclasses, under one I/O layer that reads the API and applies them. So far the core's first piece:

* `planner`: the coordinated rolling update's next step (contract 4.7.3), one slice at a time, all roles
  together; its worked traces (contract 4.7.4) are its tests.

What is not here yet (issue 34, item 2 stays open): object names, labels and the revision hash (2.1-2.5), the
LWS, Service and scaler builders, placement terms (4.5), status and conditions (4.8), the runtime, and the
CRDs. This package imports nothing but the standard library, like the rest of the core.
"""
