"""How far each ReplicaSet of a rolling update may be scaled in one pass, pure (no I/O).

kubernetes/kubernetes `pkg/controller/deployment/rolling.go`: the new ReplicaSet grows first, within
replicas + maxSurge pods in total (`reconcileNewReplicaSet`, `NewRSNewReplicas`); old ReplicaSets shrink,
oldest first, while replicas - maxUnavailable pods stay available: first the old pods that are not
available at all (`cleanupUnhealthyReplicas`), then available ones (`scaleDownOldReplicaSetsForRollingUpdate`).
Counts are ReplicaSets' `spec.replicas` and `status.availableReplicas`, as upstream reads them, so a pass
never decides on pods the ReplicaSet controller has not yet reported.

Not done: proportional scaling (`scale` in sync.go) of a Deployment resized in the middle of a rollout;
here the rolling rules above absorb the change (the new ReplicaSet is capped at, or grows towards, the new
replica count, old ones shrink as availability allows), which reaches the same end state by another path.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.controllers.deployment import util as du

Obj = dict[str, Any]


def reconcile_new(deployment: Obj, all_rss: list[Obj], new_rs: Obj) -> int | None:
    """`reconcileNewReplicaSet`: the new ReplicaSet's next replica count, None when it stays."""
    want, have = du.replicas(deployment), du.replicas(new_rs)
    if have == want:
        return None
    if have > want:
        return want
    target = du.new_rs_replicas(deployment, all_rss, new_rs)
    return target if target != have else None


def reconcile_old(deployment: Obj, all_rss: list[Obj], old_rss: list[Obj], new_rs: Obj | None) -> dict[str, int]:
    """`reconcileOldReplicaSets`: old ReplicaSet name -> its next replica count, for those that shrink."""
    active_old = [rs for rs in old_rss if du.replicas(rs) > 0]
    if not active_old:
        return {}
    min_available = du.replicas(deployment) - du.max_unavailable(deployment)
    new_unavailable = (du.replicas(new_rs) - du.status_count(new_rs, "availableReplicas")) if new_rs is not None else 0
    max_scaled_down = sum(du.replicas(rs) for rs in all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return {}
    targets: dict[str, int] = {}
    cleaned = 0
    for rs in du.by_creation(active_old):  # cleanupUnhealthyReplicas
        if cleaned >= max_scaled_down:
            break
        unhealthy = du.replicas(rs) - du.status_count(rs, "availableReplicas")
        if unhealthy <= 0:
            continue
        down = min(max_scaled_down - cleaned, unhealthy)
        targets[_name(rs)] = du.replicas(rs) - down
        cleaned += down
    available = sum(du.status_count(rs, "availableReplicas") for rs in all_rss)
    budget = available - min_available  # scaleDownOldReplicaSetsForRollingUpdate
    scaled = 0
    for rs in du.by_creation(active_old):
        current = targets.get(_name(rs), du.replicas(rs))
        if scaled >= budget:
            break
        if current == 0:
            continue
        down = min(current, budget - scaled)
        targets[_name(rs)] = current - down
        scaled += down
    return {name: n for name, n in targets.items() if n != du.replicas(_by_name(active_old, name))}


def _name(rs: Obj) -> str:
    return str((rs.get("metadata") or {}).get("name"))


def _by_name(rss: list[Obj], name: str) -> Obj:
    return next(rs for rs in rss if _name(rs) == name)
