"""SPDY/3.1 header blocks, frames and the server session, as kubectl's spdystream exchanges them."""

from __future__ import annotations

import asyncio
import zlib

import pytest

from lwsconf.streaming.spdy import frames, headers
from lwsconf.streaming.spdy.session import Session
from tests.streaming.spdy_client import SpdyClient


def test_dictionary_is_the_spdy3_one() -> None:
    """Its length and Adler-32 (the DICTID every SPDY/3 zlib stream names) match moby/spdystream v0.5.1's."""
    assert len(headers.DICTIONARY) == 1423
    assert zlib.adler32(headers.DICTIONARY) == headers.DICTIONARY_ADLER32 == 0xE3C6A7C2
    first = headers.HeaderCodec().compress({"port": ["80"]})
    assert first[:2] == b"\x78\xf9" and int.from_bytes(first[2:6], "big") == headers.DICTIONARY_ADLER32


def test_header_blocks_share_one_zlib_stream_per_direction() -> None:
    sender, receiver = headers.HeaderCodec(), headers.HeaderCodec()
    blocks = [{"streamtype": ["error"], "port": ["8080"], "requestid": ["0"]},
              {"streamtype": ["data"], "port": ["8080"], "requestid": ["0"]},
              {"multi": ["a", "b"]}]
    assert [receiver.decompress(sender.compress(b)) for b in blocks] == blocks
    with pytest.raises(headers.HeaderError):
        headers.HeaderCodec().decompress(sender.compress(blocks[0]))  # a later block alone cannot decode


def test_header_block_limits_and_truncation() -> None:
    with pytest.raises(headers.HeaderError, match="truncated"):
        headers.decode_block(headers.encode_block({"a": ["b"]})[:-1])
    with pytest.raises(headers.HeaderError, match="exceed the limit"):
        headers.decode_block((headers.MAX_HEADERS + 1).to_bytes(4, "big"))
    assert headers.decode_block(headers.encode_block({"Port": ["1"]})) == {"port": ["1"]}


def test_every_frame_round_trips_when_fed_byte_by_byte() -> None:
    out_codec, in_codec = headers.HeaderCodec(), headers.HeaderCodec()
    sent = [frames.SynStream(1, {"streamtype": ["data"]}, priority=3), frames.SynReply(1, {"a": ["b"]}),
            frames.Data(1, b"payload"), frames.Data(1, b"", fin=True), frames.RstStream(3, frames.RST_CANCEL),
            frames.Ping(7), frames.GoAway(5, 0)]
    wire = b"".join(frames.encode(f, out_codec) for f in sent)
    reader = frames.FrameReader(in_codec)
    got = [f for i in range(len(wire)) for f in reader.feed(wire[i:i + 1])]
    assert got == sent


def test_reader_skips_unknown_control_frames_and_refuses_other_versions() -> None:
    reader = frames.FrameReader(headers.HeaderCodec())
    window_update = bytes.fromhex("80030009" "00000008" "00000001" "00010000")
    assert reader.feed(window_update) == [frames.Other(frames.WINDOW_UPDATE)]
    with pytest.raises(frames.FrameError, match="version 2"):
        reader.feed(bytes.fromhex("80020006" "00000004" "00000001"))


def run(coro: object) -> None:
    asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


def test_session_replies_echoes_pings_and_ends_streams() -> None:
    async def scenario() -> None:
        client: SpdyClient
        session = Session(lambda data: _feed(client, data))
        client = SpdyClient(session.feed)
        sid = await client.open({"streamType": "data", "port": "80"})
        stream = await session.accept()
        assert stream is not None and stream.id == sid and stream.header("streamtype") == "data"
        assert client.of(frames.SynReply, sid), "a stream is answered with SYN_REPLY at once"
        await client.send(frames.Ping(11))
        assert client.of(frames.Ping) == [frames.Ping(11)]
        await client.send(frames.Data(sid, b"hello"))
        await client.send(frames.Data(sid, b"", fin=True))
        assert await stream.read() == b"hello"
        assert await stream.read() == b"" and await stream.read() == b""
        await stream.write(b"x" * 70000)
        await stream.close()
        assert client.data_of(sid) == b"x" * 70000 and client.finished(sid)
        assert max(len(f.data) for f in client.of(frames.Data, sid)) <= 32 * 1024  # type: ignore[attr-defined]
        other = await client.open({"streamType": "error", "port": "80"})
        second = await session.accept()
        assert second is not None
        await client.send(frames.RstStream(other, frames.RST_CANCEL))
        assert await second.read() == b""
        await client.send(frames.SynStream(2, {}))  # even ids are the server's
        assert client.of(frames.RstStream, 2)
        session.shutdown()
        assert await session.accept() is None

    run(scenario())


def test_session_answers_garbage_with_goaway() -> None:
    async def scenario() -> None:
        client: SpdyClient
        session = Session(lambda data: _feed(client, data))
        client = SpdyClient(session.feed)
        await session.feed(bytes.fromhex("80030001" "00000010") + b"\x00" * 16)  # SYN_STREAM, no zlib data
        assert client.of(frames.GoAway) and session.closed
        assert await session.accept() is None

    run(scenario())


async def _feed(client: SpdyClient, data: bytes) -> None:
    client.feed(data)
