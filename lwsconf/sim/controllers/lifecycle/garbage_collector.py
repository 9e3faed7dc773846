"""The ownerReference garbage collector, an HTTP client of the API server like kube-controller-manager's.

What it guarantees (Kubernetes' garbage collection semantics, docs/lws-contract.md section 2.7 relies on
them for the LWS -> StatefulSet -> Pod -> worker StatefulSet chain):

* **Background**: an object none of whose owners exists any more (the owner is gone, or the object
  of that name now has another uid) is deleted with `propagationPolicy: Background`, so the cascade
  continues one level at a time. With several owners it is deleted only when all are gone; while
  one remains, the dangling references are removed instead.
* **Foreground**: an owner deleted with the `foregroundDeletion` finalizer has its dependents
  deleted (in the foreground themselves when they have dependents, so the whole tree goes bottom-up),
  and loses the finalizer once no dependent with `blockOwnerDeletion: true` is left.
* **Orphan**: an owner deleted with the `orphan` finalizer has the references to it removed from its
  dependents, then loses the finalizer; the dependents live on.

How: metadata-only informers over every discovered resource type (rediscovered every couple of
seconds, so CRDs registered later are covered) feed a dependency graph (uid -> node, owner uid ->
dependents) and a work queue of uids. Decisions that delete or rewrite something are confirmed with
live GETs, as the upstream collector does, because an informer can lag behind: an owner missing from
the cache may have just been created. Writes use uid/resourceVersion preconditions and retry on 409.
Deliberately left out: upstream's cycle detection for foreground deletion and its event recording.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.kubeclient import informer as informer_mod

log = logging.getLogger(__name__)

Obj = dict[str, Any]
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_UPDATE_ATTEMPTS = 5
_ABSENT_CACHE_LIMIT = 50_000


@dataclass(frozen=True)
class OwnerLink:
    """One ownerReference of a dependent, as far as the collector cares."""

    uid: str
    api_version: str
    kind: str
    name: str
    block: bool

    @staticmethod
    def of(ref: Obj) -> OwnerLink:
        return OwnerLink(str(ref.get("uid", "")), str(ref.get("apiVersion", "")), str(ref.get("kind", "")),
                         str(ref.get("name", "")), bool(ref.get("blockOwnerDeletion")))


@dataclass(frozen=True)
class Node:
    """One object in the dependency graph: identity, owners and deletion state."""

    gvr: kc.GVR
    namespace: str
    name: str
    uid: str
    owners: tuple[OwnerLink, ...] = ()
    deleting: bool = False
    finalizers: frozenset[str] = frozenset()

    @staticmethod
    def of(gvr: kc.GVR, obj: Obj) -> Node:
        meta = obj.get("metadata") or {}
        owners = tuple(OwnerLink.of(r) for r in meta.get("ownerReferences") or () if r.get("uid"))
        return Node(gvr, meta.get("namespace") or "", meta.get("name", ""), meta.get("uid", ""), owners,
                    bool(meta.get("deletionTimestamp")), frozenset(meta.get("finalizers") or ()))

    @property
    def deleting_dependents(self) -> bool:
        """Foreground deletion in progress: the dependents go first."""
        return self.deleting and FOREGROUND in self.finalizers

    @property
    def orphaning(self) -> bool:
        return self.deleting and ORPHAN in self.finalizers

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.gvr.plural} {where}{self.name} ({self.uid})"


class Graph:
    """Nodes by uid and dependents by owner uid (owners need not be known). Pure data, no I/O."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self._dependents: dict[str, set[str]] = collections.defaultdict(set)

    def upsert(self, node: Node) -> Node | None:
        """Store `node`, re-linking its owners; returns the previous version."""
        previous = self.remove(node.uid)
        self.nodes[node.uid] = node
        for link in node.owners:
            self._dependents[link.uid].add(node.uid)
        return previous

    def remove(self, uid: str) -> Node | None:
        node = self.nodes.pop(uid, None)
        for link in node.owners if node else ():
            deps = self._dependents.get(link.uid)
            if deps is not None:
                deps.discard(uid)
                if not deps:
                    del self._dependents[link.uid]
        return node

    def dependents(self, owner_uid: str) -> list[Node]:
        return [self.nodes[d] for d in self._dependents.get(owner_uid, ()) if d in self.nodes]

    def blocking_dependents(self, owner_uid: str) -> list[Node]:
        """Dependents whose reference to the owner has `blockOwnerDeletion: true`."""
        return [d for d in self.dependents(owner_uid)
                if any(link.uid == owner_uid and link.block for link in d.owners)]


@dataclass
class _Verdict:
    """The state of each owner of one dependent, as upstream's `classifyReferences` sorts them."""

    solid: list[OwnerLink] = field(default_factory=list)
    dangling: list[OwnerLink] = field(default_factory=list)
    waiting: list[OwnerLink] = field(default_factory=list)
    """Owners being deleted in the foreground, waiting for their dependents."""
    unresolved: list[OwnerLink] = field(default_factory=list)
    """Owners of a kind discovery does not (yet) know."""


