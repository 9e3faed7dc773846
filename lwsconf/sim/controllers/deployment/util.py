"""What the Deployment controller knows about a Deployment's ReplicaSets, pure (no I/O).

Behaviour of kubernetes/kubernetes `pkg/controller/deployment/util/deployment_util.go` and `sync.go`,
re-expressed over plain dicts:

* the new ReplicaSet is the oldest one whose pod template equals the Deployment's, the
  `pod-template-hash` label aside (`FindNewReplicaSet`, `EqualIgnoreHash`); all others are old;
* a new ReplicaSet is `<deployment>-<hash>`, the hash label added to its labels, selector and template,
  with the Deployment's annotations copied (but not kubectl's last-applied configuration nor the
  controller's own), and `deployment.kubernetes.io/revision` = highest old revision + 1,
  `desired-replicas` and `max-replicas` (`getNewReplicaSet`, `SetNewReplicaSetAnnotations`);
  an existing ReplicaSet taken back (a rollback) gets that next revision too, its former revision
  appended to `deployment.kubernetes.io/revision-history`;
* maxSurge/maxUnavailable resolved against replicas (`ResolveFenceposts`) and how far the new
  ReplicaSet may grow (`NewRSNewReplicas`);
* status (`calculateStatus`) and conditions (`SetDeploymentCondition`, progress.go's
  `DeploymentComplete`, `DeploymentProgressing`, `DeploymentTimedOut`).

The hash is `workloads.template_hash` (FNV-1a over canonical JSON, upstream's `ComputeHash` shape over a
Go dump): stable, but not a real cluster's value.
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf.sim.controllers.common import workloads as wl

Obj = dict[str, Any]
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_NOT_COPIED = (LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
               "deprecated.deployment.rollback.to")
"""`skipCopyAnnotation`: annotations of the Deployment that its ReplicaSets do not inherit."""
REVISION_HISTORY_LIMIT_CHARS = 2000
"""kube-controller-manager's default `--deployment-controller-...` cap on revision-history's length."""


def spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def replicas(obj: Obj) -> int:
    return int(spec(obj).get("replicas", 1))


def status_count(rs: Obj, field: str) -> int:
    return counter(rs.get("status") or {}, field)


def counter(status: Obj, field: str) -> int:
    """A status counter as a Go client reads it: absent (omitempty at 0) is 0."""
    return int(status.get(field) or 0)


def revision(rs: Obj) -> int:
    """The ReplicaSet's revision annotation as a number (0 when unset or not a number)."""
    try:
        return int((wl.meta(rs).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def by_creation(rss: list[Obj]) -> list[Obj]:
    """`ReplicaSetsByCreationTimestamp`: oldest first, ties by name."""
    return sorted(rss, key=lambda r: (wl.parse_time(wl.meta(r).get("creationTimestamp")) or 0.0,
                                      wl.meta(r).get("name") or ""))


def without_hash(template: Obj) -> Obj:
    out = copy.deepcopy(template)
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return out


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    """`EqualIgnoreHash`: two pod templates equal once the pod-template-hash label is dropped from both."""
    return without_hash(a) == without_hash(b)


def find_new(deployment: Obj, rss: list[Obj]) -> tuple[Obj | None, list[Obj]]:
    """(`FindNewReplicaSet`, `FindOldReplicaSets`): the oldest ReplicaSet with the current template, the rest."""
    template = spec(deployment).get("template") or {}
    ordered = by_creation(rss)
    new = next((rs for rs in ordered if equal_ignore_hash(spec(rs).get("template") or {}, template)), None)
    return new, [rs for rs in ordered if rs is not new]


def template_hash(deployment: Obj) -> str:
    return wl.template_hash(spec(deployment).get("template") or {},
                            (deployment.get("status") or {}).get("collisionCount"))


def fenceposts(deployment: Obj) -> tuple[int, int]:
    """`ResolveFenceposts`: (maxSurge rounded up, maxUnavailable rounded down), never both 0; Recreate (0, 0)."""
    strategy = spec(deployment).get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    total = replicas(deployment)
    surge = wl.scaled_value(rolling.get("maxSurge"), total, round_up=True, default=0)
    unavailable = wl.scaled_value(rolling.get("maxUnavailable"), total, round_up=False, default=0)
    return surge, (1 if surge == 0 and unavailable == 0 else unavailable)


def max_unavailable(deployment: Obj) -> int:
    """`MaxUnavailable`: never more than replicas; 0 for Recreate or no replicas."""
    if (spec(deployment).get("strategy") or {}).get("type") == "Recreate" or replicas(deployment) == 0:
        return 0
    return min(fenceposts(deployment)[1], replicas(deployment))


def new_rs_replicas(deployment: Obj, all_rss: list[Obj], new_rs: Obj | None) -> int:
    """`NewRSNewReplicas`: Recreate wants every replica at once; RollingUpdate grows the new ReplicaSet only
    while every ReplicaSet's replicas add up to less than replicas + maxSurge."""
    want = replicas(deployment)
    if (spec(deployment).get("strategy") or {}).get("type") == "Recreate":
        return want
    surge, _ = fenceposts(deployment)
    current = sum(replicas(rs) for rs in all_rss)
    if current >= want + surge:
        return replicas(new_rs) if new_rs is not None else 0
    have = replicas(new_rs) if new_rs is not None else 0
    return have + min(want + surge - current, max(0, want - have))


def replica_annotations(deployment: Obj) -> dict[str, str]:
    """`SetReplicasAnnotations`: desired-replicas and max-replicas (replicas + maxSurge)."""
    return {DESIRED_REPLICAS: str(replicas(deployment)),
            MAX_REPLICAS: str(replicas(deployment) + fenceposts(deployment)[0])}


def copied_annotations(deployment: Obj) -> dict[str, str]:
    return {k: v for k, v in (wl.meta(deployment).get("annotations") or {}).items() if k not in _NOT_COPIED}


def next_revision(old_rss: list[Obj]) -> int:
    """`MaxRevision(oldRSs) + 1`."""
    return max((revision(rs) for rs in old_rss), default=0) + 1


def synced_annotations(deployment: Obj, rs: Obj, new_revision: int) -> dict[str, str]:
    """The annotations `SetNewReplicaSetAnnotations` leaves on an existing new ReplicaSet: the Deployment's
    copied ones, the next revision when the ReplicaSet's is lower (its old one appended to the history, as
    a rollback records), and the replica annotations."""
    annotations = dict(wl.meta(rs).get("annotations") or {})
    annotations.update(copied_annotations(deployment))
    old = annotations.get(REVISION, "")
    if revision(rs) < new_revision:
        annotations[REVISION] = str(new_revision)
        if old:
            history = annotations.get(REVISION_HISTORY, "")
            history = f"{history},{old}" if history else old
            while len(history) > REVISION_HISTORY_LIMIT_CHARS and "," in history:
                history = history.split(",", 1)[1]
            annotations[REVISION_HISTORY] = history
    annotations.update(replica_annotations(deployment))
    return annotations


def new_replicaset(deployment: Obj, hash_: str, new_revision: int, count: int) -> Obj:
    """The ReplicaSet `getNewReplicaSet` creates: `<deployment>-<hash>`, controlled by the Deployment."""
    d_spec = spec(deployment)
    template = copy.deepcopy(d_spec.get("template") or {})
    t_meta = template.setdefault("metadata", {})
    t_meta["labels"] = {**(t_meta.get("labels") or {}), HASH_LABEL: hash_}
    selector = copy.deepcopy(d_spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: hash_}
    annotations = {**copied_annotations(deployment), REVISION: str(new_revision), **replica_annotations(deployment)}
    rs_spec: Obj = {"replicas": count, "selector": selector, "template": template}
    if d_spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = d_spec["minReadySeconds"]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{wl.meta(deployment).get('name')}-{hash_}",
                         "namespace": wl.meta(deployment).get("namespace"),
                         "labels": dict(t_meta["labels"]), "annotations": annotations,
                         "ownerReferences": [wl.new_controller_ref(deployment, "apps/v1", "Deployment")]},
            "spec": rs_spec}


