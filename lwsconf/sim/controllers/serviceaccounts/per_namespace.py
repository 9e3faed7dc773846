"""One object of a fixed name kept in every namespace: the loop both controllers of this package share.

A namespace is looked at when it appears or changes and when its object changes or goes; the object is
created when missing and, where the controller says so, brought back to what it must hold. A create refused
because the namespace is gone or terminating (the NamespaceTerminating cause) is not retried, as
kube-controller-manager's controllers do (`apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause)`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.kubeclient import informer as informer_mod

log = logging.getLogger(__name__)

Obj = dict[str, Any]
TERMINATING_CAUSE = "NamespaceTerminating"


def namespace_terminating(exc: errors.ApiError) -> bool:
    """Whether the API server refused a write because its namespace is being deleted."""
    causes = ((exc.body or {}).get("details") or {}).get("causes") or []
    return any(isinstance(c, dict) and c.get("reason") == TERMINATING_CAUSE for c in causes)


class PerNamespace:
    """Keeps object `name` of `gvr` in each namespace.

    Args:
        client: an API client for this controller alone.
        gvr, name: what to keep.
        desired: the object to create in a namespace (name and namespace are filled in).
        repair: the changed object to write back, or None when the existing one is right (None: never
            rewritten, as for ServiceAccounts).
        active_only: act only on namespaces in phase Active (the serviceaccount controller), else on any
            that exists (the root CA publisher, whose create a terminating namespace refuses).
    """

    def __init__(self, client: kc.Client, *, name: str, gvr: kc.GVR, desired: Callable[[], Obj],
                 repair: Callable[[Obj], Obj | None] | None = None, active_only: bool = False,
                 informers: kubeclient.SharedInformers | None = None, workers: int = 1) -> None:
        self.client = client
        self.name, self.gvr = name, gvr
        self._desired, self._repair, self._active_only = desired, repair, active_only
        self.queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue(name=f"{gvr.plural}/{name}")
        self.namespaces = shared.informer(informers, client, kc.NAMESPACES)
        self.objects = shared.informer(informers, client, gvr)
        self.namespaces.add_handler(self._on_namespace)
        self.objects.add_handler(self._on_object)
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the object in every namespace until `stop` is set."""
        self.namespaces.start()
        self.objects.start()
        try:
            await kubeclient.run_workers(self.queue, self.reconcile, stop, workers=self._workers)
        finally:
            self.namespaces.stop()
            self.objects.stop()
            await asyncio.gather(self.namespaces.join(), self.objects.join())

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Until both caches (namespaces and the kept objects) have listed once."""
        await asyncio.gather(self.namespaces.wait_synced(timeout), self.objects.wait_synced(timeout))

    def _on_namespace(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        if event_type != informer_mod.DELETED:
            self.queue.add(obj["metadata"]["name"])

    def _on_object(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        meta = obj.get("metadata") or {}
        if meta.get("name") == self.name and meta.get("namespace") and event_type != informer_mod.ADDED:
            self.queue.add(meta["namespace"])

    async def reconcile(self, namespace: str) -> float | None:
        """Create or repair the object in `namespace`; None when done (failures are raised and retried)."""
        await self.wait_synced()
        ns = self.namespaces.get(namespace)
        if ns is None or (self._active_only and (ns.get("status") or {}).get("phase", "Active") != "Active"):
            return None
        current = self.objects.get(self.name, namespace)
        if current is None:
            body = self._desired()
            body["metadata"] = {**(body.get("metadata") or {}), "name": self.name, "namespace": namespace}
            try:
                await self.client.create(self.gvr, body, namespace=namespace)
            except errors.ApiError as exc:
                if exc.is_already_exists or exc.is_not_found or namespace_terminating(exc):
                    return None
                raise
            return None
        changed = self._repair(current) if self._repair is not None else None
        if changed is not None:
            await self.client.replace(self.gvr, changed, namespace=namespace)
        return None
