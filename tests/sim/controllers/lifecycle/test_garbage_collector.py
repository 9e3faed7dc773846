"""The garbage collector against the real in-process API server: background, foreground, orphan.

Each test starts an API server and a `GarbageCollector` (with its own client, as in `lwsconf sim up`)
inside the test's event loop, builds owner/dependent chains out of ConfigMaps and Secrets (and a
custom resource), deletes something and watches the outcome by polling with a bounded timeout.
Objects that must stay for a while carry a `test.lwsconf.dev/hold` finalizer that the test removes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.lifecycle import garbage_collector as gc_mod

Obj = dict[str, Any]
NS = "default"
HOLD = "test.lwsconf.dev/hold"
CM, SECRET = kc.CONFIGMAPS, kc.SECRETS
WIDGETS = kc.GVR("example.com", "v1", "widgets")
KINDS = {CM: ("v1", "ConfigMap"), SECRET: ("v1", "Secret"), WIDGETS: ("example.com/v1", "Widget")}
WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


@contextlib.asynccontextmanager
async def sim_with_gc() -> AsyncIterator[kc.Client]:
    """An API server plus a running garbage collector; yields the test's own client."""
    server = app.APIServer()
    await server.start()
    gc_client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="garbage-collector")
    collector = gc_mod.GarbageCollector(gc_client, rediscover_interval=0.2)
    stop = asyncio.Event()
    task = asyncio.create_task(collector.run(stop))
    client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="test")
    try:
        await collector.informers.wait_synced(timeout=10)
        yield client
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await gc_client.close()
        await client.close()
        await server.stop()


def ref(owner: Obj, *, block: bool = False) -> Obj:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "blockOwnerDeletion": block}


async def make(client: kc.Client, gvr: kc.GVR, name: str, *, owners: Sequence[Obj] = (),
               hold: bool = False) -> Obj:
    api_version, kind = KINDS[gvr]
    meta: Obj = {"name": name, "namespace": NS}
    if owners:
        meta["ownerReferences"] = list(owners)
    if hold:
        meta["finalizers"] = [HOLD]
    return await client.create(gvr, {"apiVersion": api_version, "kind": kind, "metadata": meta})


async def release(client: kc.Client, gvr: kc.GVR, name: str) -> None:
    """Drop the test's hold finalizer (keeping any the server or the collector put there)."""
    obj = await client.get(gvr, name, namespace=NS)
    obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers", []) if f != HOLD]
    await client.replace(gvr, obj)


async def describe(client: kc.Client, gvr: kc.GVR, name: str) -> str:
    """'absent', or 'present' plus deletion state, finalizers and owner names."""
    try:
        meta = (await client.get(gvr, name, namespace=NS))["metadata"]
    except errors.ApiError as exc:
        if exc.is_not_found:
            return "absent"
        raise
    text = "deleting" if meta.get("deletionTimestamp") else "present"
    if meta.get("finalizers"):
        text += f" finalizers={sorted(meta['finalizers'])}"
    if meta.get("ownerReferences"):
        text += f" owners={sorted(r['name'] for r in meta['ownerReferences'])}"
    return text


async def states(client: kc.Client, objects: Sequence[tuple[kc.GVR, str]]) -> dict[str, str]:
    return {name: await describe(client, gvr, name) for gvr, name in objects}


