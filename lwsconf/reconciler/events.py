"""The events the LeaderWorkerSet controller records, with upstream's exact reasons and notes.

Events are values here (type, reason, note, action); the runtime posts them as events.k8s.io/v1 with
`regarding` = the LWS (docs/lws-contract.md section 4.6). Texts matter: upstream tests match them, e.g.
"Worker pod <pod> failed, ..." even when the failed pod is the leader (trap T17). No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass

from lwsconf import lwsapi

NORMAL = "Normal"
WARNING = "Warning"

# Reasons.
FAILED_CREATE = "FailedCreate"
FAILED_UPDATE = "FailedUpdate"
GROUPS_PROGRESSING = "GroupsProgressing"
GROUPS_UPDATING = "GroupsUpdating"
ALL_GROUPS_READY = "AllGroupsReady"
CREATING_REVISION = "CreatingRevision"
RECREATE_GROUP = "RecreateGroup"

# Actions (events.k8s.io/v1 `action`).
CREATE = "Create"
UPDATE = "Update"
DELETE = "Delete"


@dataclass(frozen=True)
class Event:
    """One event to record about the LeaderWorkerSet."""

    type: str
    reason: str
    note: str
    action: str


def creating_revision(key: str, *, cause: str) -> Event:
    """`CreatingRevision`; `cause` is "new" (first revision), "updated" (spec change) or "missing" (adoption)."""
    notes = {
        "new": f"Creating revision with key {key} for a newly created LeaderWorkerSet",
        "updated": f"Creating revision with key {key} for updated LWS",
        "missing": f"Creating missing revision with key {key} for existing LeaderWorkerSet",
    }
    if cause not in notes:
        raise ValueError(f"creating_revision: cause must be one of {sorted(notes)}, got {cause!r}")
    return Event(NORMAL, CREATING_REVISION, notes[cause], CREATE)


def created_leader_statefulset(lws_name: str) -> Event:
    return Event(NORMAL, GROUPS_PROGRESSING, f"Created leader statefulset {lws_name}", CREATE)


def failed_leader_statefulset(lws_name: str, error: str, *, creating: bool) -> Event:
    if creating:
        return Event(WARNING, FAILED_CREATE, f"Failed to create leader statefulset {lws_name}: {error}", CREATE)
    return Event(WARNING, FAILED_UPDATE, f"Failed to update leader statefulset {lws_name}: {error}", UPDATE)


def failed_headless_service(error: str) -> Event:
    return Event(WARNING, FAILED_CREATE, f"Failed to create headless service for error: {error}", CREATE)


def created_worker_statefulset(leader_pod_name: str) -> Event:
    return Event(NORMAL, GROUPS_PROGRESSING, f"Created worker statefulset for leader pod {leader_pod_name}",
                 CREATE)


def failed_worker_statefulset(leader_pod_name: str, error: str) -> Event:
    return Event(WARNING, FAILED_CREATE,
                 f"Failed to create worker statefulset for leader pod {leader_pod_name}: {error}", CREATE)


def leader_name_misuse(namespace: str, pod_name: str) -> Event:
    """The safety check of section 4.1: a leader pod carrying a `leader-name` annotation."""
    note = (f"leader pod {namespace}/{pod_name} contains mistake annotation "
            f"'{lwsapi.LEADER_NAME}': requires Kubernetes ≥v1.27 or v1.26 with "
            f"StatefulSetStartOrdinal feature")
    return Event(WARNING, FAILED_CREATE, note, CREATE)


def updating_replicas(partition: int, old_partition: int) -> Event:
    """`GroupsUpdating` when the partition moves down from `old_partition` to `partition`."""
    if old_partition - 1 == partition:
        note = f"Updating replica {partition}"
    else:
        note = f"Updating replicas {partition} to {old_partition - 1} (inclusive)"
    return Event(NORMAL, GROUPS_UPDATING, note, UPDATE)


def deleting_surge(lws_name: str, replicas: int, sts_replicas: int) -> Event:
    """`GroupsProgressing` when the leader StatefulSet shrinks from `sts_replicas` to `replicas`."""
    if replicas == sts_replicas - 1:
        note = f"deleting surge replica {lws_name}-{replicas}"
    else:
        note = f"deleting surge replicas from {lws_name}-{replicas} to {lws_name}-{sts_replicas - 1}"
    return Event(NORMAL, GROUPS_PROGRESSING, note, DELETE)


def condition_changed(reason: str, message: str, ready: int, replicas: int) -> Event:
    note = f"{message}, with {ready} groups ready of total {replicas} groups"
    return Event(NORMAL, reason, note, UPDATE)


def recreate_group(pod_name: str, leader_name: str, group_index: str) -> Event:
    note = f"Worker pod {pod_name} failed, deleted leader pod {leader_name} to recreate group {group_index}"
    return Event(NORMAL, RECREATE_GROUP, note, DELETE)
