"""The namespace controller against the real in-process API server.

Each test starts an API server and a `NamespaceController` (with its own client) inside the test's
event loop, fills a namespace, deletes it, and polls with a bounded timeout until the namespace is
gone. Objects that must linger carry a `test.lwsconf.dev/hold` finalizer the test removes later.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.lifecycle import namespace as nsc

Obj = dict[str, Any]
HOLD = "test.lwsconf.dev/hold"
GADGETS = kc.GVR("example.com", "v1", "gadgets")
GADGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


@contextlib.asynccontextmanager
async def sim_with_namespace_controller(recheck_interval: float = 0.2) -> AsyncIterator[kc.Client]:
    """An API server plus a running namespace controller; yields the test's own client."""
    server = app.APIServer()
    await server.start()
    ctl_client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="namespace-controller")
    controller = nsc.NamespaceController(ctl_client, recheck_interval=recheck_interval,
                                         rediscover_interval=0.2)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="test")
    try:
        await controller.namespaces.wait_synced(timeout=10)
        await controller.contents.wait_synced(timeout=10)
        yield client
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await ctl_client.close()
        await client.close()
        await server.stop()


async def make_namespace(client: kc.Client, name: str) -> None:
    await client.create(kc.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def put(client: kc.Client, gvr: kc.GVR, api_version: str, kind: str, namespace: str, name: str, *,
              hold: bool = False, **extra: Any) -> None:
    meta: Obj = {"name": name, "namespace": namespace}
    if hold:
        meta["finalizers"] = [HOLD]
    await client.create(gvr, {"apiVersion": api_version, "kind": kind, "metadata": meta, **extra})


async def contents(client: kc.Client, namespace: str) -> dict[str, list[str]]:
    """Every object left in the namespace, by resource type (live LISTs over discovery)."""
    out: dict[str, list[str]] = {}
    for gvr in await client.discover():
        if gvr.namespaced:
            items, _ = await client.list_all(gvr, namespace=namespace)
            if items:
                out[str(gvr)] = sorted(i["metadata"]["name"] for i in items)
    return out


async def namespace_state(client: kc.Client, name: str) -> str:
    try:
        ns = await client.get(kc.NAMESPACES, name)
    except errors.ApiError as exc:
        if exc.is_not_found:
            return "absent"
        raise
    return f"{(ns.get('status') or {}).get('phase')} finalizers={(ns.get('spec') or {}).get('finalizers')}"


async def namespace_must_be_gone(client: kc.Client, name: str, *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (state := await namespace_state(client, name)) != "absent":
        if time.monotonic() > deadline:
            raise AssertionError(f"namespace {name} not gone within {timeout}s: {state}; "
                                 f"contents {await contents(client, name)}")
        await asyncio.sleep(0.02)


def test_namespace_deletion_removes_all_contents() -> None:
    async def scenario() -> None:
        async with sim_with_namespace_controller() as client:
            await client.create(kc.CRDS, GADGET_CRD)
            await make_namespace(client, "doomed")
            await make_namespace(client, "kept")
            for ns in ("doomed", "kept"):
                await put(client, kc.CONFIGMAPS, "v1", "ConfigMap", ns, "cfg", data={"k": "v"})
                await put(client, kc.SECRETS, "v1", "Secret", ns, "sec")
                await put(client, GADGETS, "example.com/v1", "Gadget", ns, "g1")
            await client.delete(kc.NAMESPACES, "doomed")
            await namespace_must_be_gone(client, "doomed")
            kept = await contents(client, "kept")
            assert kept["configmaps/v1"] == ["cfg"] and kept["secrets/v1"] == ["sec"], kept
            assert kept["gadgets.example.com/v1"] == ["g1"], kept
            assert await namespace_state(client, "kept") == "Active finalizers=['kubernetes']"
    run(scenario)


def test_namespace_waits_for_objects_with_finalizers() -> None:
    async def scenario() -> None:
        # No periodic re-check within the test's time: the held object's deletion must trigger it.
        async with sim_with_namespace_controller(recheck_interval=60) as client:
            await make_namespace(client, "slow")
            await put(client, kc.CONFIGMAPS, "v1", "ConfigMap", "slow", "held", hold=True)
            await put(client, kc.CONFIGMAPS, "v1", "ConfigMap", "slow", "free")
            await client.delete(kc.NAMESPACES, "slow")
            deadline = time.monotonic() + 10
            while (left := await contents(client, "slow")) != {"configmaps/v1": ["held"]}:
                assert time.monotonic() < deadline, f"free object not deleted in time; contents {left}"
                await asyncio.sleep(0.02)
            for _ in range(15):  # the namespace stays while the held object exists (0.3 s)
                assert await namespace_state(client, "slow") == "Terminating finalizers=['kubernetes']"
                await asyncio.sleep(0.02)
            held = await client.get(kc.CONFIGMAPS, "held", namespace="slow")
            assert held["metadata"].get("deletionTimestamp"), held["metadata"]
            held["metadata"]["finalizers"] = []
            await client.replace(kc.CONFIGMAPS, held)
            await namespace_must_be_gone(client, "slow")
    run(scenario)


def test_is_terminating_needs_a_deletion_timestamp_and_the_kubernetes_finalizer() -> None:
    def ns(deleting: bool, finalizers: list[str]) -> Obj:
        meta = {"name": "n", "deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {"name": "n"}
        return {"metadata": meta, "spec": {"finalizers": finalizers}}

    assert nsc.is_terminating(ns(True, ["kubernetes"]))
    assert not nsc.is_terminating(ns(False, ["kubernetes"]))
    assert not nsc.is_terminating(ns(True, []))
