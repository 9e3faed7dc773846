"""Inputs of the rollout algorithm: maxUnavailable/maxSurge resolution (4.4.3, T11) and group states (4.4.2)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lwsconf.reconciler import labels, rollout
from lwsconf.reconciler.rollout import GroupState
from tests.reconciler import factories as f


@dataclass(frozen=True)
class BudgetCase:
    id: str
    replicas: int
    max_unavailable: int | str
    max_surge: int | str
    expected: tuple[int, int, int]
    """(maxUnavailable, maxSurge, leader StatefulSet maxUnavailable)."""


BUDGET_CASES = [
    BudgetCase("percent maxUnavailable rounds down", 2, "25%", "0%", (0, 0, 1)),
    BudgetCase("percent maxSurge rounds up", 2, 0, "25%", (0, 1, 1)),
    BudgetCase("50% of 5: down 2, up 3", 5, "50%", "50%", (2, 3, 5)),
    BudgetCase("maxSurge capped at replicas", 4, 1, 10, (1, 4, 5)),
    BudgetCase("maxUnavailable not capped", 4, 10, 0, (10, 0, 10)),
    BudgetCase("100% surge", 3, 0, "100%", (0, 3, 3)),
    BudgetCase("replicas 0: statefulset maxUnavailable at least 1", 0, "25%", "25%", (0, 0, 1)),
    BudgetCase("defaults", 4, 1, 0, (1, 0, 1)),
    BudgetCase("sum of both", 4, 1, 2, (1, 2, 3)),
]


@pytest.mark.parametrize("case", BUDGET_CASES, ids=lambda c: c.id)
def test_budget_resolution(case: BudgetCase) -> None:
    budget = rollout.resolve_budget(case.replicas, case.max_unavailable, case.max_surge)
    assert (budget.max_unavailable, budget.max_surge, budget.statefulset_max_unavailable) == case.expected
    assert budget.burst == case.replicas + case.expected[1]


@pytest.mark.parametrize("value", ["5", "abc", "-1%", "1.5%", ""])
def test_scaled_value_rejects_strings_that_are_not_percentages(value: str) -> None:
    with pytest.raises(ValueError, match="percentage"):
        rollout.scaled_value(value, 10, round_up=True)


def test_leader_set_reads_replicas_partition_and_annotation() -> None:
    sts = {"metadata": {"annotations": {labels.REPLICAS: "4"}},
           "spec": {"replicas": 5, "updateStrategy": {"rollingUpdate": {"partition": 3}}}}
    assert rollout.LeaderSet.of(sts) == rollout.LeaderSet(5, 3, 4)
    assert rollout.LeaderSet.of({"spec": {"replicas": 2}}) == rollout.LeaderSet(2, 0, None)


def test_statefulset_ready_needs_available_replicas_and_equal_revisions() -> None:
    lws = f.lws(size=3)
    assert rollout.statefulset_ready(f.worker_sts(lws, 0))
    assert not rollout.statefulset_ready(f.worker_sts(lws, 0, ready=False))
    sts = f.worker_sts(lws, 0)
    sts["status"]["updateRevision"] = "other"
    assert not rollout.statefulset_ready(sts)


def test_group_states_from_pods_and_worker_statefulsets() -> None:
    lws = f.lws(replicas=5)
    key = "current"
    pods = [f.leader_pod(lws, 0, key=key), f.leader_pod(lws, 1, key="old"), f.leader_pod(lws, 2, key=key, ready=False),
            f.leader_pod(lws, 3, key=key), f.leader_pod(lws, 4, key=key, phase="Pending")]
    stss = [f.worker_sts(lws, 0, key=key), f.worker_sts(lws, 1, key="old"), f.worker_sts(lws, 2, key=key),
            f.worker_sts(lws, 4, key=key)]
    states = rollout.group_states("test-sample", size=2, current_key=key, sts_replicas=6, leader_pods=pods,
                                  worker_statefulsets=stss)
    assert states == (GroupState(True, True), GroupState(True, False), GroupState(False, True),
                      rollout.MISSING, GroupState(False, True), rollout.MISSING)


def test_group_states_with_size_1_need_no_worker_statefulset() -> None:
    lws = f.lws(size=1)
    states = rollout.group_states("test-sample", size=1, current_key="k", sts_replicas=2,
                                  leader_pods=[f.leader_pod(lws, 0, key="k"), f.leader_pod(lws, 1, key="x")],
                                  worker_statefulsets=[])
    assert states == (GroupState(True, True), GroupState(True, False))


def test_group_states_ignore_foreign_objects() -> None:
    lws = f.lws()
    other = f.lws(name="test-sample-1")
    unlabelled = f.worker_sts(lws, 0, key="k")
    del unlabelled["metadata"]["labels"][labels.GROUP_INDEX]
    states = rollout.group_states("test-sample", size=2, current_key="k", sts_replicas=1,
                                  leader_pods=[f.leader_pod(other, 0, key="k")],
                                  worker_statefulsets=[unlabelled])
    assert states == (rollout.MISSING,)


def test_rolling_partition_pads_missing_states() -> None:
    assert rollout.rolling_partition([], 3, 1, 3) == 2
    assert rollout.rolling_partition([], 0, 1, 0) == 0
