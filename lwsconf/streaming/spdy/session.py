"""One server-side SPDY/3.1 connection: the peer's streams, our replies, pings and resets.

The transport is whatever carries the bytes (for kubectl, a WebSocket): `feed` takes what arrived,
`send` (given) carries what we write. Every stream the peer opens gets a SYN_REPLY at once, as the
Kubernetes SPDY server does before handing the stream to its handler, and is then offered to
`accept()`. Frames are encoded and sent under one lock, since header compression is one zlib stream
whose order must be the order on the wire. Data we write goes out in DATA frames of at most 32 KiB
(what client-go reads per buffer); `close` sends an empty DATA frame with FIN, `reset` RST_STREAM.
A PING is echoed with its id; GOAWAY, a frame error or `shutdown` ends every stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from lwsconf.streaming.spdy import frames
from lwsconf.streaming.spdy.headers import HeaderCodec, HeaderError, Headers

CHUNK = 32 * 1024


class Stream:
    """A stream the peer opened: read what it sends, write back, close (FIN) or reset."""

    def __init__(self, session: Session, stream_id: int, headers: Headers) -> None:
        self.session, self.id, self.headers = session, stream_id, headers
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self.remote_done = False
        self.local_done = False

    def header(self, name: str) -> str:
        values = self.headers.get(name.lower()) or [""]
        return values[0]

    async def read(self) -> bytes:
        """The next piece of data; b"" once the peer closed (FIN) or reset the stream."""
        if self.remote_done and self._inbox.empty():
            return b""
        data = await self._inbox.get()
        if not data:
            self._inbox.put_nowait(b"")  # every later read sees the end too
        return data

    async def write(self, data: bytes) -> None:
        for start in range(0, len(data), CHUNK):
            await self.session.send_frame(frames.Data(self.id, data[start:start + CHUNK]))

    async def close(self) -> None:
        """Half-close our side (FIN); idempotent."""
        if not self.local_done:
            self.local_done = True
            await self.session.send_frame(frames.Data(self.id, b"", fin=True))

    async def reset(self, status: int = frames.RST_CANCEL) -> None:
        if not (self.local_done and self.remote_done):
            self.local_done = True
            self._end()
            await self.session.send_frame(frames.RstStream(self.id, status))

    def _receive(self, data: bytes, fin: bool) -> None:
        if data and not self.remote_done:
            self._inbox.put_nowait(data)
        if fin:
            self._end()

    def _end(self) -> None:
        if not self.remote_done:
            self.remote_done = True
            self._inbox.put_nowait(b"")


class Session:
    """The server side of one connection; see the module docstring."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._send = send
        self._codec = HeaderCodec()
        self._reader = frames.FrameReader(self._codec)
        self._lock = asyncio.Lock()
        self._streams: dict[int, Stream] = {}
        self._accepted: asyncio.Queue[Stream | None] = asyncio.Queue()
        self.closed = False

    async def send_frame(self, frame: frames.Frame) -> None:
        if self.closed:
            return
        async with self._lock:
            await self._send(frames.encode(frame, self._codec))

    async def accept(self) -> Stream | None:
        """The next stream the peer opened, or None once the session ended."""
        if self.closed and self._accepted.empty():
            return None
        return await self._accepted.get()

    async def feed(self, data: bytes) -> None:
        """Handle the bytes that arrived; a malformed frame ends the session with GOAWAY."""
        try:
            received = self._reader.feed(data)
        except (frames.FrameError, HeaderError):
            await self.send_frame(frames.GoAway(max(self._streams, default=0), 1))
            self.shutdown()
            return
        for frame in received:
            await self._handle(frame)

    async def _handle(self, frame: frames.Frame) -> None:
        if isinstance(frame, frames.SynStream):
            if frame.stream_id in self._streams or frame.stream_id % 2 == 0:
                await self.send_frame(frames.RstStream(frame.stream_id, frames.RST_PROTOCOL_ERROR))
                return
            stream = Stream(self, frame.stream_id, frame.headers)
            self._streams[frame.stream_id] = stream
            await self.send_frame(frames.SynReply(frame.stream_id))
            stream._receive(b"", frame.fin)
            self._accepted.put_nowait(stream)
        elif isinstance(frame, frames.Data):
            known = self._streams.get(frame.stream_id)
            if known is not None:
                known._receive(frame.data, frame.fin)
        elif isinstance(frame, frames.RstStream):
            gone = self._streams.get(frame.stream_id)
            if gone is not None:
                gone.local_done = True
                gone._end()
        elif isinstance(frame, frames.Ping):
            await self.send_frame(frame)
        elif isinstance(frame, frames.GoAway):
            self.shutdown()

    def forget(self, stream: Stream) -> None:
        self._streams.pop(stream.id, None)

    def shutdown(self) -> None:
        """End the session: every stream reads EOF, `accept` returns None, nothing more is sent."""
        if self.closed:
            return
        self.closed = True
        for stream in self._streams.values():
            stream._end()
        self._accepted.put_nowait(None)
