"""Every worked trace of docs/lws-contract.md section 4.4.5, replayed step by step through `rollout.decide`.

Each trace starts at rest (all R groups ready and updated, leader StatefulSet at partition = user
partition) and applies the upstream integration test's actions in order: a template change (every
existing group becomes outdated), groups made "done" (ready and updated), groups made unready, leader
pods created or deleted by the harness, replicas or partition edits. After each action the controller
reconciles until the leader StatefulSet stops changing (the first reconcile after a template change
is the one that creates the revision, `updated_now`). The step then checks the StatefulSet's partition
and replicas, the events recorded during that step, and the (ready, updated) counters of status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from lwsconf.reconciler import rollout, status
from lwsconf.reconciler.rollout import GroupState

DONE = GroupState(ready=True, updated=True)
OLD = GroupState(ready=True, updated=False)
UNREADY_OLD = GroupState(ready=False, updated=False)
UNREADY_NEW = GroupState(ready=False, updated=True)
LWS = "test-sample"


@dataclass(frozen=True)
class Step:
    action: str
    expect: tuple[int, int]
    """(partition, replicas) of the leader StatefulSet once reconciles settle."""
    template_change: bool = False
    replicas: int | None = None
    partition: int | None = None
    groups: Mapping[int, GroupState] = field(default_factory=dict)
    """Group states set by the harness (a leader pod and worker StatefulSet exist for each)."""
    delete: tuple[int, ...] = ()
    """Leader pods deleted by the harness (their groups vanish)."""
    events: tuple[str, ...] | None = None
    """Notes of all events recorded during this step, in order; None leaves them unchecked."""
    counts: tuple[int, int] | None = None
    """(readyReplicas, updatedReplicas) afterwards; None leaves them unchecked."""


@dataclass(frozen=True)
class Trace:
    id: str
    replicas: int
    steps: tuple[Step, ...]
    max_unavailable: int | str = 1
    max_surge: int | str = 0
    partition: int = 0


def done(*indices: int) -> dict[int, GroupState]:
    return dict.fromkeys(indices, DONE)


def surge(*indices: int, state: GroupState = UNREADY_OLD) -> dict[int, GroupState]:
    return dict.fromkeys(indices, state)


def updating(p: int, old: int) -> str:
    return f"Updating replica {p}" if old - 1 == p else f"Updating replicas {p} to {old - 1} (inclusive)"


TRACES = [
    Trace("R4 mU1 mS0: default strategy", 4, (
        Step("template change", (3, 4), template_change=True, events=(updating(3, 4),), counts=(4, 0)),
        Step("group 3 done", (2, 4), groups=done(3), events=(updating(2, 3),), counts=(4, 1)),
        Step("group 1 updated out of order: partition stays", (2, 4), groups=done(1), events=(), counts=(4, 2)),
        Step("group 3 unready: partition never moves up", (2, 4), groups={3: UNREADY_NEW}, events=(), counts=(3, 2)),
        Step("all groups done", (0, 4), groups=done(0, 1, 2, 3), events=(updating(0, 2),), counts=(4, 4)),
    )),
    Trace("R4 mU2", 4, (
        Step("template change", (2, 4), template_change=True, events=(updating(2, 4),), counts=(4, 0)),
        Step("group 3 done", (1, 4), groups=done(3), events=(updating(1, 2),), counts=(4, 1)),
        Step("group 2 done", (0, 4), groups=done(2), events=(updating(0, 1),), counts=(4, 2)),
        Step("groups 1 and 0 done", (0, 4), groups=done(1, 0), events=(), counts=(4, 4)),
    ), max_unavailable=2),
    Trace("R4 mU10: partition 0 at once", 4, (
        Step("template change", (0, 4), template_change=True, events=(updating(0, 4),), counts=(4, 0)),
        Step("all groups done", (0, 4), groups=done(0, 1, 2, 3), events=(), counts=(4, 4)),
    ), max_unavailable=10),
    Trace("R4 mU0 mS1", 4, (
        Step("template change, surge leader 4 appears", (4, 5), template_change=True, groups=surge(4), events=(),
             counts=(4, 0)),
        Step("group 4 done", (3, 5), groups=done(4), events=(updating(3, 4),), counts=(5, 1)),
        Step("group 3 done", (2, 5), groups=done(3), events=(updating(2, 3),), counts=(5, 2)),
        Step("group 2 done", (1, 5), groups=done(2), events=(updating(1, 2),), counts=(5, 3)),
        Step("group 1 done: replicas still 5", (0, 5), groups=done(1), events=(updating(0, 1),), counts=(5, 4)),
        Step("group 0 done, surge leader deleted", (0, 4), groups=done(0), delete=(4,),
             events=("deleting surge replica test-sample-4",), counts=(4, 4)),
    ), max_unavailable=0, max_surge=1),
    Trace("R4 mU1 mS1", 4, (
        Step("template change, surge leader 4 appears", (3, 5), template_change=True, groups=surge(4),
             events=(updating(3, 4),), counts=(4, 0)),
        Step("group 4 done", (2, 5), groups=done(4), events=(updating(2, 3),), counts=(5, 1)),
        Step("group 3 done", (1, 5), groups=done(3), events=(updating(1, 2),), counts=(5, 2)),
        Step("group 2 done: replicas still 5", (0, 5), groups=done(2), events=(updating(0, 1),), counts=(5, 3)),
        Step("group 1 done, surge leader deleted", (0, 4), groups=done(1), delete=(4,),
             events=("deleting surge replica test-sample-4",), counts=(4, 3)),
        Step("group 0 done", (0, 4), groups=done(0), events=(), counts=(4, 4)),
    ), max_surge=1),
    Trace("R4 mU2 mS2", 4, (
        Step("template change, surge leaders 4-5 appear", (2, 6), template_change=True, groups=surge(4, 5),
             events=(updating(2, 4),), counts=(4, 0)),
        Step("groups 3 and 2 done, surge leaders deleted", (0, 4), groups=done(3, 2), delete=(4, 5),
             events=("deleting surge replicas from test-sample-4 to test-sample-5", updating(0, 2)), counts=(4, 2)),
        Step("groups 1 and 0 done", (0, 4), groups=done(1, 0), events=(), counts=(4, 4)),
    ), max_unavailable=2, max_surge=2),
    Trace("R2 mS4 capped to 2: replicas 2+(2-1)", 2, (
        Step("template change, surge leader 2 appears", (1, 3), template_change=True, groups=surge(2),
             events=(updating(1, 2),), counts=(2, 0)),
        Step("all groups done", (0, 2), groups=done(0, 1, 2),
             events=("deleting surge replica test-sample-2", updating(0, 1)), counts=(3, 3)),
        Step("surge leader deleted", (0, 2), delete=(2,), events=(), counts=(2, 2)),
    ), max_surge=4),
    Trace("R4->6 together with template change: scale first, no surge", 4, (
        Step("template change and R=6; leaders 4-5 fabricated with the old key", (4, 6), template_change=True,
             replicas=6, groups=surge(4, 5), events=(), counts=(4, 0)),
        Step("all groups done", (0, 6), groups=done(0, 1, 2, 3, 4, 5), events=(updating(0, 4),), counts=(6, 6)),
    )),
    Trace("R4 update, then R->6 after group 3 done", 4, (
        Step("template change", (3, 4), template_change=True, counts=(4, 0)),
        Step("group 3 done", (2, 4), groups=done(3), counts=(4, 1)),
        Step("R=6, leaders 4-5 created and done", (2, 6), replicas=6, groups=done(4, 5), events=(), counts=(6, 3)),
        Step("all groups done", (0, 6), groups=done(0, 1, 2), counts=(6, 6)),
    )),
    Trace("R6 update (partition 5), then R->3", 6, (
        Step("template change", (5, 6), template_change=True, events=(updating(5, 6),), counts=(6, 0)),
        Step("R=3, leaders 3-5 deleted", (2, 3), replicas=3, delete=(3, 4, 5),
             events=("deleting surge replicas from test-sample-3 to test-sample-5", updating(3, 5), updating(2, 3)),
             counts=(3, 0)),
        Step("all groups done", (0, 3), groups=done(0, 1, 2), counts=(3, 3)),
    )),
    Trace("R2->4 with template change, mS2", 2, (
        Step("template change and R=4; leaders 2-5 fabricated with the old key", (2, 6), template_change=True,
             replicas=4, groups=surge(2, 3, 4, 5), events=(), counts=(2, 0)),
        Step("all groups done, surge leaders deleted", (0, 4), groups=done(0, 1, 2, 3), delete=(4, 5),
             events=("deleting surge replicas from test-sample-4 to test-sample-5", updating(0, 2)), counts=(4, 4)),
    ), max_surge=2),
    Trace("R6->3 with template change, mS2", 6, (
        Step("template change and R=3", (2, 5), template_change=True, replicas=3,
             events=("deleting surge replica test-sample-5", updating(2, 3)), counts=(6, 0)),
        Step("leader 5 deleted, all others done", (0, 3), delete=(5,), groups=done(0, 1, 2, 3, 4),
             events=("deleting surge replicas from test-sample-3 to test-sample-4", updating(0, 2)), counts=(5, 5)),
        Step("surge leaders deleted", (0, 3), delete=(3, 4), events=(), counts=(3, 3)),
    ), max_surge=2),
    Trace("R4 mS2: update, then R->6, then R->2", 4, (
        Step("template change, surge leaders 4-5 appear", (3, 6), template_change=True, groups=surge(4, 5),
             events=(updating(3, 4),), counts=(4, 0)),
        Step("R=6, leaders 6-7 created on the new revision", (3, 8), replicas=6, groups=surge(6, 7, state=UNREADY_NEW),
             events=(), counts=(4, 2)),
        Step("groups 7 and 6 done", (3, 8), groups=done(7, 6), events=(), counts=(6, 2)),
        Step("R=2, leaders 3-7 deleted", (1, 3), replicas=2, delete=(3, 4, 5, 6, 7),
             events=("deleting surge replicas from test-sample-3 to test-sample-7", updating(1, 3)), counts=(3, 0)),
        Step("group 2 done", (0, 3), groups=done(2), events=(updating(0, 1),), counts=(3, 1)),
        Step("group 1 done, leader 2 deleted", (0, 2), groups=done(1), delete=(2,),
             events=("deleting surge replica test-sample-2",), counts=(2, 1)),
        Step("group 0 done", (0, 2), groups=done(0), events=(), counts=(2, 2)),
    ), max_surge=2),
    Trace("R4 mU2, group 1 unready before the update: partition 3, not 2", 4, (
        Step("group 1 unready", (0, 4), groups={1: UNREADY_NEW}, events=(), counts=(3, 4)),
        Step("template change", (3, 4), template_change=True, events=(updating(3, 4),), counts=(3, 0)),
        Step("all groups done", (0, 4), groups=done(0, 1, 2, 3), events=(updating(0, 3),), counts=(4, 4)),
    ), max_unavailable=2),
    Trace("R2 mU1, no ready groups", 2, (
        Step("groups 0 and 1 unready", (0, 2), groups={0: UNREADY_NEW, 1: UNREADY_NEW}, events=(), counts=(0, 2)),
        Step("template change", (1, 2), template_change=True, events=(updating(1, 2),), counts=(0, 0)),
        Step("group 1 done", (0, 2), groups=done(1), events=(updating(0, 1),), counts=(1, 1)),
        Step("group 0 done", (0, 2), groups=done(0), events=(), counts=(2, 2)),
    )),
    Trace("R4 mU1 mS2, two template changes", 4, (
        Step("template change, surge leaders 4-5 appear", (3, 6), template_change=True, groups=surge(4, 5),
             counts=(4, 0)),
        Step("groups 5 and 4 done", (1, 6), groups=done(5, 4), events=(updating(1, 3),), counts=(6, 2)),
        Step("second template change: partition back to 4, then 3", (3, 6), template_change=True,
             events=(updating(3, 4),), counts=(6, 0)),
        Step("all groups done, surge leaders deleted", (0, 4), groups=done(0, 1, 2, 3), delete=(4, 5),
             counts=(4, 4)),
    ), max_surge=2),
    Trace("R6 partition 4: lowering the partition resumes the rollout", 6, (
        Step("template change", (5, 6), template_change=True, events=(updating(5, 6),), counts=(6, 0)),
        Step("group 5 done", (4, 6), groups=done(5), events=(updating(4, 5),), counts=(6, 1)),
        Step("group 4 done: stays at the user partition", (4, 6), groups=done(4), events=(), counts=(6, 2)),
        Step("user partition 2", (3, 6), partition=2, events=(updating(3, 4),), counts=(6, 2)),
        Step("group 3 done", (2, 6), groups=done(3), events=(updating(2, 3),), counts=(6, 3)),
        Step("group 2 done", (2, 6), groups=done(2), events=(), counts=(6, 4)),
    ), partition=4),
    Trace("R3 mS1 partition 2: surge kept until partition 0", 3, (
        Step("template change", (2, 4), template_change=True, events=(updating(2, 3),), counts=(3, 0)),
        Step("surge leader 3 appears", (2, 4), groups=surge(3), events=(), counts=(3, 0)),
        Step("groups 3 and 2 done", (2, 4), groups=done(3, 2), events=(), counts=(4, 2)),
        Step("user partition 0", (0, 4), partition=0, events=(updating(0, 2),), counts=(4, 2)),
        Step("groups 1 and 0 done", (0, 3), groups=done(1, 0), events=("deleting surge replica test-sample-3",),
             counts=(4, 4)),
        Step("surge leader deleted", (0, 3), delete=(3,), events=(), counts=(3, 3)),
    ), max_surge=1, partition=2),
]


class Replay:
    """The harness: group states by index, the leader StatefulSet, and spec fields that steps edit."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.replicas, self.partition = trace.replicas, trace.partition
        self.groups: dict[int, GroupState] = done(*range(trace.replicas))
        self.sts = rollout.LeaderSet(trace.replicas, trace.partition, trace.replicas)

    def reconcile(self, updated_now: bool) -> list[str]:
        budget = rollout.resolve_budget(self.replicas, self.trace.max_unavailable, self.trace.max_surge)
        states = tuple(self.groups.get(i, rollout.MISSING) for i in range(self.sts.replicas))
        decision = rollout.decide(rollout.RolloutInput(LWS, self.replicas, self.partition, budget, self.sts,
                                                       updated_now, states))
        self.sts = rollout.LeaderSet(decision.replicas, decision.partition, self.replicas)
        return [e.note for e in decision.events]

    def play(self, step: Step) -> list[str]:
        if step.template_change:
            self.groups = {i: GroupState(s.ready, False) for i, s in self.groups.items()}
        self.replicas = self.replicas if step.replicas is None else step.replicas
        self.partition = self.partition if step.partition is None else step.partition
        self.groups.update(step.groups)
        for index in step.delete:
            self.groups.pop(index, None)
        notes = self.reconcile(updated_now=step.template_change)
        for _ in range(10):
            before = self.sts
            notes += self.reconcile(updated_now=False)
            if self.sts == before:
                return notes
        raise AssertionError(f"reconciles never settle after {step.action!r}: last {self.sts}")

    def counts(self) -> tuple[int, int]:
        observed = [status.GroupObservation(i, s.ready, s.updated) for i, s in self.groups.items()]
        c = status.count(observed, replicas=self.replicas, partition=self.partition)
        return c.ready, c.updated


