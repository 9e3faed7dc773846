"""The CONNECT proxy of kube-apiserver's `cluster` egress on `--cluster=local` (`localcluster.egress`).

Real sockets on this machine only: a unix socket for the proxy, a TCP listener on 127.0.0.1 as the
"pod". A pod's 198.18 address is dialed as its loopback one, a loopback address as is, and anything else
is answered 403, counted in `refused` and never dialed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from lwsconf.localcluster import egress
from lwsconf.sim.nodes.network import podnet

ADDRESSES = podnet.PodAddressMap.for_network("127.0.0.0/16")
"""127.0.a.b <-> 198.18.a.b, so 198.18.0.1 stands for 127.0.0.1, where the test's listener is."""


@pytest.mark.parametrize(("authority", "target"), [
    ("198.18.3.7:8080", ("127.0.3.7", 8080)),
    ("127.5.0.2:10250", ("127.5.0.2", 10250)),
    ("127.0.0.1:6443", ("127.0.0.1", 6443)),
])
def test_decide_dials_pods_by_their_loopback_address_and_loopback_as_is(authority: str,
                                                                        target: tuple[str, int]) -> None:
    assert egress.decide(authority, ADDRESSES).target == target


@pytest.mark.parametrize("authority", ["10.0.0.1:80", "198.19.0.1:80", "198.18.200.1:80", "example.com:443",
                                       "[::1]:80", "198.18.0.1", "198.18.0.1:0", "198.18.0.1:http"])
def test_decide_refuses_everything_else_with_a_reason(authority: str) -> None:
    decision = egress.decide(authority, ADDRESSES)
    assert decision.target is None and decision.reason


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"echo:" + await reader.readline())
    await writer.drain()
    writer.close()


Scenario = Callable[[egress.EgressProxy, int], Awaitable[None]]


def _run(tmp_path: Path, scenario: Scenario) -> egress.EgressProxy:
    """Run `scenario(proxy, echo_port)` with an echo server on 127.0.0.1 and the proxy on a unix socket."""
    running = egress.EgressProxy(tmp_path / "egress.sock", ADDRESSES)

    async def main() -> None:
        server = await asyncio.start_server(_echo, "127.0.0.1", 0)
        await running.start()
        try:
            await scenario(running, server.sockets[0].getsockname()[1])
        finally:
            await running.close()
            server.close()
            await server.wait_closed()

    asyncio.run(asyncio.wait_for(main(), 20))
    return running


async def _connect(proxy: egress.EgressProxy, authority: str) -> tuple[bytes, asyncio.StreamReader,
                                                                       asyncio.StreamWriter]:
    reader, writer = await asyncio.open_unix_connection(str(proxy.path))
    writer.write(f"CONNECT {authority} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    await writer.drain()
    return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5), reader, writer


def test_a_pods_api_address_is_tunnelled_to_its_loopback_address(tmp_path: Path) -> None:
    async def scenario(proxy: egress.EgressProxy, port: int) -> None:
        head, reader, writer = await _connect(proxy, f"198.18.0.1:{port}")
        assert head.startswith(b"HTTP/1.1 200 "), head
        writer.write(b"hello\n")
        assert await asyncio.wait_for(reader.read(), 5) == b"echo:hello\n"
        writer.close()

    running = _run(tmp_path, scenario)
    assert running.tunnels == 1 and running.refused == []
    assert not running.path.exists()  # close() removed the socket


def test_a_non_loopback_non_pod_target_gets_403_and_is_counted_never_dialed(tmp_path: Path) -> None:
    async def scenario(proxy: egress.EgressProxy, port: int) -> None:
        head, reader, writer = await _connect(proxy, "192.0.2.10:443")  # TEST-NET-1: nothing may dial it
        assert head.startswith(b"HTTP/1.1 403 "), head
        assert b"loopback only" in await asyncio.wait_for(reader.read(), 5)
        writer.close()

    running = _run(tmp_path, scenario)
    assert running.refused == ["192.0.2.10:443"] and running.tunnels == 0


def test_an_unreachable_loopback_target_gets_502(tmp_path: Path) -> None:
    async def scenario(proxy: egress.EgressProxy, port: int) -> None:
        head, _, writer = await _connect(proxy, "198.18.0.1:1")  # 127.0.0.1:1: nothing listens there
        assert head.startswith(b"HTTP/1.1 502 "), head
        writer.close()

    running = _run(tmp_path, scenario)
    assert running.refused == [] and running.tunnels == 0


def test_only_connect_is_served(tmp_path: Path) -> None:
    async def scenario(proxy: egress.EgressProxy, port: int) -> None:
        reader, writer = await asyncio.open_unix_connection(str(proxy.path))
        writer.write(b"GET http://198.18.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.1 405 ")
        writer.close()

    running = _run(tmp_path, scenario)
    assert running.refused == [] and running.tunnels == 0
