"""A PodDisruptionBudget's DisruptionAllowed condition, as pdbhelper.UpdateDisruptionAllowedCondition sets it.

Why a module of its own: two writers set it, the API server's eviction (when it spends the last allowed
disruption) and the disruption controller (on every status sync), and controllers may not import the API
server. Pure.
"""

from __future__ import annotations

from typing import Any

CONDITION = "DisruptionAllowed"
Obj = dict[str, Any]


def set_condition(conditions: list[Obj], allowed: bool, now: str, generation: int) -> list[Obj]:
    """`conditions` with DisruptionAllowed replaced: SufficientPods / InsufficientPods, and a transition time
    that moves only when the status flips."""
    status = "True" if allowed else "False"
    old = next((c for c in conditions if c.get("type") == CONDITION), None)
    since = old.get("lastTransitionTime") if old is not None and old.get("status") == status else now
    new = {"type": CONDITION, "status": status, "observedGeneration": generation,
           "lastTransitionTime": since, "reason": "SufficientPods" if allowed else "InsufficientPods",
           "message": ""}
    return [c for c in conditions if c.get("type") != CONDITION] + [new]
