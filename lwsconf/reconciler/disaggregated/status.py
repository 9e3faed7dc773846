"""A DisaggregatedSet's status (contract 1.4 and 4.8, as upstream's main writes it): per-role sums over every
LWS the set owns, and the Available/Progressing pair. Pure.

Why the pair behaves unlike LWS's conditions (trap DT8): when one turns True the other, if True, turns False
wearing the new True condition's reason and message, and keeps that wording while it stays False.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lwsconf import disaggapi

Obj = dict[str, Any]


@dataclass(frozen=True)
class RoleStatus:
    name: str
    replicas: int
    ready: int
    updated: int
    desired: int | None
    """target × slices; None for an External role without a usable scaler (never satisfied)."""

    @property
    def satisfied(self) -> bool:
        return self.desired is not None and self.replicas == self.ready == self.updated == self.desired

    def to_api(self) -> Obj:
        """roleStatuses[] entry; zero counts are left out (omitempty, trap DT9)."""
        out: Obj = {"name": self.name}
        for key, value in (("replicas", self.replicas), ("readyReplicas", self.ready),
                           ("updatedReplicas", self.updated)):
            if value:
                out[key] = value
        return out


def _count(lws: Mapping[str, Any], key: str) -> int:
    return int((lws.get("status") or {}).get(key) or 0)


def role_statuses(roles: Sequence[str], owned: Sequence[Mapping[str, Any]], rev: str,
                  desired: Mapping[str, int | None]) -> list[RoleStatus]:
    """One entry per role in the spec (in spec order) over `owned`, every LWS of the set (all slices and
    revisions); `updated` counts the current revision's LWS only."""
    out = []
    for role in roles:
        mine = [o for o in owned if (o.get("metadata", {}).get("labels") or {}).get(disaggapi.ROLE) == role]
        current = [o for o in mine if o["metadata"]["labels"].get(disaggapi.REVISION) == rev]
        out.append(RoleStatus(role, sum(_count(o, "replicas") for o in mine),
                              sum(_count(o, "readyReplicas") for o in mine),
                              sum(_count(o, "updatedReplicas") for o in current), desired.get(role)))
    return out


def conditions(existing: Sequence[Mapping[str, Any]], available: bool, generation: int, now: str) -> list[Obj]:
    """The set's conditions after this reconcile: Available or Progressing True (4.8's table), the other as the
    rules say, any other condition type untouched."""
    if available:
        true_type, other = disaggapi.AVAILABLE, disaggapi.PROGRESSING
        reason, message = disaggapi.REASON_ALL_READY, disaggapi.MESSAGE_ALL_READY
    else:
        true_type, other = disaggapi.PROGRESSING, disaggapi.AVAILABLE
        reason, message = disaggapi.REASON_IN_PROGRESS, disaggapi.MESSAGE_IN_PROGRESS
    out: list[Obj] = []
    seen_true = False
    for cond in existing:
        updated = dict(cond)
        if cond.get("type") == true_type:
            seen_true = True
            if cond.get("status") != "True":
                updated["lastTransitionTime"] = now
            updated.update(status="True", reason=reason, message=message, observedGeneration=generation)
        elif cond.get("type") == other:
            if cond.get("status") == "True":  # flips, wearing the new True condition's words
                updated.update(status="False", reason=reason, message=message, lastTransitionTime=now)
            updated["observedGeneration"] = generation
        out.append(updated)
    if not seen_true:
        out.append({"type": true_type, "status": "True", "reason": reason, "message": message,
                    "observedGeneration": generation, "lastTransitionTime": now})
    return out
