"""SPDY/3 header blocks: `count, (len name, name, len value, value)*`, zlib-compressed per connection.

Each direction of a connection is one zlib stream primed with the dictionary the SPDY/3 specification
defines (draft-mbelshe-httpbis-spdy-00, section 2.6.10.1), each header block ended with a sync flush,
so both sides must keep their compressor and decompressor for the connection's whole life. A value
holding several values joins them with NUL. The dictionary is written below as the specification
lays it out: lowercase header names and methods, each after its 4-byte big-endian length, then a
run of status codes, reason phrases, dates and media types without lengths; `DICTIONARY_ADLER32`
is the Adler-32 every SPDY/3 zlib stream carries as its dictionary id, which a test checks.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence

_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location",
    "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified",
    "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
    "warning", "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
    "public", "set-cookie", "keep-alive", "origin",
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()
DICTIONARY_ADLER32 = 0xE3C6A7C2

MAX_HEADERS = 1000
MAX_FIELD = 1 << 20
"""Limits as moby/spdystream's framer applies them (a peer beyond them is broken or hostile)."""

Headers = dict[str, list[str]]


class HeaderError(ValueError):
    """A header block that does not decompress or parse."""


def encode_block(headers: Mapping[str, Sequence[str]]) -> bytes:
    """The uncompressed block; names lowercased, several values joined with NUL."""
    out = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        raw_name, raw_value = name.lower().encode(), "\x00".join(values).encode()
        out += [struct.pack(">I", len(raw_name)), raw_name, struct.pack(">I", len(raw_value)), raw_value]
    return b"".join(out)


def decode_block(block: bytes) -> Headers:
    """Parse an uncompressed block; HeaderError when it is truncated or beyond the limits."""
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(block):
            raise HeaderError("truncated header block")
        pos += n
        return block[pos - n:pos]

    (count,) = struct.unpack(">I", take(4))
    if count > MAX_HEADERS:
        raise HeaderError(f"{count} headers exceed the limit of {MAX_HEADERS}")
    headers: Headers = {}
    for _ in range(count):
        fields = []
        for _part in ("name", "value"):
            (length,) = struct.unpack(">I", take(4))
            if length > MAX_FIELD:
                raise HeaderError(f"a header field of {length} bytes exceeds {MAX_FIELD}")
            fields.append(take(length).decode(errors="replace"))
        headers.setdefault(fields[0].lower(), []).extend(fields[1].split("\x00"))
    return headers


class HeaderCodec:
    """One connection's two zlib streams (ours out, the peer's in)."""

    def __init__(self) -> None:
        self._out = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS, zdict=DICTIONARY)
        self._in = zlib.decompressobj(zlib.MAX_WBITS, zdict=DICTIONARY)

    def compress(self, headers: Mapping[str, Sequence[str]]) -> bytes:
        block = encode_block(headers)
        return self._out.compress(block) + self._out.flush(zlib.Z_SYNC_FLUSH)

    def decompress(self, data: bytes) -> Headers:
        try:
            block = self._in.decompress(data)
        except zlib.error as exc:
            raise HeaderError(f"header block does not decompress: {exc}") from None
        return decode_block(block)
