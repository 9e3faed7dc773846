"""What one leader pod's group needs next: its per-group Service and its worker StatefulSet.

This is the decision half of upstream's pod reconciler for leader pods (docs/lws-contract.md section 4.1),
in its order: the leader-name safety check, skip a terminating leader, the `UniquePerReplica` Service
(before any gate, also for size 1) and with gang scheduling the Volcano PodGroup (`gang`), nothing more for
size 1, the `LeaderReady` gate, the leader's revision must exist, exclusive placement needs a scheduled
leader on a node carrying the topology label.
The runtime creates what the plan returns when it does not exist yet (all are create-once) and
records `created_worker_statefulset` after a successful create. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lwsconf.reconciler import desired, events, gang, labels, pods, revision, spec

Obj = dict[str, Any]


@dataclass(frozen=True)
class GroupPlan:
    """Objects to create if absent, and why the plan stops where it does."""

    service: Obj | None = None
    """The per-group headless Service (UniquePerReplica only)."""
    pod_group: Obj | None = None
    """The group's Volcano PodGroup (gang scheduling only; `gang`)."""
    worker_statefulset: Obj | None = None
    wait: str | None = None
    """Nothing more to do until the leader pod changes (not ready yet, not scheduled yet, terminating)."""
    retry: str | None = None
    """A missing input that will appear on its own: requeue (revision not created yet, node label missing)."""
    event: events.Event | None = None


def plan(lws: Mapping[str, Any], leader_pod: Mapping[str, Any], *, revisions: Sequence[Mapping[str, Any]],
         node: Mapping[str, Any] | None, gang_scheduling: bool = False) -> GroupPlan:
    """Plan the group of `leader_pod`.

    Args:
        lws: the live LeaderWorkerSet.
        leader_pod: a pod of this LWS with `worker-index: "0"`.
        revisions: the LWS's owned ControllerRevisions.
        node: the Node named by the leader's `spec.nodeName` (only read under exclusive placement; None
            when the pod is unscheduled or the node was not found).
        gang_scheduling: plan the group's PodGroup too (after the Service, before every gate, as upstream's
            pod_controller.go:130-135).
    """
    planned = _plan(lws, leader_pod, revisions=revisions, node=node)
    stopped_early = bool(((leader_pod.get("metadata") or {}).get("annotations") or {}).get(labels.LEADER_NAME)
                         or pods.is_deleting(leader_pod))
    if not gang_scheduling or stopped_early:
        return planned
    return replace(planned, pod_group=gang.pod_group(lws, leader_pod))


def _plan(lws: Mapping[str, Any], leader_pod: Mapping[str, Any], *, revisions: Sequence[Mapping[str, Any]],
          node: Mapping[str, Any] | None) -> GroupPlan:
    view = spec.LwsSpec.of(lws)
    meta = leader_pod.get("metadata") or {}
    name = str(meta.get("name", ""))
    if (meta.get("annotations") or {}).get(labels.LEADER_NAME):
        return GroupPlan(wait="leader pod carries a leader-name annotation",
                         event=events.leader_name_misuse(str(meta.get("namespace", "")), name))
    if pods.is_deleting(leader_pod):
        return GroupPlan(wait="leader pod is being deleted")
    service = desired.group_service(lws, leader_pod)
    if view.size == 1:
        return GroupPlan(service=service)
    if view.startup_policy == spec.LEADER_READY and not pods.is_ready(leader_pod):
        return GroupPlan(service=service, wait="startupPolicy LeaderReady: leader pod is not Ready yet")
    group_revision = revision.find(revisions, revision.key_of(leader_pod))
    if group_revision is None:
        return GroupPlan(service=service, retry=f"no ControllerRevision with key {revision.key_of(leader_pod)!r} yet")
    topology = view.exclusive_topology
    value = None
    if topology:
        node_name = (leader_pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return GroupPlan(service=service, wait=f"exclusive placement: leader pod {name} is not scheduled yet")
        value = (((node or {}).get("metadata") or {}).get("labels") or {}).get(topology)
        if value is None:
            return GroupPlan(service=service, retry=f"exclusive placement: node {node_name!r} is missing or has "
                                                    f"no {topology!r} label")
    sts = desired.worker_statefulset(lws, leader_pod, group_revision, topology_value=value)
    return GroupPlan(service=service, worker_statefulset=sts)
