"""SPDY/3 frames (draft-mbelshe-httpbis-spdy-00, section 2.2 and 2.6): layouts, encoder, reader.

A control frame starts with the bit C=1, version 3 (15 bits) and a 16-bit type; a data frame with C=0
and the 31-bit stream id. Both continue with 8 bits of flags and a 24-bit length. The frames a
port-forward session sees: SYN_STREAM (stream id, associated id, 3-bit priority, slot, header block),
SYN_REPLY (stream id, header block), RST_STREAM (stream id, status), SETTINGS, PING (32-bit id),
GOAWAY (last good stream id, status), HEADERS, WINDOW_UPDATE, and DATA. Unknown control types are
skipped by their length, as the specification asks.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from lwsconf.streaming.spdy.headers import HeaderCodec, Headers

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
RST_PROTOCOL_ERROR, RST_INVALID_STREAM, RST_REFUSED_STREAM, RST_CANCEL = 1, 2, 3, 5
MAX_LENGTH = (1 << 24) - 1


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    fin: bool = False
    associated: int = 0
    priority: int = 0


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good: int
    status: int = 0


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True)
class Other:
    """A control frame we read past (SETTINGS, HEADERS, WINDOW_UPDATE, unknown types)."""

    frame_type: int


Frame = SynStream | SynReply | RstStream | Ping | GoAway | Data | Other


class FrameError(ValueError):
    """Bytes that are not a SPDY/3 frame; the session ends with GOAWAY."""


def _control(frame_type: int, flags: int, payload: bytes) -> bytes:
    if len(payload) > MAX_LENGTH:
        raise FrameError(f"a control frame of {len(payload)} bytes exceeds {MAX_LENGTH}")
    return struct.pack(">HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload)) + payload


def encode(frame: Frame, codec: HeaderCodec) -> bytes:
    """The bytes of `frame` (header blocks compressed through `codec`, which keeps its state)."""
    if isinstance(frame, Data):
        if len(frame.data) > MAX_LENGTH:
            raise FrameError(f"a data frame of {len(frame.data)} bytes exceeds {MAX_LENGTH}")
        flags = FLAG_FIN if frame.fin else 0
        return struct.pack(">II", frame.stream_id & 0x7FFFFFFF, (flags << 24) | len(frame.data)) + frame.data
    if isinstance(frame, SynStream):
        head = struct.pack(">IIBB", frame.stream_id, frame.associated, (frame.priority & 7) << 5, 0)
        return _control(SYN_STREAM, FLAG_FIN if frame.fin else 0, head + codec.compress(frame.headers))
    if isinstance(frame, SynReply):
        payload = struct.pack(">I", frame.stream_id) + codec.compress(frame.headers)
        return _control(SYN_REPLY, FLAG_FIN if frame.fin else 0, payload)
    if isinstance(frame, RstStream):
        return _control(RST_STREAM, 0, struct.pack(">II", frame.stream_id, frame.status))
    if isinstance(frame, Ping):
        return _control(PING, 0, struct.pack(">I", frame.ping_id))
    if isinstance(frame, GoAway):
        return _control(GOAWAY, 0, struct.pack(">II", frame.last_good, frame.status))
    raise FrameError(f"cannot encode {frame!r}")


class FrameReader:
    """Turns the bytes of a connection, fed in any pieces, into frames."""

    def __init__(self, codec: HeaderCodec) -> None:
        self._codec = codec
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                break
            head, payload = bytes(self._buffer[:8]), bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            frames.append(self._parse(head, payload))
        return frames

    def _parse(self, head: bytes, payload: bytes) -> Frame:
        first, flags = struct.unpack(">I", head[:4])[0], head[4]
        if not first & 0x80000000:
            return Data(first & 0x7FFFFFFF, payload, bool(flags & FLAG_FIN))
        version, frame_type = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise FrameError(f"SPDY version {version} is not served (only 3.1)")
        try:
            return self._control(frame_type, flags, payload)
        except struct.error:
            raise FrameError(f"control frame type {frame_type} of {len(payload)} bytes is too short") from None

    def _control(self, frame_type: int, flags: int, payload: bytes) -> Frame:
        if frame_type == SYN_STREAM:
            stream_id, associated, priority = struct.unpack(">IIB", payload[:9])
            return SynStream(stream_id & 0x7FFFFFFF, self._codec.decompress(payload[10:]), bool(flags & FLAG_FIN),
                             associated & 0x7FFFFFFF, priority >> 5)
        if frame_type == SYN_REPLY:
            (stream_id,) = struct.unpack(">I", payload[:4])
            return SynReply(stream_id & 0x7FFFFFFF, self._codec.decompress(payload[4:]), bool(flags & FLAG_FIN))
        if frame_type == HEADERS:
            self._codec.decompress(payload[4:])  # keeps the zlib stream in step; nothing in it matters here
            return Other(frame_type)
        if frame_type == RST_STREAM:
            stream_id, status = struct.unpack(">II", payload[:8])
            return RstStream(stream_id & 0x7FFFFFFF, status)
        if frame_type == PING:
            return Ping(struct.unpack(">I", payload[:4])[0])
        if frame_type == GOAWAY:
            last_good, status = struct.unpack(">II", payload[:8])
            return GoAway(last_good & 0x7FFFFFFF, status)
        return Other(frame_type)
