"""The sim's own components reach its API server over a plain-HTTP Unix socket in a private folder; every other
client keeps the TLS port. Same token, same handlers; the folder goes with the server."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http.app import APIServer


def test_the_internal_socket_serves_the_same_api_with_the_same_token() -> None:
    async def scenario() -> None:
        server = APIServer(openapi_specs=None)
        await server.start()
        try:
            assert server.internal_socket is not None
            folder = Path(server.internal_socket).parent
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700, "only this user can reach the socket"
            internal = kc.Client(server.url, server.token, unix_socket=server.internal_socket)
            over_tls = kc.Client(server.url, server.token, ca_pem=server.ca_pem)
            created = await internal.request("POST", "/api/v1/namespaces/default/configmaps",
                                             body={"metadata": {"name": "seen-by-both"}, "data": {"k": "v"}})
            read = await over_tls.request("GET", "/api/v1/namespaces/default/configmaps/seen-by-both")
            assert read["metadata"]["uid"] == created["metadata"]["uid"]
            anonymous = kc.Client(server.url, None, unix_socket=server.internal_socket)
            with pytest.raises(errors.ApiError) as refused:
                await anonymous.request("GET", "/api/v1/namespaces")
            assert refused.value.status == 401, "the socket needs the token like the TLS port"
            for client in (internal, over_tls, anonymous):
                await client.close()
        finally:
            await server.stop()
        assert server.internal_socket is None and not folder.exists(), "stop() removes the socket's folder"
    asyncio.run(scenario())


def test_the_cluster_components_use_the_internal_socket() -> None:
    """Every controller's client is made by the supervisor's factory: it must name the socket."""
    from lwsconf.sim import cluster

    async def scenario() -> None:
        sim = cluster.SimCluster(nodes=[])
        await sim.start()
        try:
            assert sim._supervisor is not None
            made = sim._supervisor._client_factory("probe-component")
            assert made._unix_socket == sim.apiserver.internal_socket and made._unix_socket is not None
            assert os.path.exists(made._unix_socket)
            await made.close()
        finally:
            await sim.stop()
    asyncio.run(scenario())
