"""Labels the reconciler patches onto pods in place of the pod webhook (3.1, 3.4, 4.8, T1), and pod predicates."""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.reconciler import labels, pods

Obj = dict[str, Any]


def pod(name: str, *, worker_index: str | None = None, annotations: dict[str, str] | None = None,
        extra: dict[str, str] | None = None, ns: str = "default") -> Obj:
    pod_labels = {labels.NAME: "test-sample", **(extra or {})}
    if worker_index is not None:
        pod_labels[labels.WORKER_INDEX] = worker_index
    return {"metadata": {"name": name, "namespace": ns, "labels": pod_labels,
                         "annotations": {labels.SIZE: "5", **(annotations or {})}}}


def test_leader_gets_group_index_and_group_key() -> None:
    assert pods.label_patch(pod("test-sample-3", worker_index="0", ns="ns1")) == {
        labels.GROUP_INDEX: "3", labels.GROUP_KEY: labels.group_key("ns1", "test-sample-3")}


def test_leader_labels_already_present_are_kept() -> None:
    existing = {labels.GROUP_INDEX: "7", labels.GROUP_KEY: "custom"}
    assert pods.label_patch(pod("test-sample-3", worker_index="0", extra=existing)) == {}


def test_subgrouped_leader_gets_subgroup_0() -> None:
    leader = pod("test-sample-1", worker_index="0", annotations={labels.SUBGROUP_SIZE: "4",
                                                                  labels.SUBGROUP_POLICY_TYPE: "LeaderWorker"})
    patch = pods.label_patch(leader)
    assert patch[labels.SUBGROUP_INDEX] == "0"
    assert patch[labels.SUBGROUP_KEY] == labels.sha1_hex("test-sample-1/0")


def test_leader_excluded_leader_gets_no_subgroup_labels() -> None:
    leader = pod("test-sample-1", worker_index="0", annotations={labels.SUBGROUP_SIZE: "2",
                                                                  labels.SUBGROUP_POLICY_TYPE: "LeaderExcluded"})
    assert set(pods.label_patch(leader)) == {labels.GROUP_INDEX, labels.GROUP_KEY}


def test_worker_gets_worker_index_from_its_name() -> None:
    assert pods.label_patch(pod("test-1-1")) == {labels.WORKER_INDEX: "1"}
    assert pods.label_patch(pod("test-1-2", worker_index="9")) == {labels.WORKER_INDEX: "2"}, "always overwritten"
    assert pods.label_patch(pod("test-1-2", worker_index="2")) == {}


@pytest.mark.parametrize(("name", "size", "sgs", "expected"), [
    ("test-sample-1-4", "5", "2", "1"), ("test-sample-1-3", "4", "2", "1"), ("test-sample-1-3", "10", "5", "0"),
    ("test-sample-1-7", "11", "5", "1"),
], ids=["S5 sgs2 worker4", "S4 sgs2 worker3", "S10 sgs5 worker3", "S11 sgs5 worker7"])
def test_worker_subgroup_labels_match_the_webhook(name: str, size: str, sgs: str, expected: str) -> None:
    worker = pod(name, annotations={labels.SIZE: size, labels.SUBGROUP_SIZE: sgs, labels.LEADER_NAME: "test-sample-1"})
    patch = pods.label_patch(worker)
    assert patch[labels.SUBGROUP_INDEX] == expected
    assert patch[labels.SUBGROUP_KEY] == labels.subgroup_key("test-sample-1", int(expected))


def test_existing_subgroup_index_is_not_recomputed() -> None:
    worker = pod("test-sample-1-4", annotations={labels.SUBGROUP_SIZE: "2", labels.LEADER_NAME: "test-sample-1"},
                 extra={labels.SUBGROUP_INDEX: "9"})
    assert pods.label_patch(worker) == {labels.WORKER_INDEX: "4"}


def test_pods_without_the_name_label_are_not_touched() -> None:
    stranger = {"metadata": {"name": "x-1", "labels": {"app": "x"}}}
    assert pods.label_patch(stranger) == {}


@pytest.mark.parametrize(("bad", "message"), [
    ({"metadata": {"name": "test-sample-1", "labels": {labels.NAME: "n", labels.WORKER_INDEX: "0"}}},
     "annotation leaderworkerset.sigs.k8s.io/size is missing"),
    (pod("no-ordinal", worker_index="0"), "no '-<ordinal>' suffix"),
    (pod("worker"), "no '-<ordinal>' suffix"),
    (pod("test-1-1", annotations={labels.SIZE: "five"}), "must be an integer"),
])
def test_unlabellable_pods_raise_with_the_reason(bad: Obj, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pods.label_patch(bad)


def _status(phase: str, *, restarts: int = 0, init_restarts: int = 0, deleting: bool = False) -> Obj:
    meta: Obj = {"name": "p"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase,
                                         "containerStatuses": [{"name": "c", "restartCount": restarts}],
                                         "initContainerStatuses": [{"name": "i", "restartCount": init_restarts}]}}


@pytest.mark.parametrize(("obj", "expected"), [
    (_status("Running"), False), (_status("Running", restarts=1), True), (_status("Pending", restarts=2), True),
    (_status("Pending", init_restarts=1), True), (_status("Failed", restarts=3), False),
    (_status("Succeeded", restarts=1), False), (_status("Failed", deleting=True), True),
    (_status("Running", deleting=True), True),
], ids=["running clean", "running restarted", "pending restarted", "init container restarted",
        "failed pods never count", "succeeded pods never count", "deletion observed", "running deleted"])
def test_restart_observed(obj: Obj, expected: bool) -> None:
    assert pods.restart_observed(obj) is expected


def test_ready_and_running_and_ready() -> None:
    ready = {"status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "True"}]}}
    assert pods.is_ready(ready) and not pods.running_and_ready(ready)
    ready["status"]["phase"] = "Running"
    assert pods.running_and_ready(ready)
    assert not pods.is_ready({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})


def test_group_index_uses_the_label_then_the_leader_name() -> None:
    assert pods.group_index(pod("test-sample-4", worker_index="0"), "test-sample") == 4
    assert pods.group_index(pod("test-sample-4", worker_index="0", extra={labels.GROUP_INDEX: "2"}), "test-sample") == 2
    assert pods.group_index(pod("test-sample-4-1"), "test-sample") is None, \
        "workers carry the label from their template"
    group = [pod("test-sample-4", worker_index="0"), pod("test-sample-4-1", extra={labels.GROUP_INDEX: "4"}),
             pod("test-sample-5-1", extra={labels.GROUP_INDEX: "5"})]
    assert [p["metadata"]["name"] for p in pods.in_group(group, "test-sample", 4)] == ["test-sample-4",
                                                                                       "test-sample-4-1"]
