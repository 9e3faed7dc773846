"""What counts as steady state (pure)."""

from __future__ import annotations

from typing import Any

from lwsconf.implcompare import steady


def world(*, available: str = "True", ready: int = 2, pods: int = 4, rev: str = "r2") -> list[dict[str, Any]]:
    lws = {"kind": "LeaderWorkerSet", "metadata": {"name": "x"}, "spec": {"replicas": 2},
           "status": {"replicas": 2, "readyReplicas": ready, "updatedReplicas": 2,
                      "conditions": [{"type": "Available", "status": available}]}}
    out = [lws, {"kind": "StatefulSet", "metadata": {"name": "x"}, "spec": {"replicas": 2},
                 "status": {"readyReplicas": 2, "updatedReplicas": 2, "currentRevision": "r2", "updateRevision": rev}}]
    for i in range(pods):
        out.append({"kind": "Pod", "metadata": {"name": f"x-{i}"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    return out


def test_steady_when_everything_is_ready() -> None:
    assert steady.problem(world(), "x", 4) is None


def test_not_steady_says_why() -> None:
    assert "not Available" in (steady.problem(world(available="False"), "x", 4) or "")
    assert "readyReplicas is 1" in (steady.problem(world(ready=1), "x", 4) or "")
    assert "3 pods" in (steady.problem(world(pods=3), "x", 4) or "")
    assert "revision r2 -> r3" in (steady.problem(world(rev="r3"), "x", 4) or "")
    terminating = world()
    terminating[-1]["metadata"]["deletionTimestamp"] = "t"
    assert "terminating" in (steady.problem(terminating, "x", 4) or "")


def test_the_fingerprint_changes_with_a_pod_write() -> None:
    before = world()
    after = world()
    after[-1]["metadata"]["resourceVersion"] = "9"
    assert steady.fingerprint(before) != steady.fingerprint(after)
