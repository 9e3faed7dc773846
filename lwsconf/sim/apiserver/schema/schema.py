"""Structural OpenAPI v3 schemas of CustomResourceDefinitions, handled as kube-apiserver does.

Three passes run on every custom-resource write, in this order: `prune` (drop fields the schema does
not know, reporting them for `fieldValidation=Strict|Warn`), `apply_defaults` (fill `default`s, drop
non-nullable nulls) and `validate` (type, bounds, enums, patterns, list types...). Messages are worded
as kube-openapi words them so kubectl output and client exceptions read the same as against a real
cluster. `schema_check.validate_crd_schema` refuses a CRD whose schema could not be served. CEL rules
(`x-kubernetes-validations`) live in `cel.py`. No I/O here; `prune` and `apply_defaults` mutate in place.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors

Schema = dict[str, Any]

META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields"})
"""The fields of metav1.ObjectMeta (v1)."""
TYPES = ("array", "boolean", "integer", "number", "object", "string")
LIST_TYPES = ("atomic", "map", "set")
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_FORMAT_RANGES = {"int32": INT32, "int64": INT64}
_DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(:\d\d(\.\d+)?)?([Zz]|[+-]\d\d:?\d\d)?$")


# ---- paths and value rendering (shared with cel.py) ----


def child_path(path: str, name: str) -> str:
    """`spec` + `replicas` -> `spec.replicas` (a property)."""
    return f"{path}.{name}" if path else name


def index_path(path: str, i: int) -> str:
    """`spec.containers` + 0 -> `spec.containers[0]` (an array item)."""
    return f"{path}[{i}]"


def key_path(path: str, key: str) -> str:
    """`metadata.labels` + `app` -> `metadata.labels[app]` (an `additionalProperties` entry)."""
    return f"{path}[{key}]"


def show(value: Any) -> str:
    """Render a value the way apimachinery's `field.Error` does (strings quoted, null as `null`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def type_name(value: Any) -> str:
    """The OpenAPI type of a decoded JSON value (`null` for None)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def same(a: Any, b: Any) -> bool:
    """JSON equality that keeps `true` apart from `1` (Python's `==` does not)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return (
        type_name(a) == type_name(b)
        and a == b
        or (isinstance(a, int | float) and isinstance(b, int | float) and a == b)
    )


def children(schema: Schema, value: Any, path: str) -> Iterator[tuple[Schema | None, Any, str, str]]:
    """Yield `(child schema, child value, child path, key)` for each property, map entry or item."""
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for k, v in value.items():
            if k in props:
                yield props[k], v, child_path(path, k), k
            elif isinstance(addl, dict):
                yield addl, v, key_path(path, k), k
    elif isinstance(value, list):
        items = schema.get("items")
        for i, v in enumerate(value):
            yield (items if isinstance(items, dict) else None), v, index_path(path, i), str(i)


# ---- pruning ----


def prune(schema: Schema, obj: Any, *, root: bool = True) -> list[str]:
    """Remove, in place, every object field the schema does not specify.

    Args:
        schema: the version's `openAPIV3Schema`.
        obj: the decoded object (mutated).
        root: `obj` is a whole resource, so `apiVersion`, `kind` and `metadata` are kept.

    Returns:
        The sorted dotted paths of the removed fields (`spec.foo`, `spec.list[0].bar`, `spec.map.k.x`,
        as the apiserver's strict-decoding message names them).
    """
    out: list[str] = []
    _prune(obj, schema, "", out, embedded=root)
    return sorted(out)


