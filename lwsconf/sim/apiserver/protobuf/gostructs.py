"""What the Go types say that the `.proto` files do not: JSON names, inlining, pointers, omitempty.

Kubernetes' `generated.proto` gives field numbers and wire types, but the JSON form of an object (the
sim's form) follows the Go struct: `json:",inline"` flattens a field (Volume's `volumeSource`, Probe's
`handler`), `omitempty` drops zero values, and a pointer field keeps a zero it was sent (`replicas: 0`)
while a value field's zero means "unset". gogo-protobuf's marshaller also writes every value field, zero
or not, and skips nil pointers. So the codec needs, per message and field number: the JSON name (or
inline), pointer-ness and omitempty; this module reads them from the Go sources' struct tags
(`json:"..." protobuf:"bytes,N,opt,name=..."`). Used only by `generate`; pure text parsing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
_NAMED_SLICE = re.compile(r"^type (\w+) \[\]\S+", re.M)
_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')


@dataclass(frozen=True)
class GoField:
    """One struct field that has a protobuf number."""

    number: int
    json: str
    """JSON name; "" when the field is inlined (`json:",inline"`)."""
    pointer: bool
    omitempty: bool
    omitzero: bool
    """`omitzero`: a zero struct is dropped too (Go's omitempty keeps structs: a zero Time is written null)."""


def parse_structs(source: str) -> dict[str, list[GoField]]:
    """Struct name -> its fields with a `protobuf` tag, from one Go source file."""
    out: dict[str, list[GoField]] = {}
    for struct in _STRUCT.finditer(source):
        fields: list[GoField] = []
        for line in struct.group(2).splitlines():
            if line.strip().startswith("//"):
                continue
            match = _FIELD.match(line)
            if match is None:
                continue
            tags = dict(_TAG.findall(match.group(3)))
            proto = tags.get("protobuf")
            if proto is None:
                continue
            parts = proto.split(",")
            if len(parts) < 2 or not parts[1].isdigit():  # `protobuf:"-"`: not on the wire
                continue
            json_tag = tags.get("json", "").split(",")
            name = json_tag[0]
            inline = "inline" in json_tag[1:] and not name
            if name == "-":
                continue
            fields.append(GoField(number=int(parts[1]), json="" if inline else name,
                                  pointer=match.group(2).startswith("*"),
                                  omitempty="omitempty" in json_tag[1:] or "omitzero" in json_tag[1:],
                                  omitzero="omitzero" in json_tag[1:]))
        out[struct.group(1)] = fields
    return out


def named_slices(source: str) -> set[str]:
    """Types declared as `type X []T`: their proto message wraps `repeated items`, their JSON is a list."""
    return set(_NAMED_SLICE.findall(source))
