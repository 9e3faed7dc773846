"""The StatefulSet controller, an HTTP client of the API server like kube-controller-manager's.

LeaderWorkerSet is built entirely on StatefulSets (docs/lws-contract.md sections 0, 2 and 4.4): the leader
StatefulSet's pods `N-i`, each group's worker StatefulSet with `ordinals.start: 1`, the rolling
update driven through `partition` and `maxUnavailable`, old-revision groups recreated from the
current revision (trap T32), and StatefulSet status as the only way pod readiness reaches the LWS
reconciler (trap T28). So this controller follows upstream closely:

* `revisions` - ControllerRevisions, `currentRevision`/`updateRevision`, history limit;
* `pods` - pod and claim construction (names, identity labels, hostname/subdomain,
  claim volumes, retention-policy owner references);
* `update` - the sync itself: OrderedReady/Parallel creation and scale-down, recreation
  of deleted and finished pods, RollingUpdate with partition and maxUnavailable, OnDelete;
* this module - informers (StatefulSets, Pods, ControllerRevisions), the work queue, and the
  status write: `completeRollingUpdate` (current := update once every replica is updated and
  ready), then a PUT to `statefulsets/NAME/status` with the resourceVersion, retried on 409, only
  when something changed.

Pods are found through their controller reference to the set's uid (plus the `<set>-<ordinal>`
name); orphans are not adopted and pods that stop matching the selector are not released (upstream
does both; nothing in the harness relies on it). When `minReadySeconds` is set, the set is looked at
again once its ready pods become available.

A set asking for more than `MAX_SIMULATED_REPLICAS` pods is left alone, with a Warning event: more than
the sim's pod network can ever hold. kube-controller-manager would build the pods in memory and create
them in slow-start batches in a process of its own; here the controllers share the API server's event
loop, and building a million in-memory pods stopped the API server answering for minutes.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.kubeclient import shared
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.common import workloads as wl
from lwsconf.sim.controllers.statefulset import pods as sp
from lwsconf.sim.controllers.statefulset import revisions as revs_mod
from lwsconf.sim.controllers.statefulset import update as update_mod

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "statefulset-controller"
MAX_SIMULATED_REPLICAS = 127 * 253
"""Every pod a sim cluster can run: at most 127 nodes, 253 pod addresses each (`lwsconf.sim.nodes.network.ipam`).
Above it the controller does nothing for the set: against upstream LWS v0.9.0, which admits
spec.replicas 1000001 (conformance/divergences.yaml, V3), its leader StatefulSet of 1000001 replicas
blocked the shared event loop (~14 s to build the pods of a bare template, then a million coroutines),
the manager could not renew its Lease and exited (run 20261203-065934-d56a: that test took 350 s)."""
TOO_MANY_REPLICAS = "TooManyReplicasForSim"


class StatefulSetController:
    """Keeps every StatefulSet's pods, claims, revisions and status as kube-controller-manager does.

    Args:
        client: an API client for this controller alone.
        workers: StatefulSets synced concurrently (one set is never synced twice at once).

    Start it with `await StatefulSetController(client).run(stop)`; it returns after `stop` is set.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 4) -> None:
        self.client = client
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="StatefulSet")
        self.control = update_mod.PodControl(client, self.recorder)
        self.queue: kubeclient.WorkQueue[wl.Key] = kubeclient.WorkQueue(name="statefulset")
        self.sets = shared.informer(informers, client, wl.STATEFULSETS)
        self.sets.add_handler(self._on_set)
        self.pods = shared.informer(informers, client, wl.PODS)
        self.pod_index = wl.OwnerIndex("StatefulSet", self._on_owned)
        self.pods.add_handler(self.pod_index)
        self.revisions = shared.informer(informers, client, wl.CONTROLLERREVISIONS)
        self.revision_index = wl.OwnerIndex("StatefulSet")
        self.revisions.add_handler(self.revision_index)
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Sync StatefulSets until `stop` is set."""
        await wl.run_controller(stop, name="statefulset", informers=[self.sets, self.pods, self.revisions],
                                queue=self.queue, reconcile=self._reconcile, workers=self._workers,
                                recorder=self.recorder)

    async def wait_synced(self, timeout: float | None = None) -> None:
        for informer in (self.sets, self.pods, self.revisions):
            await informer.wait_synced(timeout)

    # --- triggers (informer callbacks: quick, no I/O) --------------------------------------------

    def _on_set(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        self.queue.add(wl.key_of(obj))

    def _on_owned(self, key: wl.Key, event_type: str, obj: Obj, old: Obj | None) -> None:
        self.queue.add(key)

    # --- reconcile -------------------------------------------------------------------------------

    async def _reconcile(self, key: wl.Key) -> float | None:
        namespace, name = key
        cached = self.sets.get(name, namespace)
        if cached is None:
            return None  # deleted: the garbage collector removes its pods and revisions
        wanted = sp.replica_count(cached)
        if wanted > MAX_SIMULATED_REPLICAS:
            self.recorder.event(cached, "Warning", TOO_MANY_REPLICAS,
                                f"spec.replicas {wanted} is more than the {MAX_SIMULATED_REPLICAS} pods a simulated "
                                "cluster can run; the sim's StatefulSet controller leaves this set alone until "
                                "it asks for fewer")
            return None
        sts = copy.deepcopy(cached)
        uid = str(wl.meta(sts).get("uid"))
        revisions = sorted(self._owned(self.revisions, self.revision_index, uid), key=revs_mod.sort_key)
        # Pods are only read during a sync (writes go through the API), so the cached objects are used
        # as they are: copying 800 pods on every sync was most of the controller's CPU time.
        pods = [p for p in self._owned(self.pods, self.pod_index, uid, copy_objects=False)
                if sp.parent_and_ordinal(str(wl.meta(p).get("name")))[0] == name]
        resolved = await revs_mod.resolve(self.client, sts, revisions)
        result = await update_mod.StatefulSetSync(self.control, sts, resolved, pods).run()
        await self._write_status(sts, result.status)
        live = {resolved.current_name, resolved.update_name, *(sp.revision_of(p) for p in pods)}
        await revs_mod.truncate_history(self.client, sts, revisions, live)
        if result.error is not None:
            raise result.error
        return result.requeue_after

    @staticmethod
    def _owned(informer: informer_mod.Cache, index: wl.OwnerIndex, uid: str, *,
               copy_objects: bool = True) -> list[Obj]:
        found = (informer.get(name, namespace) for namespace, name in index.owned(uid))
        return [copy.deepcopy(obj) if copy_objects else obj for obj in found if obj is not None]

    async def _write_status(self, sts: Obj, status: Obj) -> None:
        status = update_mod.complete_rolling_update(sts, status)
        if not update_mod.status_changed(sts, status):
            return
        merged = {**(sts.get("status") or {}), **status}
        await wl.write_status(self.client, wl.STATEFULSETS, sts, merged)
