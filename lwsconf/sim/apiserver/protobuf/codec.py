"""Kubernetes objects between their JSON form (the sim's dicts) and protobuf messages, driven by descriptors.

One generic walk for every kind: the proto field names are the Go fields' protobuf names, the JSON names
come from the Go struct tags (`schema.FieldInfo`), and a handful of apimachinery types with their own JSON
form are special-cased by message name (`_SPECIAL`): Time and MicroTime (RFC 3339 <-> seconds, and nanos
for MicroTime), Duration (Go duration string <-> nanoseconds), Quantity (its string), IntOrString
(type/intVal/strVal), RawExtension, FieldsV1 and apiextensions' JSON (raw JSON bytes), the JSONSchemaProps
"or" types, and the named slices (`Verbs`, `ExtraValue`: a message wrapping `repeated items`, a list in JSON).

The two directions copy what Go does, since that is what kube-apiserver's answers are made of:

* `encode` (dict -> message) writes every value field, zero or not, and pointer fields only when set, as
  gogo-protobuf's marshaller does; with deterministic serialization (map keys sorted) the bytes match
  kube-apiserver's for the same object;
* `decode` (message -> dict) gives the JSON a Go client would have sent for the decoded struct:
  `omitempty` zeros dropped, value structs kept (`"resources": {}`), a zero Time as null (dropped under
  `omitzero`, as ObjectMeta's creationTimestamp), pointer fields only when present. Pure: no I/O.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from google.protobuf import descriptor, message

from lwsconf.sim.apiserver.protobuf import schema as schema_mod
from lwsconf.sim.apiserver.protobuf.schema import META, RUNTIME, Schema

FD = descriptor.FieldDescriptor
Field = Any
"""A field descriptor: the runtime hands out upb's or the pure-Python class, which the stubs type apart."""
_APIEXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
TIME, MICRO_TIME, DURATION = f"{META}.Time", f"{META}.MicroTime", f"{META}.Duration"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION, FIELDS_V1, EXT_JSON = f"{RUNTIME}.RawExtension", f"{META}.FieldsV1", f"{_APIEXT}.JSON"
OR_ARRAY, OR_BOOL = f"{_APIEXT}.JSONSchemaPropsOrArray", f"{_APIEXT}.JSONSchemaPropsOrBool"
OR_STRING_ARRAY = f"{_APIEXT}.JSONSchemaPropsOrStringArray"


_PLANS: dict[str, list[tuple[Field, schema_mod.FieldInfo, bool]]] = {}
"""`_Codec._plan` per message full name (one schema per process: `schema.load`)."""


class CodecError(ValueError):
    """A value that cannot take the field's type; the message names the field."""


def encode(obj: dict[str, Any], full_name: str, schema: Schema | None = None) -> message.Message:
    """The message `full_name` holding `obj` (a JSON-shaped dict); keys the type lacks are ignored."""
    codec = _Codec(schema or schema_mod.load())
    msg = codec.schema.new(full_name)
    codec.fill(msg, obj, full_name)
    return msg


def decode(msg: message.Message, schema: Schema | None = None) -> dict[str, Any]:
    """The JSON form of a message, as Go's encoding/json writes the decoded struct."""
    value = _Codec(schema or schema_mod.load()).to_json(msg)
    assert isinstance(value, dict)
    return value


# --- time, duration -------------------------------------------------------------------------------

_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _parse_time(text: str, where: str) -> tuple[int, int]:
    match = _RFC3339.match(text)
    if match is None:
        raise CodecError(f"{where}: {text!r} is not an RFC 3339 time (2006-01-02T15:04:05Z)")
    zone = "+00:00" if match.group(3) == "Z" else match.group(3)
    stamp = datetime.fromisoformat(match.group(1) + zone)
    nanos = int((match.group(2) or ".0")[1:].ljust(9, "0")[:9])
    return int(stamp.timestamp()), nanos


def _format_time(seconds: int, nanos: int | None) -> str:
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return stamp + ("Z" if nanos is None else f".{nanos // 1000:06d}Z")


_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9,
          "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> int:
    """Go's time.ParseDuration, in nanoseconds."""
    sign, rest = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
    if rest == "0":
        return 0
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(rest):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(rest) or not rest:
        raise CodecError(f"time: invalid duration {text!r}")
    return sign * int(total)


