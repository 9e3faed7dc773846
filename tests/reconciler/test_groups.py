"""What a leader pod's group needs next (contract 4.1 preconditions, 4.7, 4.9, traps T3, T22)."""

from __future__ import annotations

from typing import Any

from lwsconf.reconciler import groups, labels, revision
from tests.reconciler import factories as f

Obj = dict[str, Any]


def _setup(lws: Obj, **pod_kw: Any) -> tuple[Obj, list[Obj]]:
    rev = revision.new_revision(lws, [])
    return f.leader_pod(lws, 0, key=revision.key_of(rev), **pod_kw), [rev]


def test_leader_created_gets_its_worker_statefulset_at_once() -> None:
    lws = f.lws()
    pod, revs = _setup(lws, ready=False, phase="Pending")
    plan = groups.plan(lws, pod, revisions=revs, node=None)
    assert plan.worker_statefulset is not None and plan.worker_statefulset["metadata"]["name"] == "test-sample-0"
    assert plan.service is None and plan.wait is None and plan.retry is None


def test_size_1_creates_no_worker_statefulset() -> None:
    lws = f.lws(size=1)
    pod, revs = _setup(lws)
    assert groups.plan(lws, pod, revisions=revs, node=None) == groups.GroupPlan()


def test_leader_ready_waits_for_the_ready_condition_only() -> None:
    lws = f.with_spec(f.lws(), startupPolicy="LeaderReady")
    pod, revs = _setup(lws, ready=False)
    plan = groups.plan(lws, pod, revisions=revs, node=None)
    assert plan.worker_statefulset is None and plan.wait is not None and "LeaderReady" in plan.wait
    pod, revs = _setup(lws, ready=True, phase="Pending")
    assert groups.plan(lws, pod, revisions=revs, node=None).worker_statefulset is not None


def test_unique_per_replica_service_comes_before_any_gate_and_for_size_1() -> None:
    for lws in (f.with_spec(f.lws(size=1), networkConfig={"subdomainPolicy": "UniquePerReplica"}),
                f.with_spec(f.lws(), networkConfig={"subdomainPolicy": "UniquePerReplica"},
                            startupPolicy="LeaderReady")):
        pod, revs = _setup(lws, ready=False)
        plan = groups.plan(lws, pod, revisions=revs, node=None)
        assert plan.service is not None and plan.service["metadata"]["name"] == "test-sample-0"
        assert plan.worker_statefulset is None


def test_terminating_leader_gets_nothing() -> None:
    lws = f.with_spec(f.lws(), networkConfig={"subdomainPolicy": "UniquePerReplica"})
    pod, revs = _setup(lws, deleting=True)
    plan = groups.plan(lws, pod, revisions=revs, node=None)
    assert plan.service is None and plan.worker_statefulset is None and plan.wait == "leader pod is being deleted"


def test_missing_revision_is_retried() -> None:
    lws = f.lws()
    pod, _ = _setup(lws)
    plan = groups.plan(lws, pod, revisions=[], node=None)
    assert plan.worker_statefulset is None and plan.retry is not None and "ControllerRevision" in plan.retry


def test_leader_name_annotation_on_a_leader_is_refused_with_a_warning() -> None:
    lws = f.lws()
    pod, revs = _setup(lws, annotations={labels.LEADER_NAME: "test-sample-0"})
    plan = groups.plan(lws, pod, revisions=revs, node=None)
    assert plan.worker_statefulset is None and plan.event is not None
    assert plan.event.type == "Warning" and plan.event.reason == "FailedCreate"
    assert "StatefulSetStartOrdinal" in plan.event.note and "default/test-sample-0" in plan.event.note


def test_exclusive_placement_waits_for_scheduling_then_pins_to_the_node_domain() -> None:
    lws = f.lws(annotations={labels.EXCLUSIVE_TOPOLOGY: "zone"})
    pod, revs = _setup(lws)
    unscheduled = groups.plan(lws, pod, revisions=revs, node=None)
    assert unscheduled.worker_statefulset is None and unscheduled.wait is not None
    pod, revs = _setup(lws, node="n1")
    node = {"metadata": {"name": "n1", "labels": {"zone": "z7"}}}
    plan = groups.plan(lws, pod, revisions=revs, node=node)
    assert plan.worker_statefulset is not None
    assert plan.worker_statefulset["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "z7"}


def test_exclusive_placement_retries_when_the_node_lacks_the_label_or_is_missing() -> None:
    lws = f.lws(annotations={labels.EXCLUSIVE_TOPOLOGY: "zone"})
    pod, revs = _setup(lws, node="n1")
    for node in (None, {"metadata": {"name": "n1", "labels": {"other": "x"}}}, {"metadata": {"name": "n1"}}):
        plan = groups.plan(lws, pod, revisions=revs, node=node)
        assert plan.worker_statefulset is None and plan.retry is not None and "'zone'" in plan.retry


def test_old_revision_leader_gets_an_old_revision_group() -> None:
    old = f.lws(size=3)
    rev1 = revision.new_revision(old, [])
    live = f.lws(size=2)
    rev2 = revision.new_revision(live, [rev1])
    pod = f.leader_pod(old, 0, key=revision.key_of(rev1))
    plan = groups.plan(live, pod, revisions=[rev1, rev2], node=None)
    assert plan.worker_statefulset is not None and plan.worker_statefulset["spec"]["replicas"] == 2
