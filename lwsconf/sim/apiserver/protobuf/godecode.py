"""What kube-apiserver's typed JSON decoding of a built-in object does, from the protobuf schema and Go facts.

kube-apiserver decodes a built-in kind's JSON body into its Go struct with sigs.k8s.io/json (a fork of
encoding/json: case-sensitive keys, strict errors). Two of its effects are visible to a client and the sim,
which keeps built-ins as JSON, reproduces them here:

* a value of the wrong JSON type (`"replicas": "3"`, `"data": {"a": 1}`) fails the decode with Go's
  `UnmarshalTypeError`, `json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of
  type int32`: the first such error in document order (encoding/json's saveError keeps the first and reads on),
  named by the innermost struct, the JSON field names from the root (no map keys, no list indexes) and
  reflect's name of the Go type (`gofields.json`'s fifth column, `gostructs.go_type_string`);
* a key the struct lacks is dropped, at any depth, and reported as a strict error `unknown field
  "spec.template.spec.containers[0].imagePullPolice"` (sigs.k8s.io/json's strictFieldStack: JSON names
  joined by ".", list indexes as "[i]", map keys as ".key"), in document order without repeats.

A Time or MicroTime string is parsed as its UnmarshalJSON does (`time.Parse` with RFC3339, RFC3339Micro;
`apimachinery.gotime`), and its error counts as the first decode error like a type error (encoding/json keeps the
first error an Unmarshaler returns as well). Other values whose Go type has its own UnmarshalJSON (Duration,
Quantity, IntOrString, RawExtension, FieldsV1, apiextensions' JSON and JSONSchemaProps "or" types) are not checked:
their errors are their own, and the sim's validation answers them as before. Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor

from lwsconf.sim.apiserver.apimachinery import gotime
from lwsconf.sim.apiserver.patch.merge_patches import go_json_kind
from lwsconf.sim.apiserver.protobuf import codec
from lwsconf.sim.apiserver.protobuf import schema as schema_mod

FD = descriptor.FieldDescriptor
_OPAQUE = frozenset({codec.TIME, codec.MICRO_TIME, codec.DURATION, codec.QUANTITY, codec.INT_OR_STRING,
                     codec.RAW_EXTENSION, codec.FIELDS_V1, codec.EXT_JSON, codec.OR_ARRAY, codec.OR_BOOL,
                     codec.OR_STRING_ARRAY})
_TIME_LAYOUTS = {codec.TIME: gotime.RFC3339, codec.MICRO_TIME: gotime.RFC3339_MICRO}
"""The layout each time type's UnmarshalJSON parses a string with (metav1.Time, metav1.MicroTime)."""
_INTS = {FD.TYPE_INT32: (-(2**31), 2**31 - 1), FD.TYPE_INT64: (-(2**63), 2**63 - 1),
         FD.TYPE_SINT32: (-(2**31), 2**31 - 1), FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
         FD.TYPE_UINT32: (0, 2**32 - 1), FD.TYPE_UINT64: (0, 2**64 - 1),
         FD.TYPE_FIXED32: (0, 2**32 - 1), FD.TYPE_FIXED64: (0, 2**64 - 1)}
_GO_INT_RANGES = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
                  "int64": (-(2**63), 2**63 - 1), "int": (-(2**63), 2**63 - 1), "uint8": (0, 2**8 - 1),
                  "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1), "uint": (0, 2**64 - 1)}
_SCALAR_GO = {FD.TYPE_STRING: "string", FD.TYPE_BOOL: "bool", FD.TYPE_DOUBLE: "float64", FD.TYPE_FLOAT: "float32",
              FD.TYPE_INT32: "int32", FD.TYPE_INT64: "int64", FD.TYPE_UINT32: "uint32", FD.TYPE_UINT64: "uint64",
              FD.TYPE_BYTES: "[]uint8"}


@dataclass
class Decoded:
    """The outcome of one typed decode."""

    type_error: str | None = None
    """Go's first decode error: an UnmarshalTypeError worded as encoding/json (`json: cannot unmarshal ...`), or a
    time that does not parse, worded as `time.Parse` (`parsing time "..." as "...": ...`)."""
    unknown: list[str] = field(default_factory=list)
    """Strict paths of the keys the Go types lack, in document order, each once."""


@dataclass(frozen=True)
class _Slot:
    """One JSON key of a struct: the proto field, its Go facts, and the Go fields it is promoted through."""

    field: Any
    info: schema_mod.FieldInfo
    is_map: bool
    embedded: tuple[str, ...]
    """Go names of the inlined (embedded) structs the key is promoted from (`VolumeSource`), outermost first."""


def message_for(api_version: str, kind: str) -> str | None:
    """The message full name of a built-in kind, or None (a kind Kubernetes has no Go type for)."""
    return schema_mod.load().message_name(api_version, kind)


