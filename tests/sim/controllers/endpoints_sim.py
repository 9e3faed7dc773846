"""Helpers for the endpoint controllers' tests: an API server with the controllers, pods playing kubelet.

No kubelet runs here, so the tests give pods their IP and readiness themselves through
`pods/NAME/status`, and finish graceful deletions with a second delete at grace period 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.endpoints import endpoints as endpoints_mod
from lwsconf.sim.controllers.endpoints import endpointslice
from lwsconf.sim.controllers.endpoints import service_endpoints as se
from lwsconf.sim.controllers.lifecycle import garbage_collector as gc_mod

Obj = dict[str, Any]
T = TypeVar("T")
NS = "default"


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


@dataclass
class Sim:
    client: kc.Client
    """The test's own client."""
    slices: endpointslice.EndpointSliceController
    endpoints: endpoints_mod.EndpointsController


@contextlib.asynccontextmanager
async def sim_with_endpoint_controllers(*, max_endpoints_per_slice: int = 100,
                                        with_gc: bool = False) -> AsyncIterator[Sim]:
    """An API server plus both endpoint controllers (and the garbage collector if asked), each with its client."""
    server = app.APIServer()
    await server.start()

    def new_client(agent: str) -> kc.Client:
        return kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent=agent)

    clients = [new_client(a) for a in ("endpointslice-controller", "endpoints-controller", "gc", "test")]
    slices = endpointslice.EndpointSliceController(clients[0], max_endpoints_per_slice=max_endpoints_per_slice)
    endpoints = endpoints_mod.EndpointsController(clients[1])
    runners: list[Callable[[asyncio.Event], Coroutine[Any, Any, None]]] = [slices.run, endpoints.run]
    if with_gc:
        runners.append(gc_mod.GarbageCollector(clients[2], rediscover_interval=0.2).run)
    stop = asyncio.Event()
    tasks = [asyncio.create_task(r(stop)) for r in runners]
    try:
        for informer in (slices.slices, endpoints.endpoints):
            await informer.wait_synced(timeout=10)
        yield Sim(clients[3], slices, endpoints)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        for client in clients:
            await client.close()
        await server.stop()


# --- objects --------------------------------------------------------------------------------------

def container_port(name: str, number: int) -> Obj:
    return {"name": name, "containerPort": number, "protocol": "TCP"}


async def make_pod(client: kc.Client, name: str, labels: dict[str, str], *, ports: list[Obj] | None = None,
                   hostname: str | None = None, subdomain: str | None = None) -> Obj:
    container: Obj = {"name": "app", "image": "registry.example/app:1"}
    if ports:
        container["ports"] = ports
    spec: Obj = {"containers": [container]}
    if hostname:
        spec["hostname"] = hostname
    if subdomain:
        spec["subdomain"] = subdomain
    return await client.create(kc.PODS, {"apiVersion": "v1", "kind": "Pod",
                                         "metadata": {"name": name, "namespace": NS, "labels": labels},
                                         "spec": spec})


async def set_status(client: kc.Client, name: str, *, ip: str, ready: bool) -> None:
    """What a kubelet reports: Running, the pod IP, and the Ready condition."""
    status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
              "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    await client.patch(kc.PODS, name, {"status": status}, namespace=NS, subresource="status")


async def running_pod(client: kc.Client, name: str, labels: dict[str, str], *, ip: str, ready: bool = True,
                      **kwargs: Any) -> Obj:
    pod = await make_pod(client, name, labels, **kwargs)
    await set_status(client, name, ip=ip, ready=ready)
    return pod


async def bind(client: kc.Client, name: str, node: str) -> None:
    """Bind the pod to `node`, creating that Node first if needed: the EndpointSlice controller leaves
    out pods whose Node does not exist, as kube-controller-manager's does."""
    try:
        await client.create(kc.GVR("", "v1", "nodes", namespaced=False),
                            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    except errors.ApiError as exc:
        if not exc.is_already_exists:
            raise
    await client.request("POST", kc.PODS.object_path(name, NS, "binding"),
                         body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                               "target": {"apiVersion": "v1", "kind": "Node", "name": node}})


async def delete_now(client: kc.Client, name: str) -> None:
    """What the kubelet does once a graceful pod deletion is done: delete again with grace period 0."""
    await client.request("DELETE", kc.PODS.object_path(name, NS),
                         body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})


async def make_service(client: kc.Client, name: str, selector: dict[str, str] | None, *,
                       ports: list[Obj] | None = None, headless: bool = False,
                       publish_not_ready: bool = False, labels: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"ports": ports or []}
    if selector is not None:
        spec["selector"] = selector
    if headless:
        spec["clusterIP"] = "None"
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    meta: Obj = {"name": name, "namespace": NS, "labels": labels or {}}
    return await client.create(kc.SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                                             "spec": spec})


# --- observing ----------------------------------------------------------------------------------

async def slices_of(client: kc.Client, service: str) -> list[Obj]:
    listed = await client.list(se.ENDPOINTSLICES, namespace=NS,
                               label_selector=f"{endpointslice.LABEL_SERVICE_NAME}={service}")
    return sorted(listed.get("items") or [], key=lambda s: s["metadata"]["name"])


def endpoint_summary(slices: list[Obj]) -> dict[str, Obj]:
    """Pod name -> its endpoint's addresses, conditions, hostname, nodeName and its slice's ports."""
    out: dict[str, Obj] = {}
    for slice_ in slices:
        ports = sorted((p.get("name"), p.get("port")) for p in slice_.get("ports") or [])
        for endpoint in slice_.get("endpoints") or []:
            out[endpoint["targetRef"]["name"]] = {
                "addresses": endpoint["addresses"], **endpoint["conditions"],
                "hostname": endpoint.get("hostname"), "nodeName": endpoint.get("nodeName"), "ports": ports}
    return out


async def endpoints_of(client: kc.Client, service: str) -> Obj | None:
    try:
        return await client.get(se.ENDPOINTS, service, namespace=NS)
    except errors.ApiError as exc:
        if exc.is_not_found:
            return None
        raise


async def eventually(observe: Callable[[], Awaitable[T]], check: Callable[[T], bool], what: str, *,
                     timeout: float = 5.0, interval: float = 0.005) -> T:
    """Poll `observe()` until `check` accepts it; fail with the last observation after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        seen = await observe()
        if check(seen):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {what} within {timeout}s; last observed: {seen}")
        await asyncio.sleep(interval)


async def stays(observe: Callable[[], Awaitable[T]], check: Callable[[T], bool], what: str, *,
                duration: float = 0.4) -> None:
    """Check that `check` keeps accepting `observe()` for `duration` seconds."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        seen = await observe()
        if not check(seen):
            raise AssertionError(f"expected {what} to hold for {duration}s; observed {seen}")
        await asyncio.sleep(0.02)
