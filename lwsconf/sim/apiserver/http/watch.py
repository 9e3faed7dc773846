"""Watch streams: newline-delimited JSON events, as `?watch=true` returns them (or length-prefixed protobuf
frames for a client that negotiated protobuf: `protobuf.negotiation`).

Semantics follow kube-apiserver's watch cache:

* no `resourceVersion` (or "0"): synthetic ADDED events for the current state, then changes;
* `resourceVersion=N`: every change after N, replayed from the bounded history; N older than the
  history gives one ERROR event carrying a 410 Expired Status, after which clients relist;
* `sendInitialEvents=true` (the WatchList protocol, on by default in client-go 1.37 and so in
  `kubectl wait`): synthetic ADDED events, then a BOOKMARK annotated
  `k8s.io/initial-events-end: "true"`; without it `kubectl wait` never completes;
* `allowWatchBookmarks=true`: periodic BOOKMARKs carrying the current resourceVersion;
* `timeoutSeconds`: the server closes the stream after that long.

A watch subscribes to the table its resource is stored in, so a watch on events.k8s.io/v1 events
also sees events written through core v1; each object is converted to the watched form on output.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any

from aiohttp import web

from lwsconf import jsoncodec
from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import handlers, params, routing
from lwsconf.sim.apiserver.http.context import ServerContext
from lwsconf.sim.apiserver.protobuf import envelope, negotiation
from lwsconf.sim.apiserver.storage import conversion, store
from lwsconf.sim.apiserver.tables import tables

DEFAULT_TIMEOUT_SECONDS = 1800.0
BOOKMARK_INTERVAL_SECONDS = 2.0
BOOKMARK_BEFORE_DEADLINE_SECONDS = 2.0


class WatchSession:
    """One open watch: its filters, its output encoding, and the stream it writes to."""

    def __init__(self, ctx: ServerContext, request: web.Request, target: routing.Target) -> None:
        self.ctx = ctx
        self.request = request
        self.info = target.info
        label_sel, field_sel = handlers.parse_selectors(request, target)
        self.watcher = store.Watcher(target.namespace, label_sel, field_sel)
        accept = request.headers.get("Accept", "")
        self.as_table = tables.wants_table(accept)
        self.protobuf = not self.as_table and negotiation.names_protobuf(accept) and negotiation.choose(
            accept, protobuf_possible=envelope.has_message(self.info.api_version, self.info.kind)) == "protobuf"
        """Length-prefixed protobuf WatchEvent frames (`protobuf.envelope.watch_frame`) instead of JSON lines."""
        self.bookmarks = request.query.get("allowWatchBookmarks", "").lower() == "true"
        content_type = negotiation.PROTOBUF_WATCH if self.protobuf else "application/json"
        self.response = web.StreamResponse(status=200, headers={"Content-Type": content_type})

    def event(self, event_type: str, obj: dict[str, Any]) -> bytes:
        """One event of the stream: a JSON line, or a protobuf frame."""
        if self.protobuf:
            return envelope.watch_frame(event_type, obj)
        return jsoncodec.dumps({"type": event_type, "object": obj}) + b"\n"

    def encode(self, event_type: str, stored: dict[str, Any]) -> bytes:
        """One event line for a stored object, in the form (and encoding) this watch asked for."""
        obj = conversion.from_storage(self.info, stored)
        if self.as_table and event_type in ("ADDED", "MODIFIED", "DELETED"):
            return json.dumps(tables.to_table_watch_event(self.info, event_type, obj),
                              separators=(",", ":")).encode() + b"\n"
        return self.event(event_type, obj)

    def bookmark(self, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(self.ctx.db.rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.info.kind, "apiVersion": self.info.api_version, "metadata": meta}
        return self.event("BOOKMARK", obj)

    def initial_events(self) -> list[bytes]:
        keys = self.ctx.storage.list_keys(self.info, self.watcher.namespace, self.watcher.label_selector,
                                          self.watcher.field_selector)
        table = self.ctx.db.table(self.info.storage_key)
        return [self.encode("ADDED", table.objects[k]) for k in keys]

    def backlog(self) -> list[bytes] | None:
        """What the client must see before live events, or None when its resourceVersion expired."""
        query = self.request.query
        rv = params.resource_version(self.request, watch=True)
        if query.get("sendInitialEvents", "").lower() == "true":
            # the initial-events-end BOOKMARK only for a watch that allows bookmarks, as kube-apiserver 1.37.2
            # (lwsconf fidelity watch/watch-errors/send-initial-without-bookmarks: the ADDED events alone)
            return [*self.initial_events(), *([self.bookmark(initial_end=True)] if self.bookmarks else [])]
        if not rv:
            return self.initial_events()
        replay = self.ctx.db.replay_since(self.info.storage_key, rv)
        if replay is None:
            return None
        out = []
        for event in replay:
            seen = self.watcher.translate(event)
            if seen is not None:
                out.append(self.encode(seen.type, seen.obj))
        return out


def check_watch_list_options(request: web.Request) -> None:
    """ValidateListOptions for a watch asking for initial events (apimachinery internalversion/validation):
    the WatchList protocol needs resourceVersionMatch=NotOlderThan; kube-apiserver 1.37.2 answers 422
    otherwise (lwsconf fidelity watch/watch-errors/send-initial-without-match), and accepts it without
    allowWatchBookmarks (send-initial-without-bookmarks: 200)."""
    query = request.query
    if not query.get("sendInitialEvents"):
        return
    causes = []
    if query.get("resourceVersionMatch") != "NotOlderThan":
        causes.append(errors.Cause("resourceVersionMatch", "Forbidden: sendInitialEvents requires setting "
                                   "resourceVersionMatch to NotOlderThan", "FieldValueForbidden"))
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)


async def serve(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.StreamResponse:
    check_watch_list_options(request)
    session = WatchSession(ctx, request, target)
    timeout = _timeout(request)
    ctx.db.subscribe(target.info.storage_key, session.watcher)
    try:
        backlog = session.backlog()  # computed right after subscribing: no event can fall in between
        await session.response.prepare(request)
        if backlog is None:
            expired = errors.expired(f"too old resource version: {request.query.get('resourceVersion')} "
                                     f"({ctx.db.table(target.info.storage_key).compacted_rv})")
            await session.response.write(session.event("ERROR", expired.to_status()))
            return session.response
        for line in backlog:
            await session.response.write(line)
        await _pump(session, time.monotonic() + timeout)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        ctx.db.unsubscribe(target.info.storage_key, session.watcher)
    return session.response


def _next_bookmark(now: float, deadline: float) -> float:
    """When the next periodic BOOKMARK is due: every BOOKMARK_INTERVAL_SECONDS, but never later than
    BOOKMARK_BEFORE_DEADLINE_SECONDS before the watch ends, and none at all once that moment has passed
    (kube-apiserver's cacheWatcher.nextBookmarkTime: a 2 s watch gets no BOOKMARK; lwsconf fidelity
    watch/watch-resume/resume-bookmarks)."""
    due = min(now + BOOKMARK_INTERVAL_SECONDS, deadline - BOOKMARK_BEFORE_DEADLINE_SECONDS)
    return due if due > now else math.inf


def _timeout(request: web.Request) -> float:
    """`timeoutSeconds` is an int64 in ListOptions: "inf", "nan" or "1.5" are 400 (they once meant a
    watch that never ended, or ended at once)."""
    value = params.int_query(request, "timeoutSeconds")
    return DEFAULT_TIMEOUT_SECONDS if value is None else float(max(0, value))


async def _pump(session: WatchSession, deadline: float) -> None:
    """Copy live events to the client until the deadline, a disconnect or server shutdown."""
    queue = session.watcher.queue
    next_bookmark = _next_bookmark(time.monotonic(), deadline)
    while True:
        now = time.monotonic()
        if now >= deadline:
            return
        wait = min(deadline, next_bookmark) - now if session.bookmarks else deadline - now
        try:
            event = await asyncio.wait_for(queue.get(), timeout=max(wait, 0.0))
        except TimeoutError:
            if session.bookmarks and time.monotonic() >= next_bookmark:
                await session.response.write(session.bookmark())
                next_bookmark = _next_bookmark(time.monotonic(), deadline)
            continue
        if event is None:
            return
        chunk = [session.encode(event.type, event.obj)]
        while not queue.empty():  # drain bursts into one write
            more = queue.get_nowait()
            if more is None:
                await session.response.write(b"".join(chunk))
                return
            chunk.append(session.encode(more.type, more.obj))
        await session.response.write(b"".join(chunk))