@pytest.mark.parametrize("trace", TRACES, ids=lambda t: t.id)
def test_rollout_trace(trace: Trace) -> None:
    replay = Replay(trace)
    assert replay.play(Step("at rest", (trace.partition, trace.replicas))) == []
    for n, step in enumerate(trace.steps, 1):
        notes = replay.play(step)
        where = f"step {n} ({step.action}): groups {replay.groups}"
        assert (replay.sts.partition, replay.sts.replicas) == step.expect, where
        if step.events is not None:
            assert tuple(notes) == step.events, where
        if step.counts is not None:
            assert replay.counts() == step.counts, where


@dataclass(frozen=True)
class SurgeCase:
    id: str
    replicas: int
    max_surge: int
    max_unavailable: int
    unready: int
    want: int


SURGE_CASES = [  # upstream's calculateRollingUpdateReplicas unit cases (contract 6.5)
    SurgeCase("keeps surge until maxUnavailable covers the unready", 1, 1, 0, 1, 2),
    SurgeCase("reclaims surge gradually once enough groups are ready", 4, 2, 1, 2, 5),
    SurgeCase("reclaims surge before partition 0 when maxUnavailable permits", 2, 2, 1, 2, 3),
    SurgeCase("all desired groups ready: back to replicas", 1, 1, 0, 0, 1),
    SurgeCase("maxUnavailable permits the one unready group", 1, 1, 1, 1, 1),
    SurgeCase("no surge when maxSurge is 0", 3, 0, 0, 1, 3),
    SurgeCase("more unready than maxSurge: full burst", 4, 2, 1, 3, 6),
]


