"""Field errors worded exactly as kube-apiserver's `field.Error` renders them, plus safe JSON accessors.

A `Status.details.causes[].message` from the real server is the error *body*: `Required value`,
`Invalid value: "Foo": <detail>`, `Unsupported value: "X": supported values: "A", "B"`,
`Duplicate value: "x"`, `Forbidden: <detail>`, `Too long: must have at most N bytes`. Clients and
people grep for these words, so every validator here builds its causes through these helpers. The
accessors (`as_dict`, `as_list`, `as_str`) let validators walk arbitrary decoded JSON without raising:
a wrong type is reported as a cause, never as a server crash. No I/O here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard

from lwsconf.sim.apiserver.apimachinery import errors

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
NOT_FOUND = "FieldValueNotFound"

IMMUTABLE = "field is immutable"
NEGATIVE = "must be greater than or equal to 0"


def fmt_value(value: Any) -> str:
    """Render a bad value the way Go's `field.Error` does: strings quoted, numbers bare, null for nil."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def required(path: str, detail: str = "") -> errors.Cause:
    return errors.Cause(path, "Required value" + (f": {detail}" if detail else ""), REQUIRED)


def invalid(path: str, value: Any, detail: str) -> errors.Cause:
    return errors.Cause(path, f"Invalid value: {fmt_value(value)}" + (f": {detail}" if detail else ""), INVALID)


def not_supported(path: str, value: Any, supported: Sequence[str]) -> errors.Cause:
    values = ", ".join(json.dumps(v) for v in supported)
    return errors.Cause(path, f"Unsupported value: {fmt_value(value)}: supported values: {values}", NOT_SUPPORTED)


def duplicate(path: str, value: Any) -> errors.Cause:
    return errors.Cause(path, f"Duplicate value: {fmt_value(value)}", DUPLICATE)


def forbidden(path: str, detail: str) -> errors.Cause:
    return errors.Cause(path, f"Forbidden: {detail}", FORBIDDEN)


def too_long(path: str, max_bytes: int) -> errors.Cause:
    return errors.Cause(path, f"Too long: must have at most {max_bytes} bytes", TOO_LONG)


def not_found(path: str, value: Any) -> errors.Cause:
    return errors.Cause(path, f"Not found: {fmt_value(value)}", NOT_FOUND)


def immutable(path: str, new: Any) -> errors.Cause:
    return invalid(path, new, IMMUTABLE)


def invalid_each(path: str, value: Any, problems: Iterable[str]) -> list[errors.Cause]:
    """One Invalid cause per problem string from a format rule (as the Go validators loop)."""
    return [invalid(path, value, msg) for msg in problems]


# --- paths ----------------------------------------------------------------------------------------

def child(path: str, *names: str) -> str:
    """`spec` + `containers` -> `spec.containers` (an empty root gives just the child)."""
    return ".".join(p for p in (path, *names) if p)


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


# --- safe accessors over decoded JSON ---------------------------------------------------------------

def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The (index, item) pairs of a list, with non-object items replaced by `{}`."""
    return [(i, as_dict(item)) for i, item in enumerate(as_list(value))]


# --- common checks --------------------------------------------------------------------------------

def nonnegative(path: str, value: Any) -> list[errors.Cause]:
    """`ValidateNonnegativeField` for an optional integer field."""
    if value is None:
        return []
    if not is_int(value):
        return [invalid(path, value, "must be an integer")]
    return [invalid(path, value, NEGATIVE)] if value < 0 else []


def in_range(path: str, value: Any, low: int, high: int) -> list[errors.Cause]:
    """An optional integer within [low, high], worded as `InclusiveRangeError`."""
    if value is None:
        return []
    if not is_int(value) or not low <= value <= high:
        return [invalid(path, value, f"must be between {low} and {high}, inclusive")]
    return []


def enum(path: str, value: Any, allowed: Sequence[str], *, optional: bool = False) -> list[errors.Cause]:
    """A required (or optional) string enum: Required when empty, Unsupported when unknown."""
    if value in (None, ""):
        return [] if optional else [required(path)]
    if value not in allowed:
        return [not_supported(path, value, allowed)]
    return []


def string_field(path: str, value: Any, *, optional: bool = True) -> list[errors.Cause]:
    """A field the typed client reads as `str`: anything else would break deserialization."""
    if value is None:
        return [] if optional else [required(path)]
    if not isinstance(value, str):
        return [invalid(path, value, "must be a string")]
    return [] if optional or value else [required(path)]


def unchanged(path: str, new: Any, old: Any) -> list[errors.Cause]:
    """`ValidateImmutableField`."""
    return [] if new == old else [immutable(path, new)]