def _dotted(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(x: Any, s: Schema | None, path: str, out: list[str], *, embedded: bool, keep: bool = False) -> None:
    keep = keep or (s is not None and s.get("x-kubernetes-preserve-unknown-fields") is True)
    if isinstance(x, dict):
        props: dict[str, Schema] = (s or {}).get("properties") or {}
        addl = (s or {}).get("additionalProperties")
        for k in list(x):
            if embedded and k in META_FIELDS:
                if k == "metadata" and isinstance(x[k], dict):
                    _prune_object_meta(x[k], _dotted(path, k), out)
                continue
            sub = props.get(k, addl if isinstance(addl, dict) else None)
            if sub is not None:
                _prune(x[k], sub, _dotted(path, k), out, embedded=sub.get("x-kubernetes-embedded-resource") is True)
            elif not keep and addl is not True:
                out.append(_dotted(path, k))
                del x[k]
    elif isinstance(x, list):
        items = (s or {}).get("items")
        sub = items if isinstance(items, dict) else None
        if keep and sub is None:
            return
        for i, v in enumerate(x):
            _prune(
                v,
                sub,
                f"{path}[{i}]",
                out,
                keep=keep,
                embedded=sub is not None and sub.get("x-kubernetes-embedded-resource") is True,
            )


def _prune_object_meta(meta: dict[str, Any], path: str, out: list[str]) -> None:
    """An embedded object's metadata keeps ObjectMeta's fields only; the others are reported like any unknown
    field (kube-apiserver rebuilds it as a typed ObjectMeta and reports `unknown field "metadata.x"`)."""
    for k in list(meta):
        if k not in OBJECT_META_FIELDS:
            out.append(_dotted(path, k))
            del meta[k]


# ---- defaulting ----


def apply_defaults(schema: Schema, obj: Any) -> None:
    """Fill absent (or non-nullable null) fields from `default`s, recursively, in place.

    As on decode in kube-apiserver: a default is deep-copied and then defaulted itself, array items and
    map values are walked, and a non-nullable `null` without a default is removed.
    """
    if isinstance(obj, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for k, ps in props.items():
            _default_slot(obj, k, ps)
        if isinstance(addl, dict):
            for k in [k for k in obj if k not in props]:
                _default_slot(obj, k, addl)
        for sub, v, _, _ in list(children(schema, obj, "")):
            if sub is not None:
                apply_defaults(sub, v)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        items: Schema = schema["items"]
        for i, v in enumerate(obj):
            if v is None and not items.get("nullable") and "default" in items:
                obj[i] = copy.deepcopy(items["default"])
            apply_defaults(items, obj[i])


def _default_slot(obj: dict[str, Any], key: str, s: Schema) -> None:
    absent = key not in obj
    if not absent and not (obj[key] is None and not s.get("nullable")):
        return
    if "default" in s:
        obj[key] = copy.deepcopy(s["default"])
    elif not absent:
        del obj[key]


# ---- validation ----


def validate(schema: Schema, obj: Any, *, path: str = "") -> list[errors.Cause]:
    """Check `obj` against the schema's value validations, as kube-openapi does for custom resources.

    Args:
        schema: the version's `openAPIV3Schema` (or any sub-schema).
        obj: the pruned and defaulted value.
        path: the field path of `obj` (`""` for a whole resource).

    Returns:
        One `errors.Cause` per violation, in schema order; empty when valid.
    """
    out: list[errors.Cause] = []
    _validate(schema, obj, path, out)
    return out


def _invalid(path: str, value: Any, detail: str) -> errors.Cause:
    return errors.Cause(path, f"Invalid value: {show(value)}: {detail}", "FieldValueInvalid")


def _type_ok(s: Schema, v: Any) -> str | None:
    """None when `v` has the node's type, else the expected type text."""
    if s.get("x-kubernetes-int-or-string"):
        ok = isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))
        return None if ok else "integer,string"
    want = s.get("type")
    got = type_name(v)
    if want is None or want == got:
        return None
    if want == "number" and got == "integer":
        return None
    if want == "integer" and isinstance(v, float) and v.is_integer():
        return None
    return str(want)


def _validate(s: Schema, v: Any, path: str, out: list[errors.Cause]) -> None:
    name = path or "body"
    if v is None:
        if not s.get("nullable") and ("type" in s or s.get("x-kubernetes-int-or-string")):
            detail = f'{name} in body must be of type {s.get("type", "integer,string")}: "null"'
            out.append(errors.Cause(path, f'Invalid value: "null": {detail}', "FieldValueTypeInvalid"))
        return
    want = _type_ok(s, v)
    if want is not None:
        got = type_name(v)
        detail = f'{name} in body must be of type {want}: "{got}"'
        out.append(errors.Cause(path, f'Invalid value: "{got}": {detail}', "FieldValueTypeInvalid"))
        return
    if "enum" in s and not any(same(v, e) for e in s["enum"]):
        allowed = ", ".join(json.dumps(e if isinstance(e, str) else show(e)) for e in s["enum"])
        out.append(
            errors.Cause(path, f"Unsupported value: {show(v)}: supported values: {allowed}", "FieldValueNotSupported")
        )
    for check in _CHECKS:
        check(s, v, path, out)
    for sub, item, sub_path, _ in children(s, v, path):
        if sub is not None:
            _validate(sub, item, sub_path, out)
    _combinators(s, v, path, out)