@pytest.mark.parametrize("case", SURGE_CASES, ids=lambda c: c.id)
def test_rolling_update_replicas(case: SurgeCase) -> None:
    got = rollout.rolling_update_replicas(case.replicas, case.max_surge, case.max_unavailable, case.unready)
    assert got == case.want


def _decide(replicas: int, sts: rollout.LeaderSet | None, *, updated_now: bool, max_unavailable: int = 1,
            max_surge: int = 0, states: tuple[GroupState, ...] = ()) -> rollout.RolloutDecision:
    budget = rollout.resolve_budget(replicas, max_unavailable, max_surge)
    return rollout.decide(rollout.RolloutInput(LWS, replicas, 0, budget, sts, updated_now, states))


def test_no_leader_statefulset_yet_means_partition_0_and_replicas() -> None:
    assert _decide(3, None, updated_now=False) == rollout.RolloutDecision(0, 3, ())


def test_scale_up_never_creates_extra_surge() -> None:
    sts = rollout.LeaderSet(replicas=2, partition=0, replicas_annotation=2)
    got = _decide(3, sts, updated_now=False, max_unavailable=0, max_surge=1, states=(DONE, DONE))
    assert (got.partition, got.replicas) == (0, 3)


def test_scale_up_with_a_template_change_scales_first_without_surge() -> None:
    sts = rollout.LeaderSet(replicas=2, partition=0, replicas_annotation=2)
    got = _decide(3, sts, updated_now=True, max_unavailable=0, max_surge=1)
    assert (got.partition, got.replicas) == (2, 3)


