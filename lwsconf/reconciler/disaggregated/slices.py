"""What one slice of a DisaggregatedSet needs next (contract 2.7, 4.1-4.3, 4.7.2, 2.3): the writes, the events,
and whether to look again soon. Pure: the set, this slice's LWS and Services as the API shows them, and each
role's target in; a `SliceDecision` out, which the runtime applies in order.

Per reconcile: delete old revisions that have fully drained; then, if an old revision still holds replicas
of a current role, take the rollout path (start it, or wait at the gate, or apply the planner's next step);
else the simple path (create each role's LWS of the current revision at its target, or set its replicas);
then the role Services. Roles, revisions and slices are found by label, never by parsing names (DT3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lwsconf import disaggapi
from lwsconf.reconciler.disaggregated import objects, planner

Obj = dict[str, Any]


@dataclass(frozen=True)
class Create:
    obj: Obj


@dataclass(frozen=True)
class SetReplicas:
    name: str
    replicas: int


@dataclass(frozen=True)
class Annotate:
    """Record an old LWS's replicas at the start of a rollout (the planner's baseline)."""

    name: str
    initial_replicas: int


@dataclass(frozen=True)
class Delete:
    kind: str
    """LeaderWorkerSet or Service."""
    name: str


Action = Create | SetReplicas | Annotate | Delete


@dataclass(frozen=True)
class Event:
    reason: str
    action: str
    note: str


@dataclass(frozen=True)
class SliceDecision:
    actions: tuple[Action, ...] = ()
    events: tuple[Event, ...] = ()
    requeue: bool = False
    """Look again soon: a rollout started, or waits for the new revision to be ready."""
    step: planner.Step | None = None
    """The rollout step applied (None off the rollout path, or while waiting)."""


@dataclass
class _Builder:
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def done(self, *, requeue: bool = False, step: planner.Step | None = None) -> SliceDecision:
        return SliceDecision(tuple(self.actions), tuple(self.events), requeue, step)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def replicas_of(lws: Mapping[str, Any]) -> int:
    """An LWS's spec.replicas (unset: 1, the LWS default)."""
    value = (lws.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _ready(lws: Mapping[str, Any]) -> int:
    return int((lws.get("status") or {}).get("readyReplicas") or 0)


def _by_revision(owned: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """revision -> role -> LWS."""
    out: dict[str, dict[str, Mapping[str, Any]]] = {}
    for lws in owned:
        labels = _labels(lws)
        out.setdefault(labels.get(disaggapi.REVISION, ""), {})[labels.get(disaggapi.ROLE, "")] = lws
    return out


def _newest_first(revisions: dict[str, dict[str, Mapping[str, Any]]]) -> list[str]:
    """Old revisions, the most recently created first (by the latest creationTimestamp among their LWS)."""
    def latest(rev: str) -> str:
        return max((o["metadata"].get("creationTimestamp") or "" for o in revisions[rev].values()), default="")
    return sorted(revisions, key=latest, reverse=True)


def decide(ds: Mapping[str, Any], slice_index: int, rev: str, targets: Mapping[str, int | None],
           owned: Sequence[Mapping[str, Any]], services: Sequence[Mapping[str, Any]]) -> SliceDecision:
    """The next writes for slice `slice_index` at revision `rev`: `targets` per role in the spec (None: an
    External role without a usable scaler, which holds its size); `owned` the slice's LWS, `services` its
    Services labelled with the set's name."""
    roles = [r["name"] for r in ds["spec"]["roles"]]
    out = _Builder()
    revisions = _by_revision(owned)
    for old in sorted(r for r in revisions if r != rev):
        members = revisions[old]
        if all(replicas_of(o) == 0 for o in members.values()):
            for lws in members.values():
                name = lws["metadata"]["name"]
                out.actions.append(Delete("LeaderWorkerSet", name))
                out.events.append(Event("LWSDeleted", "Delete", f"Deleted drained LWS {name}"))
            del revisions[old]
    olds = {r: m for r, m in revisions.items() if r != rev}
    current = revisions.get(rev, {})
    rolling = any(replicas_of(lws) > 0 for m in olds.values() for role, lws in m.items() if role in roles)
    if rolling:
        decision = _rollout(ds, slice_index, rev, roles, targets, olds, current, out)
    else:
        _simple(ds, slice_index, rev, targets, current, out)
        decision = out.done()
    _services(ds, slice_index, rev, roles, revisions, services, out)
    return SliceDecision(tuple(out.actions), tuple(out.events), decision.requeue, decision.step)


def _role_spec(ds: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    return next(r for r in ds["spec"]["roles"] if r["name"] == role)


def _simple(ds: Mapping[str, Any], slice_index: int, rev: str, targets: Mapping[str, int | None],
            current: Mapping[str, Mapping[str, Any]], out: _Builder) -> None:
    """Each role's LWS of the current revision at its target, in one write and without events (4.1, 4.3)."""
    for role in (r["name"] for r in ds["spec"]["roles"]):
        lws = current.get(role)
        want = targets.get(role)
        if lws is None:
            out.actions.append(Create(objects.build_lws(ds, _role_spec(ds, role), slice_index, rev, want or 0)))
        elif want is not None and replicas_of(lws) != want:
            out.actions.append(SetReplicas(lws["metadata"]["name"], want))


def _rollout(ds: Mapping[str, Any], slice_index: int, rev: str, roles: list[str],
             targets: Mapping[str, int | None], olds: dict[str, dict[str, Mapping[str, Any]]],
             current: Mapping[str, Mapping[str, Any]], out: _Builder) -> SliceDecision:
    if not current:  # start (4.7.2, 1): baselines on every old LWS, the new ones at 0
        out.events.append(Event("RollingUpdateStarted", "Update", f"Started rolling update to revision {rev}"))
        for members in olds.values():
            for lws in members.values():
                out.actions.append(Annotate(lws["metadata"]["name"], replicas_of(lws)))
        for role in roles:
            out.actions.append(Create(objects.build_lws(ds, _role_spec(ds, role), slice_index, rev, 0)))
        return out.done(requeue=True)
    if not all(role in current and replicas_of(current[role]) == _ready(current[role]) for role in roles):
        return out.done(requeue=True)  # the gate (4.7.2, 2): the new revision's last step is not ready yet
    removed = sorted({role for m in olds.values() for role in m} - set(roles))
    everyone = roles + removed
    plan_roles = [_planned(ds, role, role in roles, targets, olds, current) for role in everyone]
    step = planner.next_step(plan_roles)
    if step is None:
        out.events.append(Event("RollingUpdateCompleted", "Update", f"Completed rolling update to revision {rev}"))
        return out.done()
    for role, before, after in zip(everyone, (r.new for r in plan_roles), step.new, strict=True):
        if after > before:
            name = current[role]["metadata"]["name"]
            out.actions.append(SetReplicas(name, after))
            out.events.append(Event("ScalingUp", "Update",
                                    f"Scaling up {role} LWS {name} from {before} to {after} replicas"))
    _drain(everyone, [r.old for r in plan_roles], list(step.old), olds, out)
    return out.done(step=step)


def _planned(ds: Mapping[str, Any], role: str, in_spec: bool, targets: Mapping[str, int | None],
             olds: dict[str, dict[str, Mapping[str, Any]]], current: Mapping[str, Mapping[str, Any]]) -> planner.Role:
    """A role as the planner sees it (4.7.2, 3)."""
    mine = [m[role] for m in olds.values() if role in m]
    initial = sum(int(o["metadata"].get("annotations", {}).get(disaggapi.INITIAL_REPLICAS, replicas_of(o)))
                  for o in mine)
    old = sum(replicas_of(o) for o in mine)
    new = replicas_of(current[role]) if in_spec and role in current else 0
    if not in_spec:
        return planner.Role(initial, old, new, 0)
    spec = _role_spec(ds, role)
    wanted = targets.get(role)
    target = new if wanted is None else wanted
    if objects.is_external(spec) and target < new:  # an autoscaler never shrinks the new revision mid-rollout
        target = new
    strategy = ((spec.get("spec") or {}).get("rolloutStrategy") or {}).get("rollingUpdateConfiguration")
    return planner.Role(initial, old, new, target, planner.budget(strategy, wanted or 0))


def _drain(roles: list[str], before: list[int], after: list[int], olds: dict[str, dict[str, Mapping[str, Any]]],
           out: _Builder) -> None:
    """Lower the old revisions to the step's totals, newest revision first; a revision in which one role
    reaches 0 goes to 0 in every role in the same pass (4.7.2, 4: coordinated drain)."""
    budget = [b - a for b, a in zip(before, after, strict=True)]
    for rev in _newest_first(olds):
        if not any(budget):
            return
        members = olds[rev]
        planned = {role: min(budget[i], replicas_of(members[role])) for i, role in enumerate(roles) if role in members}
        left = {role: replicas_of(members[role]) - drop for role, drop in planned.items()}
        emptied = {role for role, n in left.items() if n == 0}
        if emptied:
            left = dict.fromkeys(left, 0)
        for i, role in enumerate(roles):
            if role not in members or replicas_of(members[role]) <= left[role]:
                continue
            name = members[role]["metadata"]["name"]
            out.actions.append(SetReplicas(name, left[role]))
            out.events.append(Event("ScalingDown", "Update", f"Scaling down {role} LWS {name} from "
                                                             f"{replicas_of(members[role])} to {left[role]} replicas"))
            if role in emptied or not emptied:
                budget[i] -= planned[role]


def _ready_on_all(revision: Mapping[str, Mapping[str, Any]], roles: Sequence[str]) -> bool:
    return all(role in revision and _ready(revision[role]) >= 1 for role in roles)


def _services(ds: Mapping[str, Any], slice_index: int, rev: str, roles: list[str],
              revisions: Mapping[str, Mapping[str, Mapping[str, Any]]], services: Sequence[Mapping[str, Any]],
              out: _Builder) -> None:
    """Once the current revision has a ready group in every role: its role Services, and the Services of
    revisions that are neither current nor ready on every role go (2.3)."""
    if not _ready_on_all(revisions.get(rev, {}), roles):
        return
    have = {s["metadata"]["name"] for s in services}
    for role in roles:
        svc = objects.build_service(ds, role, slice_index, rev)
        if svc["metadata"]["name"] not in have:
            out.actions.append(Create(svc))
    for existing in services:
        svc_rev = _labels(existing).get(disaggapi.REVISION, "")
        if svc_rev != rev and not _ready_on_all(revisions.get(svc_rev, {}), roles):
            out.actions.append(Delete("Service", existing["metadata"]["name"]))