class GarbageCollector:
    """Deletes dependents whose owners are gone and runs foreground and orphan deletion.

    Args:
        client: an API client for this controller alone.
        workers: concurrent reconciles (one uid is never handled twice at once).
        rediscover_interval: seconds between discovery passes (new CRDs get informers).
        unresolved_retry: seconds before looking again at an object whose owner kind is unknown.

    Start it with `await GarbageCollector(client).run(stop)`; it returns after `stop` is set.
    """

    def __init__(self, client: kc.Client, *, workers: int = 4, rediscover_interval: float = 2.0,
                 unresolved_retry: float = 5.0) -> None:
        self.client = client
        self.graph = Graph()
        self.queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue(name="garbage-collector")
        self.informers = kubeclient.DynamicInformers(client, handler=self._on_event,
                                                     interval=rediscover_interval)
        self._workers = workers
        self._unresolved_retry = unresolved_retry
        self._absent: set[str] = set()
        """Owner uids a live GET showed to be gone; uids are never reused, so this never goes stale."""

    async def run(self, stop: asyncio.Event) -> None:
        """Watch everything and collect garbage until `stop` is set."""
        discovery = asyncio.create_task(self.informers.run(stop), name="gc discovery")
        try:
            await kubeclient.run_workers(self.queue, self._reconcile, stop, workers=self._workers)
        finally:
            discovery.cancel()
            await asyncio.gather(discovery, return_exceptions=True)
            await self.informers.close()

    # --- graph maintenance (informer callbacks: quick, no I/O) -----------------------------------

    def _on_event(self, gvr: kc.GVR, event_type: str, obj: Obj, old: Obj | None) -> None:
        node = Node.of(gvr, obj)
        if not node.uid:
            return
        if event_type == informer_mod.DELETED:
            self._on_deleted(node)
            return
        self._absent.discard(node.uid)
        previous = self.graph.upsert(node)
        if node.owners and (previous is None or previous.owners != node.owners) and self._owner_in_doubt(node):
            self.queue.add(node.uid)
        if node.orphaning or node.deleting_dependents:
            self.queue.add(node.uid)
        if node.deleting_dependents and (previous is None or not previous.deleting_dependents):
            for dep in self.graph.dependents(node.uid):
                self.queue.add(dep.uid)
        if previous is not None:
            kept = {link.uid for link in node.owners}
            self._wake_waiting_owners(link for link in previous.owners if link.uid not in kept)

    def _owner_in_doubt(self, node: Node) -> bool:
        """Whether an owner may be gone: not in the graph (not seen yet, or deleted), or being deleted.

        Upstream's graph builder likewise checks a new dependent only when an owner is unknown to the
        graph (a "virtual" node, graph_builder.go). Looking up every new pod's owner with live GETs
        was about one request in eight while a large StatefulSet started. An owner deleted later
        brings its dependents back through `_on_deleted`.
        """
        for link in node.owners:
            owner = self.graph.nodes.get(link.uid)
            if owner is None or owner.deleting:
                return True
        return False

    def _on_deleted(self, node: Node) -> None:
        removed = self.graph.remove(node.uid) or node
        for dep in self.graph.dependents(node.uid):
            self.queue.add(dep.uid)  # maybe dangling now
        self._wake_waiting_owners(removed.owners)

    def _wake_waiting_owners(self, links: Iterable[OwnerLink]) -> None:
        """A blocking dependent went away: its foreground-deleting owners may now finish."""
        for link in links:
            owner = self.graph.nodes.get(link.uid)
            if owner is not None and owner.deleting_dependents:
                self.queue.add(owner.uid)

    # --- reconcile -------------------------------------------------------------------------------

    async def _reconcile(self, uid: str) -> float | None:
        """Level-based: look at one object (from a live GET) and do what its state requires."""
        cached = self.graph.nodes.get(uid)
        if cached is None:
            return None
        live = await self._get(cached.gvr, cached.namespace, cached.name, uid)
        if live is None:
            return None  # gone: its DELETED event takes care of the rest
        node = Node.of(cached.gvr, live)
        if node.orphaning:
            return await self._orphan_dependents(node)
        if node.deleting_dependents:
            return await self._finish_foreground(node)
        if node.deleting or not node.owners:
            return None
        return await self._collect_if_ownerless(node, live)

    async def _collect_if_ownerless(self, node: Node, live: Obj) -> float | None:
        verdict = await self._classify(node)
        if verdict.solid:
            gone = {link.uid for link in verdict.dangling + verdict.waiting}
            if gone:
                log.info("removing references to %s from %s: other owners remain", sorted(gone), node)
                await self._update(node, _without_owner_refs(gone))
            return None
        if verdict.unresolved:
            log.info("%s: owner kinds %s are not served (yet); checking again later",
                     node, [f"{link.api_version}/{link.kind}" for link in verdict.unresolved])
            return self._unresolved_retry
        policy = "Foreground" if verdict.waiting and self.graph.dependents(node.uid) else "Background"
        log.info("deleting %s (%s): no owner left", node, policy)
        try:
            await self.client.delete(node.gvr, node.name, namespace=node.namespace or None,
                                     propagation_policy=policy,
                                     preconditions={"uid": node.uid,
                                                    "resourceVersion": live["metadata"]["resourceVersion"]})
        except errors.ApiError as exc:
            if not exc.is_not_found:
                raise  # a failed precondition (409) means it changed: look again, with backoff
        return None

    async def _classify(self, node: Node) -> _Verdict:
        verdict = _Verdict()
        for link in node.owners:
            state = await self._owner_state(node, link)
            getattr(verdict, state).append(link)
        return verdict

    async def _owner_state(self, node: Node, link: OwnerLink) -> str:
        if link.uid in self._absent:
            return "dangling"
        gvr = self.informers.gvr_for(link.api_version, link.kind)
        if gvr is None:
            return "unresolved"
        if gvr.namespaced and not node.namespace:
            log.warning("%s: cluster-scoped object owned by namespaced %s %s; never collected",
                        node, link.kind, link.name)
            return "solid"
        owner = await self._get(gvr, node.namespace if gvr.namespaced else "", link.name, link.uid)
        if owner is None:
            self._remember_absent(link.uid)
            return "dangling"
        return "waiting" if Node.of(gvr, owner).deleting_dependents else "solid"

    async def _finish_foreground(self, owner: Node) -> float | None:
        if not self.informers.has_synced:
            return 0.1  # a dependent not cached yet would be missed
        if self.graph.blocking_dependents(owner.uid):
            for dep in self.graph.dependents(owner.uid):
                if not dep.deleting:
                    self.queue.add(dep.uid)
            return None  # each blocking dependent's DELETED event brings the owner back
        log.info("%s: no blocking dependents left; removing %s", owner, FOREGROUND)
        await self._update(owner, _without_finalizer(FOREGROUND))
        return None

    async def _orphan_dependents(self, owner: Node) -> float | None:
        if not self.informers.has_synced:
            return 0.1  # a dependent not cached yet would keep its reference and be collected
        for dep in self.graph.dependents(owner.uid):
            await self._update(dep, _without_owner_refs({owner.uid}))
        log.info("%s: dependents orphaned; removing %s", owner, ORPHAN)
        await self._update(owner, _without_finalizer(ORPHAN))
        return None

    # --- API helpers -----------------------------------------------------------------------------

    async def _get(self, gvr: kc.GVR, namespace: str, name: str, uid: str | None = None) -> Obj | None:
        """The live object, or None when it is gone or the name now belongs to another uid."""
        try:
            obj = await self.client.get(gvr, name, namespace=namespace or None)
        except errors.ApiError as exc:
            if exc.is_not_found:
                return None
            raise
        if uid is not None and (obj.get("metadata") or {}).get("uid") != uid:
            return None
        return obj

    async def _update(self, node: Node, mutate: Callable[[Obj], bool]) -> None:
        """Read-modify-write with the live resourceVersion; retried on 409, done on 404."""
        for _ in range(_UPDATE_ATTEMPTS):
            live = await self._get(node.gvr, node.namespace, node.name, node.uid)
            if live is None or not mutate(live):
                return
            try:
                await self.client.replace(node.gvr, live, namespace=node.namespace or None)
                return
            except errors.ApiError as exc:
                if exc.is_not_found:
                    return
                if not exc.is_conflict:
                    raise
        raise RuntimeError(f"{node}: still conflicting after {_UPDATE_ATTEMPTS} attempts; retrying later")

    def _remember_absent(self, uid: str) -> None:
        if len(self._absent) >= _ABSENT_CACHE_LIMIT:
            self._absent.clear()
        self._absent.add(uid)


def _without_owner_refs(uids: set[str]) -> Callable[[Obj], bool]:
    def mutate(obj: Obj) -> bool:
        meta = obj["metadata"]
        refs = meta.get("ownerReferences") or []
        kept = [r for r in refs if r.get("uid") not in uids]
        if len(kept) == len(refs):
            return False
        if kept:
            meta["ownerReferences"] = kept
        else:
            meta.pop("ownerReferences", None)
        return True
    return mutate


def _without_finalizer(name: str) -> Callable[[Obj], bool]:
    def mutate(obj: Obj) -> bool:
        meta = obj["metadata"]
        finalizers = meta.get("finalizers") or []
        if name not in finalizers:
            return False
        meta["finalizers"] = [f for f in finalizers if f != name]
        return True
    return mutate