async def until(client: kc.Client, expected: dict[str, str], objects: Sequence[tuple[kc.GVR, str]], *,
                timeout: float = 10.0) -> None:
    """Poll until the described states include `expected`; fail with everything observed."""
    deadline = time.monotonic() + timeout
    while True:
        seen = await states(client, objects)
        if all(seen.get(k) == v for k, v in expected.items()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {expected} within {timeout}s; observed {seen}")
        await asyncio.sleep(0.02)


async def stays(client: kc.Client, expected: dict[str, str], objects: Sequence[tuple[kc.GVR, str]], *,
                duration: float = 0.6) -> None:
    """Check that the states keep matching `expected` for `duration` seconds (a 'stays true' claim)."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        seen = await states(client, objects)
        if any(seen.get(k) != v for k, v in expected.items()):
            raise AssertionError(f"expected {expected} to hold for {duration}s; observed {seen}")
        await asyncio.sleep(0.02)


# --- background ---------------------------------------------------------------------------------

def test_background_deletion_removes_dependents_of_deleted_owner() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            owner = await make(client, CM, "owner")
            child = await make(client, CM, "child", owners=[ref(owner)])
            await make(client, SECRET, "grandchild", owners=[ref(child)])
            await make(client, CM, "bystander")
            everything = [(CM, "owner"), (CM, "child"), (SECRET, "grandchild"), (CM, "bystander")]
            await client.delete(CM, "owner", namespace=NS, propagation_policy="Background")
            await until(client, {"owner": "absent", "child": "absent", "grandchild": "absent",
                                 "bystander": "present"}, everything)
    run(scenario)


def test_dependent_of_an_owner_that_never_existed_or_was_replaced_is_collected() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            current = await make(client, CM, "current")
            stale = dict(ref(current), uid="00000000-0000-0000-0000-000000000000")
            ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
                     "uid": "11111111-2222-3333-4444-555555555555"}
            await make(client, SECRET, "owned-by-old-uid", owners=[stale])
            await make(client, SECRET, "owned-by-ghost", owners=[ghost])
            await make(client, SECRET, "owned-by-current", owners=[ref(current)])
            objects = [(SECRET, "owned-by-old-uid"), (SECRET, "owned-by-ghost"), (SECRET, "owned-by-current")]
            await until(client, {"owned-by-old-uid": "absent", "owned-by-ghost": "absent"}, objects)
            assert await describe(client, SECRET, "owned-by-current") == "present owners=['current']"
    run(scenario)


def test_dependent_with_a_remaining_owner_loses_only_the_dangling_reference() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            first, second = await make(client, CM, "first"), await make(client, CM, "second")
            await make(client, SECRET, "shared", owners=[ref(first), ref(second)])
            objects = [(CM, "first"), (CM, "second"), (SECRET, "shared")]
            await client.delete(CM, "first", namespace=NS)
            await until(client, {"first": "absent", "shared": "present owners=['second']"}, objects)
            await client.delete(CM, "second", namespace=NS)
            await until(client, {"second": "absent", "shared": "absent"}, objects)
    run(scenario)


def test_dependent_of_an_unknown_owner_kind_is_kept() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            unknown = {"apiVersion": "nowhere.example.com/v1", "kind": "Nothing", "name": "n",
                       "uid": "99999999-0000-0000-0000-000000000000"}
            await make(client, CM, "mystery", owners=[unknown])
            await make(client, CM, "orphan-witness", owners=[dict(unknown, kind="ConfigMap", apiVersion="v1")])
            objects = [(CM, "mystery"), (CM, "orphan-witness")]
            await until(client, {"orphan-witness": "absent"}, objects)  # the collector is at work
            await stays(client, {"mystery": "present owners=['n']"}, objects)
    run(scenario)


# --- foreground ---------------------------------------------------------------------------------

def test_foreground_deletion_waits_for_blocking_dependents() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            owner = await make(client, CM, "owner")
            await make(client, SECRET, "blocker", owners=[ref(owner, block=True)], hold=True)
            objects = [(CM, "owner"), (SECRET, "blocker")]
            await client.delete(CM, "owner", namespace=NS, propagation_policy="Foreground")
            waiting = {"owner": "deleting finalizers=['foregroundDeletion']",
                       "blocker": f"deleting finalizers=['{HOLD}'] owners=['owner']"}
            await until(client, waiting, objects)
            await stays(client, waiting, objects)
            await release(client, SECRET, "blocker")
            await until(client, {"owner": "absent", "blocker": "absent"}, objects)
    run(scenario)


def test_foreground_deletion_of_an_object_without_dependents_completes() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            await make(client, CM, "lonely")
            await client.delete(CM, "lonely", namespace=NS, propagation_policy="Foreground")
            await until(client, {"lonely": "absent"}, [(CM, "lonely")])
    run(scenario)


def test_foreground_deletion_does_not_wait_for_non_blocking_dependents() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            owner = await make(client, CM, "owner")
            await make(client, SECRET, "slow", owners=[ref(owner, block=False)], hold=True)
            objects = [(CM, "owner"), (SECRET, "slow")]
            await client.delete(CM, "owner", namespace=NS, propagation_policy="Foreground")
            await until(client, {"owner": "absent", "slow": f"deleting finalizers=['{HOLD}'] owners=['owner']"},
                        objects)
            await release(client, SECRET, "slow")
            await until(client, {"slow": "absent"}, objects)
    run(scenario)


def test_foreground_deletion_cascades_bottom_up_through_grandchildren() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            owner = await make(client, CM, "owner")
            child = await make(client, CM, "child", owners=[ref(owner, block=True)])
            await make(client, SECRET, "grandchild", owners=[ref(child, block=True)], hold=True)
            objects = [(CM, "owner"), (CM, "child"), (SECRET, "grandchild")]
            await client.delete(CM, "owner", namespace=NS, propagation_policy="Foreground")
            await until(client, {
                "owner": "deleting finalizers=['foregroundDeletion']",
                "child": "deleting finalizers=['foregroundDeletion'] owners=['owner']",
                "grandchild": f"deleting finalizers=['{HOLD}'] owners=['child']"}, objects)
            await release(client, SECRET, "grandchild")
            await until(client, {"owner": "absent", "child": "absent", "grandchild": "absent"}, objects)
    run(scenario)


def test_foreground_deletion_keeps_a_dependent_that_has_another_owner() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            doomed, keeper = await make(client, CM, "doomed"), await make(client, CM, "keeper")
            await make(client, SECRET, "shared", owners=[ref(doomed, block=True), ref(keeper)])
            objects = [(CM, "doomed"), (CM, "keeper"), (SECRET, "shared")]
            await client.delete(CM, "doomed", namespace=NS, propagation_policy="Foreground")
            await until(client, {"doomed": "absent", "shared": "present owners=['keeper']"}, objects)
    run(scenario)


# --- orphan -------------------------------------------------------------------------------------

def test_orphan_deletion_keeps_dependents_and_strips_owner_refs() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            owner, other = await make(client, CM, "owner"), await make(client, CM, "other")
            await make(client, SECRET, "only-child", owners=[ref(owner, block=True)])
            await make(client, SECRET, "shared-child", owners=[ref(owner), ref(other)])
            objects = [(CM, "owner"), (SECRET, "only-child"), (SECRET, "shared-child")]
            await client.delete(CM, "owner", namespace=NS, propagation_policy="Orphan")
            await until(client, {"owner": "absent", "only-child": "present",
                                 "shared-child": "present owners=['other']"}, objects)
            await stays(client, {"only-child": "present"}, objects, duration=0.3)
    run(scenario)


# --- resource types registered at run time ------------------------------------------------------

def test_custom_resources_registered_after_start_are_collected() -> None:
    async def scenario() -> None:
        async with sim_with_gc() as client:
            await client.create(kc.CRDS, WIDGET_CRD)
            owner_cm = await make(client, CM, "cm-owner")
            widget = await make(client, WIDGETS, "widget", owners=[ref(owner_cm)])
            await make(client, SECRET, "widget-child", owners=[ref(widget)])
            objects = [(CM, "cm-owner"), (WIDGETS, "widget"), (SECRET, "widget-child")]
            await client.delete(CM, "cm-owner", namespace=NS)
            await until(client, {"cm-owner": "absent", "widget": "absent", "widget-child": "absent"}, objects)
    run(scenario)


# --- the graph (pure) ---------------------------------------------------------------------------

def test_graph_tracks_dependents_and_blocking_references_across_updates() -> None:
    def node(uid: str, *owners: tuple[str, bool]) -> gc_mod.Node:
        links = tuple(gc_mod.OwnerLink(o, "v1", "ConfigMap", o, block) for o, block in owners)
        return gc_mod.Node(CM, NS, uid, uid, links)

    graph = gc_mod.Graph()
    graph.upsert(node("a", ("o", True)))
    graph.upsert(node("b", ("o", False), ("p", True)))
    assert sorted(n.uid for n in graph.dependents("o")) == ["a", "b"]
    assert [n.uid for n in graph.blocking_dependents("o")] == ["a"]
    graph.upsert(node("a", ("p", False)))  # a's owner changed
    assert [n.uid for n in graph.dependents("o")] == ["b"] and graph.blocking_dependents("o") == []
    graph.remove("b")
    assert graph.dependents("o") == [] and [n.uid for n in graph.dependents("p")] == ["a"]
