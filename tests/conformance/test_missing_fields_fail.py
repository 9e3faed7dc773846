"""The suite's readers and waits fail when a field the contract requires is missing (issue 28, point 2).

A conformance check that reads a field with the expected value as its default, or that is skipped when the
field is absent, passes an implementation that never writes it. These tests hand the harness's assertion, its
label/annotation readers and the waits objects that lack the field, and check each one fails (or, for a wait,
never finishes) rather than passing. No cluster: the waits read fakes put in place of their API reads.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from conformance.harness import annotations_of, assert_fields, labels, mismatches
from lwsconf import lwsapi
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, observe, rollout
from lwsconf.waits import lws as lws_waits

Obj = dict[str, Any]
T = Timeouts(lws_available=0.2, rollout_complete=0.2, poll_interval=0.01)


def _lws(conditions: list[Obj], *, generation: int = 2, ready: int = 1) -> Obj:
    return {"metadata": {"name": "demo", "generation": generation}, "spec": {"replicas": 1},
            "status": {"observedGeneration": generation, "readyReplicas": ready, "updatedReplicas": ready,
                       "conditions": conditions}}


def _condition(kind: str, status: str, **extra: object) -> Obj:
    return {"type": kind, "status": status, "reason": "r", "message": "m", **extra}


def test_an_object_without_the_annotation_fails_the_field_assertion() -> None:
    """The subgroup-policy-type check on a worker pod (test_subgroups) goes through annotations_of and
    assert_fields: a pod without annotations at all, or without that key, fails with 'missing'."""
    key, want = lwsapi.SUBGROUP_POLICY_TYPE, {lwsapi.SUBGROUP_POLICY_TYPE: "LeaderWorker"}
    bare: Obj = {"metadata": {"name": "w-0-1"}}
    other: Obj = {"metadata": {"name": "w-0-1", "annotations": {lwsapi.SIZE: "4"}, "labels": {lwsapi.NAME: "w"}}}
    assert annotations_of(bare) == {} and labels(bare) == {}
    for pod in (bare, other):
        with pytest.raises(AssertionError, match=f"pod w-0-1 annotations: {key} is missing, want 'LeaderWorker'"):
            assert_fields("pod w-0-1 annotations", want, annotations_of(pod))
    assert mismatches({lwsapi.GROUP_KEY: "k"}, labels(other)) == [f"{lwsapi.GROUP_KEY} is missing, want 'k'"]


def test_a_claim_spec_missing_kept_fields_fails() -> None:
    """A claim whose template lost storageClassName, or got the server's volumeMode default instead of the
    user's, is reported field by field (test_volume_claim_templates)."""
    want = {"storageClassName": "fast", "volumeMode": "Block", "accessModes": ["ReadWriteOnce"]}
    seen = {"volumeMode": "Filesystem", "accessModes": ["ReadWriteOnce"]}
    assert mismatches(want, seen) == ["storageClassName is missing, want 'fast'",
                                      "volumeMode is 'Filesystem', want 'Block'"]


def test_a_condition_without_observed_generation_is_stale() -> None:
    current = _condition("Available", "True", observedGeneration=2)
    assert lws_waits.stale_conditions(_lws([current, _condition("Progressing", "False", observedGeneration=2)])) == []
    assert lws_waits.stale_conditions(_lws([current, _condition("Progressing", "False")])) == \
        ["Progressing observedGeneration missing"]
    assert lws_waits.stale_conditions(_lws([_condition("Available", "True", observedGeneration=1)])) == \
        ["Available observedGeneration 1"]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What the waits read instead of the API: `lws` (the LeaderWorkerSet) and `groups` (lws_waits.groups)."""
    state: dict[str, Any] = {"lws": None, "groups": {}}
    monkeypatch.setattr(observe, "get_lws", lambda api, namespace, name: state["lws"])
    monkeypatch.setattr(observe, "describe_namespace", lambda api, namespace, name=None: "state")
    monkeypatch.setattr(lws_waits, "groups", lambda api, namespace, name: state["groups"])
    return state


def test_available_with_a_stale_or_missing_condition_generation_never_counts(reads: dict[str, Any]) -> None:
    reads["lws"] = _lws([_condition("Available", "True", observedGeneration=2),
                         _condition("Progressing", "False", observedGeneration=2)])
    assert lws_waits.lws_must_be_available(client.ApiClient(), "ns", "demo", T) is reads["lws"]
    for conditions in ([_condition("Available", "True"), _condition("Progressing", "False", observedGeneration=2)],
                       [_condition("Available", "True", observedGeneration=2),
                        _condition("Progressing", "False", observedGeneration=1)]):
        reads["lws"] = _lws(conditions)
        with pytest.raises(core.WaitTimeout, match="conditions not at generation 2"):
            lws_waits.lws_must_be_available(client.ApiClient(), "ns", "demo", T)


def _pod(name: str, revision: str | None) -> Obj:
    pod_labels = {lwsapi.NAME: "demo"} | ({lwsapi.TEMPLATE_REVISION_HASH: revision} if revision else {})
    return {"metadata": {"name": name, "uid": name, "labels": pod_labels},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


def test_a_rollout_never_completes_on_pods_without_a_revision(reads: dict[str, Any]) -> None:
    """Pods that lost the template-revision-hash label are on no revision: a rollout whose pods all lack it
    has not completed on a revision '' (it did, before issue 28's sweep)."""
    reads["lws"] = _lws([_condition("Available", "True", observedGeneration=2)])
    reads["groups"] = {0: lws_waits.Group(0, {0: _pod("demo-0", "new"), 1: _pod("demo-0-1", "new")})}
    assert rollout.rollout_must_complete(client.ApiClient(), "ns", "demo", old={"old"}, replicas=1, size=2,
                                         t=T) == "new"
    reads["groups"] = {0: lws_waits.Group(0, {0: _pod("demo-0", None), 1: _pod("demo-0-1", None)})}
    with pytest.raises(core.WaitTimeout, match="pods on revisions"):
        rollout.rollout_must_complete(client.ApiClient(), "ns", "demo", old={"old"}, replicas=1, size=2, t=T)


def test_a_rollout_with_a_stale_condition_generation_has_not_completed(reads: dict[str, Any]) -> None:
    reads["lws"] = _lws([_condition("Available", "True", observedGeneration=1)])
    reads["groups"] = {0: lws_waits.Group(0, {0: _pod("demo-0", "new"), 1: _pod("demo-0-1", "new")})}
    with pytest.raises(core.WaitTimeout, match=r"Available observedGeneration 1"):
        rollout.rollout_must_complete(client.ApiClient(), "ns", "demo", old={"old"}, replicas=1, size=2, t=T)