def decode(obj: dict[str, Any], message: str, *, prune: bool = False) -> Decoded:
    """Walk `obj` (a JSON object, keys in document order) as Go decodes it into `message`; with `prune`,
    delete in place the keys Go would drop. `apiVersion` and `kind` are TypeMeta's, at the root and in
    any nested kind (`_has_type_meta`)."""
    out = Decoded()
    _Walk(schema_mod.load(), out, prune).struct(obj, message, [], "", None, root=True)
    return out


class _Walk:
    def __init__(self, schema: schema_mod.Schema, out: Decoded, prune: bool) -> None:
        self.schema, self.out, self.prune = schema, out, prune
        self._seen: set[str] = set()

    def _type_error(self, value: Any, go_type: str, struct: str | None, stack: list[str]) -> None:
        if self.out.type_error is not None:
            return
        what = go_json_kind(value)
        if struct is None and not stack:
            self.out.type_error = f"json: cannot unmarshal {what} into Go value of type {go_type}"
        else:
            self.out.type_error = (f"json: cannot unmarshal {what} into Go struct field {struct or ''}."
                                   f"{'.'.join(stack)} of type {go_type}")

    def _unknown(self, path: str) -> None:
        if path not in self._seen:
            self._seen.add(path)
            self.out.unknown.append(path)

    def struct(self, obj: Any, message: str, stack: list[str], strict: str, struct: str | None, *,
               root: bool = False, go_type: str = "") -> None:
        if obj is None:
            return
        if not isinstance(obj, dict):
            self._type_error(obj, go_type or _go_name(message), struct, stack)
            return
        slots = _slots(self.schema, message)
        name = message.rsplit(".", 1)[-1]
        for key in list(obj):
            slot = slots.get(key)
            if slot is None:
                if key in ("apiVersion", "kind") and (root or _has_type_meta(message)):
                    if obj[key] is not None and not isinstance(obj[key], str):
                        self._type_error(obj[key], "string", name, [*stack, key])
                    continue
                self._unknown(f"{strict}.{key}" if strict else key)
                if self.prune:
                    del obj[key]
                continue
            self.value(obj[key], slot, [*stack, *slot.embedded, key], f"{strict}.{key}" if strict else key, name)

    def value(self, value: Any, slot: _Slot, stack: list[str], strict: str, struct: str) -> None:
        fd, go_type = slot.field, slot.info.gotype
        if value is None:
            return
        if slot.is_map:
            if not isinstance(value, dict):
                self._type_error(value, go_type or "map[string]string", struct, stack)
                return
            value_fd = fd.message_type.fields_by_name["value"]
            elem = _elem(go_type, "map")
            for key, item in value.items():
                self.element(item, value_fd, elem, stack, f"{strict}.{key}", struct)
            return
        if fd.is_repeated:
            if not isinstance(value, list):
                self._type_error(value, go_type or "[]" + _fd_go_name(fd), struct, stack)
                return
            elem = _elem(go_type, "slice")
            for i, item in enumerate(value):
                self.element(item, fd, elem, stack, f"{strict}[{i}]", struct)
            return
        self.element(value, fd, go_type, stack, strict, struct)

    def element(self, value: Any, fd: Any, go_type: str, stack: list[str], strict: str, struct: str) -> None:
        """One value of the field's element type (the field itself when it is neither a map nor a list)."""
        if value is None:
            return
        if fd.message_type is not None:
            name = fd.message_type.full_name
            if name in _TIME_LAYOUTS and isinstance(value, str) and self.out.type_error is None:
                self.out.type_error = gotime.parse_error(_TIME_LAYOUTS[name], value)
            if name in _OPAQUE:
                return
            if name in self.schema.lists:  # a named slice (`Verbs`): a JSON list of its items
                items = fd.message_type.fields_by_name["items"]
                if not isinstance(value, list):
                    self._type_error(value, go_type or _go_name(name), struct, stack)
                    return
                for i, item in enumerate(value):
                    self.element(item, items, _SCALAR_GO.get(items.type, ""), stack, f"{strict}[{i}]", struct)
                return
            self.struct(value, name, stack, strict, struct, go_type=go_type or _go_name(name))
            return
        self.scalar(value, fd, go_type or _fd_go_name(fd), stack, struct)

    def scalar(self, value: Any, fd: Any, go_type: str, stack: list[str], struct: str) -> None:
        kind = fd.type
        if kind == FD.TYPE_STRING:
            ok = isinstance(value, str)
        elif kind == FD.TYPE_BYTES:
            ok = isinstance(value, str)  # base64; a bad encoding is its own (non-type) error
        elif kind == FD.TYPE_BOOL:
            ok = isinstance(value, bool)
        elif kind in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            base = go_type.rsplit(".", 1)[-1]
            low, high = _GO_INT_RANGES.get(base, _INTS.get(kind, (-(2**63), 2**63 - 1)))
            ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
            if not ok and isinstance(value, int | float) and not isinstance(value, bool):
                if self.out.type_error is None:  # a number that is no such integer: encoding/json names it
                    self.out.type_error = (f"json: cannot unmarshal number {_go_number(value)} into Go struct "
                                           f"field {struct}.{'.'.join(stack)} of type {go_type}")
                return
        if not ok:
            self._type_error(value, go_type, struct, stack)


