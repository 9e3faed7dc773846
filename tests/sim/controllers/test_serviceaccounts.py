"""The serviceaccount controller and the root CA publisher against the real in-process API server.

What kube-controller-manager gives every namespace (pkg/controller/serviceaccount `syncNamespace`,
pkg/controller/certificates/rootcacertpublisher `syncNamespace`, 1.37.2): a `default` ServiceAccount in each
Active namespace, made again when deleted, and a `kube-root-ca.crt` ConfigMap with the API server's CA and
a description annotation, put back when changed. The held-out fidelity corpus (issue 33) found that a new
namespace's `default` ServiceAccount never appeared on the sim.
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
from lwsconf.sim.controllers.serviceaccounts import accounts, rootca

Obj = dict[str, Any]
SETTLE_TIMEOUT = 10.0
"""Seconds a controller has to act on what the test did (the wait names what it saw when it gives up)."""
ABSENT_HOLD = 1.0
"""Seconds something a controller must not make has to stay absent."""


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


@contextlib.asynccontextmanager
async def sim_with_controllers() -> AsyncIterator[tuple[kc.Client, str]]:
    """An API server with both controllers; yields the test's client and the server's CA."""
    server = app.APIServer()
    await server.start()
    clients = [kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent=name)
               for name in ("serviceaccount-controller", "root-ca-publisher", "test")]
    controllers = [accounts.controller(clients[0]), rootca.controller(clients[1])]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(c.run(stop)) for c in controllers]
    try:
        yield clients[2], server.ca_pem.decode() if isinstance(server.ca_pem, bytes) else str(server.ca_pem)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        for client in clients:
            await client.close()
        await server.stop()


async def eventually(read: Callable[[], Awaitable[Obj | None]], ok: Callable[[Obj | None], bool], what: str) -> Obj:
    deadline = time.monotonic() + SETTLE_TIMEOUT
    seen: Obj | None = None
    while time.monotonic() < deadline:
        seen = await read()
        if ok(seen):
            assert seen is not None
            return seen
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} not within {SETTLE_TIMEOUT}s; last seen: {seen}")


async def stays_absent(read: Callable[[], Awaitable[Obj | None]], what: str) -> None:
    """A must-hold check: `what` stays absent for ABSENT_HOLD seconds (the controller sees a deletion at once)."""
    deadline = time.monotonic() + ABSENT_HOLD
    while time.monotonic() < deadline:
        seen = await read()
        assert seen is None, f"{what} was made: {seen}"
        await asyncio.sleep(0.05)


async def get_or_none(client: kc.Client, gvr: kc.GVR, name: str, namespace: str) -> Obj | None:
    try:
        return await client.get(gvr, name, namespace=namespace)
    except errors.ApiError as exc:
        if exc.is_not_found:
            return None
        raise


def test_a_new_namespace_gets_a_default_service_account_again_after_it_is_deleted() -> None:
    async def scenario() -> None:
        async with sim_with_controllers() as (client, _):
            await client.create(kc.NAMESPACES, {"metadata": {"name": "fresh"}})
            first = await eventually(lambda: get_or_none(client, accounts.SERVICEACCOUNTS, "default", "fresh"),
                                     lambda o: o is not None, "the default ServiceAccount")
            assert set(first) <= {"apiVersion", "kind", "metadata"}  # `{metadata: {name: default}}`, nothing more
            await client.delete(accounts.SERVICEACCOUNTS, "default", namespace="fresh")
            await eventually(lambda: get_or_none(client, accounts.SERVICEACCOUNTS, "default", "fresh"),
                             lambda o: o is not None and o["metadata"]["uid"] != first["metadata"]["uid"],
                             "a new default ServiceAccount")
    run(scenario)


def test_every_namespace_gets_the_root_ca_config_map_and_a_changed_one_is_put_back() -> None:
    async def scenario() -> None:
        async with sim_with_controllers() as (client, ca):
            await client.create(kc.NAMESPACES, {"metadata": {"name": "fresh"}})
            cm = await eventually(lambda: get_or_none(client, kc.CONFIGMAPS, rootca.NAME, "fresh"),
                                  lambda o: o is not None, "kube-root-ca.crt")
            assert cm["data"] == {"ca.crt": ca} and "BEGIN CERTIFICATE" in ca
            assert cm["metadata"]["annotations"] == {rootca.DESCRIPTION_ANNOTATION: rootca.DESCRIPTION}
            cm["data"] = {"ca.crt": "tampered"}
            cm["metadata"]["annotations"]["mine"] = "kept"
            await client.replace(kc.CONFIGMAPS, cm, namespace="fresh")
            back = await eventually(lambda: get_or_none(client, kc.CONFIGMAPS, rootca.NAME, "fresh"),
                                    lambda o: o is not None and o["data"] == {"ca.crt": ca}, "the CA put back")
            assert back["metadata"]["annotations"]["mine"] == "kept"
    run(scenario)


def test_a_terminating_namespace_gets_no_new_service_account() -> None:
    async def scenario() -> None:
        async with sim_with_controllers() as (client, _):
            hold = {"metadata": {"name": "held", "finalizers": ["test.lwsconf.dev/hold"]}}
            await client.create(kc.NAMESPACES, {"metadata": {"name": "going"}})
            await eventually(lambda: get_or_none(client, accounts.SERVICEACCOUNTS, "default", "going"),
                             lambda o: o is not None, "the default ServiceAccount")
            await client.create(kc.CONFIGMAPS, hold, namespace="going")
            await client.delete(kc.NAMESPACES, "going")
            await client.delete(accounts.SERVICEACCOUNTS, "default", namespace="going")
            await stays_absent(lambda: get_or_none(client, accounts.SERVICEACCOUNTS, "default", "going"),
                               "the default ServiceAccount of a terminating namespace")
    run(scenario)
