"""The port-forward protocol over a SPDY session, as the kubelet serves it.

For each local connection the client opens two streams sharing a `requestID` header: an `error`
stream (which it half-closes at once) and a `data` stream, both with the remote `port`
(client-go tools/portforward/portforward.go, `handleConnection`). The server pairs them, connects to
that port of the pod and copies bytes both ways; when the pod's side ends it closes the data stream
and then the error stream, so the client reads an empty error stream. If the port cannot be reached
it writes `error forwarding port P to pod NAME, uid UID: CAUSE` on the error stream and resets both
(k8s.io/cri-streaming portforward/httpstream.go); the client then drops the whole session, as
kubectl does on a real cluster. A stream without a valid port or stream type is reset; a pair that
never completes reports a timeout on its error stream. An old client without request ids gets them
derived from stream ids, as the kubelet does (error stream id, data stream id - 2).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from lwsconf.streaming.spdy import frames
from lwsconf.streaming.spdy.session import Session, Stream

PROTOCOL = "portforward.k8s.io"
TUNNEL_PROTOCOL = "SPDY/3.1+" + PROTOCOL
"""The WebSocket subprotocol kubectl 1.31+ offers (apimachinery util/portforward constants)."""
PAIR_TIMEOUT = 30.0
"""Seconds the kubelet waits for the second stream of a pair (its streamCreationTimeout)."""
_READ = 32 * 1024

Dial = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
"""dial(port) -> a connection to that port of the pod; OSError when nothing listens."""


@dataclass
class _Pair:
    request_id: str
    error: Stream | None = None
    data: Stream | None = None


def _problem(stream: Stream) -> str:
    port = stream.header("port")
    if not port:
        return '"port" header is required'
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f"unable to parse {port!r} as a port"
    if stream.header("streamType") not in ("error", "data"):
        return f"invalid stream type {stream.header('streamType')!r}"
    return ""


def _request_id(stream: Stream) -> str:
    given = stream.header("requestID")
    if given:
        return given
    return str(stream.id if stream.header("streamType") == "error" else stream.id - 2)


async def serve(session: Session, dial: Dial, pod: str, uid: str, *, pair_timeout: float = PAIR_TIMEOUT) -> None:
    """Serve port-forward requests until the session ends; every forwarding task ends with it."""
    pairs: dict[str, _Pair] = {}
    tasks: set[asyncio.Task[None]] = set()
    try:
        while (stream := await session.accept()) is not None:
            if _problem(stream):
                await stream.reset(frames.RST_PROTOCOL_ERROR)
                continue
            rid = _request_id(stream)
            pair = pairs.setdefault(rid, _Pair(rid))
            if pair.error is None and pair.data is None:
                tasks.add(asyncio.create_task(_expire(pair, pairs, pair_timeout)))
            kind = stream.header("streamType")
            if getattr(pair, kind) is not None:
                await _report(pair, f"error processing stream for request {rid}: {kind} stream already assigned")
                continue
            setattr(pair, kind, stream)
            if pair.error is not None and pair.data is not None:
                pairs.pop(rid, None)
                tasks.add(asyncio.create_task(_forward(pair.error, pair.data, dial, pod, uid)))
            tasks = {t for t in tasks if not t.done()}
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _report(pair: _Pair, message: str) -> None:
    if pair.error is not None:
        await pair.error.write(message.encode())


async def _expire(pair: _Pair, pairs: dict[str, _Pair], timeout: float) -> None:
    await asyncio.sleep(timeout)  # the kubelet's stream-creation deadline, not a wait for a condition
    if pairs.get(pair.request_id) is pair:
        pairs.pop(pair.request_id, None)
        await _report(pair, f"(request={pair.request_id}) timed out waiting for streams")


async def _forward(error: Stream, data: Stream, dial: Dial, pod: str, uid: str) -> None:
    port = int(data.header("port"))
    try:
        try:
            reader, writer = await dial(port)
        except OSError as exc:
            await error.write(f"error forwarding port {port} to pod {pod}, uid {uid}: {exc}".encode())
            await data.reset()
            await error.reset()
            return
        upstream = asyncio.create_task(_to_pod(data, writer))
        try:
            while chunk := await reader.read(_READ):
                await data.write(chunk)
        except OSError:
            pass
        finally:
            upstream.cancel()
            await asyncio.gather(upstream, return_exceptions=True)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        await data.close()
        await error.close()
    finally:
        error.session.forget(error)
        data.session.forget(data)


async def _to_pod(data: Stream, writer: asyncio.StreamWriter) -> None:
    """Client bytes to the pod; at the client's FIN half-close, at its reset close the connection."""
    while chunk := await data.read():
        writer.write(chunk)
        await writer.drain()
    if data.local_done:  # reset by the client: nobody reads the pod's answer any more
        writer.close()
    elif writer.can_write_eof():
        writer.write_eof()
