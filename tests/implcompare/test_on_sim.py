"""`lwsconf diff-impls` end to end on the sim: the reference in-process against the reference as a child process.

The same implementation run twice must compare equal after normalisation (if it did not, a rule is missing
and `make diff-impls` would flake), and a deliberate change to one side's snapshot must be reported, at
its object and path.
"""

from __future__ import annotations

import copy
import io

from lwsconf import lwsapi, workloads
from lwsconf.implcompare import diff, run
from lwsconf.implcompare.model import DeletePod, Scenario, Step

TINY = Scenario("tiny", "1 group of 2, then its worker deleted",
                workloads.probe_lws("tiny", replicas=1, size=2), (2, 2),
                (Step("worker-deleted", DeletePod("tiny-0-1")),))


def test_the_same_implementation_twice_has_no_difference_and_a_planted_one_is_found() -> None:
    out = io.StringIO()
    a = run.run_side("reference", [TINY], run.Waits(), out)
    b = run.run_side("reference-process", [TINY], run.Waits(), out)
    assert not a.failures and not b.failures, out.getvalue()
    assert list(a.snapshots["tiny"]) == ["steady", "worker-deleted"]
    assert "Pod/tiny-0-1" in a.snapshots["tiny"]["worker-deleted"]
    assert diff.compare(a, b) == [], [(d.snapshot, d.kind, d.obj, d.path, d.a, d.b) for d in diff.compare(a, b)]

    planted = copy.deepcopy(b)
    pod = planted.snapshots["tiny"]["worker-deleted"]["Pod/tiny-0-1"]
    pod["metadata"]["labels"][lwsapi.WORKER_INDEX] = "7"
    found = diff.compare(a, planted)
    assert [(d.snapshot, d.kind, d.obj, d.path, d.a, d.b) for d in found] == [
        ("worker-deleted", "Pod", "tiny-0-1", f"metadata.labels[{lwsapi.WORKER_INDEX}]", "1", "7")]
