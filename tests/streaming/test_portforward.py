"""The port-forward protocol over a SPDY session: stream pairs, copying, errors as the kubelet words them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from lwsconf.streaming import portforward
from lwsconf.streaming.spdy import frames
from lwsconf.streaming.spdy.session import Session
from tests.streaming.spdy_client import SpdyClient


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1024):
        writer.write(data.upper())
        await writer.drain()
    writer.close()


async def _dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


@asynccontextmanager
async def forwarding(pair_timeout: float = 30.0,
                     dial: Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = _dial,
                     ) -> AsyncIterator[tuple[SpdyClient, int]]:
    """A session serving port-forward for pod "p" (uid "u"), its client, and an upper-casing echo port."""
    echo = await asyncio.start_server(_echo, "127.0.0.1", 0)
    port = echo.sockets[0].getsockname()[1]
    client: SpdyClient

    async def to_client(data: bytes) -> None:
        client.feed(data)

    session = Session(to_client)
    client = SpdyClient(session.feed)
    server = asyncio.create_task(portforward.serve(session, dial, "p", "u", pair_timeout=pair_timeout))
    try:
        yield client, port
    finally:
        session.shutdown()
        await asyncio.wait_for(server, 5)
        echo.close()
        await echo.wait_closed()


def run(coro: Awaitable[None]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coro, 20)
    asyncio.run(bounded())


def test_a_connection_is_forwarded_and_both_streams_end_cleanly() -> None:
    async def scenario() -> None:
        async with forwarding() as (client, port):
            error = await client.open({"streamType": "error", "port": str(port), "requestID": "0"})
            await client.send(frames.Data(error, b"", fin=True))  # kubectl closes its side at once
            data = await client.open({"streamType": "data", "port": str(port), "requestID": "0"})
            await client.send(frames.Data(data, b"hello"))
            await client.until(lambda: client.data_of(data) == b"HELLO", "the echo through the pod port")
            await client.send(frames.Data(data, b"", fin=True))
            await client.until(lambda: client.finished(data) and client.finished(error), "both streams closed")
            assert client.data_of(error) == b"", "no error reported"
            assert not client.of(frames.RstStream)

    run(scenario())


def test_an_unreachable_port_is_reported_on_the_error_stream_and_reset() -> None:
    async def refuse(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        raise ConnectionRefusedError(111, f"Connect call failed ('127.0.0.9', {port})")

    async def scenario() -> None:
        async with forwarding(dial=refuse) as (client, _):
            error = await client.open({"streamType": "error", "port": "9", "requestID": "4"})
            data = await client.open({"streamType": "data", "port": "9", "requestID": "4"})
            await client.until(lambda: client.finished(data) and client.finished(error), "both streams reset")
            message = client.data_of(error).decode()
            assert message.startswith("error forwarding port 9 to pod p, uid u: ")
            assert "Connect call failed" in message
            assert {f.stream_id for f in client.of(frames.RstStream)} == {error, data}  # type: ignore[attr-defined]

    run(scenario())


def test_bad_streams_are_reset_and_old_clients_get_request_ids_from_stream_ids() -> None:
    async def scenario() -> None:
        async with forwarding() as (client, port):
            no_port = await client.open({"streamType": "data"})
            bad_type = await client.open({"streamType": "video", "port": "80"})
            await client.until(lambda: client.finished(no_port) and client.finished(bad_type), "bad streams reset")
            assert [f.status for f in client.of(frames.RstStream)] == [frames.RST_PROTOCOL_ERROR] * 2  # type: ignore[attr-defined]
            error = await client.open({"streamType": "error", "port": str(port)})
            data = await client.open({"streamType": "data", "port": str(port)})
            assert data == error + 2
            await client.send(frames.Data(data, b"abc", fin=True))
            await client.until(lambda: client.data_of(data) == b"ABC" and client.finished(error),
                               "a pair without requestID headers forwarded")

    run(scenario())


def test_a_pair_that_never_completes_times_out_on_its_error_stream() -> None:
    async def scenario() -> None:
        async with forwarding(pair_timeout=0.2) as (client, port):
            error = await client.open({"streamType": "error", "port": str(port), "requestID": "1"})
            await client.until(lambda: b"timed out waiting for streams" in client.data_of(error),
                               "the pair's timeout reported")
            again = await client.open({"streamType": "error", "port": str(port), "requestID": "2"})
            duplicate = await client.open({"streamType": "error", "port": str(port), "requestID": "2"})
            await client.until(lambda: b"already assigned" in client.data_of(again), "a duplicate reported")
            assert duplicate != again

    run(scenario())
