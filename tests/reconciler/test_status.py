"""Status counters and the condition matrix of docs/lws-contract.md §4.5 (traps T7, T8, T9, T10, T25)."""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.reconciler import labels, status
from lwsconf.reconciler.status import AVAILABLE, PROGRESSING, UPDATE_IN_PROGRESS, GroupObservation
from tests.reconciler import factories as f

Obj = dict[str, Any]
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def groups(ready: str, updated: str) -> list[GroupObservation]:
    """One observation per character: 'r'/'.' for ready, 'u'/'.' for updated, index = position."""
    return [GroupObservation(i, r == "r", u == "u") for i, (r, u) in enumerate(zip(ready, updated, strict=True))]


def run(lws: Obj, observed: list[GroupObservation], now: str = T0, sts_replicas: int = 2) -> status.StatusResult:
    result = status.compute(lws, leader_sts_replicas=sts_replicas, groups=observed, now=now)
    lws["status"] = result.status
    return result


def conditions(lws: Obj) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in lws["status"]["conditions"]}


MATRIX = [
    # id, replicas, partition, ready, updated, expected True types (first names the event)
    ("fresh LWS: nothing counted yet", 2, 0, "", "", (PROGRESSING,)),
    ("all ready and updated", 2, 0, "rr", "uu", (AVAILABLE,)),
    ("template change", 2, 0, "rr", "..", (UPDATE_IN_PROGRESS, PROGRESSING)),
    ("scale up a ready LWS", 3, 0, "rr", "uu", (PROGRESSING,)),
    ("updated but not ready (T9 window)", 2, 0, "r.", "uu", (PROGRESSING,)),
    ("R=0", 0, 0, "", "", (AVAILABLE,)),
    ("old groups below the user partition", 4, 2, "rrrr", "..uu", (AVAILABLE,)),
    ("in-scope group outdated", 4, 2, "rrrr", "...u", (UPDATE_IN_PROGRESS, PROGRESSING)),
    ("unready group below the partition", 4, 2, ".rrr", "..uu", (PROGRESSING,)),
    ("surge groups do not count for conditions", 2, 0, "rr.", "uu.", (AVAILABLE,)),
    ("partition beyond replicas", 2, 5, "rr", "..", (AVAILABLE,)),
]


@pytest.mark.parametrize(("replicas", "partition", "ready", "updated", "expected"), [m[1:] for m in MATRIX],
                         ids=[m[0] for m in MATRIX])
def test_condition_case(replicas: int, partition: int, ready: str, updated: str, expected: tuple[str, ...]) -> None:
    counts = status.count(groups(ready, updated), replicas=replicas, partition=partition)
    assert status.true_conditions(counts, replicas) == expected


def test_fresh_lws_is_progressing_with_selector_and_generation() -> None:
    lws = f.lws(generation=3)
    result = run(lws, [])
    assert conditions(lws) == {PROGRESSING: ("True", "GroupsProgressing", "Replicas are progressing")}
    assert lws["status"]["hpaPodSelector"] == \
        "leaderworkerset.sigs.k8s.io/name=test-sample,leaderworkerset.sigs.k8s.io/worker-index=0"
    assert lws["status"]["observedGeneration"] == 3 and lws["status"]["conditions"][0]["observedGeneration"] == 3
    assert lws["status"]["conditions"][0]["lastTransitionTime"] == T0
    assert [(e.reason, e.note) for e in result.events] == [
        ("GroupsProgressing", "Replicas are progressing, with 0 groups ready of total 2 groups")]
    assert result.changed and not result.update_done


def test_progressing_to_available_to_progressing_keeps_true_texts_on_false() -> None:
    lws = f.lws()
    run(lws, [])
    result = run(lws, groups("rr", "uu"), now=T1)
    assert conditions(lws) == {PROGRESSING: ("False", "GroupsProgressing", "Replicas are progressing"),
                               AVAILABLE: ("True", "AllGroupsReady", "All replicas are ready")}
    assert [(e.reason, e.note) for e in result.events] == [
        ("AllGroupsReady", "All replicas are ready, with 2 groups ready of total 2 groups")]
    assert result.update_done
    lws = f.with_spec(lws, replicas=3)
    lws["metadata"]["generation"] = 2
    result = run(lws, groups("rr", "uu"), now=T2)
    assert conditions(lws) == {PROGRESSING: ("True", "GroupsProgressing", "Replicas are progressing"),
                               AVAILABLE: ("False", "AllGroupsReady", "All replicas are ready")}
    assert all(c["observedGeneration"] == 2 for c in lws["status"]["conditions"])
    assert [e.note for e in result.events] == ["Replicas are progressing, with 2 groups ready of total 3 groups"]


