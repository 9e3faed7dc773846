"""The scheduler: binds pending pods to nodes, an HTTP client of the API server like kube-scheduler.

LWS relies on the scheduler for what conformance tests observe: exclusive placement (one group per
topology domain, through required pod affinity plus anti-affinity), GPU requests, and pods that
stay Pending with a readable reason. So this one does what kube-scheduler's default profile does
for required constraints, with kube-scheduler's wording. This module is the controller: its
informers, queue, assume cache, binding and reporting. The pure parts are apart, so that they can
be tested without an API server: the filter predicates in `filters.py`, quantities and
pod requests in `resource_requests.py`, and the snapshot and choice of one node per attempt in
`decision.py`.

* **Which pods**: those with no `spec.nodeName`, no deletionTimestamp and `schedulerName`
  `default-scheduler` (or unset), one at a time, in the order they became pending.
* **Filters**: cordoned nodes, untolerated NoSchedule/NoExecute taints (a node whose Ready
  condition is not True counts as tainted not-ready, as the node lifecycle controller would taint
  it), `nodeSelector` and required node affinity, resource fit (cpu, memory, `pods`, extended
  resources such as `nvidia.com/gpu`) and required inter-pod (anti-)affinity, both the pod's own
  terms and the anti-affinity of pods already placed.
* **Choice**: the feasible node with the most resources left (LeastAllocated over cpu and memory),
  ties broken by node name. Upstream breaks ties at random; the sim stays reproducible.
* **Binding**: `POST pods/NAME/binding`, then a `Scheduled` event. A 409 means someone else bound
  it (or it is being deleted): fine. A pod just bound is *assumed* on its node until the informer
  shows it bound, so the next pod cannot take the same last GPU. As in kube-scheduler, the binding
  cycle runs beside the scheduling of the next pods (at most `max_bindings` at once); a failed
  binding forgets the assumption and retries the pod with backoff.
* **Unschedulable pods** get `PodScheduled=False`, reason `Unschedulable`, with the message
  `0/N nodes are available: ...`, and one `FailedScheduling` Warning event (events.k8s.io/v1, as
  kube-scheduler records; `kubectl describe` lists it) each time that message changes. They are tried
  again when a node, a placed pod or a namespace changes in a way that may help, and every
  `retry_interval` seconds anyway.

Left out: scoring beyond LeastAllocated (preferred affinities, topology spread, image locality),
preemption, host ports, volumes, pod topology spread constraints and `matchLabelKeys`. Pods with
`schedulingGates` wait, but without upstream's `SchedulingGated` condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import logging
import socket
import time
from collections.abc import Iterable
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.scheduler import decision as sd
from lwsconf.sim.controllers.scheduler import filters as sf
from lwsconf.sim.controllers.scheduler import resource_requests as rr

log = logging.getLogger(__name__)

Obj = dict[str, Any]
PodKey = tuple[str, str]
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
EVENTS_V1 = kc.GVR("events.k8s.io", "v1", "events")
"""kube-scheduler records through the events.k8s.io API (client-go tools/events), not the core/v1 recorder."""
SCHEDULER_NAME = "default-scheduler"


def uid_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


# --- pods bound but not yet seen bound ----------------------------------------------------------------

class AssumeCache:
    """Pods this scheduler bound that the informer does not show bound yet (kube-scheduler's
    assumed pods): counted on their node so that two pods never take the same last slot."""

    def __init__(self) -> None:
        self._pods: dict[str, Obj] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def assume(self, pod: Obj, node: str) -> None:
        placed = copy.deepcopy(pod)
        placed.setdefault("spec", {})["nodeName"] = node
        self._pods[uid_of(pod)] = placed

    def forget(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def observe(self, pod: Obj) -> None:
        """The informer shows this pod: once it shows it bound, the informer's copy is the truth."""
        if sd.node_name_of(pod):
            self.forget(uid_of(pod))

    def holds(self, uid: str) -> bool:
        """Whether the pod is assumed: bound by us (or being bound), not yet shown bound."""
        return uid in self._pods

    def overlay(self, placed: Iterable[Obj]) -> list[Obj]:
        """`placed` plus the assumed pods it does not contain yet."""
        out = list(placed)
        seen = {uid_of(p) for p in out}
        out.extend(p for uid, p in self._pods.items() if uid not in seen)
        return out


