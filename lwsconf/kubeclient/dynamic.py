"""`DynamicInformers`: one informer per discovered resource type, following discovery over time.

The garbage collector and the namespace controller must see every kind of object, including
custom resources whose CRDs are registered while the sim runs. kube-controller-manager solves this
with a metadata-informer factory that rediscovers periodically; this is the same idea: every
`interval` seconds discovery runs again, informers start for new list+watch types and stop for
types no longer served. When a type goes away, a DELETED callback is synthesized for each object
still cached, so subscribers never keep ghosts of a deleted CRD's objects.

It also answers "which resource serves apiVersion X, kind Y?" (`gvr_for`), which owner references
need, since they name a kind, not a resource.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from lwsconf.kubeclient import client as client_mod
from lwsconf.kubeclient import errors
from lwsconf.kubeclient import informer as informer_mod

log = logging.getLogger(__name__)

Obj = dict[str, Any]
EventHandler = Callable[[client_mod.GVR, str, Obj, Obj | None], None]
"""`handler(gvr, event_type, obj, old)`: an informer callback tagged with its resource type."""

Filter = Callable[[client_mod.APIResource], bool]


def group_of(api_version: str) -> str:
    """"apps/v1" -> "apps", "v1" -> "" (the core group)."""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


class DynamicInformers:
    """Informers over every served list+watch resource type, started and stopped as discovery changes.

    Args:
        client: the API client all informers share.
        handler: receives every event of every informer, tagged with the resource type.
        transform: applied to cached objects (default: metadata only, as the GC needs).
        include: which discovered resources to watch (default: all that support list and watch).
        interval: seconds between discovery passes in `run`.
        watch_timeout: timeoutSeconds for each informer's watches.
    """

    def __init__(self, client: client_mod.Client, *, handler: EventHandler,
                 transform: informer_mod.Transform | None = informer_mod.metadata_only,
                 include: Filter | None = None,
                 interval: float = 2.0,
                 watch_timeout: float = 300.0) -> None:
        self.client = client
        self._handler = handler
        self._transform = transform
        self._include = include
        self._interval = interval
        self._watch_timeout = watch_timeout
        self._informers: dict[client_mod.GVR, informer_mod.Informer] = {}
        self._kinds: dict[tuple[str, str], client_mod.GVR] = {}
        self._discovered = asyncio.Event()

    # --- queries --------------------------------------------------------------------------------

    @property
    def gvrs(self) -> list[client_mod.GVR]:
        return list(self._informers)

    def informer(self, gvr: client_mod.GVR) -> informer_mod.Informer | None:
        return self._informers.get(gvr)

    def gvr_for(self, api_version: str, kind: str) -> client_mod.GVR | None:
        """The served resource for an owner reference's apiVersion and kind (any version of the group)."""
        return self._kinds.get((group_of(api_version), kind))

    @property
    def has_synced(self) -> bool:
        """Discovery ran and every current informer has listed once."""
        return self._discovered.is_set() and all(i.has_synced for i in self._informers.values())

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Wait for the first discovery and the first LIST of every informer it started.

        Raises:
            TimeoutError: with the informers still not synced in the message.
        """
        async def synced() -> None:
            await self._discovered.wait()
            for informer in list(self._informers.values()):
                await informer.wait_synced()

        try:
            await asyncio.wait_for(synced(), timeout)
        except TimeoutError:
            pending = [repr(i) for i in self._informers.values() if not i.has_synced]
            raise TimeoutError(f"informers not synced within {timeout}s: discovery ran="
                               f"{self._discovered.is_set()}, pending={pending}") from None

    # --- lifecycle ------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Rediscover every `interval` seconds until `stop` is set; then stop every informer."""
        try:
            while not stop.is_set():
                try:
                    await self.refresh()
                except errors.KubeClientError as exc:
                    log.warning("discovery failed (%s); keeping the current informers", exc)
                except Exception:  # a malformed discovery document must not end discovery for good
                    log.exception("discovery failed unexpectedly; keeping the current informers")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._interval)
        finally:
            await self.close()

    async def refresh(self) -> None:
        """One discovery pass: start informers for new types, stop those for vanished ones."""
        resources = await self.client.discover_resources()
        self._kinds = {(r.gvr.group, r.kind): r.gvr for r in resources}
        wanted = {r.gvr for r in resources if {"list", "watch"} <= r.verbs
                  and (self._include is None or self._include(r))}
        for gvr in wanted - set(self._informers):
            self._start(gvr)
        for gvr in set(self._informers) - wanted:
            await self._forget(gvr)
        self._discovered.set()

    async def close(self) -> None:
        informers = list(self._informers.values())
        self._informers.clear()
        for informer in informers:
            informer.stop()
        for informer in informers:
            await informer.join()

    def _start(self, gvr: client_mod.GVR) -> None:
        informer = informer_mod.Informer(self.client, gvr, transform=self._transform,
                                         watch_timeout=self._watch_timeout)

        def forward(event_type: str, obj: Obj, old: Obj | None) -> None:
            self._handler(gvr, event_type, obj, old)

        informer.add_handler(forward)
        self._informers[gvr] = informer
        informer.start()
        log.debug("started %r", informer)

    async def _forget(self, gvr: client_mod.GVR) -> None:
        informer = self._informers.pop(gvr)
        informer.stop()
        await informer.join()
        for obj in informer.list():
            try:
                self._handler(gvr, informer_mod.DELETED, obj, obj)
            except Exception:
                log.exception("handler failed on the synthesized deletion of %s %s", gvr, obj.get("metadata"))
        log.info("stopped %r: %s is no longer served", informer, gvr)
