"""Two LWS implementations compared object by object (`lwsconf diff-impls`, issue 28 part 3).

The same scenarios (`scenarios.py`, data: an LWS manifest and steps) run against two implementations
(`reference`, `reference-process`, `upstream-local[:VERSION|PATH]`), each on a fresh sim cluster. At
steady state, and after every step, the objects the implementation owns or shapes (the LWS and its
status, StatefulSets, pods, Services, PVCs, ControllerRevisions, events regarding the LWS) are
snapshotted through the API, normalised (`normalise.py`: each rule named and justified) and compared
(`diff.py`); every difference is a row of a table (`render.py`: Markdown and JSON), judged against the
checked-in dispositions (`dispositions.py`: tested by a conformance test, a documented divergence, or an
implementation freedom).

The core (`model`, `scenarios`, `normalise`, `diff`, `dispositions`, `render`) is pure; `run.py` is
the only I/O (clusters, implementations, API calls, waits); `cli.py` is `lwsconf diff-impls`.
"""
