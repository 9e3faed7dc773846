"""`Informer`: a LIST+WATCH cache of one resource type with change callbacks, like client-go's.

The loop is the reflector's: LIST (all pages) to fill the cache, then WATCH from the list's
resourceVersion with bookmarks, following each event's resourceVersion. A watch the server ends
cleanly (its timeoutSeconds) is resumed from the last resourceVersion seen. A 410 (the resume point
was compacted) or a broken connection means events may have been missed, so the informer relists,
after a capped exponential backoff, and turns the difference between its cache and the new list
into the ADDED/MODIFIED/DELETED callbacks a continuous watch would have produced. Handlers therefore
see a gap-free story of each object, which is what level-based controllers rely on.

Handlers are plain functions, run on the event loop in event order after the cache was updated.
They must be quick (enqueue a key, update an index); an exception in one is logged and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from typing import Any, Protocol

from lwsconf.kubeclient import backoff as backoff_mod
from lwsconf.kubeclient import client as client_mod
from lwsconf.kubeclient import errors

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ObjKey = tuple[str, str]
"""(namespace, name); namespace is "" for cluster-scoped objects."""

ObjKeys = list[ObjKey]
"""(Alias: inside `Informer`, `list` is the cache's list method, not the builtin.)"""

Handler = Callable[[str, Obj, Obj | None], None]
"""`handler(event_type, obj, old)`: ADDED (old None), MODIFIED (old = previous), DELETED (old = last cached)."""

Transform = Callable[[Obj], Obj]

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


def key_of(obj: Obj) -> ObjKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def metadata_only(obj: Obj) -> Obj:
    """Keep apiVersion, kind and metadata (minus managedFields): what a metadata informer holds."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": meta}


def _rv(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def _newer(rv: str, than: str) -> bool:
    """Whether `rv` is later than `than`; the sim's resourceVersions are decimal, like etcd's revisions."""
    if rv.isdigit() and than.isdigit():
        return int(rv) > int(than)
    return rv != than


def _uid(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("uid") or "")


class Cache(Protocol):
    """What a controller uses of an informer: its own `Informer`, or its view of a shared one (`shared`)."""

    def add_handler(self, handler: Handler) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    async def join(self) -> None: ...
    @property
    def has_synced(self) -> bool: ...
    async def wait_synced(self, timeout: float | None = None) -> None: ...
    def get(self, name: str, namespace: str | None = None) -> Obj | None: ...
    def list(self, namespace: str | None = None) -> list[Obj]: ...
    def keys(self) -> ObjKeys: ...


class Informer:
    """A cache of one resource type, kept current by LIST+WATCH, with change callbacks.

    Args:
        client: the API client (shared by all informers of a controller).
        gvr: the resource type.
        namespace: watch one namespace only (None: all namespaces, or a cluster-scoped type).
        label_selector: cache only matching objects; objects that stop matching look deleted.
        transform: applied to every object before caching (e.g. `metadata_only`).
        watch_timeout: timeoutSeconds asked of each watch, jittered up to +50%.
        backoff: delays between relists after failures (reset once a watch delivers an event or
            ends cleanly, so a LIST that succeeds followed by a watch that fails still backs off).
    """

    def __init__(self, client: client_mod.Client, gvr: client_mod.GVR, *,
                 namespace: str | None = None,
                 label_selector: str | None = None,
                 transform: Transform | None = None,
                 watch_timeout: float = 300.0,
                 backoff: backoff_mod.Backoff | None = None) -> None:
        self.client = client
        self.gvr = gvr
        self.namespace = namespace
        self.label_selector = label_selector
        self._transform = transform
        self._watch_timeout = watch_timeout
        self._backoff = backoff or backoff_mod.Backoff(initial=0.05, cap=5.0)
        self._cache: dict[ObjKey, Obj] = {}
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.resource_version = ""
        """The last resourceVersion seen (from a LIST, an event or a bookmark)."""
        self.relists = 0
        """How many LISTs ran (1 after the first sync); tests and diagnostics read it."""

    def __repr__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"Informer({self.gvr}{where}, {len(self._cache)} cached, rv={self.resource_version or '-'})"

    # --- public surface -------------------------------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        """Register a callback; add handlers before `start()` to see the initial ADDED events."""
        self._handlers.append(handler)

    def remove_handler(self, handler: Handler) -> None:
        """Unregister a callback (a shared informer's controller that stopped: `kubeclient.shared`)."""
        if handler in self._handlers:
            self._handlers.remove(handler)

    def start(self) -> None:
        """Run the LIST+WATCH loop in a background task (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name=f"informer {self.gvr}")

    def stop(self) -> None:
        """Cancel the loop; the cache keeps its last state. `await join()` to wait for the end."""
        if self._task is not None:
            self._task.cancel()

    async def join(self) -> None:
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Wait until the first LIST has filled the cache.

        Raises:
            TimeoutError: not synced within `timeout` seconds (the message says why it may be).
        """
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            raise TimeoutError(f"{self!r} did not sync within {timeout}s: is the API server up and "
                               f"does it serve {self.gvr}?") from None

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        """The cached object (shared, do not mutate), or None."""
        return self._cache.get((namespace or "", name))

    def list(self, namespace: str | None = None) -> list[Obj]:
        return [o for (ns, _), o in self._cache.items() if namespace is None or ns == namespace]

    def keys(self) -> ObjKeys:
        return sorted(self._cache)

    # --- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """LIST, then WATCH until it fails; relist with backoff; forever (until cancelled)."""
        while True:
            try:
                await self._list_and_replace()
                while True:
                    await self._watch_once()
                    self._backoff.reset()
            except errors.ApiError as exc:
                level = logging.INFO if exc.is_gone else logging.WARNING
                log.log(level, "%r: %s; relisting", self, exc)
            except errors.TransportError as exc:
                log.info("%r: %s; relisting", self, exc)
            except Exception:  # a bug (in a transform, say) must not end the informer for good
                log.exception("%r: unexpected failure; relisting", self)
            await asyncio.sleep(self._backoff.next())

    async def _list_and_replace(self) -> None:
        items, rv = await self.client.list_all(self.gvr, namespace=self.namespace,
                                               label_selector=self.label_selector)
        fresh = {key_of(o): self._prepare(o) for o in items}
        old_cache, self._cache = self._cache, {}
        self.resource_version = rv
        self.relists += 1
        for key, obj in fresh.items():
            previous = old_cache.pop(key, None)
            if previous is not None and _uid(previous) != _uid(obj):
                self._dispatch(DELETED, previous, previous)  # replaced while we were not watching
                previous = None
            self._cache[key] = obj
            if previous is None:
                self._dispatch(ADDED, obj, None)
            elif _rv(previous) != _rv(obj):
                self._dispatch(MODIFIED, obj, previous)
        for previous in old_cache.values():
            self._dispatch(DELETED, previous, previous)
        self._synced.set()

    async def _watch_once(self) -> None:
        """One watch request, applied event by event; returns when the server ends it cleanly."""
        timeout = int(self._watch_timeout * (1 + random.random() / 2)) or 1
        events = self.client.watch(self.gvr, namespace=self.namespace, label_selector=self.label_selector,
                                   resource_version=self.resource_version, timeout_seconds=timeout)
        async with contextlib.aclosing(events) as stream:
            async for event in stream:
                self._apply(event)

    def _apply(self, event: client_mod.WatchEvent) -> None:
        self._backoff.reset()  # the watch works: the next failure starts the backoff afresh
        rv = _rv(event.object)
        if rv:
            self.resource_version = rv
        if event.type not in (ADDED, MODIFIED, DELETED):
            return  # BOOKMARK: only the resourceVersion moves
        obj = self._prepare(event.object)
        key = key_of(obj)
        previous = self._cache.get(key)
        if event.type == DELETED:
            if self._cache.pop(key, None) is not None:  # (unknown objects: nothing to tell)
                self._dispatch(DELETED, obj, previous)
            return
        if previous is not None and _uid(previous) != _uid(obj):
            self._cache.pop(key)
            self._dispatch(DELETED, previous, previous)
            previous = None
        if previous is not None and not _newer(rv, _rv(previous)):
            return  # already seen: a watch replays from the first page of a paged LIST
        self._cache[key] = obj
        self._dispatch(ADDED if previous is None else MODIFIED, obj, previous)

    def _prepare(self, obj: Obj) -> Obj:
        return self._transform(obj) if self._transform is not None else obj

    def _dispatch(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        for handler in self._handlers:
            try:
                handler(event_type, obj, old)
            except Exception:
                log.exception("%r: handler %r failed on %s %s", self, handler, event_type, key_of(obj))
