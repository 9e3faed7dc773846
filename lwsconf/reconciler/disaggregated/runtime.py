"""The reference DisaggregatedSet controller's I/O layer: informers, one level-based loop, the API writes.

Key: the DisaggregatedSet. Its LWS, Services and scalers carry the `disaggregatedset.x-k8s.io/name` label, so
their events enqueue the set they name. Each reconcile reads the caches, asks the pure core (`sets.decide`)
and applies the answer in order: creates (an existing object is fine), replica and annotation merge patches,
deletions, then the status writes, which are sent only when they change something. Events go to the set, as
core/v1 Events (`lwsconf.reconciler.eventrecorder`). A rollout that started or waits is looked at again after
`REQUEUE_ROLLING` seconds, as upstream's 1 s requeue. Only LWS whose controller reference carries the set's UID
count as its own (contract 2.6, main's behaviour); everything else is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from lwsconf import disaggapi, kubeclient, lwsapi
from lwsconf.reconciler import eventrecorder, events
from lwsconf.reconciler import runtime as loop
from lwsconf.reconciler.disaggregated import objects, sets, slices

log = logging.getLogger("lwsconf.reconciler.disaggregated")

Obj = dict[str, Any]
SETS = kubeclient.GVR(disaggapi.GROUP, disaggapi.VERSION, disaggapi.PLURAL)
SCALERS = kubeclient.GVR(disaggapi.GROUP, disaggapi.VERSION, disaggapi.SCALER_PLURAL)
LWS = kubeclient.GVR(lwsapi.GROUP, lwsapi.VERSION, lwsapi.PLURAL)
SERVICES = kubeclient.GVR("", "v1", "services")
KINDS = {lwsapi.KIND: LWS, "LeaderWorkerSet": LWS, "Service": SERVICES, disaggapi.SCALER_KIND: SCALERS,
         disaggapi.KIND: SETS}
REQUEUE_ROLLING = 1.0


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _set_name(obj: Obj) -> str | None:
    return (_meta(obj).get("labels") or {}).get(disaggapi.NAME)


class DisaggregatedManager:
    """The informers and the loop for DisaggregatedSets on one cluster; `run(stop)` until stop is set."""

    def __init__(self, client: kubeclient.Client, *, workers: int = 2, namespace: str | None = None) -> None:
        self.client = client
        self.recorder = eventrecorder.EventRecorder(client, component="disaggregatedset-reference")
        self.sets = kubeclient.Informer(client, SETS, namespace=namespace)
        self.lws = kubeclient.Informer(client, LWS, namespace=namespace, label_selector=disaggapi.NAME)
        self.services = kubeclient.Informer(client, SERVICES, namespace=namespace, label_selector=disaggapi.NAME)
        self.scalers = kubeclient.Informer(client, SCALERS, namespace=namespace)
        self.loop = loop.Controller("disaggregatedset", Reconciler(self), workers=workers)

        def own(_t: str, obj: Obj, _old: Obj | None) -> None:
            self.loop.enqueue(loop.Request(_meta(obj).get("namespace", ""), _meta(obj)["name"]))

        def child(_t: str, obj: Obj, _old: Obj | None) -> None:
            name = _set_name(obj)
            if name:
                self.loop.enqueue(loop.Request(_meta(obj).get("namespace", ""), name))

        self.sets.add_handler(own)
        for informer in (self.lws, self.services, self.scalers):
            informer.add_handler(child)

    @property
    def informers(self) -> list[kubeclient.Informer]:
        return [self.sets, self.lws, self.services, self.scalers]

    async def run(self, stop: asyncio.Event) -> None:
        await loop.run_with_informers(self.informers, stop, lambda: self.loop.run(stop))


class Reconciler:
    def __init__(self, mgr: DisaggregatedManager) -> None:
        self.mgr = mgr

    async def reconcile(self, req: loop.Request) -> loop.Result:
        ds = self.mgr.sets.get(req.name, req.namespace)
        if ds is None or _meta(ds).get("deletionTimestamp"):
            return loop.Result()
        uid = _meta(ds)["uid"]
        owned = [o for o in self.mgr.lws.list(req.namespace)
                 if _set_name(o) == req.name and objects.controlled_by(o, uid)]
        services = [s for s in self.mgr.services.list(req.namespace) if _set_name(s) == req.name]
        prefix = f"{req.name}-"
        scalers = {_meta(s)["name"]: s for s in self.mgr.scalers.list(req.namespace)
                   if _meta(s)["name"].startswith(prefix)}
        decision = sets.decide(ds, owned, services, scalers, eventrecorder.now())
        for action in decision.actions:
            await self._apply(ds, action)
        for kind, event in decision.events:
            await self.mgr.recorder.record(ds, events.Event(kind, event.reason, event.note, event.action))
        return loop.Result(requeue_after=REQUEUE_ROLLING if decision.requeue else None)

    async def _apply(self, ds: Obj, action: slices.Action | sets.StatusWrite) -> None:
        client, ns = self.mgr.client, _meta(ds)["namespace"]
        if isinstance(action, slices.Create):
            with contextlib.suppress(kubeclient.ApiError):  # already there (a stale cache): fine
                await client.create(KINDS[action.obj["kind"]], action.obj, namespace=ns)
        elif isinstance(action, slices.SetReplicas):
            await client.patch(LWS, action.name, {"spec": {"replicas": action.replicas}}, namespace=ns)
        elif isinstance(action, slices.Annotate):
            await client.patch(LWS, action.name, {"metadata": {"annotations": {
                disaggapi.INITIAL_REPLICAS: str(action.initial_replicas)}}}, namespace=ns)
        elif isinstance(action, slices.Delete):
            try:
                await client.delete(KINDS[action.kind], action.name, namespace=ns)
            except kubeclient.ApiError as exc:
                if not exc.is_not_found:
                    raise
        else:
            informer = self.mgr.sets if action.kind == disaggapi.KIND else self.mgr.scalers
            live = informer.get(action.name, ns) or {}
            if (live.get("status") or {}) == action.status:
                return
            await client.patch(KINDS[action.kind], action.name, {"status": action.status}, namespace=ns,
                               subresource="status")
