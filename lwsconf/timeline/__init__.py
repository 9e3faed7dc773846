"""What each group and the leader StatefulSet of an LWS looked like over time: one model, one file format.

`model` holds the typed samples, the test's steps and `timeline.json` (versioned; `load` and `save`),
`analysis` the whole-timeline claims tests make about it ("never half-updated", "never more than
maxUnavailable groups down", "replaced from the top"). Both are pure: the recorder that fills a
timeline from watches lives in `lwsconf.waits.recorder` (it needs the Kubernetes client), and the
report draws it (`lwsconf.report.timeline`). Neither side can write a shape the other cannot read.
"""

__all__ = ["analysis", "model"]