def test_update_sets_update_in_progress_and_progressing_then_completion_clears_both() -> None:
    lws = f.lws()
    run(lws, groups("rr", "uu"))
    result = run(lws, groups("rr", ".."), now=T1)
    assert conditions(lws) == {AVAILABLE: ("False", "AllGroupsReady", "All replicas are ready"),
                               UPDATE_IN_PROGRESS: ("True", "GroupsUpdating", "Rolling Upgrade is in progress"),
                               PROGRESSING: ("True", "GroupsProgressing", "Replicas are progressing")}
    assert [(e.reason, e.note) for e in result.events] == [
        ("GroupsUpdating", "Rolling Upgrade is in progress, with 2 groups ready of total 2 groups")]
    run(lws, groups("rr", "uu"), now=T2)
    assert conditions(lws) == {AVAILABLE: ("True", "AllGroupsReady", "All replicas are ready"),
                               UPDATE_IN_PROGRESS: ("False", "GroupsUpdating", "Rolling Upgrade is in progress"),
                               PROGRESSING: ("False", "GroupsProgressing", "Replicas are progressing")}


def test_update_in_progress_can_stay_true_while_groups_are_updated_but_not_ready() -> None:
    lws = f.lws()
    run(lws, groups("rr", ".."))
    run(lws, groups("r.", "uu"), now=T1)
    assert conditions(lws)[UPDATE_IN_PROGRESS][0] == "True"
    assert conditions(lws)[PROGRESSING][0] == "True"


def test_unchanged_state_writes_nothing_and_records_nothing() -> None:
    lws = f.lws()
    run(lws, groups("rr", "uu"))
    before = [dict(c) for c in lws["status"]["conditions"]]
    result = run(lws, groups("rr", "uu"), now=T1)
    assert not result.changed and result.events == ()
    assert lws["status"]["conditions"] == before, "lastTransitionTime only moves on a change"


def test_generation_bump_alone_rewrites_observed_generation_and_records_an_event() -> None:
    lws = f.lws()
    run(lws, groups("rr", "uu"))
    lws["metadata"]["generation"] = 5
    result = run(lws, groups("rr", "uu"), now=T1)
    assert result.changed and len(result.events) == 1
    assert {c["observedGeneration"] for c in lws["status"]["conditions"]} == {5}


def test_cleared_conditions_are_repaired() -> None:
    lws = f.lws()
    run(lws, groups("r.", "uu"))
    lws["status"]["conditions"] = []
    run(lws, groups("r.", "uu"), now=T1)
    assert conditions(lws) == {PROGRESSING: ("True", "GroupsProgressing", "Replicas are progressing")}


def test_counters_include_surge_groups_and_replicas_mirror_the_leader_statefulset() -> None:
    lws = f.lws(replicas=4)
    result = run(lws, groups("rrrrr", "....u"), sts_replicas=5)
    assert (result.status["replicas"], result.status["readyReplicas"], result.status["updatedReplicas"]) == (5, 5, 1)


def test_hpa_pod_selector_is_written_only_while_empty() -> None:
    lws = f.lws()
    lws["status"] = {"hpaPodSelector": "custom=1"}
    assert run(lws, []).status["hpaPodSelector"] == "custom=1"


def test_update_done_needs_partition_0_and_every_group_below_replicas_done() -> None:
    assert run(f.lws(), groups("rr", "uu")).update_done
    assert not run(f.lws(), groups("r.", "uu")).update_done
    assert not run(f.with_spec(f.lws(), rolloutStrategy=f.rollout_config(partition=1)), groups("rr", "uu")).update_done


def test_observe_groups_skips_leaders_without_worker_statefulset() -> None:
    lws = f.lws(replicas=3)
    pods = [f.leader_pod(lws, 0, key="k"), f.leader_pod(lws, 1, key="k", ready=False), f.leader_pod(lws, 2, key="k")]
    stss = {s["metadata"]["name"]: s for s in (f.worker_sts(lws, 0, key="k"), f.worker_sts(lws, 1, key="old"))}
    observed = status.observe_groups("test-sample", size=2, current_key="k", leader_pods=pods, worker_statefulsets=stss)
    assert observed == [GroupObservation(0, True, True), GroupObservation(1, False, False)]


def test_observe_groups_with_size_1_counts_leaders_alone() -> None:
    lws = f.lws(size=1)
    labelled = f.leader_pod(lws, 7, key="k", extra_labels={labels.GROUP_INDEX: "1"})
    observed = status.observe_groups("test-sample", size=1, current_key="k", worker_statefulsets={},
                                     leader_pods=[f.leader_pod(lws, 0, key="old"), labelled])
    assert observed == [GroupObservation(0, True, False), GroupObservation(1, True, True)], \
        "the group-index label wins over the name when present"
