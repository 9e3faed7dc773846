"""The ReplicaSet controller: keeps `spec.replicas` pods of a ReplicaSet, as kube-controller-manager's does.

kubernetes/kubernetes `pkg/controller/replicaset/replica_set.go`, per ReplicaSet:

* claim pods (`claims`, `ClaimPods`): keep its own that match the selector, adopt matching orphans,
  release its pods whose labels stopped matching;
* `manageReplicas`: active pods (not Failed/Succeeded, not being deleted) are counted; too few: create
  the rest from the template (`<replicaset>-<5 random>`, generateName) in slow-start batches of 1, 2,
  4, ... stopping at the first failure, at most `BURST_REPLICAS` a pass; too many: delete the surplus,
  unscheduled, then pending, then not-ready, then the newest first (`deletion_order`, a simplified
  `ActivePodsWithRanks`: upstream also ranks by pods on the same node and by ready time);
* creations and deletions are expectations, so a pass on a stale cache never creates twice, and a
  ReplicaSet being deleted creates and deletes nothing;
* events on the ReplicaSet: `SuccessfulCreate` "Created pod: NAME", `SuccessfulDelete` "Deleted pod: NAME",
  `FailedCreate` "Error creating: ...";
* status (`calculateStatus`): `replicas`, `fullyLabeledReplicas` (pods carrying every template label),
  `readyReplicas`, `availableReplicas` (ready for minReadySeconds; a pass is queued for when the next
  one becomes available), `observedGeneration`, `terminatingReplicas` (pods being deleted that have not
  finished). Not done: the `ReplicaFailure` condition.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from dataclasses import dataclass, field
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.common import workloads as wl
from lwsconf.sim.controllers.deployment import claims

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "replicaset-controller"
REPLICASETS = kc.GVR("apps", "v1", "replicasets")
BURST_REPLICAS = 500
"""`BurstReplicas`: the most pods one pass creates or deletes."""
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pod: Obj) -> tuple[bool, int, bool, float]:
    """Sort key, first = deleted first: unscheduled, pending, not ready, newest (`ActivePods`)."""
    created = wl.parse_time(wl.meta(pod).get("creationTimestamp")) or 0.0
    return (bool((pod.get("spec") or {}).get("nodeName")), _PHASE_RANK.get(wl.phase(pod), 1), wl.is_ready(pod),
            -created)


def slow_start_batches(count: int) -> list[int]:
    """`slowStartBatch`'s sizes: 1, 2, 4, ... adding up to `count`."""
    batches, size = [], 1
    while count > 0:
        batches.append(min(size, count))
        count -= batches[-1]
        size *= 2
    return batches


@dataclass
class Plan:
    """What one pass decided: pods to create from the template, pods to delete."""

    create: int = 0
    delete: list[Obj] = field(default_factory=list)


def plan(rs: Obj, pods: list[Obj]) -> Plan:
    """`manageReplicas` for the ReplicaSet's claimed pods."""
    active = [p for p in pods if wl.is_active(p)]
    diff = len(active) - int((rs.get("spec") or {}).get("replicas", 1))
    if diff < 0:
        return Plan(create=min(-diff, BURST_REPLICAS))
    if diff > 0:
        return Plan(delete=sorted(active, key=deletion_order)[:min(diff, BURST_REPLICAS)])
    return Plan()


def status(rs: Obj, pods: list[Obj]) -> Obj:
    """`calculateStatus` over the claimed pods; counters that are 0 are omitted as the API reads them back."""
    spec = rs.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    active = [p for p in pods if wl.is_active(p)]
    counts = {"replicas": len(active),
              "fullyLabeledReplicas": sum(all(wl.labels(p).get(k) == v for k, v in template_labels.items())
                                          for p in active),
              "readyReplicas": sum(wl.is_ready(p) for p in active),
              "availableReplicas": sum(wl.is_available(p, min_ready) for p in active),
              "observedGeneration": wl.meta(rs).get("generation")}
    out: Obj = {k: v for k, v in counts.items() if v or k == "replicas"}
    # DeploymentReplicaSetTerminatingReplicas (beta, on since 1.35): a pointer, so 0 is written and read back
    out["terminatingReplicas"] = sum(wl.is_terminating(p) and wl.phase(p) not in ("Failed", "Succeeded")
                                     for p in pods)
    if (rs.get("status") or {}).get("conditions"):
        out["conditions"] = rs["status"]["conditions"]
    return out


def recheck_after(rs: Obj, pods: list[Obj]) -> float | None:
    """Seconds until the next ready pod becomes available (minReadySeconds), when one is waiting."""
    min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
    waits = [w for p in pods if wl.is_active(p) and (w := wl.available_in(p, min_ready)) is not None and w > 0]
    return min(waits) + 0.05 if waits else None