def _check_number(s: Schema, v: Any, path: str, out: list[errors.Cause]) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return
    name = path or "body"
    if "minimum" in s:
        excl = s.get("exclusiveMinimum") is True
        if v < s["minimum"] or (excl and v == s["minimum"]):
            op = "greater than" if excl else "greater than or equal to"
            out.append(_invalid(path, v, f"{name} in body should be {op} {show(s['minimum'])}"))
    if "maximum" in s:
        excl = s.get("exclusiveMaximum") is True
        if v > s["maximum"] or (excl and v == s["maximum"]):
            op = "less than" if excl else "less than or equal to"
            out.append(_invalid(path, v, f"{name} in body should be {op} {show(s['maximum'])}"))
    m = s.get("multipleOf")
    if m and (v / m) != int(v / m):
        out.append(_invalid(path, v, f"{name} in body should be a multiple of {show(m)}"))
    bounds = _FORMAT_RANGES.get(s.get("format", ""))
    if bounds and not bounds[0] <= v <= bounds[1]:
        out.append(_invalid(path, v, f'{name} in body must be of type {s["format"]}: "{show(v)}"'))


def _check_string(s: Schema, v: Any, path: str, out: list[errors.Cause]) -> None:
    if not isinstance(v, str):
        return
    name = path or "body"
    if "maxLength" in s and len(v) > s["maxLength"]:
        unit = "byte" if s["maxLength"] == 1 else "bytes"
        out.append(errors.Cause(path, f"Too long: may not be more than {s['maxLength']} {unit}", "FieldValueTooLong"))
    if "minLength" in s and len(v) < s["minLength"]:
        out.append(_invalid(path, v, f"{name} in body should be at least {s['minLength']} chars long"))
    if "pattern" in s and not _matches(s["pattern"], v):
        out.append(_invalid(path, v, f"{name} in body should match '{s['pattern']}'"))
    if s.get("format") == "date-time" and not _is_date_time(v):
        out.append(_invalid(path, v, f'{name} in body must be of type date-time: "{v}"'))


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return True  # schema_check.validate_crd_schema reports it; an unusable pattern never fails objects


def _is_date_time(v: str) -> bool:
    if not _DATE_TIME.match(v):
        return False
    try:
        datetime.fromisoformat(v.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def _check_collection(s: Schema, v: Any, path: str, out: list[errors.Cause]) -> None:
    if not isinstance(v, list | dict):
        return
    name = path or "body"
    what = "items" if isinstance(v, list) else "properties"
    lo, hi = ("minItems", "maxItems") if isinstance(v, list) else ("minProperties", "maxProperties")
    if hi in s and len(v) > s[hi]:
        out.append(errors.Cause(path, f"Too many: {len(v)}: must have at most {s[hi]} items", "FieldValueTooMany"))
    if lo in s and len(v) < s[lo]:
        out.append(_invalid(path, v, f"{name} in body should have at least {s[lo]} {what}"))
    if isinstance(v, dict):
        for req in s.get("required") or []:
            if req not in v:
                out.append(errors.Cause(child_path(path, req), "Required value", "FieldValueRequired"))
    else:
        _check_list_type(s, v, path, out)


def _check_list_type(s: Schema, v: list[Any], path: str, out: list[errors.Cause]) -> None:
    """Uniqueness of set items and map-list keys; only the second occurrence of a value is reported."""
    list_type = s.get("x-kubernetes-list-type")
    if list_type not in ("set", "map"):
        return
    idents: list[Any] = v
    if list_type == "map":
        for i, item in enumerate(v):
            if item is not None and not isinstance(item, dict):
                out.append(_invalid(index_path(path, i), item, "must be an object for an array of list-type map"))
                return
        keys: list[str] = s.get("x-kubernetes-list-map-keys") or []
        idents = [{k: item[k] for k in keys if k in item} if item else {} for item in v]
    for i, ident in enumerate(idents):
        if sum(1 for prev in idents[:i] if same(prev, ident)) == 1:
            out.append(errors.Cause(index_path(path, i), f"Duplicate value: {show(ident)}", "FieldValueDuplicate"))


_CHECKS: tuple[Callable[[Schema, Any, str, list[errors.Cause]], None], ...] = (
    _check_number,
    _check_string,
    _check_collection,
)


def _combinators(s: Schema, v: Any, path: str, out: list[errors.Cause]) -> None:
    name = path or "body"
    for sub in s.get("allOf") or []:
        _validate(sub, v, path, out)
    if "anyOf" in s and not any(not validate(sub, v, path=path) for sub in s["anyOf"]):
        out.append(_invalid(path, v, f"{name} in body must validate at least one schema (anyOf)"))
    if "oneOf" in s and sum(1 for sub in s["oneOf"] if not validate(sub, v, path=path)) != 1:
        out.append(_invalid(path, v, f"{name} in body must validate one and only one schema (oneOf)"))
    if "not" in s and not validate(s["not"], v, path=path):
        out.append(_invalid(path, v, f"{name} in body must not validate the schema (not)"))
