"""Scaffolding for the node-agent tests: a real API server plus node agents, and polling waits.

No scheduler runs here: tests bind pods themselves (POST pods/NAME/binding). Every wait polls with
a bounded timeout and fails with the observed pod (phase, conditions, container states).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim import nodes
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.serviceaccounts import rootca
from lwsconf.sim.nodes import layout

Obj = dict[str, Any]
NS = "default"
PODS = kc.PODS
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
EVENTS = kc.GVR("", "v1", "events")
LEASES = kc.GVR("coordination.k8s.io", "v1", "leases")


def small_layout(gpus: int = 2) -> list[layout.NodeSpec]:
    """One GPU node (gpu-0, zone-a) and one CPU node (cpu-0, zone-b)."""
    return layout.expand_groups([
        {"name": "gpu", "count": 1, "gpu": {"count": gpus}, "capacity": {"cpu": "8", "memory": "32Gi", "pods": "20"},
         "spread": {layout.ZONE_LABEL: ["zone-a"]}},
        {"name": "cpu", "count": 1, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"},
         "spread": {layout.ZONE_LABEL: ["zone-b"]}},
    ], where="test layout")


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


@dataclass
class Sim:
    client: kc.Client
    server: app.APIServer
    running: nodes.RunningNodes

    @property
    def network(self) -> str:
        return str(self.running.fleet.pod_network.cidr)

    def factory(self, user_agent: str) -> kc.Client:
        return kc.Client(self.server.url, self.server.token, ca_pem=self.server.ca_pem, user_agent=user_agent)


@contextlib.asynccontextmanager
async def sim_with_nodes(workdir: Path, specs: Sequence[layout.NodeSpec] | None = None, *,
                         processes: bool = False, stage_set: str = "fast",
                         device_plugins: bool = False, pod_network: Any = None) -> AsyncIterator[Sim]:
    """An API server and one agent per node (default `small_layout()`); yields the test's client."""
    server = app.APIServer()
    await server.start()

    def factory(user_agent: str) -> kc.Client:
        return kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent=user_agent)

    specs = list(specs) if specs is not None else small_layout()
    running = await nodes.start_nodes(factory, specs, workdir=workdir, processes=processes,
                                      device_plugins=device_plugins, stage_set=stage_set, pod_network=pod_network)
    client = factory("test")
    sim = Sim(client, server, running)
    # kube-controller-manager's root CA publisher, which every cluster runs: each pod's kube-api-access volume
    # (ServiceAccount admission) projects its kube-root-ca.crt, and a kubelet cannot start a container without it
    publisher_client, stop = factory("root-ca-publisher"), asyncio.Event()
    publisher = asyncio.create_task(rootca.controller(publisher_client).run(stop))
    try:
        await until(lambda: node_names(client), lambda names: set(names) >= {s.name for s in specs},
                    "every node registered")
        await until(lambda: configmap_names(client, NS), lambda names: rootca.NAME in names,
                    f"{rootca.NAME} published in {NS}")
        yield sim
    finally:
        await sim.running.stop()  # a test may have replaced the nodes (agent restart)
        stop.set()
        await asyncio.wait_for(publisher, 10)
        await publisher_client.close()
        await client.close()
        await server.stop()


async def configmap_names(client: kc.Client, namespace: str) -> list[str]:
    items, _ = await client.list_all(kc.CONFIGMAPS, namespace=namespace)
    return [c["metadata"]["name"] for c in items]


