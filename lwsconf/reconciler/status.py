"""LeaderWorkerSet status: counters, conditions, observedGeneration, hpaPodSelector, condition events.

Section 4.5 of docs/lws-contract.md, as upstream computes it:

* Counters come from leader pods (`{name: N, worker-index: "0"}`); with size > 1 a leader whose worker
  StatefulSet does not exist is skipped entirely (trap T10). Surge groups count (trap T7).
* Exactly one case applies: UpdateInProgress+Progressing, else Available, else Progressing. Setting a
  condition True flips its exclusive partner (Available <-> Progressing, Available <-> UpdateInProgress)
  to False; a condition turning False keeps its True-time reason and message (trap T8); every
  condition's observedGeneration follows metadata.generation.
* A change of conditions records one event named after the first condition of the case.

Unlike upstream, all conditions of the case are set in one pass (upstream's `a || setCondition(b)`
short-circuit sets Progressing one reconcile after UpdateInProgress). No I/O here; `now` is an RFC 3339
timestamp supplied by the caller.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lwsconf.reconciler import events, labels, pods, rollout, spec

Obj = dict[str, Any]

AVAILABLE = "Available"
PROGRESSING = "Progressing"
UPDATE_IN_PROGRESS = "UpdateInProgress"
_TEXT = {
    AVAILABLE: ("AllGroupsReady", "All replicas are ready"),
    PROGRESSING: ("GroupsProgressing", "Replicas are progressing"),
    UPDATE_IN_PROGRESS: ("GroupsUpdating", "Rolling Upgrade is in progress"),
}
_EXCLUSIVE = {frozenset({AVAILABLE, PROGRESSING}), frozenset({AVAILABLE, UPDATE_IN_PROGRESS})}


@dataclass(frozen=True)
class GroupObservation:
    """A leader pod that counts for status: its group index and whether the group is ready/updated."""

    index: int
    ready: bool
    updated: bool


def observe_groups(lws_name: str, *, size: int, current_key: str, leader_pods: Iterable[Mapping[str, Any]],
                   worker_statefulsets: Mapping[str, Mapping[str, Any]]) -> list[GroupObservation]:
    """Observations for every leader pod with a known index; skips those lacking a worker StatefulSet (size > 1).

    Args:
        worker_statefulsets: StatefulSets of the namespace by name (the worker StatefulSet is named like its leader).
    """
    out = []
    for pod in leader_pods:
        index = pods.group_index(pod, lws_name)
        if index is None:
            continue
        name = str((pod.get("metadata") or {}).get("name", ""))
        sts = worker_statefulsets.get(name)
        if size > 1 and sts is None:
            continue
        ready = pods.running_and_ready(pod) and (size == 1 or rollout.statefulset_ready(sts or {}))
        updated = _key(pod) == current_key and (size == 1 or _key(sts or {}) == current_key)
        out.append(GroupObservation(index, ready, updated))
    return out


def _key(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(labels.TEMPLATE_REVISION_HASH, ""))


@dataclass(frozen=True)
class Counts:
    ready: int
    updated: int
    in_scope: int
    """Groups with partition <= i < replicas (they must reach the current revision)."""
    in_scope_updated: int
    ready_below_replicas: int
    in_scope_done: int
    """In-scope groups that are ready and updated."""


def count(groups: Sequence[GroupObservation], *, replicas: int, partition: int) -> Counts:
    below = [g for g in groups if g.index < replicas]
    scope = [g for g in below if g.index >= partition]
    return Counts(
        ready=sum(g.ready for g in groups), updated=sum(g.updated for g in groups), in_scope=len(scope),
        in_scope_updated=sum(g.updated for g in scope), ready_below_replicas=sum(g.ready for g in below),
        in_scope_done=sum(g.ready and g.updated for g in scope))


def true_conditions(counts: Counts, replicas: int) -> tuple[str, ...]:
    """The condition types to set True, first one naming the event (section 4.5 table)."""
    if counts.in_scope_updated < counts.in_scope:
        return UPDATE_IN_PROGRESS, PROGRESSING
    if counts.ready_below_replicas == replicas and counts.in_scope_done == counts.in_scope:
        return (AVAILABLE,)
    return (PROGRESSING,)


def make_condition(kind: str, generation: int, now: str) -> Obj:
    reason, message = _TEXT[kind]
    return {"type": kind, "status": "True", "observedGeneration": generation, "lastTransitionTime": now,
            "reason": reason, "message": message}


def set_conditions(existing: Sequence[Mapping[str, Any]], kinds: Sequence[str], *, generation: int,
                   now: str) -> tuple[list[Obj], bool]:
    """Apply upstream's setCondition for each True kind, then align observedGeneration; returns
    (conditions, changed)."""
    conditions = [copy.deepcopy(dict(c)) for c in existing]
    changed = False
    for kind in kinds:
        found = False
        for i, cond in enumerate(conditions):
            if cond.get("type") == kind:
                found = True
                if cond.get("status") != "True" or cond.get("observedGeneration") != generation:
                    conditions[i] = make_condition(kind, generation, now)
                    changed = True
            elif frozenset({cond.get("type"), kind}) in _EXCLUSIVE and cond.get("status") == "True":
                cond.update(status="False", lastTransitionTime=now, observedGeneration=generation)
                changed = True
        if not found:
            conditions.append(make_condition(kind, generation, now))
            changed = True
    for cond in conditions:
        if cond.get("observedGeneration") != generation:
            cond["observedGeneration"] = generation
            changed = True
    return conditions, changed


def hpa_pod_selector(lws_name: str) -> str:
    """`name=<N>,worker-index=0` with full keys, sorted: selects leader pods only (trap T25)."""
    return f"{labels.NAME}={lws_name},{labels.WORKER_INDEX}=0"


@dataclass(frozen=True)
class StatusResult:
    status: Obj
    changed: bool
    """Whether `status` differs from the object's and must be written."""
    events: tuple[events.Event, ...]
    update_done: bool
    """partition == 0 and every index below replicas is updated and ready: old revisions may go (section 2.5)."""


def compute(lws: Mapping[str, Any], *, leader_sts_replicas: int, groups: Sequence[GroupObservation],
            now: str) -> StatusResult:
    """The LWS status for this reconcile.

    Args:
        lws: the LeaderWorkerSet (its current status is the starting point).
        leader_sts_replicas: the leader StatefulSet's `status.replicas`.
        groups: see `observe_groups`.
        now: the time to stamp on conditions that change.
    """
    view = spec.LwsSpec.of(lws)
    old = dict(lws.get("status") or {})
    counts = count(groups, replicas=view.replicas, partition=view.partition)
    kinds = true_conditions(counts, view.replicas)
    conditions, conditions_changed = set_conditions(old.get("conditions") or [], kinds,
                                                    generation=view.generation, now=now)
    new = {**old, "replicas": leader_sts_replicas, "readyReplicas": counts.ready,
           "updatedReplicas": counts.updated, "observedGeneration": view.generation, "conditions": conditions}
    if not old.get("hpaPodSelector"):
        new["hpaPodSelector"] = hpa_pod_selector(view.name)
    found: tuple[events.Event, ...] = ()
    if conditions_changed:
        reason, message = _TEXT[kinds[0]]
        found = (events.condition_changed(reason, message, counts.ready, view.replicas),)
    changed = conditions_changed or any(old.get(k) != new[k] for k in
                                        ("replicas", "readyReplicas", "updatedReplicas", "observedGeneration",
                                         "hpaPodSelector"))
    done = view.partition == 0 and counts.in_scope_done == view.replicas
    return StatusResult(new, changed, found, done)

