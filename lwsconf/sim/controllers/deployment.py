"""The Deployment controller: enough of kube-controller-manager's to run a controller Deployment.

**Departure from Kubernetes: there are no ReplicaSet objects.** The sim does not serve
`replicasets.apps`, so this controller does both jobs at once: it owns the pods directly (controller
reference to the Deployment) and keeps each template revision apart by the `pod-template-hash`
label, exactly as a ReplicaSet `<deployment>-<hash>` would. Pods are named like a ReplicaSet's,
`<deployment>-<pod-template-hash>-<5 random>` (generateName, the server picks the suffix). The hash
is an FNV-1a hash of the template in `controller.ComputeHash`'s shape but over canonical JSON, so its
value differs from a real cluster's.

What it does, per Deployment (kubernetes/kubernetes `pkg/controller/deployment/rolling.go`,
`recreate.go` and `sync.go`, with the ReplicaSet controller's pod handling folded in):

* pods that are not active (Failed, Succeeded or being deleted) do not count and are replaced;
* no old pods: create or delete pods until `spec.replicas` are active (scale-down deletes
  unscheduled, then pending, then not-ready, then the newest pods first, like `ActivePods`);
* `RollingUpdate` with old pods: first scale the new template up to `replicas + maxSurge` pods in
  total; on a later pass delete old pods - unhealthy ones first - as long as
  `replicas - maxUnavailable` pods stay available (maxSurge rounds up, maxUnavailable down, and both
  0 means maxUnavailable 1, as `ResolveFenceposts` does);
* `Recreate`: delete every old pod, wait until they are gone, then create the new ones;
* a paused Deployment gets its status updated and nothing else (simplified);
* status: `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas` (minReadySeconds),
  `unavailableReplicas`, `observedGeneration`, and the `Available` (MinimumReplicasAvailable /
  MinimumReplicasUnavailable) and `Progressing` (NewReplicaSetAvailable / ReplicaSetUpdated)
  conditions, whose messages name the would-be ReplicaSet `<deployment>-<hash>`.

Creations and deletions are tracked as expectations, so a pass on a stale cache never creates twice.
Events on the Deployment: `SuccessfulCreate` "Created pod: NAME", `SuccessfulDelete` "Deleted pod:
NAME" (upstream's ReplicaSet controller writes these on the ReplicaSet). Not done: the
`deployment.kubernetes.io/revision` annotation, rollback history, progress deadlines,
proportional scaling of several old templates, and `ScalingReplicaSet` events.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from dataclasses import dataclass, field
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.controllers import workload_tracking as tracking
from lwsconf.sim.controllers import workloads as wl

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "deployment-controller"
HASH_LABEL = "pod-template-hash"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pod: Obj) -> tuple[bool, int, bool, float]:
    """Sort key, first = deleted first: unscheduled, pending, not ready, newest (`ActivePods`)."""
    created = wl.parse_time(wl.meta(pod).get("creationTimestamp")) or 0.0
    return (bool((pod.get("spec") or {}).get("nodeName")), _PHASE_RANK.get(wl.phase(pod), 1), wl.is_ready(pod),
            -created)


@dataclass
class Plan:
    """What one pass decided: how many pods to create from the new template, and which to delete."""

    create: int = 0
    delete: list[Obj] = field(default_factory=list)


class Rollout:
    """The state of one Deployment's pods and the decisions taken from it. No I/O."""

    def __init__(self, deployment: Obj, pods: list[Obj]) -> None:
        self.d = deployment
        spec = deployment.get("spec") or {}
        self.replicas = int(spec.get("replicas", 1))
        self.min_ready = int(spec.get("minReadySeconds") or 0)
        self.strategy = spec.get("strategy") or {"type": "RollingUpdate"}
        collisions = (deployment.get("status") or {}).get("collisionCount")
        self.hash = wl.template_hash(spec.get("template") or {}, collisions)
        self.rs_name = f"{wl.meta(deployment).get('name')}-{self.hash}"
        self.pods = pods
        active = [p for p in pods if wl.is_active(p)]
        self.new = [p for p in active if wl.labels(p).get(HASH_LABEL) == self.hash]
        self.old = [p for p in active if wl.labels(p).get(HASH_LABEL) != self.hash]

    def available(self, pods: list[Obj]) -> list[Obj]:
        return [p for p in pods if wl.is_available(p, self.min_ready)]

    def fenceposts(self) -> tuple[int, int]:
        """(maxSurge, maxUnavailable) resolved against replicas; Recreate is (0, 0)."""
        if self.strategy.get("type") == "Recreate":
            return 0, 0
        rolling = self.strategy.get("rollingUpdate") or {}
        surge = wl.scaled_value(rolling.get("maxSurge"), self.replicas, round_up=True, default=0)
        unavailable = wl.scaled_value(rolling.get("maxUnavailable"), self.replicas, round_up=False, default=0)
        return surge, (1 if surge == 0 and unavailable == 0 else unavailable)

    def plan(self) -> Plan:
        if self.strategy.get("type") == "Recreate":
            return self._recreate()
        if not self.old:
            return self._scale_new()
        if len(self.new) < self.replicas:
            surge, _ = self.fenceposts()
            room = self.replicas + surge - len(self.new) - len(self.old)
            if room > 0:
                return Plan(create=min(room, self.replicas - len(self.new)))
        if len(self.new) > self.replicas:
            return self._scale_new()
        return self._scale_down_old()

    def _scale_new(self) -> Plan:
        if len(self.new) < self.replicas:
            return Plan(create=self.replicas - len(self.new))
        excess = len(self.new) - self.replicas
        return Plan(delete=sorted(self.new, key=deletion_order)[:excess])

    def _scale_down_old(self) -> Plan:
        """`reconcileOldReplicaSets`: unhealthy old pods first, then healthy ones within maxUnavailable."""
        _, max_unavailable = self.fenceposts()
        min_available = self.replicas - max_unavailable
        new_unavailable = len(self.new) - len(self.available(self.new))
        budget = len(self.new) + len(self.old) - min_available - new_unavailable
        if budget <= 0:
            return Plan()
        healthy = self.available(self.old)
        unhealthy = [p for p in self.old if p not in healthy]
        doomed = sorted(unhealthy, key=deletion_order)[:budget]
        room = min(budget - len(doomed), len(self.available(self.new + self.old)) - min_available)
        doomed += sorted(healthy, key=deletion_order)[:max(0, room)]
        return Plan(delete=doomed)

    def _recreate(self) -> Plan:
        if self.old:
            return Plan(delete=list(self.old))
        if any(wl.labels(p).get(HASH_LABEL) != self.hash and wl.phase(p) not in ("Failed", "Succeeded")
               for p in self.pods):
            return Plan()  # old pods still terminating
        return self._scale_new()

    def status(self, now: str) -> Obj:
        active = self.new + self.old
        available = len(self.available(active))
        old_status = self.d.get("status") or {}
        status: Obj = {"observedGeneration": wl.meta(self.d).get("generation"), "replicas": len(active),
                       "updatedReplicas": len(self.new), "readyReplicas": sum(wl.is_ready(p) for p in active),
                       "availableReplicas": available,
                       "unavailableReplicas": max(0, max(self.replicas, len(active)) - available)}
        if old_status.get("collisionCount") is not None:
            status["collisionCount"] = old_status["collisionCount"]
        conditions = [dict(c) for c in old_status.get("conditions") or ()]
        _, max_unavailable = self.fenceposts()
        if available >= self.replicas - max_unavailable:
            _set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                           "Deployment has minimum availability.", now)
        else:
            _set_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                           "Deployment does not have minimum availability.", now)
        if not self.old and len(self.new) == self.replicas and available >= self.replicas:
            _set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                           f'ReplicaSet "{self.rs_name}" has successfully progressed.', now)
        else:
            _set_condition(conditions, "Progressing", "True", "ReplicaSetUpdated",
                           f'ReplicaSet "{self.rs_name}" is progressing.', now)
        status["conditions"] = conditions
        return status

    def recheck_after(self) -> float | None:
        waits = [w for p in self.new + self.old if (w := wl.available_in(p, self.min_ready)) is not None and w > 0]
        return min(waits) + 0.05 if waits else None