def test_template_change_reclaims_surge_when_max_unavailable_allows() -> None:
    sts = rollout.LeaderSet(replicas=2, partition=0, replicas_annotation=2)
    got = _decide(2, sts, updated_now=True, max_unavailable=1, max_surge=2)
    assert (got.partition, got.replicas) == (2, 3)


def test_the_reconcile_that_creates_the_revision_records_no_updating_event() -> None:
    sts = rollout.LeaderSet(replicas=4, partition=0, replicas_annotation=4)
    got = _decide(4, sts, updated_now=True, max_unavailable=10)
    assert got.partition == 4 and got.events == ()


def test_missing_replicas_annotation_is_treated_as_a_replicas_change() -> None:
    sts = rollout.LeaderSet(replicas=4, partition=3, replicas_annotation=None)
    got = _decide(4, sts, updated_now=False, states=(OLD, OLD, OLD, OLD))
    assert (got.partition, got.replicas) == (3, 4), "partition is capped at burst, not advanced"


def test_user_partition_is_a_floor() -> None:
    budget = rollout.resolve_budget(4, 10, 0)
    sts = rollout.LeaderSet(replicas=4, partition=4, replicas_annotation=4)
    got = rollout.decide(rollout.RolloutInput(LWS, 4, 3, budget, sts, False, (OLD,) * 4))
    assert got.partition == 3