# --- status and conditions -----------------------------------------------------------------------------

def calculate_status(deployment: Obj, all_rss: list[Obj], new_rs: Obj | None, now: str) -> Obj:
    """`calculateStatus`: counts summed over the ReplicaSets, Available from maxUnavailable."""
    available = sum(status_count(rs, "availableReplicas") for rs in all_rss)
    total = sum(replicas(rs) for rs in all_rss)
    old = deployment.get("status") or {}
    counts: Obj = {"observedGeneration": wl.meta(deployment).get("generation"),
                   "replicas": sum(status_count(rs, "replicas") for rs in all_rss),
                   "updatedReplicas": status_count(new_rs, "replicas") if new_rs is not None else 0,
                   "readyReplicas": sum(status_count(rs, "readyReplicas") for rs in all_rss),
                   "availableReplicas": available, "unavailableReplicas": max(0, total - available)}
    # DeploymentStatus' counters are omitempty: kube-apiserver stores and answers kube-controller-manager's zeros as
    # absent, and its field manager never owns them (held-out fidelity corpus: a Deployment whose pods are not ready
    # has no availableReplicas or readyReplicas), as the ReplicaSet controller's counters here
    out: Obj = {k: v for k, v in counts.items() if v}
    if any("terminatingReplicas" in (rs.get("status") or {}) for rs in all_rss):
        # DeploymentReplicaSetTerminatingReplicas (beta, on since 1.35): the ReplicaSets' terminating pods
        out["terminatingReplicas"] = sum(status_count(rs, "terminatingReplicas") for rs in all_rss)
    if old.get("collisionCount") is not None:
        out["collisionCount"] = old["collisionCount"]
    conditions = [dict(c) for c in old.get("conditions") or ()]
    if available >= replicas(deployment) - max_unavailable(deployment):
        set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                      "Deployment has minimum availability.", now)
    else:
        set_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                      "Deployment does not have minimum availability.", now)
    out["conditions"] = conditions
    return out


