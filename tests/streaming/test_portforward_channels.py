"""Port-forward over WebSocket channels (what the official Python client speaks), the protocol alone.

A real TCP server plays the pod; the client side is a queue of messages and a list of what was sent.
The end-to-end path (official client -> real kube-apiserver -> node agent -> pod) is checked by
tests/controlplane/test_local_portforward.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from lwsconf.streaming import portforward_channels as pfc


async def _http_like(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers one request line with a fixed reply and closes, as an HTTP/1.1 `Connection: close` server."""
    await reader.readline()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    await writer.drain()
    writer.close()


def _run(coro_factory: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coro_factory(), 10)
    asyncio.run(bounded())


def test_ports_from_query() -> None:
    assert pfc.ports_from_query([("port", "8080"), ("port", "9090")]) == [8080, 9090]
    assert pfc.ports_from_query([("ports", "8080,9090"), ("other", "x")]) == [8080, 9090]
    with pytest.raises(pfc.BadPorts, match="at least one port"):
        pfc.ports_from_query([("x", "1")])
    with pytest.raises(pfc.BadPorts, match="invalid port 'http'"):
        pfc.ports_from_query([("port", "http")])
    with pytest.raises(pfc.BadPorts, match="invalid port 70000"):
        pfc.ports_from_query([("port", "70000")])


def test_one_port_headers_request_answer_and_end_when_the_pod_closes() -> None:
    sent: list[bytes] = []

    async def scenario() -> None:
        pod = await asyncio.start_server(_http_like, "127.0.0.1", 0)
        port = pod.sockets[0].getsockname()[1]
        inbox: asyncio.Queue[bytes] = asyncio.Queue()
        await inbox.put(b"\x00GET / HTTP/1.1\r\n\r\n")

        async def messages() -> AsyncIterator[bytes]:
            while True:
                yield await inbox.get()

        async def send(data: bytes) -> None:
            sent.append(data)

        async def dial(p: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await asyncio.open_connection("127.0.0.1", p)

        await pfc.serve(send, messages(), dial, [port], "p", "u")  # returns: the pod closed its side
        pod.close()
        head = port.to_bytes(2, "little")
        assert sent[:2] == [b"\x00" + head, b"\x01" + head]
        data = b"".join(m[1:] for m in sent[2:] if m[0] == 0)
        assert data == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        assert not [m for m in sent[2:] if m[0] != 0]

    _run(scenario)


def test_a_port_nothing_listens_on_is_reported_on_its_error_channel() -> None:
    sent: list[bytes] = []

    async def scenario() -> None:
        async def messages() -> AsyncIterator[bytes]:
            if False:  # pragma: no cover - an iterator that ends at once: the client left
                yield b""

        async def send(data: bytes) -> None:
            sent.append(data)

        async def dial(p: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            raise ConnectionRefusedError(111, "Connection refused")

        await pfc.serve(send, messages(), dial, [8080, 9090], "p", "u")
        assert [m[0] for m in sent] == [0, 1, 2, 3, 1, 3]
        assert sent[4][1:] == b"error forwarding port 8080 to pod p, uid u: Connection refused"
        assert sent[5][1:].startswith(b"error forwarding port 9090")

    _run(scenario)
