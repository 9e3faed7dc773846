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
    gotype: str = ""
    """The field's Go type as reflect's Type.String() prints it, pointer dropped (`int32`, `v1.Protocol`,
    `[]v1.Container`, `map[string]string`): the words of encoding/json's UnmarshalTypeError (`godecode`)."""


_PACKAGE = re.compile(r"^package (\w+)", re.M)
_IMPORT = re.compile(r'^\s*(?:import\s+)?(\w+\s+)?"([\w./-]+)"\s*$', re.M)
_GO_IDENT = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?")
_BUILTIN = {"string", "bool", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64", "byte", "rune", "map", "interface", "any"}


def go_type_string(written: str, source: str) -> str:
    """`written` (a field's type in `source`) as reflect.Type.String(): qualified by package name, not by
    import alias (`metav1.Time` -> `v1.Time`), local types by the file's package, the pointer dropped
    (encoding/json reports the pointed-to type), byte as uint8."""
    found = _PACKAGE.search(source)
    package = found.group(1) if found else ""
    imports = {(alias or path.rsplit("/", 1)[-1]).strip(): path.rsplit("/", 1)[-1]
               for alias, path in _IMPORT.findall(source)}

    def qualify(match: re.Match[str]) -> str:
        name = match.group(0)
        if "." in name:
            alias, _, ident = name.partition(".")
            return f"{imports.get(alias, alias)}.{ident}"
        if name == "byte":
            return "uint8"
        if name == "rune":
            return "int32"
        return name if name in _BUILTIN else f"{package}.{name}"

    return _GO_IDENT.sub(qualify, written.lstrip("*"))


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
                                  omitzero="omitzero" in json_tag[1:],
                                  gotype=go_type_string(match.group(2), source)))
        out[struct.group(1)] = fields
    return out


def named_slices(source: str) -> set[str]:
    """Types declared as `type X []T`: their proto message wraps `repeated items`, their JSON is a list."""
    return set(_NAMED_SLICE.findall(source))
