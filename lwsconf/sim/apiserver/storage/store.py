"""Object storage for the simulated API server: the part etcd plus the watch cache play in Kubernetes.

One global, monotonically increasing resourceVersion stamps every write, as etcd's revision does, so
a list's resourceVersion can resume a watch on that resource. Each resource type keeps:

* its objects keyed by (namespace, name), treated as immutable once stored (writers store a new
  dict; readers may share it without copying), with their JSON encoding cached for fast GET/LIST;
* indexes by namespace, by label pair and by a few field paths, so selector LISTs touch candidates
  only (a linear scan of 10k pods costs ~20 ms);
* a bounded history of events for watch resume; a resume point older than the history answers
  410 Expired, as a compacted etcd does.

Watch fan-out happens here because the store is the only place that sees every write in order.
Everything runs on the server's event loop: no locks, no I/O.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lwsconf import jsoncodec
from lwsconf.sim.apiserver.apimachinery import selectors

ObjKey = tuple[str, str]
"""(namespace, name); namespace is "" for cluster-scoped objects."""

ResourceKey = tuple[str, str]
"""(group, plural)."""

INDEXED_FIELDS: dict[ResourceKey, tuple[str, ...]] = {
    ("", "pods"): ("spec.nodeName",),
}
"""Field paths with an equality index, per resource (the kubelet lists its pods by spec.nodeName)."""

DEFAULT_HISTORY = 20_000


def obj_key(obj: dict[str, Any]) -> ObjKey:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


@dataclass(frozen=True)
class Event:
    """One change to one object; `obj` is the stored object after (or, for DELETED, at) the change."""

    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    rv: int


@dataclass(eq=False)
class Watcher:
    """A subscriber to one resource type, filtered by namespace and selectors."""

    namespace: str | None
    label_selector: selectors.LabelSelector
    field_selector: selectors.FieldSelector
    queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)
    closed: bool = False

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return self.label_selector.matches(meta.get("labels")) and self.field_selector.matches(obj)

    def translate(self, event: Event) -> Event | None:
        """Turn a raw event into what this watcher sees, as the apiserver's cacher does.

        An object that starts matching the selector arrives as ADDED, one that stops matching as
        DELETED, so a filtered watch behaves like a watch over the filtered set.
        """
        now = self.matches(event.obj) if event.type != "DELETED" else False
        before = self.matches(event.old)
        if event.type == "DELETED":
            return event if self.matches(event.obj) else None
        if now and before:
            return event
        if now:
            return Event("ADDED", event.obj, event.old, event.rv)
        if before:
            return Event("DELETED", event.obj, event.old, event.rv)
        return None


class Table:
    """All objects of one resource type, with indexes, encoded cache, history and watchers."""

    def __init__(self, key: ResourceKey, history_size: int) -> None:
        self.key = key
        self.objects: dict[ObjKey, dict[str, Any]] = {}
        self.encoded: dict[ObjKey, bytes] = {}
        self.by_namespace: dict[str, set[ObjKey]] = collections.defaultdict(set)
        self.by_label: dict[tuple[str, str], set[ObjKey]] = collections.defaultdict(set)
        self.fields = INDEXED_FIELDS.get(key, ())
        self.by_field: dict[tuple[str, str], set[ObjKey]] = collections.defaultdict(set)
        self.history: collections.deque[Event] = collections.deque(maxlen=history_size)
        self.compacted_rv = 0
        """Events at or below this resourceVersion are no longer replayable."""
        self.watchers: set[Watcher] = set()

    def index(self, k: ObjKey, obj: dict[str, Any], add: bool) -> None:
        def touch(index: dict[Any, set[ObjKey]], ikey: Any) -> None:
            if add:
                index[ikey].add(k)
            else:
                bucket = index.get(ikey)
                if bucket is not None:
                    bucket.discard(k)
                    if not bucket:
                        del index[ikey]

        touch(self.by_namespace, k[0])
        for pair in (obj["metadata"].get("labels") or {}).items():
            touch(self.by_label, pair)
        for path in self.fields:
            touch(self.by_field, (path, selectors.field_value(obj, path)))

    def candidates(self, namespace: str | None, label_sel: selectors.LabelSelector,
                   field_sel: selectors.FieldSelector) -> Iterable[ObjKey]:
        """The smallest index bucket that can contain every match (a superset of the matches)."""
        buckets: list[set[ObjKey]] = []
        if namespace:
            buckets.append(self.by_namespace.get(namespace, set()))
        for pair in label_sel.equality_terms():
            buckets.append(self.by_label.get(pair, set()))
        for fpath, value in field_sel.equality_terms():
            if fpath == "metadata.name" and namespace is not None:
                return [(namespace, value)] if (namespace, value) in self.objects else []
            if fpath in self.fields:
                buckets.append(self.by_field.get((fpath, value), set()))
        if not buckets:
            return self.objects.keys()
        return min(buckets, key=len)

    def record(self, event: Event) -> None:
        if len(self.history) == self.history.maxlen:
            self.compacted_rv = self.history[0].rv
        self.history.append(event)
        for watcher in list(self.watchers):
            seen = watcher.translate(event)
            if seen is not None:
                watcher.queue.put_nowait(seen)


class Store:
    """All resource tables plus the global resourceVersion counter."""

    def __init__(self, history_size: int = DEFAULT_HISTORY) -> None:
        self.rv = 1
        self.history_size = history_size
        self._tables: dict[ResourceKey, Table] = {}

    def table(self, key: ResourceKey) -> Table:
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = Table(key, self.history_size)
        return table

    def tables(self) -> list[Table]:
        return list(self._tables.values())

    # --- reads ------------------------------------------------------------------------------

    def get(self, key: ResourceKey, namespace: str, name: str) -> dict[str, Any] | None:
        return self.table(key).objects.get((namespace, name))

    def encoded(self, key: ResourceKey, k: ObjKey) -> bytes:
        """The cached JSON encoding of a stored object."""
        table = self.table(key)
        data = table.encoded.get(k)
        if data is None:
            data = table.encoded[k] = jsoncodec.dumps(table.objects[k])
        return data

    def list_keys(self, key: ResourceKey, namespace: str | None, label_sel: selectors.LabelSelector,
             field_sel: selectors.FieldSelector) -> list[ObjKey]:
        """Keys of the matching objects, sorted by (namespace, name) as etcd's key order does."""
        table = self.table(key)
        out = []
        for k in table.candidates(namespace, label_sel, field_sel):
            obj = table.objects.get(k)
            if obj is None or (namespace and k[0] != namespace):
                continue
            if label_sel.matches(obj["metadata"].get("labels")) and field_sel.matches(obj):
                out.append(k)
        out.sort()
        return out

    def list_at(self, key: ResourceKey, rv: int, namespace: str | None, label_sel: selectors.LabelSelector,
                field_sel: selectors.FieldSelector) -> list[tuple[ObjKey, dict[str, Any]]] | None:
        """The matching objects as they were at resourceVersion `rv` (etcd's snapshot of that revision, which a
        list with resourceVersionMatch=Exact reads), sorted by key; None when `rv` is older than the retained
        history. Rebuilt from the current objects by undoing, newest first, every event after `rv`."""
        table = self.table(key)
        if rv < table.compacted_rv:
            return None
        state = dict(table.objects)
        for event in reversed(table.history):
            if event.rv <= rv:
                break
            k = obj_key(event.obj)
            if event.type == "ADDED":
                state.pop(k, None)
            elif event.old is not None:
                state[k] = event.old
        return sorted(((k, obj) for k, obj in state.items()
                       if (not namespace or k[0] == namespace) and label_sel.matches(obj["metadata"].get("labels"))
                       and field_sel.matches(obj)), key=lambda item: item[0])

    # --- writes -----------------------------------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def put(self, key: ResourceKey, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a new or replaced object, stamping a fresh resourceVersion; emits ADDED/MODIFIED."""
        table = self.table(key)
        k = obj_key(obj)
        rv = self.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        old = table.objects.get(k)
        if old is not None:
            table.index(k, old, add=False)
        table.objects[k] = obj
        table.encoded.pop(k, None)
        table.index(k, obj, add=True)
        table.record(Event("MODIFIED" if old is not None else "ADDED", obj, old, rv))
        return obj

    def remove(self, key: ResourceKey, namespace: str, name: str) -> dict[str, Any] | None:
        """Delete an object for good; the DELETED event carries a fresh resourceVersion."""
        table = self.table(key)
        k = (namespace, name)
        old = table.objects.pop(k, None)
        if old is None:
            return None
        table.encoded.pop(k, None)
        table.index(k, old, add=False)
        rv = self.next_rv()
        final = dict(old)
        final["metadata"] = dict(old["metadata"], resourceVersion=str(rv))
        table.record(Event("DELETED", final, old, rv))
        return final

    def drop_table(self, key: ResourceKey) -> list[dict[str, Any]]:
        """Remove every object of a resource type (CRD deletion), emitting DELETED for each."""
        table = self.table(key)
        gone = [self.remove(key, ns, name) for ns, name in list(table.objects)]
        return [g for g in gone if g is not None]

    # --- watch ------------------------------------------------------------------------------

    def subscribe(self, key: ResourceKey, watcher: Watcher) -> None:
        self.table(key).watchers.add(watcher)

    def unsubscribe(self, key: ResourceKey, watcher: Watcher) -> None:
        watcher.closed = True
        self.table(key).watchers.discard(watcher)

    def replay_since(self, key: ResourceKey, rv: int) -> list[Event] | None:
        """Events newer than `rv`, or None when `rv` is older than the retained history (410)."""
        table = self.table(key)
        if rv < table.compacted_rv:
            return None
        return [e for e in table.history if e.rv > rv]
