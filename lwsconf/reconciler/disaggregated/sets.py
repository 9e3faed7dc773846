"""What a whole DisaggregatedSet needs next (contract 2.4, 2.7, 4.4, 4.6, 4.8): removed slices deleted, role
scalers made, refused or deleted, each slice decided (`slices`), the scalers' and the set's status. Pure.

Legacy slice-0 objects (v0.9.0's slice-less names, 4.4) are not adopted: the reference never made any, and an
upgrade from upstream's v0.9.0 manager to the reference is not a supported path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lwsconf import disaggapi
from lwsconf.reconciler.disaggregated import objects, slices, status

Obj = dict[str, Any]


@dataclass(frozen=True)
class StatusWrite:
    """A /status merge patch: of the set (`kind` DisaggregatedSet) or of one of its scalers."""

    kind: str
    name: str
    status: Obj


@dataclass(frozen=True)
class SetDecision:
    actions: tuple[slices.Action | StatusWrite, ...]
    events: tuple[tuple[str, slices.Event], ...]
    """(type Normal or Warning, event)."""
    requeue: bool


def _slice_of(obj: Mapping[str, Any]) -> int:
    """The slice label; an object without one (v0.9.0's) counts as slice 0."""
    raw = (obj.get("metadata", {}).get("labels") or {}).get(disaggapi.SLICE, "0")
    return int(raw) if str(raw).isdigit() else 0


def decide(ds: Mapping[str, Any], owned: Sequence[Mapping[str, Any]], services: Sequence[Mapping[str, Any]],
           scalers: Mapping[str, Mapping[str, Any]], now: str) -> SetDecision:
    """The next writes for the set: `owned` every LWS it controls, `services` the Services labelled with its
    name, `scalers` the scaler objects by name (its own or not: a foreign one is refused, not adopted)."""
    name, uid = ds["metadata"]["name"], ds["metadata"]["uid"]
    roles = list(ds["spec"]["roles"])
    rev = objects.revision(roles)
    count = int(ds["spec"].get("slices") or 1)
    actions: list[slices.Action | StatusWrite] = []
    events: list[tuple[str, slices.Event]] = []
    for lws in owned:
        if _slice_of(lws) >= count and disaggapi.SLICE in lws["metadata"].get("labels", {}):
            actions.append(slices.Delete("LeaderWorkerSet", lws["metadata"]["name"]))
            events.append(("Normal", slices.Event("LWSDeleted", "Delete", f"Deleted LWS {lws['metadata']['name']} "
                                                                         f"for removed slice {_slice_of(lws)}")))
    for svc in services:
        if _slice_of(svc) >= count and disaggapi.SLICE in svc["metadata"].get("labels", {}):
            actions.append(slices.Delete("Service", svc["metadata"]["name"]))

    targets: dict[str, int | None] = {}
    for role in roles:
        role_name = role["name"]
        scaler = scalers.get(objects.scaler_name(name, role_name))
        if not objects.is_external(role):
            targets[role_name] = objects.target(role, None)
            if scaler is not None and objects.controlled_by(scaler, uid):
                actions.append(slices.Delete(disaggapi.SCALER_KIND, scaler["metadata"]["name"]))
                events.append(("Normal", slices.Event("ScalerDeleted", "Delete", f"Deleted scaler "
                               f"{scaler['metadata']['name']} (role {role_name} is no longer External)")))
            continue
        if scaler is None:
            mine = [o for o in owned if o["metadata"].get("labels", {}).get(disaggapi.ROLE) == role_name]
            made = objects.build_scaler(ds, role_name, objects.seed_replicas(mine))
            actions.append(slices.Create(made))
            events.append(("Normal", slices.Event("ScalerCreated", "Create", f"Created scaler "
                                                  f"{made['metadata']['name']} for role {role_name}")))
            targets[role_name] = made["spec"]["replicas"]
        elif not objects.controlled_by(scaler, uid):
            events.append(("Warning", slices.Event("ScalerConflict", "Conflict", f"Scaler "
                           f"{scaler['metadata']['name']} exists but is not controlled by this DisaggregatedSet; "
                           "not adopting")))
            targets[role_name] = None
        else:
            targets[role_name] = objects.target(role, scaler)
    in_spec = {r["name"] for r in roles}
    for scaler_name, scaler in scalers.items():
        role_name = (scaler["metadata"].get("labels") or {}).get(disaggapi.ROLE, "")
        if role_name not in in_spec and objects.controlled_by(scaler, uid):
            actions.append(slices.Delete(disaggapi.SCALER_KIND, scaler_name))
            events.append(("Normal", slices.Event("ScalerDeleted", "Delete", f"Deleted scaler {scaler_name} (role "
                                                                             f"{role_name} is no longer External)")))

    requeue = False
    for index in range(count):
        decision = slices.decide(ds, index, rev, targets, [o for o in owned if _slice_of(o) == index],
                                 [s for s in services if _slice_of(s) == index])
        actions += decision.actions
        events += [("Normal", e) for e in decision.events]
        requeue = requeue or decision.requeue

    for role in roles:
        scaler = scalers.get(objects.scaler_name(name, role["name"]))
        if objects.is_external(role) and scaler is not None and objects.controlled_by(scaler, uid):
            actions.append(StatusWrite(disaggapi.SCALER_KIND, scaler["metadata"]["name"],
                                       scaler_status(scaler, role["name"], name, owned, now)))
    actions.append(StatusWrite(disaggapi.KIND, name, set_status(ds, owned, rev, targets, count, now)))
    return SetDecision(tuple(actions), tuple(events), requeue)


def scaler_status(scaler: Mapping[str, Any], role: str, ds_name: str, owned: Sequence[Mapping[str, Any]],
                  now: str) -> Obj:
    """Groups of every LWS of the role, the leaders-only selector, and Ready True Bound (2.4, DT18)."""
    generation = int(scaler["metadata"].get("generation") or 1)
    replicas = sum(int((o.get("status") or {}).get("replicas") or 0) for o in owned
                   if o["metadata"].get("labels", {}).get(disaggapi.ROLE) == role)
    old = {c["type"]: c for c in (scaler.get("status") or {}).get("conditions") or []}
    since = old.get(disaggapi.SCALER_READY, {}).get("lastTransitionTime") \
        if old.get(disaggapi.SCALER_READY, {}).get("status") == "True" else now
    out: Obj = {"selector": objects.scaler_selector(ds_name, role), "observedGeneration": generation,
                "conditions": [{"type": disaggapi.SCALER_READY, "status": "True",
                                "reason": disaggapi.SCALER_REASON_BOUND, "message": disaggapi.SCALER_MESSAGE_BOUND,
                                "observedGeneration": generation, "lastTransitionTime": since or now}]}
    if replicas:
        out["replicas"] = replicas
    return out


def set_status(ds: Mapping[str, Any], owned: Sequence[Mapping[str, Any]], rev: str,
               targets: Mapping[str, int | None], count: int, now: str) -> Obj:
    """roleStatuses, observedGeneration and the Available/Progressing pair (4.8)."""
    generation = int(ds["metadata"].get("generation") or 1)
    desired = {role: (None if t is None else t * count) for role, t in targets.items()}
    rows = status.role_statuses([r["name"] for r in ds["spec"]["roles"]], owned, rev, desired)
    available = all(row.satisfied for row in rows)
    existing = (ds.get("status") or {}).get("conditions") or []
    return {"observedGeneration": generation, "roleStatuses": [row.to_api() for row in rows],
            "conditions": status.conditions(existing, available, generation, now)}