def _set_condition(conditions: list[Obj], type_: str, status: str, reason: str, message: str, now: str) -> None:
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


def _status_changed(old: Obj, new: Obj) -> bool:
    return any(old.get(k) != v for k, v in new.items())


class DeploymentController:
    """Runs Deployments' pods directly (no ReplicaSets) and keeps their status.

    Args:
        client: an API client for this controller alone.
        workers: Deployments synced concurrently.
        expectation_ttl: seconds after which unobserved creations/deletions stop blocking a pass.
    """

    def __init__(self, client: kc.Client, *, workers: int = 2, expectation_ttl: float = 60.0) -> None:
        self.client = client
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="Deployment")
        self.queue: kubeclient.WorkQueue[wl.Key] = kubeclient.WorkQueue(name="deployment")
        self.expectations = tracking.Expectations(expectation_ttl)
        self.deployments = kubeclient.Informer(client, wl.DEPLOYMENTS)
        self.deployments.add_handler(lambda et, obj, old: self.queue.add(wl.key_of(obj)))
        self.pods = kubeclient.Informer(client, wl.PODS)
        self.pod_index = wl.OwnerIndex("Deployment", self._on_owned)
        self.pods.add_handler(self.pod_index)
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Sync Deployments until `stop` is set."""
        await wl.run_controller(stop, name="deployment", informers=[self.deployments, self.pods],
                                queue=self.queue, reconcile=self._reconcile, workers=self._workers,
                                recorder=self.recorder)

    async def wait_synced(self, timeout: float | None = None) -> None:
        for informer in (self.deployments, self.pods):
            await informer.wait_synced(timeout)

    def _on_owned(self, key: wl.Key, event_type: str, obj: Obj, old: Obj | None) -> None:
        self.expectations.observe(key, event_type, obj, old)
        self.queue.add(key)

    async def _reconcile(self, key: wl.Key) -> float | None:
        cached = self.deployments.get(key[1], key[0])
        if cached is None:
            self.expectations.forget(key)
            return None
        deployment = copy.deepcopy(cached)
        owned = (self.pods.get(name, ns) for ns, name in self.pod_index.owned(str(wl.meta(deployment)["uid"])))
        rollout = Rollout(deployment, [copy.deepcopy(p) for p in owned if p is not None])
        paused = bool((deployment.get("spec") or {}).get("paused"))
        if self.expectations.satisfied(key) and not paused and not wl.is_terminating(deployment):
            await self._apply(key, rollout, rollout.plan())
        status = rollout.status(wl.now_rfc3339())
        if _status_changed(deployment.get("status") or {}, status):
            await wl.write_status(self.client, wl.DEPLOYMENTS, deployment, status)
        return rollout.recheck_after()

    async def _apply(self, key: wl.Key, rollout: Rollout, plan: Plan) -> None:
        if plan.create:
            self.expectations.expect(key, adds=plan.create)
            results = await asyncio.gather(*(self._create(key, rollout) for _ in range(plan.create)),
                                           return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            if failures:
                raise failures[0]
        if plan.delete:
            self.expectations.expect(key, delete_uids=[str(wl.meta(p)["uid"]) for p in plan.delete])
            for pod in plan.delete:
                if not await wl.delete_pod(self.client, pod):
                    self.expectations.deletion_observed(key, str(wl.meta(pod)["uid"]))
                    continue
                self.recorder.event(rollout.d, "Normal", "SuccessfulDelete", f"Deleted pod: {wl.meta(pod)['name']}")

    async def _create(self, key: wl.Key, rollout: Rollout) -> None:
        template = (rollout.d.get("spec") or {}).get("template") or {}
        pod = wl.pod_from_template(template, rollout.d, "Deployment", prefix=rollout.rs_name)
        pod["metadata"]["labels"][HASH_LABEL] = rollout.hash
        try:
            created = await self.client.create(wl.PODS, pod)
        except errors.ApiError as exc:
            self.expectations.creation_observed(key)
            self.recorder.event(rollout.d, "Warning", "FailedCreate", f"Error creating: {exc}")
            raise
        self.recorder.event(rollout.d, "Normal", "SuccessfulCreate", f"Created pod: {wl.meta(created)['name']}")