def complete(deployment: Obj, status: Obj) -> bool:
    """`DeploymentComplete`: every replica updated and available, and this generation observed."""
    want = replicas(deployment)
    return (counter(status, "updatedReplicas") == want and counter(status, "replicas") == want
            and counter(status, "availableReplicas") == want
            and (status.get("observedGeneration") or 0) >= (wl.meta(deployment).get("generation") or 0))


def progressing(deployment: Obj, status: Obj) -> bool:
    """`DeploymentProgressing`: more updated, ready or available replicas, or fewer old ones, than before."""
    old = deployment.get("status") or {}
    n = counter
    return (n(status, "updatedReplicas") > n(old, "updatedReplicas")
            or n(status, "replicas") - n(status, "updatedReplicas") < n(old, "replicas") - n(old, "updatedReplicas")
            or n(status, "readyReplicas") > n(old, "readyReplicas")
            or n(status, "availableReplicas") > n(old, "availableReplicas"))


def timed_out(deployment: Obj, status: Obj, now: float) -> bool:
    """`DeploymentTimedOut`: no progress recorded for progressDeadlineSeconds."""
    cond = condition(status, "Progressing")
    deadline = spec(deployment).get("progressDeadlineSeconds")
    if cond is None or deadline is None:
        return False
    if cond.get("reason") == "ProgressDeadlineExceeded":
        return True
    if cond.get("reason") == "NewReplicaSetAvailable":
        return False
    since = wl.parse_time(cond.get("lastUpdateTime"))
    return since is not None and since + int(deadline) < now


def progress_condition(deployment: Obj, status: Obj, new_rs: Obj | None, now: float, stamp: str) -> None:
    """`syncRolloutStatus`'s Progressing condition, set in `status`: complete, progressing, timed out."""
    cond = condition(status, "Progressing")
    if status.get("replicas") == status.get("updatedReplicas") and cond is not None \
            and cond.get("reason") == "NewReplicaSetAvailable":
        return
    conditions = status.setdefault("conditions", [])
    subject = f'ReplicaSet "{wl.meta(new_rs).get("name")}"' if new_rs is not None \
        else f'Deployment "{wl.meta(deployment).get("name")}"'
    if complete(deployment, status):
        set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                      f"{subject} has successfully progressed.", stamp)
    elif progressing(deployment, status):
        # upstream removes then sets the condition, so lastUpdateTime moves on while the transition stays
        kept = cond.get("lastTransitionTime") if cond is not None and cond.get("status") == "True" else stamp
        conditions[:] = [c for c in conditions if c.get("type") != "Progressing"]
        conditions.append({"type": "Progressing", "status": "True", "lastUpdateTime": stamp,
                           "lastTransitionTime": kept or stamp, "reason": "ReplicaSetUpdated",
                           "message": f"{subject} is progressing."})
    elif timed_out(deployment, status, now):
        set_condition(conditions, "Progressing", "False", "ProgressDeadlineExceeded",
                      f"{subject} has timed out progressing.", stamp)


def condition(status: Obj, type_: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == type_), None)


def set_condition(conditions: list[Obj], type_: str, status: str, reason: str, message: str, now: str) -> None:
    """`SetDeploymentCondition`: unchanged status and reason keep the old entry and its times."""
    for i, cond in enumerate(conditions):
        if cond.get("type") != type_:
            continue
        if cond.get("status") == status and cond.get("reason") == reason:
            return
        transition = cond.get("lastTransitionTime") if cond.get("status") == status else now
        conditions[i] = {"type": type_, "status": status, "lastUpdateTime": now,
                         "lastTransitionTime": transition or now, "reason": reason, "message": message}
        return
    conditions.append({"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
                       "reason": reason, "message": message})


def cleanable(deployment: Obj, old_rss: list[Obj]) -> list[Obj]:
    """`cleanupDeployment`: old ReplicaSets past revisionHistoryLimit, lowest revision first, that run no
    pod, are scaled to 0 and whose status caught up with their generation."""
    limit = spec(deployment).get("revisionHistoryLimit")
    if limit is None:
        return []
    alive = [rs for rs in old_rss if not wl.is_terminating(rs)]
    excess = len(alive) - int(limit)
    if excess <= 0:
        return []
    ordered = sorted(alive, key=lambda r: (revision(r), wl.parse_time(wl.meta(r).get("creationTimestamp")) or 0.0))
    return [rs for rs in ordered[:excess]
            if status_count(rs, "replicas") == 0 and replicas(rs) == 0
            and (wl.meta(rs).get("generation") or 0) <= status_count(rs, "observedGeneration")]
