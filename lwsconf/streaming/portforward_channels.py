"""Port-forward over the WebSocket channel protocol, as the kubelet serves it to the official Python client.

Besides SPDY tunnelled in a WebSocket (`portforward.TUNNEL_PROTOCOL`, kubectl), the kubelet serves
port-forward as plain channels (`v4.channel.k8s.io`; k8s.io/cri-streaming portforward/websocket.go),
which is what the official Python client (`kubernetes.stream.portforward`) speaks. The ports come from
the request (`port=P`, repeated; the API server turns the client's `ports=P,Q` into those). Port number
i has the data channel 2i and the error channel 2i+1; the server first writes, on each of them, the
port as two little-endian bytes; then every binary message is one channel byte and the payload. Bytes
the client sends on a data channel go to that port of the pod, what the pod sends comes back on it; a
port that cannot be dialled gets `error forwarding port P to pod NAME, uid UID: CAUSE` on its error
channel. The session ends when every pod connection has ended (the client reads the close as EOF) or
when the client goes away.

Pure protocol: `send` and `messages` are the WebSocket's, supplied by the kubelet's HTTP layer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

from lwsconf.streaming.portforward import Dial

_READ = 32 * 1024


class BadPorts(ValueError):
    """The request names no port, or one that is not 1-65535."""


def ports_from_query(items: Iterable[tuple[str, str]]) -> list[int]:
    """The ports of `port=P` (kubelet) or `ports=P,Q` (API server) query parameters, in order."""
    out: list[int] = []
    for key, value in items:
        if key not in ("port", "ports"):
            continue
        for part in value.split(","):
            try:
                port = int(part.strip())
            except ValueError:
                raise BadPorts(f"invalid port {part.strip()!r}: must be a number 1-65535") from None
            if not 0 < port < 65536:
                raise BadPorts(f"invalid port {port}: must be 1-65535")
            out.append(port)
    if not out:
        raise BadPorts("port-forward needs at least one port (query parameter port=P)")
    return out


async def serve(send: Callable[[bytes], Awaitable[None]], messages: AsyncIterator[bytes], dial: Dial,
                ports: list[int], pod: str, uid: str) -> None:
    """Forward each port until every pod connection ended or the client left."""
    for index, port in enumerate(ports):
        head = port.to_bytes(2, "little")
        await send(bytes([2 * index]) + head)
        await send(bytes([2 * index + 1]) + head)
    writers: dict[int, asyncio.StreamWriter] = {}
    pumps: list[asyncio.Task[None]] = []
    for index, port in enumerate(ports):
        try:
            reader, writer = await dial(port)
        except OSError as exc:
            cause = exc.strerror or str(exc)
            await send(bytes([2 * index + 1]) +
                       f"error forwarding port {port} to pod {pod}, uid {uid}: {cause}".encode())
            continue
        writers[2 * index] = writer
        pumps.append(asyncio.create_task(_pump(reader, send, 2 * index)))
    routing = asyncio.create_task(_route(messages, writers))
    try:
        if pumps:
            ended = asyncio.create_task(_all(pumps))
            await asyncio.wait([routing, ended], return_when=asyncio.FIRST_COMPLETED)
            ended.cancel()
    finally:
        routing.cancel()
        for task in pumps:
            task.cancel()
        await asyncio.gather(routing, *pumps, return_exceptions=True)
        for writer in writers.values():
            writer.close()


async def _all(tasks: list[asyncio.Task[None]]) -> None:
    await asyncio.gather(*tasks)


async def _pump(reader: asyncio.StreamReader, send: Callable[[bytes], Awaitable[None]], channel: int) -> None:
    while chunk := await reader.read(_READ):
        await send(bytes([channel]) + chunk)


async def _route(messages: AsyncIterator[bytes], writers: dict[int, asyncio.StreamWriter]) -> None:
    async for message in messages:
        if not message:
            continue
        writer = writers.get(message[0])
        if writer is not None and len(message) > 1:
            writer.write(message[1:])
            with contextlib.suppress(ConnectionError):
                await writer.drain()