class ReplicaSetController:
    """Creates and deletes the pods of ReplicaSets and keeps their status.

    Args:
        client: an API client for this controller alone.
        workers: ReplicaSets synced concurrently.
        expectation_ttl: seconds after which unobserved creations/deletions stop blocking a pass.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 2, expectation_ttl: float = 60.0) -> None:
        self.client = client
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="ReplicaSet")
        self.queue: kubeclient.WorkQueue[wl.Key] = kubeclient.WorkQueue(name="replicaset")
        self.expectations = tracking.Expectations(expectation_ttl)
        self.replicasets = shared.informer(informers, client, REPLICASETS)
        self.replicasets.add_handler(lambda et, obj, old: self.queue.add(wl.key_of(obj)))
        self.pods = shared.informer(informers, client, wl.PODS)
        self.pod_index = wl.OwnerIndex("ReplicaSet", self._on_owned)
        self.pods.add_handler(self.pod_index)
        self.pods.add_handler(self._on_pod)
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Sync ReplicaSets until `stop` is set."""
        await wl.run_controller(stop, name="replicaset", informers=[self.replicasets, self.pods],
                                queue=self.queue, reconcile=self._reconcile, workers=self._workers,
                                recorder=self.recorder)

    async def wait_synced(self, timeout: float | None = None) -> None:
        for informer in (self.replicasets, self.pods):
            await informer.wait_synced(timeout)

    def _on_owned(self, key: wl.Key, event_type: str, obj: Obj, old: Obj | None) -> None:
        self.expectations.observe(key, event_type, obj, old)
        self.queue.add(key)

    def _on_pod(self, event_type: str, pod: Obj, old: Obj | None) -> None:
        """An orphan pod (`addPod`/`updatePod` without a controller): the ReplicaSets that may adopt it."""
        if wl.controller_ref(pod) is not None or event_type == informer_mod.DELETED:
            return
        ns = wl.meta(pod).get("namespace")
        for rs in self.replicasets.list(ns):
            if claims.claim(rs, (rs.get("spec") or {}).get("selector"), [pod]).adopt:
                self.queue.add(wl.key_of(rs))

    async def _reconcile(self, key: wl.Key) -> float | None:
        cached = self.replicasets.get(key[1], key[0])
        if cached is None:
            self.expectations.forget(key)
            return None
        rs = copy.deepcopy(cached)
        pods = await self._claim(rs)
        if self.expectations.satisfied(key) and not wl.is_terminating(rs):
            await self._apply(key, rs, plan(rs, pods))
        new_status = status(rs, pods)
        if new_status != (rs.get("status") or {}):
            await wl.write_status(self.client, REPLICASETS, rs, new_status)
        return recheck_after(rs, pods)

    async def _claim(self, rs: Obj) -> list[Obj]:
        """`ClaimPods`: this ReplicaSet's pods after adoption and release (both written here)."""
        ns = wl.meta(rs).get("namespace")
        owned = [self.pods.get(name, pns) for pns, name in self.pod_index.owned(str(wl.meta(rs)["uid"]))]
        orphans = [p for p in self.pods.list(ns) if wl.controller_ref(p) is None]
        decided = claims.claim(rs, (rs.get("spec") or {}).get("selector"),
                               [copy.deepcopy(p) for p in owned + orphans if p is not None])
        kept = list(decided.owned)
        for pod in decided.adopt:
            adopted = await claims.adopt(self.client, wl.PODS, pod, rs, "ReplicaSet")
            if adopted is not None:
                kept.append(adopted)
        for pod in decided.release:
            await claims.release(self.client, wl.PODS, pod, rs)
        return kept

    async def _apply(self, key: wl.Key, rs: Obj, decided: Plan) -> None:
        if decided.create:
            self.expectations.expect(key, adds=decided.create)
            for i, batch in enumerate(slow_start_batches(decided.create)):
                results = await asyncio.gather(*(self._create(key, rs) for _ in range(batch)), return_exceptions=True)
                failures = [r for r in results if isinstance(r, BaseException)]
                if failures:
                    # the pods of the batches never sent will not be observed: stop expecting them
                    for _ in range(sum(slow_start_batches(decided.create)[i + 1:])):
                        self.expectations.creation_observed(key)
                    raise failures[0]
        if decided.delete:
            self.expectations.expect(key, delete_uids=[str(wl.meta(p)["uid"]) for p in decided.delete])
            for pod in decided.delete:
                if not await wl.delete_pod(self.client, pod):
                    self.expectations.deletion_observed(key, str(wl.meta(pod)["uid"]))
                    continue
                self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {wl.meta(pod)['name']}")

    async def _create(self, key: wl.Key, rs: Obj) -> None:
        pod = wl.pod_from_template((rs.get("spec") or {}).get("template") or {}, rs, "ReplicaSet")
        try:
            created = await self.client.create(wl.PODS, pod)
        except errors.ApiError as exc:
            self.expectations.creation_observed(key)
            self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {exc}")
            raise
        self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {wl.meta(created)['name']}")
