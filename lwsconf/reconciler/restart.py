"""Group recreation on failure (`restartPolicy`, docs/lws-contract.md section 4.2) as a pure decision.

For a pod event of an LWS, `decide` says whether to delete the group's leader (with
`propagationPolicy: Foreground`; the garbage collector and the StatefulSet controller do the rest) and
what event to record. Order and rules follow upstream: policy gate, trigger predicate (traps T16, T17),
the "still starting" check for RecreateGroupAfterStart (or the experimental annotation), then the leader
lookup with its stale-group guards (revision key, controlling StatefulSet UID). The runtime supplies the
pods of the group, the leader and the worker's controlling StatefulSet it looked up. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lwsconf.reconciler import events, names, pods, revision, spec

Action = Literal["none", "leader-deleting", "delete-leader"]


@dataclass(frozen=True)
class RestartDecision:
    """`delete-leader`: delete `leader_name` (uid precondition `leader_uid`) and record `event`.

    `leader-deleting`: the leader already has a deletionTimestamp; the pod reconcile stops here (upstream
    reports the leader as deleted). `none`: carry on; `reason` says why nothing was done.
    """

    action: Action
    reason: str
    leader_name: str | None = None
    leader_uid: str | None = None
    event: events.Event | None = None


def _none(reason: str) -> RestartDecision:
    return RestartDecision("none", reason)


def group_still_starting(group_pods: Sequence[Mapping[str, Any]], size: int) -> bool:
    """Fewer or more than `size` pods in the group, or any of them Pending (the triggering pod counts too)."""
    if len(group_pods) != size:
        return True
    return any((p.get("status") or {}).get("phase") == "Pending" for p in group_pods)


def worker_belongs_to_leader(worker: Mapping[str, Any], leader: Mapping[str, Any],
                             controlling_sts: Mapping[str, Any] | None) -> bool:
    """Whether `worker` is of the leader's current group (upstream's workerPodBelongsToLeader).

    Args:
        controlling_sts: the StatefulSet named by the worker's controller ownerReference, as fetched now
            (None when it does not exist or the worker is not controlled by a StatefulSet).
    """
    lmeta = leader.get("metadata") or {}
    owner = _controller(worker)
    if owner is None:
        return False
    if owner.get("kind") == "Pod":
        return owner.get("name") == lmeta.get("name") and owner.get("uid") == lmeta.get("uid")
    if owner.get("kind") != "StatefulSet" or controlling_sts is None:
        return False
    if (controlling_sts.get("metadata") or {}).get("uid") != owner.get("uid"):
        return False
    sts_owner = _controller(controlling_sts)
    return bool(sts_owner is not None and sts_owner.get("kind") == "Pod"
                and sts_owner.get("name") == lmeta.get("name") and sts_owner.get("uid") == lmeta.get("uid"))


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return next((r for r in refs if r.get("controller")), None)


def _leader_of_worker(pod: Mapping[str, Any], leader: Mapping[str, Any] | None,
                      controlling_sts: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, str]:
    """The worker's leader when the worker is of its current group, else (None, why)."""
    parsed = names.parent_and_ordinal(str((pod.get("metadata") or {}).get("name", "")))
    if parsed is None:
        return None, "the pod name has no '-<ordinal>' suffix; cannot find its leader"
    if leader is None:
        return None, f"leader pod {parsed[0]} does not exist (its group is being deleted)"
    if revision.key_of(leader) != revision.key_of(pod):
        return None, "worker is of another revision than its leader (the group is being replaced)"
    if not worker_belongs_to_leader(pod, leader, controlling_sts):
        return None, "worker belongs to a previous incarnation of the group"
    return leader, ""


def decide(lws: Mapping[str, Any], pod: Mapping[str, Any], *, group_pods: Sequence[Mapping[str, Any]],
           leader: Mapping[str, Any] | None, controlling_sts: Mapping[str, Any] | None) -> RestartDecision:
    """Decide group recreation for an event on `pod` (a leader or worker of `lws`).

    Args:
        lws: the live LeaderWorkerSet.
        pod: the pod the event is about.
        group_pods: the pods of its group (`pods.in_group`), the triggering pod included.
        leader: for a worker, the pod named by stripping its last `-<digits>` (None if absent); ignored
            for a leader.
        controlling_sts: for a worker, the StatefulSet its controller ownerReference names (None if absent).
    """
    view = spec.LwsSpec.of(lws)
    if not view.recreates_groups:
        return _none(f"restartPolicy {view.restart_policy} does not recreate groups")
    if not pods.restart_observed(pod):
        return _none("no container restart or deletion observed")
    if view.waits_for_group_start and group_still_starting(group_pods, view.size):
        return _none("group is still starting (a pod is Pending or missing)")
    meta = pod.get("metadata") or {}
    target, why_not = (pod, "") if pods.is_leader(pod) else _leader_of_worker(pod, leader, controlling_sts)
    if target is None:
        return _none(why_not)
    tmeta = target.get("metadata") or {}
    if pods.is_deleting(target):
        return RestartDecision("leader-deleting", "leader pod is already being deleted", str(tmeta.get("name")),
                               str(tmeta.get("uid", "")))
    derived = pods.group_index(target, view.name)  # the group-index label, or the leader's name ordinal
    index = "" if derived is None else str(derived)
    event = events.recreate_group(str(meta.get("name", "")), str(tmeta.get("name", "")), index)
    return RestartDecision("delete-leader", "restart observed; recreating the group", str(tmeta.get("name")),
                           str(tmeta.get("uid", "")), event)