# --- the controller -----------------------------------------------------------------------------------

class Scheduler:
    """Binds pending pods of `scheduler_name` to nodes; reports the ones that fit nowhere.

    Args:
        client: an API client for this controller alone.
        scheduler_name: the `spec.schedulerName` this scheduler serves (unset means this one too
            when it is `default-scheduler`).
        retry_interval: seconds between retries of unschedulable pods when nothing changed.

    Start it with `await Scheduler(client).run(stop)`; it returns after `stop` is set.
    """

    def __init__(self, client: kc.Client, *, scheduler_name: str = SCHEDULER_NAME,
                 retry_interval: float = 5.0, max_bindings: int = 32) -> None:
        self.client = client
        self.scheduler_name = scheduler_name
        self.queue: kubeclient.WorkQueue[PodKey] = kubeclient.WorkQueue(name="scheduler")
        self.pods = kubeclient.Informer(client, kc.PODS)
        self.nodes = kubeclient.Informer(client, NODES)
        self.namespaces = kubeclient.Informer(client, kc.NAMESPACES)
        self.pods.add_handler(self._on_pod)
        self.nodes.add_handler(self._on_node)
        self.namespaces.add_handler(self._on_namespace)
        self.assumed = AssumeCache()
        self._retry_interval = retry_interval
        self._unschedulable: set[PodKey] = set()
        self._reported: dict[str, str] = {}
        """Pod uid -> the last unschedulable message written for it (no event spam)."""
        self._max_bindings = max_bindings
        self._bindings: set[asyncio.Task[None]] = set()
        """Binding cycles in flight."""
        self._requests: dict[str, tuple[rr.Resources, rr.Resources]] = {}
        """Pod uid -> its (requests, nonzero requests), for the snapshot (forgotten when the pod goes)."""

    @property
    def informers(self) -> list[kubeclient.Informer]:
        return [self.pods, self.nodes, self.namespaces]

    async def wait_synced(self, timeout: float | None = None) -> None:
        for informer in self.informers:
            await informer.wait_synced(timeout)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch pods, nodes and namespaces and schedule pending pods until `stop` is set."""
        for informer in self.informers:
            informer.start()
        tasks = [asyncio.create_task(self._work(), name="scheduler worker"),
                 asyncio.create_task(self._retry_periodically(stop), name="scheduler retries")]
        try:
            await stop.wait()
        finally:
            self.queue.shutdown()
            for informer in self.informers:
                informer.stop()
            tasks += list(self._bindings)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for informer in self.informers:
                await informer.join()

    async def _work(self) -> None:
        """One worker, as kube-scheduler schedules one pod at a time; it starts once caches are full."""
        await self.wait_synced()
        await kubeclient.run_worker(self.queue, self.schedule_one)

    async def _retry_periodically(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._retry_interval)
            self._retry_unschedulable()

    def responsible_for(self, pod: Obj) -> bool:
        """Pending, not being deleted, not gated, and addressed to this scheduler."""
        spec = pod.get("spec") or {}
        name = spec.get("schedulerName") or SCHEDULER_NAME
        return (not spec.get("nodeName") and not (pod.get("metadata") or {}).get("deletionTimestamp")
                and name == self.scheduler_name and not spec.get("schedulingGates") and not sf.is_terminal(pod))

    # --- triggers (informer callbacks: quick, no I/O) ----------------------------------------------

    def _on_pod(self, event_type: str, pod: Obj, old: Obj | None) -> None:
        key = informer_mod.key_of(pod)
        if event_type == informer_mod.DELETED:
            self.assumed.forget(uid_of(pod))
            self._reported.pop(uid_of(pod), None)
            self._requests.pop(uid_of(pod), None)
            self._unschedulable.discard(key)
            if sd.node_name_of(pod):
                self._retry_unschedulable()  # its resources and its anti-affinity are gone
            return
        if sd.node_name_of(pod):
            self.assumed.observe(pod)
            self._reported.pop(uid_of(pod), None)
            self._unschedulable.discard(key)
            if old is None or not sd.node_name_of(old) or _placed_pod_changed(pod, old):
                self._retry_unschedulable()  # affinity may now be satisfiable, or resources freed
            return
        if not self.responsible_for(pod):
            self._unschedulable.discard(key)
            return
        # Our own status patch of an unschedulable pod must not send it round again.
        if key not in self._unschedulable or old is None or _pending_pod_changed(pod, old):
            self._unschedulable.discard(key)
            self.queue.add(key)

    def _on_node(self, event_type: str, node: Obj, old: Obj | None) -> None:
        if event_type != informer_mod.MODIFIED or old is None or _node_changed(node, old):
            self._retry_unschedulable()

    def _on_namespace(self, event_type: str, namespace: Obj, old: Obj | None) -> None:
        if old is None or sf.labels_of(namespace) != sf.labels_of(old):
            self._retry_unschedulable()  # namespaceSelector terms may match differently

    def _retry_unschedulable(self) -> None:
        """Queue every unschedulable pod again, higher priority first, then older first (PrioritySort)."""
        def order(key: PodKey) -> tuple[int, str, PodKey]:
            pod = self.pods.get(key[1], key[0]) or {}
            return (-int((pod.get("spec") or {}).get("priority") or 0),
                    str((pod.get("metadata") or {}).get("creationTimestamp") or ""), key)
        for key in sorted(self._unschedulable, key=order):
            self.queue.add(key)
        self._unschedulable.clear()

    # --- one scheduling attempt --------------------------------------------------------------------

    def snapshot(self) -> sd.Snapshot:
        placed = (p for p in self.pods.list() if sd.node_name_of(p))
        return sd.Snapshot.build(self.nodes.list(), self.assumed.overlay(placed), self.namespaces.list(),
                              self._requests_of)

    def _requests_of(self, pod: Obj) -> tuple[rr.Resources, rr.Resources]:
        """A placed pod's (requests, nonzero requests), computed once per pod uid: a pod's resources
        cannot change after creation here, and parsing every placed pod's quantities for every
        attempt made scheduling quadratic in the number of pods."""
        uid = uid_of(pod)
        found = self._requests.get(uid) if uid else None
        if found is None:
            found = (rr.pod_requests(pod), rr.pod_requests(pod, nonzero=True))
            if uid:
                self._requests[uid] = found
        return found

    async def schedule_one(self, key: PodKey) -> float | None:
        """One attempt for the pod (namespace, name) in the cache: start binding it or report why not."""
        while len(self._bindings) >= self._max_bindings:
            await asyncio.wait(set(self._bindings), return_when=asyncio.FIRST_COMPLETED)
        pod = self.pods.get(key[1], key[0])
        if pod is None or not self.responsible_for(pod) or self.assumed.holds(uid_of(pod)):
            return None
        decision = sd.decide(pod, self.snapshot())
        if decision.node is not None:
            self.assumed.assume(pod, decision.node)
            task = asyncio.create_task(self._binding_cycle(key, pod, decision.node), name=f"bind {key}")
            self._bindings.add(task)
            task.add_done_callback(self._bindings.discard)
            return None
        # No await between the snapshot and here: any later change finds the key in the set.
        self._unschedulable.add(key)
        log.info("pod %s/%s is unschedulable: %s", key[0], key[1], decision.message)
        await self._report_unschedulable(pod, decision.message)
        return None

    async def _binding_cycle(self, key: PodKey, pod: Obj, node: str) -> None:
        try:
            await self._bind(pod, node)
        except Exception as exc:  # noqa: BLE001 - the pod is retried, as a failed reconcile would be
            log.warning("binding %s/%s to %s failed (retrying with backoff): %s", key[0], key[1], node, exc)
            self.queue.add_rate_limited(key)
        else:
            self.queue.forget(key)

    async def _bind(self, pod: Obj, node: str) -> None:
        """POST the binding of an assumed pod; the assumption is dropped when it fails."""
        meta = pod["metadata"]
        ns, name = meta["namespace"], meta["name"]
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": name, "namespace": ns, "uid": meta.get("uid")},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            await self.client.request("POST", kc.PODS.object_path(name, ns, "binding"), body=binding)
        except errors.ApiError as exc:
            self.assumed.forget(uid_of(pod))
            if exc.status in (404, 409):  # gone, bound by someone else, or being deleted
                log.info("binding %s/%s to %s: %s; leaving it", ns, name, node, exc)
                return
            raise
        except errors.TransportError:
            self.assumed.forget(uid_of(pod))
            raise
        log.info("bound %s/%s to %s", ns, name, node)
        await self._event(pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}",
                          action="Binding")

    async def _report_unschedulable(self, pod: Obj, message: str) -> None:
        """Set PodScheduled=False/Unschedulable and emit FailedScheduling, once per distinct message."""
        uid = uid_of(pod)
        if self._reported.get(uid) == message:
            return
        current = pod_condition(pod, "PodScheduled")
        if not (current and current.get("status") == "False" and current.get("reason") == "Unschedulable"
                and current.get("message") == message):
            if not await self._patch_unschedulable(pod, message, current):
                return
            await self._event(pod, "Warning", "FailedScheduling", message, action="Scheduling")
        self._reported[uid] = message

    async def _patch_unschedulable(self, pod: Obj, message: str, current: Obj | None) -> bool:
        """Merge-patch status.conditions (the whole list, other conditions kept), guarded by the
        cached resourceVersion. False when the pod is gone; a 409 is raised, so the attempt is
        retried on a fresher cache."""
        meta = pod["metadata"]
        since = (current or {}).get("lastTransitionTime") if (current or {}).get("status") == "False" else None
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                     "lastProbeTime": None, "lastTransitionTime": since or _now()}
        if meta.get("generation"):  # PodObservedGenerationTracking (KEP 5067, on in 1.37): the scheduler's
            # condition says which pod generation it judged (pkg/scheduler/schedule_one.go, updatePod with
            # podutil.CalculatePodConditionObservedGeneration); lwsconf fidelity controllers/ctl-statefulset
            condition["observedGeneration"] = meta["generation"]
        others = [c for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") != "PodScheduled"]
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                "status": {"conditions": [*others, condition]}}
        try:
            await self.client.patch(kc.PODS, meta["name"], body, namespace=meta["namespace"], subresource="status")
        except errors.ApiError as exc:
            if exc.is_not_found:
                return False
            raise
        return True

    async def _event(self, pod: Obj, event_type: str, reason: str, message: str, *, action: str) -> None:
        """An events.k8s.io/v1 Event about the pod, as kube-scheduler's recorder (client-go tools/events
        `makeEvent`) writes it: named `<pod>.<hex nanoseconds>`, a microsecond `eventTime` and no count or
        first/last timestamps, reported by `<scheduler name>-<hostname>`; failures are logged. Read as core/v1
        it has `eventTime` set and `firstTimestamp: null` (the held-out fidelity corpus showed the sim writing
        the core/v1 recorder's form)."""
        meta = pod["metadata"]
        event = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": meta["namespace"]},
            "eventTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": self.scheduler_name,
            "reportingInstance": f"{self.scheduler_name}-{socket.gethostname()}",
            "action": action, "reason": reason, "note": message, "type": event_type,
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                          "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
        }
        try:
            await self.client.create(EVENTS_V1, event)
        except errors.KubeClientError as exc:
            log.warning("could not record %s event for pod %s/%s: %s", reason, meta["namespace"],
                        meta["name"], exc)


def pod_condition(pod: Obj, kind: str) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return None


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pending_pod_changed(pod: Obj, old: Obj) -> bool:
    """A pending pod's spec (tolerations may be added) or labels changed: worth a new attempt."""
    return pod.get("spec") != old.get("spec") or sf.labels_of(pod) != sf.labels_of(old)


def _placed_pod_changed(pod: Obj, old: Obj) -> bool:
    """A placed pod changed what it means to others: labels (affinity) or it finished (resources)."""
    return sf.labels_of(pod) != sf.labels_of(old) or sf.is_terminal(pod) != sf.is_terminal(old)


def _node_changed(node: Obj, old: Obj) -> bool:
    """Anything the filters read, but not heartbeats."""
    return (sf.labels_of(node) != sf.labels_of(old) or node.get("spec") != old.get("spec")
            or (node.get("status") or {}).get("allocatable") != (old.get("status") or {}).get("allocatable")
            or sf.ready_status(node) != sf.ready_status(old))
