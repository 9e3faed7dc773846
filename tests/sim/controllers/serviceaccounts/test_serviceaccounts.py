"""The serviceaccount controller and the root CA publisher against the real in-process API server.

What kube-controller-manager gives every namespace (pkg/controller/serviceaccount `syncNamespace`,
pkg/controller/certificates/rootcacertpublisher `syncNamespace`, 1.37.2): a `default` ServiceAccount in each
Active namespace, made again when deleted, and a `kube-root-ca.crt` ConfigMap with the API server's CA and
a description annotation, put back when changed. The held-out fidelity corpus (issue 33) found that a new
namespace's `default` ServiceAccount never appeared on the sim.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.serviceaccounts import accounts, rootca
from tests.sim.controllers import workload_sim as ws

Obj = dict[str, Any]
ABSENT_HOLD = 1.0
"""Seconds something a controller must not make has to stay absent."""
CONTROLLERS = (accounts.controller, rootca.controller)


async def stays_absent(read: Callable[[], Awaitable[Obj | None]], what: str) -> None:
    """A must-hold check: `what` stays absent for ABSENT_HOLD seconds (the controller sees a deletion at once)."""
    deadline = time.monotonic() + ABSENT_HOLD
    while time.monotonic() < deadline:
        seen = await read()
        assert seen is None, f"{what} was made: {seen}"
        await asyncio.sleep(0.05)


def test_a_new_namespace_gets_a_default_service_account_again_after_it_is_deleted() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*CONTROLLERS) as client:
            await client.create(kc.NAMESPACES, {"metadata": {"name": "fresh"}})
            first = await ws.object_until(client, accounts.SERVICEACCOUNTS, "default", lambda o: o is not None,
                                          "the default ServiceAccount", namespace="fresh")
            assert first is not None
            assert set(first) <= {"apiVersion", "kind", "metadata"}  # `{metadata: {name: default}}`, nothing more
            await client.delete(accounts.SERVICEACCOUNTS, "default", namespace="fresh")
            await ws.object_until(client, accounts.SERVICEACCOUNTS, "default",
                                  lambda o: o is not None and o["metadata"]["uid"] != first["metadata"]["uid"],
                                  "a new default ServiceAccount", namespace="fresh")
    ws.run(scenario)


def test_every_namespace_gets_the_root_ca_config_map_and_a_changed_one_is_put_back() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*CONTROLLERS) as client:
            ca = (client.ca_pem or b"").decode()
            await client.create(kc.NAMESPACES, {"metadata": {"name": "fresh"}})
            cm = await ws.object_until(client, kc.CONFIGMAPS, rootca.NAME, lambda o: o is not None,
                                       "kube-root-ca.crt", namespace="fresh")
            assert cm is not None
            assert cm["data"] == {"ca.crt": ca} and "BEGIN CERTIFICATE" in ca
            assert cm["metadata"]["annotations"] == {rootca.DESCRIPTION_ANNOTATION: rootca.DESCRIPTION}
            cm["data"] = {"ca.crt": "tampered"}
            cm["metadata"]["annotations"]["mine"] = "kept"
            await client.replace(kc.CONFIGMAPS, cm, namespace="fresh")
            back = await ws.object_until(client, kc.CONFIGMAPS, rootca.NAME,
                                         lambda o: o is not None and o["data"] == {"ca.crt": ca}, "the CA put back",
                                         namespace="fresh")
            assert back is not None
            assert back["metadata"]["annotations"]["mine"] == "kept"
    ws.run(scenario)


def test_a_terminating_namespace_gets_no_new_service_account() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*CONTROLLERS) as client:
            hold = {"metadata": {"name": "held", "finalizers": ["test.lwsconf.dev/hold"]}}
            await client.create(kc.NAMESPACES, {"metadata": {"name": "going"}})
            await ws.object_until(client, accounts.SERVICEACCOUNTS, "default", lambda o: o is not None,
                                  "the default ServiceAccount", namespace="going")
            await client.create(kc.CONFIGMAPS, hold, namespace="going")
            await client.delete(kc.NAMESPACES, "going")
            await client.delete(accounts.SERVICEACCOUNTS, "default", namespace="going")
            await stays_absent(lambda: ws.get_or_none(client, accounts.SERVICEACCOUNTS, "default", namespace="going"),
                               "the default ServiceAccount of a terminating namespace")
    ws.run(scenario)