def format_duration(nanos: int) -> str:
    """Go's time.Duration.String (`1h2m3s`, `1.5s`, `300ms`, `0s`)."""
    if nanos == 0:
        return "0s"
    sign, n = ("-" if nanos < 0 else ""), abs(nanos)
    if n < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if n >= size:
                return sign + _trim(n, size) + unit
    hours, n = divmod(n, 3600 * 10**9)
    minutes, n = divmod(n, 60 * 10**9)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "")
    return sign + out + _trim(n, 10**9) + "s"


def _trim(n: int, size: int) -> str:
    whole, frac = divmod(n, size)
    digits = str(frac).rjust(len(str(size)) - 1, "0").rstrip("0") if frac else ""
    return f"{whole}.{digits}" if digits else str(whole)


# --- the walk --------------------------------------------------------------------------------------


class _Codec:
    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._fill_special: dict[str, Callable[[message.Message, Any, str], None]] = {
            TIME: self._fill_time, MICRO_TIME: self._fill_time, DURATION: self._fill_duration,
            QUANTITY: self._fill_quantity, INT_OR_STRING: self._fill_int_or_string,
            RAW_EXTENSION: self._fill_raw, FIELDS_V1: self._fill_raw, EXT_JSON: self._fill_raw,
            OR_ARRAY: self._fill_or_array, OR_BOOL: self._fill_or_bool, OR_STRING_ARRAY: self._fill_or_strings}
        self._json_special: dict[str, Callable[[message.Message], Any]] = {
            TIME: self._time_json, MICRO_TIME: self._time_json, DURATION: self._duration_json,
            QUANTITY: self._quantity_json, INT_OR_STRING: self._int_or_string_json,
            RAW_EXTENSION: self._raw_json, FIELDS_V1: self._raw_json, EXT_JSON: self._raw_json,
            OR_ARRAY: self._or_array_json, OR_BOOL: self._or_bool_json, OR_STRING_ARRAY: self._or_strings_json}

    # dict -> message

    def fill(self, msg: message.Message, value: Any, where: str) -> None:
        name = msg.DESCRIPTOR.full_name
        special = self._fill_special.get(name)
        if special is not None:
            special(msg, value, where)
            return
        if name in self.schema.lists:
            self._fill_repeated(msg, self._field(msg, "items"), value, where)
            return
        if not isinstance(value, dict):
            raise CodecError(f"{where}: expected a JSON object, got {type(value).__name__}")
        for field, info, is_map in self._plan(msg):
            at = f"{where}.{info.json or field.name}"
            if not info.json:  # inline: the nested message reads the same JSON object
                self.fill(getattr(msg, field.name), value, at)
                continue
            item = value.get(info.json)
            if item is None:
                self._zero(msg, field, info)
            elif is_map:
                self._fill_map(getattr(msg, field.name), field, item, at)
            elif field.is_repeated:
                self._fill_repeated(msg, field, item, at)
            elif field.message_type is not None:
                sub = getattr(msg, field.name)
                sub.SetInParent()
                self.fill(sub, item, at)
            else:
                setattr(msg, field.name, self._scalar(field, item, at))

    def _plan(self, msg: message.Message) -> list[tuple[Field, schema_mod.FieldInfo, bool]]:
        """Per field of the message: (descriptor, Go facts, is a map), computed once per message type."""
        name = msg.DESCRIPTOR.full_name
        plan = _PLANS.get(name)
        if plan is None:
            plan = _PLANS[name] = [
                (f, self.schema.field_info(f), f.message_type is not None and f.message_type.GetOptions().map_entry)
                for f in msg.DESCRIPTOR.fields]
        return plan

    @staticmethod
    def _field(msg: message.Message, name: str) -> Field:
        return msg.DESCRIPTOR.fields_by_name[name]

    def _zero(self, msg: message.Message, field: Field, info: schema_mod.FieldInfo) -> None:
        """An absent field: gogo writes a value field's zero (and an empty value struct), never a nil pointer."""
        if info.pointer or field.is_repeated or field.type == FD.TYPE_BYTES:  # gogo skips nil []byte too
            return
        if field.message_type is None:
            setattr(msg, field.name, field.default_value)
            return
        sub = getattr(msg, field.name)
        sub.SetInParent()
        name = field.message_type.full_name
        if name in (QUANTITY, INT_OR_STRING, DURATION):
            self.fill(sub, {QUANTITY: "0", INT_OR_STRING: 0, DURATION: "0s"}[name], "")
        elif name not in self._fill_special and name not in self.schema.lists:
            self.fill(sub, {}, "")  # a value struct is marshalled with its own value fields

    def _fill_map(self, target: Any, field: Field, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise CodecError(f"{where}: expected a JSON object (a map), got {type(value).__name__}")
        value_field: Field = field.message_type.fields_by_name["value"]
        for key, item in value.items():
            if value_field.message_type is not None:
                self.fill(target[key], item, f"{where}[{key}]")
            else:
                target[key] = self._scalar(value_field, "" if item is None else item, f"{where}[{key}]")

    def _fill_repeated(self, msg: message.Message, field: Field, value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise CodecError(f"{where}: expected a JSON array, got {type(value).__name__}")
        target = getattr(msg, field.name)
        for i, item in enumerate(value):
            if field.message_type is not None:
                self.fill(target.add(), item, f"{where}[{i}]")
            else:
                target.append(self._scalar(field, item, f"{where}[{i}]"))

    @staticmethod
    def _scalar(field: Field, value: Any, where: str) -> Any:
        try:
            if field.type == FD.TYPE_STRING:
                if not isinstance(value, str):
                    raise CodecError(f"{where}: expected a string, got {value!r}")
                return value
            if field.type == FD.TYPE_BOOL:
                if not isinstance(value, bool):
                    raise CodecError(f"{where}: expected a boolean, got {value!r}")
                return value
            if field.type == FD.TYPE_BYTES:
                return base64.b64decode(value, validate=True) if isinstance(value, str) else bytes(value)
            if field.type in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
                return float(value)
            if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
                raise CodecError(f"{where}: expected an integer, got {value!r}")
            return int(value)
        except (ValueError, TypeError) as exc:
            raise CodecError(f"{where}: {exc}") from None

    def _fill_time(self, msg: message.Message, value: Any, where: str) -> None:
        if not isinstance(value, str):
            raise CodecError(f"{where}: expected an RFC 3339 time string, got {value!r}")
        seconds, nanos = _parse_time(value, where)
        msg.seconds = seconds  # type: ignore[attr-defined]
        # Both fields always written (gogo's Timestamp); Time keeps seconds only (time_proto.go ProtoTime)
        msg.nanos = nanos // 1000 * 1000 if msg.DESCRIPTOR.full_name == MICRO_TIME else 0  # type: ignore[attr-defined]

    def _fill_duration(self, msg: message.Message, value: Any, where: str) -> None:
        if not isinstance(value, str):
            raise CodecError(f"{where}: expected a duration string (1h2m3s), got {value!r}")
        msg.duration = parse_duration(value)  # type: ignore[attr-defined]

    def _fill_quantity(self, msg: message.Message, value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise CodecError(f"{where}: expected a quantity (a string such as 100m), got {value!r}")
        msg.string = value if isinstance(value, str) else json.dumps(value)  # type: ignore[attr-defined]

    def _fill_int_or_string(self, msg: message.Message, value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise CodecError(f"{where}: expected an integer or a string, got {value!r}")
        is_str = isinstance(value, str)
        msg.type = 1 if is_str else 0  # type: ignore[attr-defined]
        msg.intVal = 0 if is_str else value  # type: ignore[attr-defined]
        msg.strVal = value if is_str else ""  # type: ignore[attr-defined]

    def _fill_raw(self, msg: message.Message, value: Any, where: str) -> None:
        """Field 1 holds the JSON bytes (`raw`; FieldsV1 spells it `Raw`)."""
        setattr(msg, msg.DESCRIPTOR.fields_by_number[1].name, json.dumps(value, separators=(",", ":")).encode())

    def _fill_or_array(self, msg: message.Message, value: Any, where: str) -> None:
        if isinstance(value, list):
            self._fill_repeated(msg, self._field(msg, "jSONSchemas"), value, where)
        else:
            self.fill(msg.schema, value, where)  # type: ignore[attr-defined]

    def _fill_or_bool(self, msg: message.Message, value: Any, where: str) -> None:
        if isinstance(value, bool):
            msg.allows = value  # type: ignore[attr-defined]
        else:
            msg.allows = True  # type: ignore[attr-defined]
            self.fill(msg.schema, value, where)  # type: ignore[attr-defined]

    def _fill_or_strings(self, msg: message.Message, value: Any, where: str) -> None:
        if isinstance(value, list):
            self._fill_repeated(msg, self._field(msg, "property"), value, where)
        else:
            self.fill(msg.schema, value, where)  # type: ignore[attr-defined]

    # message -> dict

    def to_json(self, msg: message.Message) -> Any:
        name = msg.DESCRIPTOR.full_name
        special = self._json_special.get(name)
        if special is not None:
            return special(msg)
        if name in self.schema.lists:
            return list(msg.items)  # type: ignore[attr-defined]
        out: dict[str, Any] = {}
        for field, info, is_map in self._plan(msg):
            if not info.json:
                inline = self.to_json(getattr(msg, field.name))
                if isinstance(inline, dict):
                    out.update(inline)
                continue
            present, value = self._field_json(msg, field, info, is_map)
            if present:
                out[info.json] = value
        return out

    def _field_json(self, msg: message.Message, field: Field, info: schema_mod.FieldInfo,
                    is_map: bool) -> tuple[bool, Any]:
        """(whether Go's encoding/json writes the field, its value)."""
        if is_map or field.is_repeated:
            items = getattr(msg, field.name)
            if not items:
                return (not info.omitempty, None)
            if is_map:
                value_field: Field = field.message_type.fields_by_name["value"]
                return True, {k: self._value_json(value_field, v) for k, v in items.items()}
            return True, [self._value_json(field, v) for v in items]
        if field.message_type is not None:
            sub = getattr(msg, field.name)
            if not msg.HasField(field.name) or self._zero_time(sub):
                if info.pointer and not msg.HasField(field.name):
                    return (not info.omitempty, None)
                zero = self._zero_struct_json(field.message_type.full_name)
                return (not (zero is None and info.omitzero), zero)
            return True, self.to_json(sub)
        value = getattr(msg, field.name)
        if info.pointer:
            return (msg.HasField(field.name) or not info.omitempty,
                    self._value_json(field, value) if msg.HasField(field.name) else None)
        zero = value == field.default_value or (field.type == FD.TYPE_BYTES and not value)
        return (not (zero and info.omitempty), self._value_json(field, value))

    @staticmethod
    def _zero_time(msg: message.Message) -> bool:
        """A Time/MicroTime of 0s: Go's zero time, written as an empty message, read back as zero (null in JSON)."""
        return msg.DESCRIPTOR.full_name in (TIME, MICRO_TIME) and not msg.seconds and not msg.nanos  # type: ignore[attr-defined]

    def _zero_struct_json(self, name: str) -> Any:
        """How Go's encoding/json writes a value struct that was not sent: Time null, Quantity "0", ..."""
        if name in (TIME, MICRO_TIME, RAW_EXTENSION, FIELDS_V1, EXT_JSON):
            return None
        return self.to_json(self.schema.new(name))

    def _value_json(self, field: Field, value: Any) -> Any:
        if field.message_type is not None:
            return self.to_json(value)
        if field.type == FD.TYPE_BYTES:
            return base64.b64encode(value).decode()
        return value

    @staticmethod
    def _time_json(msg: message.Message) -> Any:
        seconds, nanos = msg.seconds, msg.nanos  # type: ignore[attr-defined]
        if msg.DESCRIPTOR.full_name == MICRO_TIME:
            return _format_time(seconds, nanos)
        return _format_time(seconds, None)

    @staticmethod
    def _duration_json(msg: message.Message) -> Any:
        return format_duration(msg.duration)  # type: ignore[attr-defined]

    @staticmethod
    def _quantity_json(msg: message.Message) -> Any:
        return msg.string or "0"  # type: ignore[attr-defined]

    @staticmethod
    def _int_or_string_json(msg: message.Message) -> Any:
        return msg.strVal if msg.type == 1 else msg.intVal  # type: ignore[attr-defined]

    @staticmethod
    def _raw_json(msg: message.Message) -> Any:
        raw = getattr(msg, msg.DESCRIPTOR.fields_by_number[1].name)
        return json.loads(raw) if raw else None

    def _or_array_json(self, msg: message.Message) -> Any:
        schemas = msg.jSONSchemas  # type: ignore[attr-defined]
        return [self.to_json(s) for s in schemas] if schemas else self.to_json(msg.schema)  # type: ignore[attr-defined]

    def _or_bool_json(self, msg: message.Message) -> Any:
        return self.to_json(msg.schema) if msg.HasField("schema") else msg.allows  # type: ignore[attr-defined]

    def _or_strings_json(self, msg: message.Message) -> Any:
        strings = msg.property  # type: ignore[attr-defined]
        return list(strings) if strings else self.to_json(msg.schema)  # type: ignore[attr-defined]