async def node_names(client: kc.Client) -> list[str]:
    items, _ = await client.list_all(NODES)
    # a registered kubelet's port: a Node's daemonEndpoints is always there (Port 0 until then)
    return [n["metadata"]["name"] for n in items
            if ((n.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint", {}).get("Port")]


async def until(read: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool], what: str, *,
                timeout: float = 10.0, show: Callable[[Any], str] = repr) -> Any:
    """Poll `read()` until `ok(value)`; fail naming `what` and showing the last value."""
    deadline = time.monotonic() + timeout
    value: Any = None
    while True:
        value = await read()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s; last observed: {show(value)}")
        await asyncio.sleep(0.01)


async def stays(read: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool], what: str, *,
                duration: float = 0.3, show: Callable[[Any], str] = repr) -> Any:
    """Check `ok(read())` over and over for `duration` seconds; fail at the first miss."""
    deadline = time.monotonic() + duration
    value: Any = None
    while time.monotonic() < deadline:
        value = await read()
        if not ok(value):
            raise AssertionError(f"{what}: stopped holding; observed: {show(value)}")
        await asyncio.sleep(0.02)
    return value


def pod_body(name: str, *, containers: Sequence[Obj] | None = None, annotations: dict[str, str] | None = None,
             restart_policy: str = "Always", init_containers: Sequence[Obj] = (), **spec: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": NS}
    if annotations:
        meta["annotations"] = annotations
    body: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                 "spec": {"containers": list(containers or [{"name": "main", "image": "nginx:1.27"}]),
                          "restartPolicy": restart_policy, **spec}}
    if init_containers:
        body["spec"]["initContainers"] = list(init_containers)
    return body


async def bind(client: kc.Client, name: str, node: str) -> None:
    await client.request("POST", f"/api/v1/namespaces/{NS}/pods/{name}/binding",
                         body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                               "target": {"apiVersion": "v1", "kind": "Node", "name": node}})


async def create_bound(client: kc.Client, body: Obj, node: str) -> Obj:
    created = await client.create(PODS, body)
    await bind(client, body["metadata"]["name"], node)
    return created


async def get_or_none(client: kc.Client, gvr: kc.GVR, name: str, namespace: str | None = NS) -> Obj | None:
    try:
        return await client.get(gvr, name, namespace=namespace if gvr.namespaced else None)
    except errors.ApiError as exc:
        if exc.is_not_found:
            return None
        raise


async def get_pod(client: kc.Client, name: str) -> Obj | None:
    return await get_or_none(client, PODS, name)


def condition(pod: Obj | None, ctype: str) -> str | None:
    for cond in ((pod or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return str(cond.get("status"))
    return None


def container(pod: Obj | None, name: str = "main") -> Obj:
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == name:
            return dict(status)
    return {}


def describe(pod: Obj | None) -> str:
    """Phase, conditions and container states on one line."""
    if pod is None:
        return "absent"
    status = pod.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    states = {c.get("name"): (list((c.get("state") or {}).keys()), c.get("ready"), c.get("restartCount"))
              for c in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]}
    extra = {k: status.get(k) for k in ("reason", "message", "podIP") if status.get(k)}
    return json.dumps({"phase": status.get("phase"), "conditions": conds, "containers": states, **extra},
                      default=str)


async def pod_until(client: kc.Client, name: str, ok: Callable[[Obj | None], bool], what: str, *,
                    timeout: float = 10.0) -> Obj:
    pod: Obj = await until(lambda: get_pod(client, name), ok, f"pod {name}: {what}", timeout=timeout,
                           show=describe)
    return pod


def is_ready(pod: Obj | None) -> bool:
    return bool(pod) and (pod or {}).get("status", {}).get("phase") == "Running" and condition(pod, "Ready") == "True"


async def events_for(client: kc.Client, name: str) -> list[tuple[str, str]]:
    """(reason, message) of the events about pod `name`, in the order they were recorded."""
    items, _ = await client.list_all(EVENTS, namespace=NS)
    items.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(e.get("reason", ""), e.get("message", "")) for e in items
            if (e.get("involvedObject") or {}).get("name") == name]


async def pod_log(client: kc.Client, name: str, **params: str) -> str:
    """GET pods/NAME/log through the API server (which forwards to the node's log server)."""
    path = f"/api/v1/namespaces/{NS}/pods/{name}/log"
    session = client._http()
    async with session.get(client.base_url + path, params=params) as resp:
        text = await resp.text()
        if resp.status != 200:
            raise AssertionError(f"pods/{name}/log {params}: HTTP {resp.status}: {text}")
        return text