@functools.cache
def _has_type_meta(message: str) -> bool:
    """Whether the Go struct inlines metav1.TypeMeta (which has no protobuf tag, so no descriptor field): the
    kinds, known here by their `<Kind>List` message (a StatefulSet's volumeClaimTemplates are
    PersistentVolumeClaims, apiVersion and kind included; a PodTemplateSpec has no TypeMeta)."""
    try:
        schema_mod.load().descriptor(message + "List")
    except KeyError:
        return False
    return True


@functools.cache
def _slots_cached(message: str) -> dict[str, _Slot]:
    return _build_slots(schema_mod.load(), message, ())


def _slots(schema: schema_mod.Schema, message: str) -> dict[str, _Slot]:
    if schema is schema_mod.load():
        return _slots_cached(message)
    return _build_slots(schema, message, ())


def _build_slots(schema: schema_mod.Schema, message: str, embedded: tuple[str, ...]) -> dict[str, _Slot]:
    out: dict[str, _Slot] = {}
    for fd in schema.descriptor(message).fields:
        info = schema.field_info(fd)
        if not info.json and fd.message_type is not None:  # `json:",inline"`: its fields are promoted
            go_name = fd.name[:1].upper() + fd.name[1:]
            for key, slot in _build_slots(schema, fd.message_type.full_name, (*embedded, go_name)).items():
                out.setdefault(key, slot)
            continue
        is_map = fd.message_type is not None and fd.message_type.GetOptions().map_entry
        out[info.json or fd.name] = _Slot(fd, info, is_map, embedded)
    return out


_CONTAINER = re.compile(r"^(?:\[\]|map\[[^\]]+\])(.+)$")


def _elem(go_type: str, shape: str) -> str:
    """The element type of a `[]T` or `map[K]T` Go type ("" for a named container type: not known here)."""
    if shape == "slice" and go_type.startswith("[]") or shape == "map" and go_type.startswith("map["):
        match = _CONTAINER.match(go_type)
        return match.group(1) if match else ""
    return ""


def _go_name(message: str) -> str:
    """reflect's name of a message's Go struct: package name (the proto package's last part) and type."""
    package, _, name = message.rpartition(".")
    return f"{package.rsplit('.', 1)[-1]}.{name}"


def _fd_go_name(fd: Any) -> str:
    if fd.message_type is not None:
        return _go_name(fd.message_type.full_name)
    return _SCALAR_GO.get(fd.type, "string")


def _go_number(value: int | float) -> str:
    """The number as the body most likely wrote it (Go's error quotes the literal; `3.0` stays `3.0`)."""
    return repr(value)


def go_order(value: Any, message: str) -> Any:
    """`value` (a built-in object of `message`) with its keys in the order Go's encoding/json writes the struct:
    struct fields in declaration order (the descriptor's; embedded structs' fields in place), map keys sorted.
    Values are kept as they are; keys the type lacks go last. Used where kube-apiserver embeds an object's
    JSON in a message (a patch it could not decode)."""
    return _order(value, schema_mod.load(), message)


def _order(value: Any, schema: schema_mod.Schema, message: str) -> Any:
    if not isinstance(value, dict) or message in _OPAQUE:
        return value
    slots = _slots(schema, message)
    out = {key: _order_slot(value[key], schema, slot) for key, slot in slots.items() if key in value}
    out.update({key: item for key, item in value.items() if key not in out})
    return out


def _order_slot(value: Any, schema: schema_mod.Schema, slot: _Slot) -> Any:
    fd = slot.field
    if slot.is_map:
        if not isinstance(value, dict):
            return value
        value_fd = fd.message_type.fields_by_name["value"]
        return {k: _order_element(value[k], schema, value_fd) for k in sorted(value)}
    if fd.is_repeated and isinstance(value, list):
        return [_order_element(item, schema, fd) for item in value]
    return _order_element(value, schema, fd)


def _order_element(value: Any, schema: schema_mod.Schema, fd: Any) -> Any:
    if fd.message_type is None or fd.message_type.full_name in schema.lists:
        return value
    return _order(value, schema, fd.message_type.full_name)
