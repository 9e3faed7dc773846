"""A DisaggregatedSet's status (docs/disaggregatedset-contract.md 1.4, 4.8; traps DT7-DT9)."""

from __future__ import annotations

from typing import Any

from lwsconf import disaggapi
from lwsconf.reconciler.disaggregated import status


def _lws(role: str, rev: str, replicas: int, ready: int, updated: int) -> dict[str, Any]:
    return {"metadata": {"labels": {disaggapi.ROLE: role, disaggapi.REVISION: rev}},
            "status": {"replicas": replicas, "readyReplicas": ready, "updatedReplicas": updated}}


def test_sums_cover_every_revision_and_updated_only_the_current_one() -> None:
    owned = [_lws("prefill", "old", 2, 2, 2), _lws("prefill", "new", 1, 0, 1), _lws("decode", "new", 2, 2, 2),
             _lws("gone", "old", 1, 1, 1)]
    got = status.role_statuses(["prefill", "decode"], owned, "new", {"prefill": 2, "decode": 2})
    assert [(r.name, r.replicas, r.ready, r.updated, r.satisfied) for r in got] == [
        ("prefill", 3, 2, 1, False), ("decode", 2, 2, 2, True)], "a role no longer in spec has no entry"


def test_zero_counts_are_left_out() -> None:
    assert status.RoleStatus("p", 0, 0, 0, 0).to_api() == {"name": "p"}
    assert status.RoleStatus("p", 2, 1, 0, 2).to_api() == {"name": "p", "replicas": 2, "readyReplicas": 1}


def test_an_external_role_without_a_scaler_is_never_satisfied() -> None:
    assert not status.RoleStatus("p", 0, 0, 0, None).satisfied
    assert status.RoleStatus("p", 0, 0, 0, 0).satisfied, "an all-zero (paused) role is satisfied"


def _by_type(conds: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in conds}


def test_a_new_set_is_progressing_and_nothing_else() -> None:
    got = status.conditions([], False, 1, "t1")
    assert got == [{"type": "Progressing", "status": "True", "reason": "RolloutInProgress",
                    "message": disaggapi.MESSAGE_IN_PROGRESS, "observedGeneration": 1, "lastTransitionTime": "t1"}]


def test_the_flip_gives_the_false_one_the_true_ones_words_and_keeps_them() -> None:
    progressing = status.conditions([], False, 1, "t1")
    ready = _by_type(status.conditions(progressing, True, 1, "t2"))
    assert ready["Available"]["status"] == "True" and ready["Available"]["lastTransitionTime"] == "t2"
    assert ready["Progressing"] == {"type": "Progressing", "status": "False", "reason": "AllRolesReady",
                                    "message": disaggapi.MESSAGE_ALL_READY, "observedGeneration": 1,
                                    "lastTransitionTime": "t2"}, "trap DT8"
    again = _by_type(status.conditions(list(ready.values()), True, 2, "t3"))
    assert again["Available"]["lastTransitionTime"] == "t2", "a True that stays True keeps its time"
    assert again["Progressing"]["reason"] == "AllRolesReady" and again["Progressing"]["lastTransitionTime"] == "t2"
    assert again["Progressing"]["observedGeneration"] == 2 and again["Available"]["observedGeneration"] == 2
    back = _by_type(status.conditions(list(again.values()), False, 3, "t4"))
    assert (back["Progressing"]["status"], back["Progressing"]["lastTransitionTime"]) == ("True", "t4")
    assert (back["Available"]["status"], back["Available"]["reason"]) == ("False", "RolloutInProgress")


def test_other_condition_types_are_left_alone() -> None:
    other = {"type": "Custom", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "t0"}
    assert other in status.conditions([other], True, 1, "t1")
