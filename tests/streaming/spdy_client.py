"""A SPDY/3.1 client side for the tests: what kubectl's spdystream sends, built from our own frames.

It keeps its own header compression state (one per direction, as a real peer does), so a server that
shared state with it by mistake, or reset its zlib stream between blocks, would fail to decode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from lwsconf.streaming.spdy import frames
from lwsconf.streaming.spdy.headers import HeaderCodec


class SpdyClient:
    """Sends client frames through `send`; `received` collects the server's frames fed to `feed`."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._send = send
        self._codec = HeaderCodec()
        self._reader = frames.FrameReader(self._codec)
        self._next_id = 1
        self.received: list[frames.Frame] = []
        self.changed = asyncio.Event()

    async def open(self, headers: dict[str, str], fin: bool = False) -> int:
        stream_id, self._next_id = self._next_id, self._next_id + 2
        await self.send(frames.SynStream(stream_id, {k: [v] for k, v in headers.items()}, fin=fin))
        return stream_id

    async def send(self, frame: frames.Frame) -> None:
        await self._send(frames.encode(frame, self._codec))

    def feed(self, data: bytes) -> None:
        self.received += self._reader.feed(data)
        self.changed.set()

    def data_of(self, stream_id: int) -> bytes:
        return b"".join(f.data for f in self.received if isinstance(f, frames.Data) and f.stream_id == stream_id)

    def finished(self, stream_id: int) -> bool:
        return any((isinstance(f, frames.Data) and f.fin and f.stream_id == stream_id)
                   or (isinstance(f, frames.RstStream) and f.stream_id == stream_id) for f in self.received)

    def of(self, kind: type, stream_id: int | None = None) -> list[frames.Frame]:
        return [f for f in self.received if isinstance(f, kind)
                and (stream_id is None or getattr(f, "stream_id", None) == stream_id)]

    async def until(self, ok: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
        """Wait for frames until `ok()`; fail naming `what` and listing what arrived."""
        async def loop() -> None:
            while not ok():
                self.changed.clear()
                await self.changed.wait()
        try:
            await asyncio.wait_for(loop(), timeout)
        except TimeoutError:
            raise AssertionError(f"{what}: not within {timeout}s; frames received: {self.received}") from None
