"""Group recreation on failure: trigger, policy gate, stale-group guards and event text (4.2, T16, T17)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lwsconf.reconciler import labels, restart
from tests.reconciler import factories as f

Obj = dict[str, Any]
KEY = "k1"


def setup(size: int = 3, **lwt: Any) -> tuple[Obj, Obj, Obj, list[Obj]]:
    """(lws, leader 0, worker StatefulSet 0 owned by the leader, worker pods 1..size-1 owned by it)."""
    lws = f.lws(size=size, **lwt)
    leader = f.leader_pod(lws, 0, key=KEY, extra_labels={labels.GROUP_INDEX: "0"})
    sts = f.worker_sts(lws, 0, key=KEY)
    sts["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "test-sample-0", "uid": "uid-test-sample-0",
                                           "controller": True}]
    workers = []
    for j in range(1, size):
        worker = copy.deepcopy(leader)
        worker["metadata"].update(name=f"test-sample-0-{j}", uid=f"w{j}", ownerReferences=[
            {"kind": "StatefulSet", "name": "test-sample-0", "uid": sts["metadata"]["uid"], "controller": True}])
        worker["metadata"]["labels"][labels.WORKER_INDEX] = str(j)
        workers.append(worker)
    return lws, leader, sts, workers


def crash(pod: Obj, restarts: int = 1) -> Obj:
    out = copy.deepcopy(pod)
    out["status"]["containerStatuses"] = [{"name": "worker", "restartCount": restarts}]
    return out


def decide(lws: Obj, pod: Obj, leader: Obj | None, sts: Obj | None, group: list[Obj]) -> restart.RestartDecision:
    return restart.decide(lws, pod, group_pods=group, leader=leader, controlling_sts=sts)


def test_deleted_worker_recreates_the_group_with_upstreams_event() -> None:
    lws, leader, sts, workers = setup()
    deleted = copy.deepcopy(workers[0])
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    got = decide(lws, deleted, leader, sts, [leader, deleted, workers[1]])
    assert (got.action, got.leader_name, got.leader_uid) == ("delete-leader", "test-sample-0", "uid-test-sample-0")
    assert got.event is not None and (got.event.type, got.event.reason, got.event.note) == (
        "Normal", "RecreateGroup",
        "Worker pod test-sample-0-1 failed, deleted leader pod test-sample-0 to recreate group 0")


def test_leader_restart_recreates_its_own_group_and_the_text_still_says_worker() -> None:
    lws, leader, sts, workers = setup()
    got = decide(lws, crash(leader), None, None, [leader, *workers])
    assert got.action == "delete-leader" and got.leader_name == "test-sample-0"
    assert got.event is not None and got.event.note == \
        "Worker pod test-sample-0 failed, deleted leader pod test-sample-0 to recreate group 0"


@pytest.mark.parametrize("policy", ["None", "Default"])
def test_policy_none_and_default_never_recreate(policy: str) -> None:
    lws, leader, sts, workers = setup(restartPolicy=policy)
    assert decide(lws, crash(workers[0]), leader, sts, [leader, *workers]).action == "none"


def test_nothing_happens_without_a_restart_or_deletion() -> None:
    lws, leader, sts, workers = setup()
    assert decide(lws, workers[0], leader, sts, [leader, *workers]).action == "none"
    failed = crash(workers[0], 3)
    failed["status"]["phase"] = "Failed"
    assert decide(lws, failed, leader, sts, [leader, *workers]).action == "none", "Failed pods never count"


def _pending(pod: Obj) -> Obj:
    out = copy.deepcopy(pod)
    out["status"]["phase"] = "Pending"
    return out


@pytest.mark.parametrize(("lwt", "annotations"), [
    ({"restartPolicy": "RecreateGroupAfterStart"}, None),
    ({"restartPolicy": "RecreateGroupOnPodRestart"}, {labels.RECREATE_GROUP_AFTER_START: ""}),
], ids=["RecreateGroupAfterStart", "experimental annotation (presence only)"])
def test_after_start_skips_groups_still_starting(lwt: Obj, annotations: dict[str, str] | None) -> None:
    lws, leader, sts, workers = setup(annotations=annotations, **lwt)
    crashed = crash(workers[0])
    assert decide(lws, crashed, leader, sts, [leader, crashed, _pending(workers[1])]).action == "none"
    assert decide(lws, crashed, leader, sts, [leader, crashed]).action == "none", "an incomplete group is starting"
    assert decide(lws, crashed, leader, sts, [leader, crashed, workers[1]]).action == "delete-leader"


def test_on_pod_restart_recreates_even_while_a_pod_is_pending() -> None:
    lws, leader, sts, workers = setup()
    crashed = crash(workers[0])
    assert decide(lws, crashed, leader, sts, [leader, crashed, _pending(workers[1])]).action == "delete-leader"


def test_missing_leader_means_the_group_is_already_going() -> None:
    lws, leader, sts, workers = setup()
    got = decide(lws, crash(workers[0]), None, sts, [*workers])
    assert got.action == "none" and "does not exist" in got.reason


def test_worker_of_another_revision_than_its_leader_is_ignored() -> None:
    lws, leader, sts, workers = setup()
    newer = copy.deepcopy(leader)
    newer["metadata"]["labels"][labels.TEMPLATE_REVISION_HASH] = "k2"
    assert decide(lws, crash(workers[0]), newer, sts, [newer, *workers]).action == "none"


def test_worker_of_a_previous_group_incarnation_is_ignored() -> None:
    lws, leader, sts, workers = setup()
    recreated_sts = copy.deepcopy(sts)
    recreated_sts["metadata"]["uid"] = "new-sts-uid"
    assert decide(lws, crash(workers[0]), leader, recreated_sts, [leader, *workers]).action == "none"
    assert decide(lws, crash(workers[0]), leader, None, [leader, *workers]).action == "none"
    new_leader = copy.deepcopy(leader)
    new_leader["metadata"]["uid"] = "new-leader-uid"
    assert decide(lws, crash(workers[0]), new_leader, sts, [new_leader, *workers]).action == "none"


def test_worker_owned_directly_by_its_leader_pod_counts() -> None:
    lws, leader, _, workers = setup()
    direct = crash(workers[0])
    direct["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "test-sample-0", "uid": "uid-test-sample-0",
                                              "controller": True}]
    assert decide(lws, direct, leader, None, [leader, direct, workers[1]]).action == "delete-leader"
    direct["metadata"]["ownerReferences"] = []
    assert decide(lws, direct, leader, None, [leader, direct, workers[1]]).action == "none"


def test_leader_already_deleting_stops_without_a_second_delete() -> None:
    lws, leader, sts, workers = setup()
    leader["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    got = decide(lws, crash(workers[0]), leader, sts, [leader, *workers])
    assert (got.action, got.leader_name, got.event) == ("leader-deleting", "test-sample-0", None)


def test_unlabelled_leader_is_reported_with_the_index_from_its_name() -> None:
    lws = f.lws(size=1)
    leader = crash(f.leader_pod(lws, 5, key=KEY))
    got = decide(lws, leader, None, None, [leader])
    assert got.event is not None and got.event.note.endswith("to recreate group 5")


def test_group_still_starting() -> None:
    _, leader, _, workers = setup()
    assert not restart.group_still_starting([leader, *workers], 3)
    assert restart.group_still_starting([leader, *workers, workers[0]], 3)
    assert restart.group_still_starting([leader, _pending(workers[0]), workers[1]], 3)
