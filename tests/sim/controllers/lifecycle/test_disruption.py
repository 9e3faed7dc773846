"""The disruption controller's status arithmetic (pkg/controller/disruption/disruption.go), pure."""

from __future__ import annotations

from typing import Any

from lwsconf.sim.controllers.lifecycle import disruption

NOW = 1_800_000_000.0


def pod(name: str, *, ready: bool = True, owner: str | None = "rs-uid", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": "web"}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": owner,
                                    "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    return {"metadata": meta, "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def budget(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default", "generation": 3},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}, "status": {}}


def test_min_available_counts_the_ready_pods() -> None:
    pods = [pod("a"), pod("b"), pod("c", ready=False)]
    status, recheck = disruption.desired_status(budget(minAvailable=1), pods, {}, NOW)
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"], status["observedGeneration"]) == (3, 1, 2, 1, 3)
    assert status["conditions"][0]["reason"] == "SufficientPods" and recheck is None


def test_max_unavailable_reads_the_controllers_scale_and_rounds_up() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    status, _ = disruption.desired_status(budget(maxUnavailable="50%"), pods, {"rs-uid": 4}, NOW)
    # 4 expected, 50% of 4 = 2 may be unavailable -> 2 desired; 3 healthy -> 1 allowed
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (4, 2, 1)
    status, _ = disruption.desired_status(budget(minAvailable="50%"), pods, {"rs-uid": 3}, NOW)
    assert status["desiredHealthy"] == 2  # ceil(1.5)


def test_a_pod_without_a_controller_fails_the_sync_safely() -> None:
    status, _ = disruption.desired_status(budget(maxUnavailable=1), [pod("lone", owner=None)], {}, NOW)
    assert status["disruptionsAllowed"] == 0
    assert (status["conditions"][0]["reason"], status["conditions"][0]["message"]) == (
        "SyncFailed", 'found no controller ref for pod "lone"')


def test_recently_evicted_pods_are_not_healthy_until_their_entry_expires() -> None:
    pdb = budget(minAvailable=1)
    pdb["status"] = {"disruptedPods": {"a": disruption._rfc3339(NOW - 30), "gone": disruption._rfc3339(NOW - 10),
                                       "old": disruption._rfc3339(NOW - 500)}}
    pods = [pod("a"), pod("b"), pod("old")]
    status, recheck = disruption.desired_status(pdb, pods, {}, NOW)
    assert status["disruptedPods"] == {"a": disruption._rfc3339(NOW - 30)}  # gone dropped, old expired
    assert status["currentHealthy"] == 2 and status["disruptionsAllowed"] == 1
    assert recheck == 90.0


def test_deleting_pods_are_not_healthy_and_nothing_expected_allows_nothing() -> None:
    status, _ = disruption.desired_status(budget(minAvailable=1), [pod("a"), pod("b", deleting=True)], {}, NOW)
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (1, 0)
    assert status["conditions"][0]["reason"] == "InsufficientPods"
    status, _ = disruption.desired_status(budget(maxUnavailable=0), [], {}, NOW)
    assert status["expectedPods"] == 0 and status["disruptionsAllowed"] == 0
