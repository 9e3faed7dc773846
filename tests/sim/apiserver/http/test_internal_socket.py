"""The sim's own components reach its API server over a plain-HTTP abstract Unix socket (no file, whatever TMPDIR
is); every other client keeps the TLS port. Same token, same handlers."""

from __future__ import annotations

import asyncio

import pytest

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http.app import APIServer


def test_the_internal_socket_serves_the_same_api_with_the_same_token() -> None:
    async def scenario() -> None:
        server = APIServer(openapi_specs=None)
        await server.start()
        try:
            assert server.internal_socket is not None and server.internal_socket.startswith("\0"), \
                "an abstract socket: nothing in the file system to leave behind"
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
        assert server.internal_socket is None
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
            assert (await made.request("GET", "/api/v1/namespaces/default"))["metadata"]["name"] == "default"
            await made.close()
        finally:
            await sim.stop()
    asyncio.run(scenario())
