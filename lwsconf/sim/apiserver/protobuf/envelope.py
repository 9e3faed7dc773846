"""The protobuf wire form of whole objects and watch streams, as kube-apiserver writes and reads them.

* An object body is the 4-byte magic `k8s\\x00` then a `runtime.Unknown`: `typeMeta` (apiVersion, kind),
  `raw` (the object's own message), `contentEncoding` and `contentType` (both empty, always written).
* A watch stream (`application/vnd.kubernetes.protobuf;stream=watch`) is a sequence of frames, each a
  4-byte big-endian length then a bare `meta.v1.WatchEvent` (no magic, no Unknown: the RawSerializer),
  whose `object.raw` is the event's object in the object-body form above. Checked against kube-apiserver
  1.37.2's answers (tests/sim/apiserver/protobuf/test_protobuf_vs_kube_apiserver.py).

Pure: bytes in, dicts out (`codec`), no I/O.
"""

from __future__ import annotations

import struct
from typing import Any

from google.protobuf import message
from google.protobuf.message import DecodeError

from lwsconf.sim.apiserver.protobuf import codec
from lwsconf.sim.apiserver.protobuf import schema as schema_mod
from lwsconf.sim.apiserver.protobuf.schema import META, RUNTIME

MAGIC = b"k8s\x00"
UNKNOWN = f"{RUNTIME}.Unknown"
WATCH_EVENT = f"{META}.WatchEvent"


class EnvelopeError(ValueError):
    """A body that is not a Kubernetes protobuf object; the message says what is wrong with it."""


class NoMessage(LookupError):
    """Kubernetes has no protobuf message for this (apiVersion, kind): a custom resource, for one."""


def message_name(api_version: str, kind: str) -> str:
    found = schema_mod.load().message_name(api_version, kind)
    if found is None:
        raise NoMessage(f"{kind} in {api_version} has no protobuf form (custom resources are JSON only)")
    return found


def has_message(api_version: str, kind: str) -> bool:
    return schema_mod.load().message_name(api_version, kind) is not None


def encode_object(obj: dict[str, Any]) -> bytes:
    """`k8s\\0` + Unknown for an object dict carrying its apiVersion and kind; NoMessage for custom kinds."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    inner = codec.encode(obj, message_name(api_version, kind))
    return wrap(api_version, kind, inner.SerializeToString(deterministic=True))


def wrap(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = schema_mod.load().new(UNKNOWN)
    unknown.typeMeta.apiVersion = api_version  # type: ignore[attr-defined]
    unknown.typeMeta.kind = kind  # type: ignore[attr-defined]
    unknown.raw = raw  # type: ignore[attr-defined]
    unknown.contentEncoding = ""  # type: ignore[attr-defined]
    unknown.contentType = ""  # type: ignore[attr-defined]
    return MAGIC + unknown.SerializeToString(deterministic=True)


def unwrap(data: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw message bytes) of an object body; EnvelopeError when it is not one."""
    if not data.startswith(MAGIC):
        raise EnvelopeError("the body does not start with the Kubernetes protobuf magic k8s\\x00")
    unknown = schema_mod.load().new(UNKNOWN)
    try:
        unknown.ParseFromString(data[len(MAGIC):])
    except DecodeError as exc:
        raise EnvelopeError(f"the runtime.Unknown envelope does not parse: {exc}") from None
    meta = unknown.typeMeta  # type: ignore[attr-defined]
    if unknown.contentEncoding or unknown.contentType not in ("", "application/vnd.kubernetes.protobuf"):  # type: ignore[attr-defined]
        raise EnvelopeError(f"unsupported envelope content type {unknown.contentType!r} / encoding "  # type: ignore[attr-defined]
                            f"{unknown.contentEncoding!r}: send the raw protobuf message")  # type: ignore[attr-defined]
    return str(meta.apiVersion), str(meta.kind), bytes(unknown.raw)  # type: ignore[attr-defined]


def decode_object(data: bytes, default_api_version: str = "", default_kind: str = "") -> dict[str, Any]:
    """The JSON form (with apiVersion and kind) of an object body.

    The envelope's typeMeta names the message; a client that leaves it empty gets the request's
    (`default_*`), as kube-apiserver's decoder defaults the kind from the URL.
    """
    api_version, kind, raw = unwrap(data)
    api_version, kind = api_version or default_api_version, kind or default_kind
    msg = schema_mod.load().new(message_name(api_version, kind))
    try:
        msg.ParseFromString(raw)
    except DecodeError as exc:
        raise EnvelopeError(f"the {kind} message does not parse: {exc}") from None
    return {"kind": kind, "apiVersion": api_version, **codec.decode(msg)}


def watch_frame(event_type: str, obj: dict[str, Any]) -> bytes:
    """One length-prefixed frame of a protobuf watch stream."""
    event = schema_mod.load().new(WATCH_EVENT)
    event.type = event_type  # type: ignore[attr-defined]
    event.object.raw = encode_object(obj)  # type: ignore[attr-defined]
    body = event.SerializeToString(deterministic=True)
    return struct.pack(">I", len(body)) + body


def read_watch_frames(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The events of a whole protobuf watch stream (for tests and clients); EnvelopeError on a torn frame."""
    events, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise EnvelopeError(f"a frame length is cut short at byte {pos}")
        (size,) = struct.unpack(">I", data[pos:pos + 4])
        body = data[pos + 4:pos + 4 + size]
        if len(body) != size:
            raise EnvelopeError(f"a frame of {size} bytes is cut short at byte {pos}")
        event: message.Message = schema_mod.load().new(WATCH_EVENT)
        event.ParseFromString(body)
        events.append((str(event.type), decode_object(bytes(event.object.raw))))  # type: ignore[attr-defined]
        pos += 4 + size
    return events
