"""The namespace controller: empties a terminating Namespace, then finalizes it.

Deleting a Namespace only marks it (`deletionTimestamp`, `status.phase: Terminating`); the server
keeps it while `spec.finalizers` still holds `kubernetes`. This controller does what
kube-controller-manager's namespace controller does with that finalizer: delete every namespaced
object in it, of every served type (CRDs included, found by discovery on each pass), with
`propagationPolicy: Background` (one `deletecollection` per type when the type allows it, else one
DELETE per object); wait until none is left (objects with finalizers, or pods waiting
for their kubelet, may take a while); then `PUT /api/v1/namespaces/{name}/finalize` with the
finalizer removed, after which the server deletes the Namespace.

Progress is checked with live LISTs, never from a cache: finalizing while an object remains would
leave it stranded. Events on objects in terminating namespaces (seen by metadata informers) trigger
an early re-check; otherwise a terminating namespace is re-checked every `recheck_interval` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.kubeclient import informer as informer_mod

log = logging.getLogger(__name__)

Obj = dict[str, Any]
FINALIZER = "kubernetes"
_UPDATE_ATTEMPTS = 5


def is_terminating(namespace: Obj) -> bool:
    """Marked for deletion and still carrying this controller's `kubernetes` finalizer."""
    meta = namespace.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and FINALIZER in ((namespace.get("spec") or {}).get("finalizers") or ())


class NamespaceController:
    """Deletes the contents of terminating namespaces and then finalizes them.

    Args:
        client: an API client for this controller alone.
        workers: namespaces handled concurrently.
        recheck_interval: seconds between checks of a namespace whose contents are still going away
            (a safety net: deletions seen by the content informers trigger a check at once).
        rediscover_interval: seconds between discovery passes of the content informers.

    Start it with `await NamespaceController(client).run(stop)`; it returns after `stop` is set.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 2, recheck_interval: float = 2.0,
                 rediscover_interval: float = 2.0) -> None:
        self.client = client
        self.queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue(name="namespace")
        self.namespaces = shared.informer(informers, client, kc.NAMESPACES)
        self.namespaces.add_handler(self._on_namespace)
        self.contents = kubeclient.DynamicInformers(client, handler=self._on_content,
                                                    include=lambda r: r.gvr.namespaced,
                                                    interval=rediscover_interval)
        self._workers = workers
        self._recheck_interval = recheck_interval

    async def run(self, stop: asyncio.Event) -> None:
        """Watch namespaces and their contents, finalizing terminating ones, until `stop` is set."""
        self.namespaces.start()
        discovery = asyncio.create_task(self.contents.run(stop), name="namespace discovery")
        try:
            await kubeclient.run_workers(self.queue, self._reconcile, stop, workers=self._workers)
        finally:
            self.namespaces.stop()
            discovery.cancel()
            await asyncio.gather(discovery, return_exceptions=True)
            await self.namespaces.join()
            await self.contents.close()

    # --- triggers (informer callbacks: quick, no I/O) --------------------------------------------

    def _on_namespace(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        if event_type != informer_mod.DELETED and is_terminating(obj):
            self.queue.add(obj["metadata"]["name"])

    def _on_content(self, gvr: kc.GVR, event_type: str, obj: Obj, old: Obj | None) -> None:
        name = (obj.get("metadata") or {}).get("namespace")
        if not name or event_type == informer_mod.ADDED:
            return
        namespace = self.namespaces.get(name)
        if namespace is not None and is_terminating(namespace):
            self.queue.add(name)

    # --- reconcile -------------------------------------------------------------------------------

    async def _reconcile(self, name: str) -> float | None:
        try:
            namespace = await self.client.get(kc.NAMESPACES, name)
        except errors.ApiError as exc:
            if exc.is_not_found:
                return None
            raise
        if not is_terminating(namespace):
            return None
        remaining = await self._delete_contents(name)
        if remaining:
            log.info("namespace %s: waiting for %s", name, remaining)
            return self._recheck_interval
        await self._finalize(name)
        return None

    async def _delete_contents(self, namespace: str) -> dict[str, int]:
        """Delete what is not yet being deleted; returns how many objects remain, per type."""
        touched: list[kc.GVR] = []
        for res in await self.client.discover_resources():
            if not res.gvr.namespaced or not {"list", "delete"} <= res.verbs:
                continue
            items = await self._list(res.gvr, namespace)
            live = [item for item in items if not item["metadata"].get("deletionTimestamp")]
            if live and "deletecollection" in res.verbs:
                await self._delete_collection(res.gvr, namespace)
            else:
                for item in live:
                    await self._delete(res.gvr, item)
            if items:
                touched.append(res.gvr)
        remaining: dict[str, int] = {}
        for gvr in touched:  # count again: most deletions take effect at once
            left = len(await self._list(gvr, namespace))
            if left:
                remaining[str(gvr)] = left
        return remaining

    async def _list(self, gvr: kc.GVR, namespace: str) -> list[Obj]:
        try:
            items, _ = await self.client.list_all(gvr, namespace=namespace)
        except errors.ApiError as exc:
            if exc.is_not_found:  # the type went away since discovery (its CRD was deleted)
                return []
            raise
        return items

    async def _delete_collection(self, gvr: kc.GVR, namespace: str) -> None:
        """One DELETE of the whole collection, as upstream's deleter does when the type allows it
        (namespaced_resources_deleter.go, deleteCollection); deleting 800 pods one request at a
        time took minutes."""
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        try:
            await self.client.request("DELETE", gvr.collection_path(namespace), body=options)
        except errors.ApiError as exc:
            if not exc.is_not_found:  # the type went away since discovery
                raise

    async def _delete(self, gvr: kc.GVR, item: Obj) -> None:
        meta = item["metadata"]
        try:
            await self.client.delete(gvr, meta["name"], namespace=meta["namespace"],
                                     propagation_policy="Background", preconditions={"uid": meta["uid"]})
        except errors.ApiError as exc:
            if not (exc.is_not_found or exc.is_conflict):  # gone, or replaced by a new object already
                raise

    async def _finalize(self, name: str) -> None:
        """PUT `/finalize` without our finalizer (retried on 409); the server then removes the namespace."""
        for _ in range(_UPDATE_ATTEMPTS):
            try:
                namespace = await self.client.get(kc.NAMESPACES, name)
            except errors.ApiError as exc:
                if exc.is_not_found:
                    return
                raise
            spec = namespace.setdefault("spec", {})
            finalizers = spec.get("finalizers") or []
            if FINALIZER not in finalizers:
                return
            spec["finalizers"] = [f for f in finalizers if f != FINALIZER]
            try:
                await self.client.replace(kc.NAMESPACES, namespace, subresource="finalize")
                log.info("namespace %s: empty; finalized", name)
                return
            except errors.ApiError as exc:
                if exc.is_not_found:
                    return
                if not exc.is_conflict:
                    raise
        raise RuntimeError(f"namespace {name}: finalize still conflicting after {_UPDATE_ATTEMPTS} attempts")
