"""Helpers for the kube-proxy tests: an API server with the kube-proxy alone, backends, and a TCP client.

The API server allocates ClusterIPs from a freshly reserved cluster network (as `SimCluster` does), so
tests on parallel workers never bind the same address. No EndpointSlice controller runs: tests write
Services without selectors and their EndpointSlices themselves, which fixes every endpoint condition
exactly. Backends are asyncio servers on pod IPs of that network; each one greets a connection with
its name, echoes what it receives, and writes "bye" after the client's end of stream, so a reply
shows which backend answered and that a half-close went through the proxy in both directions.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.endpoints import service_endpoints as se
from lwsconf.sim.controllers.kubeproxy import kubeproxy
from lwsconf.sim.nodes.network import ipam

Obj = dict[str, Any]
NS = "default"
TARGET = 8080


@dataclass
class Env:
    client: kc.Client
    """The test's own client."""
    proxy: kubeproxy.KubeProxy
    network: ipam.PodNetwork
    stop: asyncio.Event
    task: asyncio.Task[None]
    backends: list[asyncio.Server] = field(default_factory=list)

    def pod_ip(self, n: int) -> str:
        """The n-th pod IP (from 0) on the first node."""
        return f"127.{self.network.second_octet}.1.{n + 2}"

    async def backend(self, name: str, ip: str, port: int = TARGET) -> None:
        """A server on ip:port answering as `name` (greeting, echo, "bye" after the client's EOF)."""
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(f"{name}\n".encode())
            while data := await reader.read(65536):
                writer.write(data)
            writer.write(b"bye\n")
            await writer.drain()
            writer.close()
        self.backends.append(await asyncio.start_server(serve, ip, port, reuse_address=True))

    async def serving(self, service: str = "web") -> str:
        """Backend "a" on the first pod IP behind a new Service `service`, answering; its ClusterIP."""
        a = self.pod_ip(0)
        await self.backend("a", a)
        ip: str = (await make_service(self.client, service))["spec"]["clusterIP"]
        await write_slice(self.client, service, [endpoint(a)])
        await until(lambda: answerer(ip, 80), f"the Service {service} to answer")
        return ip


@contextlib.asynccontextmanager
async def proxied_cluster(*, bind_retry: float = 0.1) -> AsyncIterator[Env]:
    reservation = ipam.reserve_pod_network()
    server = app.APIServer(service_range=reservation.network.service_range)
    await server.start()
    clients = [kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent=a) for a in ("kube-proxy", "test")]
    proxy = kubeproxy.KubeProxy(clients[0], bind_retry=bind_retry, dial_timeouts=(0.25, 0.25))
    stop = asyncio.Event()
    env = Env(clients[1], proxy, reservation.network, stop, asyncio.create_task(proxy.run(stop)))
    try:
        await proxy.services.wait_synced(timeout=10)
        await proxy.slices.wait_synced(timeout=10)
        yield env
    finally:
        stop.set()
        await asyncio.wait_for(env.task, 10)
        for backend in env.backends:
            backend.close()
        for client in clients:
            await client.close()
        await server.stop()
        reservation.release()


# --- objects --------------------------------------------------------------------------------------

async def make_service(client: kc.Client, name: str, *, port: int = 80, port_name: str = "http",
                       **spec: Any) -> Obj:
    """A Service without a selector (its slices are written by the test); returns it with its ClusterIP."""
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
            "spec": {"ports": [{"name": port_name, "port": port, "targetPort": TARGET}], **spec}}
    return await client.create(kc.SERVICES, body)


def endpoint(ip: str, *, ready: bool | None = True, serving: bool | None = None,
             terminating: bool | None = None) -> Obj:
    conditions = {k: v for k, v in (("ready", ready), ("serving", serving), ("terminating", terminating))
                  if v is not None}
    return {"addresses": [ip], "conditions": conditions}


async def write_slice(client: kc.Client, service: str, endpoints: list[Obj], *, name: str | None = None,
                      port_name: str = "http", port: int = TARGET) -> Obj:
    """Create or replace the EndpointSlice `name` (default: `<service>-manual`) of `service`."""
    body: Obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                 "metadata": {"name": name or f"{service}-manual", "namespace": NS,
                              "labels": {kubeproxy.LABEL_SERVICE_NAME: service}},
                 "addressType": "IPv4", "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
                 "endpoints": endpoints}
    try:
        current = await client.get(se.ENDPOINTSLICES, body["metadata"]["name"], namespace=NS)
    except errors.ApiError as exc:
        if not exc.is_not_found:
            raise
        return await client.create(se.ENDPOINTSLICES, body)
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    return await client.replace(se.ENDPOINTSLICES, body)


# --- a client -------------------------------------------------------------------------------------

async def ask(ip: str, port: int, payload: bytes = b"ping", *, timeout: float = 5.0) -> list[str]:
    """Connect, send `payload`, half-close, read to the end: the reply's lines (name, echo, "bye")."""
    async def exchange() -> list[str]:
        reader, writer = await asyncio.open_connection(ip, port)
        try:
            writer.write(payload + b"\n")
            writer.write_eof()
            return (await reader.read()).decode().splitlines()
        finally:
            writer.close()
    return await asyncio.wait_for(exchange(), timeout)


async def answerer(ip: str, port: int) -> str:
    return (await ask(ip, port))[0]


async def refused(ip: str, port: int) -> bool:
    """Whether a connection to ip:port is refused (or reset); False when anything answers."""
    try:
        await ask(ip, port, timeout=2.0)
    except (ConnectionRefusedError, ConnectionResetError):
        return True
    return False


async def until(check: Any, what: str, *, timeout: float = 5.0) -> Any:
    """Await `check()` until it returns something truthy; fail naming `what` and the last result."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            seen = await check()
        except (OSError, TimeoutError) as exc:
            seen = exc
        if seen and not isinstance(seen, BaseException):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {what} within {timeout}s; last observed: {seen!r}")
        await asyncio.sleep(0.01)
