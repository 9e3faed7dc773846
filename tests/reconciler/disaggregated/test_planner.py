"""The coordinated rolling update's planner against the worked traces of docs/disaggregatedset-contract.md 4.7.4
(trace A is upstream's e2e "scale-down-role0-scale-up-role1", whose 11 valid states upstream lists; B its
"surge-0-unavail-2-batches-by-unavailable"; C the 1/0 default of its unit case small_2_2_surge1; D KEP-766's
example as upstream's code computes it), and the properties a conformance test may rely on (4.7.3)."""

from __future__ import annotations

import itertools

import pytest

from lwsconf.reconciler.disaggregated import planner
from lwsconf.reconciler.disaggregated.planner import Budget, Role, Step

TRACE_A = [  # (old P, old D, new P, new D, kind)
    (10, 2, 0, 0, "start"), (8, 2, 0, 0, "drain"), (6, 2, 0, 0, "drain"), (6, 2, 2, 2, "scale-up"),
    (4, 1, 2, 2, "drain"), (4, 1, 3, 4, "scale-up"), (4, 1, 4, 5, "scale-up"), (2, 1, 4, 5, "drain"),
    (2, 1, 5, 7, "scale-up"), (2, 1, 6, 8, "scale-up"), (0, 0, 6, 8, "final-drain")]
TRACE_B = [(4, 4, 0, 0, "start"), (2, 2, 0, 0, "drain"), (2, 2, 2, 2, "scale-up"), (0, 0, 2, 2, "drain"),
           (0, 0, 4, 4, "scale-up")]
TRACE_C = [(2, 2, 0, 0, "start"), (2, 2, 1, 1, "scale-up"), (1, 1, 1, 1, "drain"), (1, 1, 2, 2, "scale-up"),
           (0, 0, 2, 2, "final-drain")]
TRACE_D = [(5, 2, 0, 0, "start"), (5, 2, 2, 1, "scale-up"), (4, 2, 2, 1, "drain"), (3, 2, 4, 2, "force-drain"),
           (2, 1, 4, 2, "drain"), (2, 1, 5, 2, "scale-up"), (0, 0, 5, 2, "final-drain")]


def _rows(steps: list[Step]) -> list[tuple[int, int, int, int, str]]:
    return [(*s.old, *s.new, s.kind) for s in steps]  # type: ignore[misc]


@pytest.mark.parametrize(("initial", "target", "budgets", "trace"), [
    ((10, 2), (6, 8), [Budget(2, 0)] * 2, TRACE_A),
    ((4, 4), (4, 4), [Budget(0, 2)] * 2, TRACE_B),
    ((2, 2), (2, 2), [planner.DEFAULT_BUDGET] * 2, TRACE_C),
    ((5, 2), (5, 2), [Budget(2, 1)] * 2, TRACE_D)], ids=["A", "B", "C", "D"])
def test_the_worked_traces(initial: tuple[int, int], target: tuple[int, int], budgets: list[Budget],
                           trace: list[tuple[int, int, int, int, str]]) -> None:
    assert _rows(planner.simulate(initial, target, budgets)) == trace


@pytest.mark.parametrize(("config", "target", "budget"), [
    (None, 4, Budget(1, 0)),                                   # no rollingUpdateConfiguration: 1/0, not LWS's 0/1
    ({"maxSurge": 2, "maxUnavailable": 0}, 4, Budget(2, 0)),
    ({"maxSurge": 0, "maxUnavailable": 2}, 4, Budget(0, 2)),
    ({"maxSurge": 2, "maxUnavailable": 1}, 4, Budget(2, 1)),
    ({}, 4, Budget(0, 1)),                                     # the schema's defaults when the object is present
    ({"maxSurge": 0, "maxUnavailable": 0}, 4, Budget(1, 0)),  # neither: the default again
    ({"maxSurge": "30%", "maxUnavailable": "30%"}, 10, Budget(3, 3)),
    ({"maxSurge": "25%", "maxUnavailable": "25%"}, 3, Budget(1, 0)),  # surge rounds up, unavailable down to 0
])
def test_a_roles_budget_comes_from_its_own_configuration(config: dict[str, object] | None, target: int,
                                                          budget: Budget) -> None:
    assert planner.budget(config, target) == budget


CASES = list(itertools.product([(3, 1), (1, 4), (6, 6), (0, 2), (2, 0), (7, 3)], [(2, 2), (5, 1), (3, 6)],
                               [Budget(1, 0), Budget(2, 0), Budget(0, 2), Budget(2, 1), Budget(1, 1)]))


@pytest.mark.parametrize(("initial", "target", "each"), CASES)
def test_every_rollout_ends_at_target_within_the_surge_and_never_orphans_a_role(
        initial: tuple[int, int], target: tuple[int, int], each: Budget) -> None:
    steps = planner.simulate(initial, target, [each, each])
    last = steps[-1]
    assert last.old == (0, 0) and last.new == target, _rows(steps)
    for step in steps:
        for r in range(2):
            assert step.old[r] + step.new[r] <= max(initial[r], target[r]) + each.max_surge, _rows(steps)
        # a revision never serves with one of its roles gone (contract 4.7.3, upstream e2e E4)
        serving = [step.old[r] > 0 for r in range(2) if initial[r] > 0]
        assert all(serving) or not any(serving), _rows(steps)
    assert len(steps) <= 2 * max(*initial, *target) + 10, "the simulation ran out: a rollout that never ends"


def test_a_finished_or_empty_rollout_has_no_step() -> None:
    assert planner.next_step([Role(2, 0, 3, 3), Role(1, 0, 1, 1)]) is None
    assert planner.next_step([Role(0, 0, 0, 0), Role(0, 0, 0, 0)]) is None


def test_old_replicas_above_the_recorded_start_are_put_back_first() -> None:
    step = planner.next_step([Role(2, 4, 0, 2), Role(2, 2, 0, 2)])
    assert step == Step((2, 2), (0, 0), "correction")


def test_a_role_removed_from_the_spec_drains_with_the_others() -> None:
    """Contract 4.7.5: a role only in the old revision has target 0; one only in the new has initial_old 0."""
    steps = planner.simulate((2, 2, 0), (2, 0, 2), [Budget(1, 0)] * 3)
    assert steps[-1].old == (0, 0, 0) and steps[-1].new == (2, 0, 2)
    assert any(0 < s.old[1] < 2 for s in steps), "the removed role drained in steps, not at once"
