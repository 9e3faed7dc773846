"""The next step of a DisaggregatedSet's coordinated rolling update, for one slice (contract 4.7.3).

Why stateless: the controller may restart at any point of a rollout, so the step is derived from what the
API shows each time: per role the old revisions' replicas when the rollout started (`initial_old`, kept in the
`initial-replicas` annotations), the old and new LeaderWorkerSets' `spec.replicas` now, and the new target.
The rollout is a straight line from (initial_old, 0) to (0, target) in `total_steps` batches, the same number
for every role, so that the roles keep their ratio and move together; each reconcile takes the one step that
the current position calls for, and each step changes either the old or the new side (save a forced drain).

A role's batch is its surge, else its unavailability (at least 1), from the role's own
`rollingUpdateConfiguration` resolved against its target (`budget`). Every step keeps, per role,
`old + new <= max(initial_old, target) + max_surge`, and an old revision's roles reach 0 together: a revision
never serves with one role gone ("orphan prevention"). Behaviour matched against upstream's planner (its
worked traces are tests/reconciler/disaggregated/test_planner.py); the code is ours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Budget:
    """How far one role may go past its target (surge) or below it (unavailable) during a step."""

    max_surge: int = 1
    max_unavailable: int = 0

    @property
    def batch(self) -> int:
        """Replicas one step moves for this role: the surge, else the unavailability (at least 1)."""
        return self.max_surge if self.max_surge > 0 else max(1, self.max_unavailable)


DEFAULT_BUDGET = Budget()
"""Without a rollingUpdateConfiguration a role moves one replica at a time, surging (not the LWS default 0/1)."""


@dataclass(frozen=True)
class Role:
    """One role of the slice, as the API shows it at this reconcile."""

    initial_old: int
    """Σ of the old revisions' replicas when the rollout started (their initial-replicas annotations)."""
    old: int
    """Σ of the old revisions' `spec.replicas` now."""
    new: int
    """The new revision's `spec.replicas` now."""
    target: int
    """The new revision's wanted replicas (0 for a role no longer in the spec)."""
    budget: Budget = DEFAULT_BUDGET


@dataclass(frozen=True)
class Step:
    """The replicas to write next: per role, the old revisions' total and the new revision's count."""

    old: tuple[int, ...]
    new: tuple[int, ...]
    kind: str
    """correction, final-drain, scale-up, drain or force-drain (for events and timelines)."""


def _resolve(value: Any, target: int, *, round_up: bool) -> int:
    """An IntOrString against `target`: an int as is, `N%` of target rounded up (surge) or down (unavailable)."""
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * target / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def budget(rolling_update: Mapping[str, Any] | None, target: int) -> Budget:
    """A role's budget from its `spec.rolloutStrategy.rollingUpdateConfiguration` (None: absent).

    With unavailability above 0 both values count; with only a surge, the surge; with neither, the default."""
    if rolling_update is None:
        return DEFAULT_BUDGET
    surge = _resolve(rolling_update.get("maxSurge", 0), target, round_up=True)
    unavailable = _resolve(rolling_update.get("maxUnavailable", 1), target, round_up=False)
    if unavailable > 0:
        return Budget(surge, unavailable)
    if surge > 0:
        return Budget(surge, 0)
    return DEFAULT_BUDGET


def total_steps(roles: Sequence[Role]) -> int:
    """Batches the whole rollout takes: the most any role needs to cover the larger of its two sides."""
    return max((-(-max(r.initial_old, r.target, 0) // r.budget.batch) for r in roles), default=0)


def _new_at(step: int, role: Role, steps: int) -> int:
    return min(-(-step * role.target // steps), role.target)


def _old_at(step: int, role: Role, steps: int) -> int:
    return max(0, role.initial_old - step * role.initial_old // steps)


def _floor_old(role: Role, new: int) -> int:
    """The fewest old replicas a role that shrinks or keeps its size may drop to while `new` are up."""
    if role.initial_old < role.target:
        return 0
    return max(0, role.target - role.budget.max_unavailable - new)


def _keep_revisions_whole(old: list[int], new: Sequence[int], roles: Sequence[Role]) -> None:
    """Orphan prevention: if some but not all roles of the old revision would reach 0, either all go (when the
    new revision already covers every shrinking role within its unavailability) or those at 0 keep one."""
    draining = [i for i, r in enumerate(roles) if r.initial_old > 0]
    at_zero = [i for i in draining if old[i] == 0]
    if not at_zero or len(at_zero) == len(draining):
        return
    covered = all(new[i] >= r.target - r.budget.max_unavailable
                  for i, r in enumerate(roles) if r.initial_old >= r.target)
    for i in range(len(old)):
        if covered:
            old[i] = 0
        elif old[i] == 0 and roles[i].initial_old > 0:
            old[i] = 1


def next_step(roles: Sequence[Role]) -> Step | None:
    """The next replicas to write for this slice's roles, or None when the rollout is done (or stuck)."""
    old_now = tuple(r.old for r in roles)
    new_now = tuple(r.new for r in roles)
    if all(r.old == 0 and r.new >= r.target for r in roles):
        return None
    steps = total_steps(roles)
    if steps == 0:
        return None
    if any(r.old > r.initial_old for r in roles):
        return Step(tuple(min(r.old, r.initial_old) for r in roles), new_now, "correction")
    if all(r.new >= r.target for r in roles):
        return Step(tuple(0 for _ in roles), new_now, "final-drain")

    position = min(steps, *(steps if r.target == 0 else r.new * steps // r.target for r in roles))
    wanted_new = tuple(max(_new_at(position + 1, r, steps), r.new) for r in roles)
    within_surge = all(r.old + n <= r.target + r.budget.max_surge for r, n in zip(roles, wanted_new, strict=True)
                       if r.target > 0)
    if wanted_new != new_now and within_surge:
        return Step(old_now, wanted_new, "scale-up")

    drained = max((r.initial_old - r.old) * steps // r.initial_old for r in roles if r.initial_old > 0) \
        if any(r.initial_old > 0 for r in roles) else 0
    proportional = [max(min(_old_at(drained + 1, r, steps), r.old), _floor_old(r, r.new)) for r in roles]
    _keep_revisions_whole(proportional, new_now, roles)
    if any(o < r.old for o, r in zip(proportional, roles, strict=True)):
        return Step(tuple(proportional), new_now, "drain")

    forced = [max(max(0, min(r.old, r.target + r.budget.max_surge - n)), _floor_old(r, n))
              for r, n in zip(roles, wanted_new, strict=True)]
    if not any(o < r.old for o, r in zip(forced, roles, strict=True)):
        return None
    _keep_revisions_whole(forced, wanted_new, roles)
    return Step(tuple(forced), wanted_new, "force-drain")


def simulate(initial_old: Sequence[int], target: Sequence[int], budgets: Sequence[Budget]) -> list[Step]:
    """Every step of a rollout whose writes all land and whose new replicas all become ready, from the start
    (old at `initial_old`, new at 0) to the end; the first entry is the start itself (kind `start`)."""
    old, new = tuple(initial_old), tuple(0 for _ in initial_old)
    out = [Step(old, new, "start")]
    for _ in range(2 * max((*initial_old, *target, 0)) + 10):
        roles = [Role(*row) for row in zip(initial_old, old, new, target, budgets, strict=True)]
        step = next_step(roles)
        if step is None:
            break
        out.append(step)
        old, new = step.old, step.new
    return out
