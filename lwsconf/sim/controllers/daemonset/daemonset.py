"""The DaemonSet controller: one pod per eligible node, an HTTP client of the API server.

Follows kubernetes/kubernetes `pkg/controller/daemon/daemon_controller.go` (`manage`,
`podsShouldBeOnNode`, `updateDaemonSetStatus`) and `update.go` (`rollingUpdate` without surge):

* eligible nodes are decided by `nodes.should_run` (nodeSelector, required node affinity,
  NoSchedule/NoExecute taints against the pod's tolerations plus the daemon tolerations);
* a node that should run the pod and has none gets one, named `<ds>-<5 random>` (generateName),
  labelled with the template's labels plus `controller-revision-hash: <template hash>` and
  `pod-template-generation: <generation>`, carrying the daemon tolerations and a required node
  affinity on `metadata.name` that pins it to the node (the scheduler binds it there; the pod has no
  `nodeName` until then);
* a Failed or Succeeded daemon pod is deleted and, once gone, replaced; extra pods on one node are
  deleted, keeping the oldest; pods on nodes that should not run them (or that no longer exist) are
  deleted;
* `RollingUpdate` replaces old-template pods: unavailable ones at once, available ones while fewer
  than `maxUnavailable` (rounded up from a percentage of the desired count) nodes are unavailable;
  `OnDelete` only replaces pods that were deleted;
* status: `desiredNumberScheduled`, `currentNumberScheduled`, `numberMisscheduled`, `numberReady`,
  `numberAvailable`, `numberUnavailable`, `updatedNumberScheduled`, `observedGeneration`.

Departures: no ControllerRevisions are written for DaemonSets (the hash is computed from the
template, in `controller.ComputeHash`'s shape but over canonical JSON); `maxSurge` is not honoured
(an update with `maxUnavailable: 0` replaces one node at a time); no failed-pod backoff.
Creations and deletions are tracked as expectations so a pass on a stale cache never doubles pods.
Events: `SuccessfulCreate` "Created pod: NAME", `SuccessfulDelete` "Deleted pod: NAME".
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
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.common import workloads as wl
from lwsconf.sim.controllers.daemonset import nodes as nodes_mod

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "daemonset-controller"
GENERATION_LABEL = "pod-template-generation"


@dataclass
class NodeState:
    """One node as this DaemonSet sees it."""

    node: Obj
    should_run: bool
    pods: list[Obj] = field(default_factory=list)

    @property
    def active(self) -> list[Obj]:
        return [p for p in self.pods if wl.is_active(p)]

    @property
    def name(self) -> str:
        return str(wl.meta(self.node).get("name"))


class Placement:
    """A DaemonSet's pods laid over the nodes, and the decisions taken from them. No I/O."""

    def __init__(self, ds: Obj, pods: list[Obj], nodes: list[Obj]) -> None:
        self.ds = ds
        spec = ds.get("spec") or {}
        self.template = copy.deepcopy(spec.get("template") or {})
        self.template["spec"] = nodes_mod.with_daemon_tolerations(self.template.get("spec") or {})
        self.hash = wl.template_hash(spec.get("template") or {}, (ds.get("status") or {}).get("collisionCount"))
        self.min_ready = int(spec.get("minReadySeconds") or 0)
        self.nodes = {str(wl.meta(n).get("name")): NodeState(n, nodes_mod.should_run(n, self.template["spec"]))
                      for n in nodes}
        self.stray: list[Obj] = []
        for pod in sorted(pods, key=lambda p: str(wl.meta(p).get("creationTimestamp") or "")):
            state = self.nodes.get(nodes_mod.target_node(pod) or "")
            (state.pods if state is not None else self.stray).append(pod)

    def updated(self, pod: Obj) -> bool:
        return wl.labels(pod).get(wl.REVISION_LABEL) == self.hash

    def manage(self) -> tuple[list[str], list[Obj]]:
        """`manage`: (nodes needing a pod, pods to delete)."""
        create: list[str] = []
        delete = [p for p in self.stray if not wl.is_terminating(p)]
        for state in self.nodes.values():
            live = [p for p in state.pods if not wl.is_terminating(p)]
            if not state.should_run:
                delete += live
            elif not state.pods:
                create.append(state.name)
            else:
                delete += [p for p in live if wl.phase(p) in ("Failed", "Succeeded")]
                delete += [p for p in live if wl.phase(p) not in ("Failed", "Succeeded")][1:]
        return create, delete

    def rolling_update(self) -> list[Obj]:
        """`rollingUpdate` (no surge): old pods to delete this pass."""
        strategy = (self.ds.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return []
        desired = [s for s in self.nodes.values() if s.should_run]
        max_unavailable = wl.scaled_value((strategy.get("rollingUpdate") or {}).get("maxUnavailable"), len(desired),
                                          round_up=True, default=1) or 1
        unavailable, replace, candidates = 0, [], []
        for state in desired:
            active = state.active
            if len(active) != 1:
                unavailable += 1
            elif self.updated(active[0]):
                unavailable += not wl.is_available(active[0], self.min_ready)
            elif not wl.is_available(active[0], self.min_ready):
                replace.append(active[0])
            else:
                candidates.append(active[0])
        return replace + candidates[:max(0, max_unavailable - unavailable)]

    def status(self) -> Obj:
        counts = dict.fromkeys(("desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled",
                                "numberReady", "numberAvailable", "updatedNumberScheduled"), 0)
        for state in self.nodes.values():
            active = state.active
            if not state.should_run:
                counts["numberMisscheduled"] += bool(active)
                continue
            counts["desiredNumberScheduled"] += 1
            if active:
                counts["currentNumberScheduled"] += 1
                counts["numberReady"] += wl.is_ready(active[0])
                counts["numberAvailable"] += wl.is_available(active[0], self.min_ready)
                counts["updatedNumberScheduled"] += self.updated(active[0])
        counts["numberUnavailable"] = counts["desiredNumberScheduled"] - counts["numberAvailable"]
        return {"observedGeneration": wl.meta(self.ds).get("generation"), **counts}

    def new_pod(self, node_name: str) -> Obj:
        pod = wl.pod_from_template(self.template, self.ds, "DaemonSet")
        pod["metadata"]["labels"].update({wl.REVISION_LABEL: self.hash,
                                          GENERATION_LABEL: str(wl.meta(self.ds).get("generation") or 1)})
        nodes_mod.pin_to_node(pod["spec"], node_name)
        return pod

    def recheck_after(self) -> float | None:
        waits = [w for s in self.nodes.values() for p in s.active
                 if (w := wl.available_in(p, self.min_ready)) is not None and w > 0]
        return min(waits) + 0.05 if waits else None


class DaemonSetController:
    """Runs one pod of each DaemonSet on every node that should run it, and keeps their status.

    Args:
        client: an API client for this controller alone.
        workers: DaemonSets synced concurrently.
        expectation_ttl: seconds after which unobserved creations/deletions stop blocking a pass.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 2, expectation_ttl: float = 60.0) -> None:
        self.client = client
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="DaemonSet")
        self.queue: kubeclient.WorkQueue[wl.Key] = kubeclient.WorkQueue(name="daemonset")
        self.expectations = tracking.Expectations(expectation_ttl)
        self.daemonsets = shared.informer(informers, client, wl.DAEMONSETS)
        self.daemonsets.add_handler(lambda et, obj, old: self.queue.add(wl.key_of(obj)))
        self.pods = shared.informer(informers, client, wl.PODS)
        self.pod_index = wl.OwnerIndex("DaemonSet", self._on_owned)
        self.pods.add_handler(self.pod_index)
        self.nodes = shared.informer(informers, client, wl.NODES)
        self.nodes.add_handler(self._on_node)
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Sync DaemonSets until `stop` is set."""
        await wl.run_controller(stop, name="daemonset", informers=[self.daemonsets, self.pods, self.nodes],
                                queue=self.queue, reconcile=self._reconcile, workers=self._workers,
                                recorder=self.recorder)

    async def wait_synced(self, timeout: float | None = None) -> None:
        for informer in (self.daemonsets, self.pods, self.nodes):
            await informer.wait_synced(timeout)

    def _on_owned(self, key: wl.Key, event_type: str, obj: Obj, old: Obj | None) -> None:
        self.expectations.observe(key, event_type, obj, old)
        self.queue.add(key)

    def _on_node(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        cached = self.daemonsets.keys()  # (an Informer is not a mapping)
        for key in cached:
            self.queue.add(key)

    async def _reconcile(self, key: wl.Key) -> float | None:
        cached = self.daemonsets.get(key[1], key[0])
        if cached is None:
            self.expectations.forget(key)
            return None
        ds = copy.deepcopy(cached)
        owned = (self.pods.get(name, ns) for ns, name in self.pod_index.owned(str(wl.meta(ds)["uid"])))
        placement = Placement(ds, [copy.deepcopy(p) for p in owned if p is not None], self.nodes.list())
        if self.expectations.satisfied(key) and not wl.is_terminating(ds):
            create, delete = placement.manage()
            doomed = {str(wl.meta(p)["uid"]): p for p in [*delete, *placement.rolling_update()]}
            await self._apply(key, placement, create, list(doomed.values()))
        status = placement.status()
        old_status = ds.get("status") or {}
        if any(old_status.get(k) != v for k, v in status.items()):
            await wl.write_status(self.client, wl.DAEMONSETS, ds, {**old_status, **status})
        return placement.recheck_after()

    async def _apply(self, key: wl.Key, placement: Placement, create: list[str], delete: list[Obj]) -> None:
        if delete:
            self.expectations.expect(key, delete_uids=[str(wl.meta(p)["uid"]) for p in delete])
            for pod in delete:
                if await wl.delete_pod(self.client, pod):
                    self.recorder.event(placement.ds, "Normal", "SuccessfulDelete",
                                        f"Deleted pod: {wl.meta(pod)['name']}")
                else:
                    self.expectations.deletion_observed(key, str(wl.meta(pod)["uid"]))
        if create:
            self.expectations.expect(key, adds=len(create))
            results = await asyncio.gather(*(self._create(key, placement, n) for n in create), return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            if failures:
                raise failures[0]

    async def _create(self, key: wl.Key, placement: Placement, node_name: str) -> None:
        try:
            created = await self.client.create(wl.PODS, placement.new_pod(node_name))
        except errors.ApiError as exc:
            self.expectations.creation_observed(key)
            self.recorder.event(placement.ds, "Warning", "FailedCreate", f"Error creating: {exc}")
            raise
        self.recorder.event(placement.ds, "Normal", "SuccessfulCreate", f"Created pod: {wl.meta(created)['name']}")
