"""Structural-schema checks run when a CustomResourceDefinition is created or updated.

A CRD whose schema could not be pruned, defaulted or validated is refused with causes that name the
schema node (`spec.versions[0].schema.openAPIV3Schema.properties[spec].type`), as kube-apiserver's
`apiextensions` validation does. Only the subset that matters for serving is checked. No I/O here.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.schema import schema

Schema = dict[str, Any]

_SHAPES = {  # keyword -> the JSON type its value must have
    **dict.fromkeys(("type", "format", "pattern", "description", "x-kubernetes-list-type"), "string"),
    **dict.fromkeys(("nullable", "exclusiveMinimum", "exclusiveMaximum", "uniqueItems", "x-kubernetes-int-or-string",
                     "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"), "boolean"),
    **dict.fromkeys(("minimum", "maximum", "multipleOf"), "number"),
    **dict.fromkeys(("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"), "integer"),
    **dict.fromkeys(("enum", "required", "x-kubernetes-list-map-keys", "x-kubernetes-validations", "allOf", "anyOf",
                     "oneOf"), "array"),
    **dict.fromkeys(("properties", "items", "not"), "object"),
}


def shape_errors(node: Any, path: str = "") -> list[errors.Cause]:
    """Keywords whose values have the wrong JSON type (`minimum: "3"`, `properties: []`...), recursively.

    The other checks, and pruning, defaulting, validation and CEL compilation, assume none.
    """
    if not isinstance(node, dict):
        return [_invalid(path, node, "must be a schema object")]
    out: list[errors.Cause] = []
    for key, want in _SHAPES.items():
        got = schema.type_name(node.get(key))
        if key in node and got != want and not (want == "number" and got == "integer"):
            out.append(_invalid(schema.child_path(path, key), node[key], f"must be of type {want}"))
    for key in ("required", "x-kubernetes-list-map-keys"):
        if isinstance(node.get(key), list) and not all(isinstance(x, str) for x in node[key]):
            out.append(_invalid(schema.child_path(path, key), node[key], "must be a list of strings"))
    addl = node.get("additionalProperties")
    if addl is not None and not isinstance(addl, dict | bool):
        out.append(_invalid(schema.child_path(path, "additionalProperties"), addl, "must be a schema or a bool"))
    if out:
        return out
    for k, sub in (node.get("properties") or {}).items():
        out += shape_errors(sub, schema.child_path(path, f"properties[{k}]"))
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            out += shape_errors(node[key], schema.child_path(path, key))
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(node.get(key) or []):
            out += shape_errors(sub, schema.child_path(path, f"{key}[{i}]"))
    return out


_VALUE_ONLY_FORBIDDEN = (
    "type",
    "nullable",
    "default",
    "additionalProperties",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
)


def validate_crd_schema(root: Any, *, path: str = "") -> list[errors.Cause]:
    """Check that a CRD version's schema is structural enough to prune, default and validate with.

    Args:
        root: the `openAPIV3Schema` of one CRD version.
        path: where that schema sits in the CRD (e.g. `spec.versions[0].schema.openAPIV3Schema`); the
            causes' fields are relative to the schema (`properties[spec].type`) when empty.

    Returns:
        Causes naming the offending schema node; empty when servable.
    """
    out = shape_errors(root, path)
    if out:
        return out
    if root.get("type", "object") != "object":
        out.append(_unsupported(schema.child_path(path, "type"), root.get("type"), ("object",)))
    meta = (root.get("properties") or {}).get("metadata")
    if isinstance(meta, dict) and set(meta.get("properties") or {}) - {"name", "generateName"}:
        out.append(errors.Cause(schema.child_path(path, "properties[metadata]"),
                                "Forbidden: must not specify anything other than name and generateName, but metadata "
                                "is implicitly specified", "FieldValueForbidden"))
    _check_node(root, path, out, value_only=False)
    return out


def _check_node(s: Schema, path: str, out: list[errors.Cause], *, value_only: bool,
                int_or_string: bool = False) -> None:
    if value_only:
        for k in _VALUE_ONLY_FORBIDDEN:
            # controller-gen writes int-or-string as `anyOf: [{type: integer}, {type: string}]`, which is allowed
            if k in s and not (k == "type" and int_or_string and s[k] in ("integer", "string")):
                out.append(errors.Cause(schema.child_path(path, k), "Forbidden: must be empty to be structural",
                                        "FieldValueForbidden"))
    else:
        _check_typed_node(s, path, out)
        int_or_string = s.get("x-kubernetes-int-or-string") is True
    if "pattern" in s and _bad_pattern(str(s["pattern"])):
        out.append(_invalid(schema.child_path(path, "pattern"), s["pattern"], "must be a valid regular expression"))
    if "default" in s and not value_only:
        defaulted = copy.deepcopy(s["default"])
        unknown = schema.prune(s, defaulted, root=False)
        if unknown:
            at = schema.child_path(path, "default")
            out.append(_invalid(at, s["default"], f"must not have unknown fields: {unknown}"))
        schema.apply_defaults(s, defaulted)
        out.extend(schema.validate(s, defaulted, path=schema.child_path(path, "default")))
    for k, sub in (s.get("properties") or {}).items():
        _check_node(sub, schema.child_path(path, f"properties[{k}]"), out, value_only=value_only)
    for k in ("items", "additionalProperties"):
        if isinstance(s.get(k), dict):
            _check_node(s[k], schema.child_path(path, k), out, value_only=value_only)
    for k in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(s.get(k) or []):
            _check_node(sub, schema.child_path(path, f"{k}[{i}]"), out, value_only=True,
                        int_or_string=int_or_string and k in ("allOf", "anyOf"))
    if "not" in s:
        _check_node(s["not"], schema.child_path(path, "not"), out, value_only=True)


def _check_typed_node(s: Schema, path: str, out: list[errors.Cause]) -> None:
    t, at = s.get("type"), schema.child_path(path, "type")
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    if int_or_string and t is not None:
        out.append(_invalid(at, t, "must be empty if x-kubernetes-int-or-string is true"))
    elif t is None and not int_or_string and not s.get("x-kubernetes-preserve-unknown-fields"):
        out.append(_required(at, "must not be empty for specified fields"))
    elif t is not None and t not in schema.TYPES:
        out.append(_unsupported(at, t, schema.TYPES))
    if t == "array" and not isinstance(s.get("items"), dict):
        out.append(_required(schema.child_path(path, "items"), "must be specified"))
    if "properties" in s and "additionalProperties" in s:
        out.append(errors.Cause(schema.child_path(path, "additionalProperties"),
                                "Forbidden: additionalProperties and properties are mutual exclusive",
                                "FieldValueForbidden"))
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        out.append(_invalid(schema.child_path(path, "x-kubernetes-preserve-unknown-fields"), False,
                            "must be true or undefined"))
    _check_list_decl(s, path, out)


def _check_list_decl(s: Schema, path: str, out: list[errors.Cause]) -> None:
    list_type = s.get("x-kubernetes-list-type")
    if list_type is None:
        return
    at = schema.child_path(path, "x-kubernetes-list-type")
    if list_type not in schema.LIST_TYPES:
        out.append(_unsupported(at, list_type, schema.LIST_TYPES))
    elif s.get("type") != "array":
        out.append(_invalid(at, list_type, "must only be used if type is array"))
    keys = s.get("x-kubernetes-list-map-keys") or []
    keys_at = schema.child_path(path, "x-kubernetes-list-map-keys")
    if list_type == "map" and not keys:
        out.append(_required(keys_at, "must not be empty if x-kubernetes-list-type is map"))
    item_props = (s.get("items") or {}).get("properties") or {}
    if list_type == "map" and any(k not in item_props for k in keys):
        out.append(_invalid(keys_at, keys, "entries must all be names of item properties"))


def _invalid(path: str, value: Any, detail: str) -> errors.Cause:
    return errors.Cause(path, f"Invalid value: {schema.show(value)}: {detail}", "FieldValueInvalid")


def _required(path: str, detail: str) -> errors.Cause:
    return errors.Cause(path, f"Required value: {detail}", "FieldValueRequired")


def _unsupported(path: str, value: Any, allowed: tuple[str, ...]) -> errors.Cause:
    listed = ", ".join(f'"{x}"' for x in allowed)
    return errors.Cause(path, f"Unsupported value: {schema.show(value)}: supported values: {listed}",
                        "FieldValueNotSupported")


def _bad_pattern(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return True
    return False
