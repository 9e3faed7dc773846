"""Decoding the object a request carries: media types, JSON/YAML/protobuf bodies, type and namespace checks.

Kept apart from `context` (the server's state) because it holds no state: each function reads a body or an
object and answers a bad one with the `StatusError` (400, 415 or 422) the handlers send. Reads a request only through
`context.read_body`.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from lwsconf.sim.apiserver.apimachinery import errors, objects
from lwsconf.sim.apiserver.http.context import read_body
from lwsconf.sim.apiserver.patch import yaml_bodies
from lwsconf.sim.apiserver.protobuf import codec, envelope, godecode, negotiation
from lwsconf.sim.apiserver.storage import resources

OBJECT_MEDIA_TYPES = ["application/json", "application/yaml", negotiation.PROTOBUF]
"""What a created or replaced object may be sent as: protobuf for built-in kinds only (`protobuf/`). kube-apiserver
also reads CBOR behind a feature gate; the sim does not."""


def object_media_type(request: web.Request) -> str:
    """The media type of a body holding a whole object (POST, PUT); 415 naming it when not JSON or YAML.

    No Content-Type means JSON, as kube-apiserver's NegotiateInputSerializer falls back to its first type.
    """
    header = request.headers.get("Content-Type", "")
    media = header.split(";")[0].strip().lower()
    if not media:
        return "application/json"
    if media not in OBJECT_MEDIA_TYPES:
        raise errors.unsupported_media_type(header, OBJECT_MEDIA_TYPES)
    return media


async def read_object(request: web.Request, kind: str = "", duplicates: list[str] | None = None, *,
                      api_version: str = "") -> dict[str, Any]:
    """Read and decode the object a POST or PUT carries (415 for other media types, 400 for bad bodies).

    `kind`: the built-in kind the URL serves, for kube-apiserver's wording of a JSON body it cannot read;
    `duplicates`: gets the paths of keys a JSON body repeats; `api_version` (with `kind`): the body is
    checked as Go's typed decode would read it (`check_go_types`).
    """
    media = object_media_type(request)
    return decode_object(await read_body(request), media, kind, duplicates, api_version=api_version)


def decode_object(data: bytes, content_type: str, kind: str = "", duplicates: list[str] | None = None, *,
                  api_version: str = "") -> dict[str, Any]:
    """Parse a JSON, YAML or protobuf request body into an object dict; 400 with the parser's reason.

    With `kind` (a built-in's), a JSON body that is not an object reads as kube-apiserver's
    `transformDecodeError` words it (apiserver pkg/endpoints/handlers/rest.go); with `api_version` too, a
    value of the wrong JSON type is that decoder's 400 (`check_go_types`).
    """
    if kind and "json" in content_type:
        _check_json_object(data, kind)
    if not data.strip():
        raise errors.bad_request("the request body is empty: send the object as JSON")
    if negotiation.is_protobuf(content_type):
        return decode_protobuf(data)
    is_yaml = "yaml" in content_type
    if is_yaml:
        objects.check_yaml_depth(data)
    try:
        obj = yaml.load(data, Loader=yaml_bodies.KubeYamlLoader) if is_yaml else _load_json(data, duplicates)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the body of the request was not valid JSON or YAML: {exc}") from None
    except RecursionError:
        raise errors.bad_request(f"the body is nested more than {objects.MAX_NESTING} levels deep; "
                                 "flatten it") from None
    objects.check_size(obj)
    obj = yaml_bodies.jsonable(obj, "") if is_yaml else obj
    if kind and api_version:
        check_go_types(obj, api_version, kind)
    return as_object(obj, "the body")


def check_go_types(obj: Any, api_version: str, kind: str) -> None:
    """400 when a built-in body holds a value of the wrong JSON type, as kube-apiserver answers it: the JSON
    serializer decodes into the Go struct and encoding/json's first UnmarshalTypeError comes back through
    `transformDecodeError` (apiserver handlers/rest.go: `<kind> in version "<v>" cannot be handled as a
    <kind>: json: cannot unmarshal ...`; lwsconf fidelity requests/bad-requests/wrong-type-*). Checked for a
    body of the URL's own kind (another kind fails on its kind first, `check_type_meta`)."""
    if not isinstance(obj, dict):
        return
    sent_version, sent_kind = obj.get("apiVersion") or api_version, obj.get("kind") or kind
    if (sent_version, sent_kind) != (api_version, kind):
        return
    message = godecode.message_for(api_version, kind)
    if message is None:
        return
    found = godecode.decode(obj, message).type_error
    if found is not None:
        version = api_version.rsplit("/", 1)[-1]
        raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {found}')


def decode_protobuf(data: bytes, default_api_version: str = "", default_kind: str = "") -> dict[str, Any]:
    """A protobuf object body (`k8s\\0` + Unknown) as the JSON a Go client would send for it.

    A kind without a protobuf message (a custom resource) is 415: custom resources are JSON only, as in
    Kubernetes (kube-apiserver 1.37.2 drops the connection instead; a clear 415 tells the client what to send).
    """
    try:
        obj = envelope.decode_object(data, default_api_version, default_kind)
    except envelope.NoMessage as exc:
        raise errors.unsupported_media_type(negotiation.PROTOBUF, ["application/json", "application/yaml"],
                                            f"{exc}: send it as JSON") from None
    except (envelope.EnvelopeError, codec.CodecError) as exc:
        raise errors.bad_request(f"the object provided is unrecognized: {exc}") from None
    objects.check_size(obj)
    return as_object(obj, "the body")


_FIND_KIND = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
"""The Go type the JSON serializer's SimpleMetaFactory unmarshals a body into to find its kind."""


class _Repeated(dict[str, Any]):
    """An object whose body repeated some keys (`repeated`), until `_load_json` has named their paths."""

    repeated: list[str]


def _load_json(data: bytes, duplicates: list[str] | None) -> Any:
    """JSON as Go's decoder reads a repeated key: a repeated object merges into the first (a map or struct
    decoded into again), anything else is replaced; the repeated keys' dotted paths go to `duplicates`
    (sigs.k8s.io/json's strict errors: `duplicate field "data"`)."""
    seen = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal seen
        out: dict[str, Any] = {}
        repeated = []
        for key, value in items:
            if key in out:
                repeated.append(key)
                if isinstance(out[key], dict) and isinstance(value, dict):
                    value = {**out[key], **value}
            out[key] = value
        if not repeated:
            return out
        seen = True
        marked = _Repeated(out)
        marked.repeated = repeated
        return marked

    value = json.loads(data, parse_constant=_reject_constant, object_pairs_hook=pairs)
    return _name_repeated(value, "", duplicates if duplicates is not None else []) if seen else value


def _name_repeated(value: Any, path: str, out: list[str]) -> Any:
    if isinstance(value, list):
        return [_name_repeated(v, path, out) for v in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value, _Repeated):
        out += [f"{path}.{key}" if path else key for key in value.repeated]
    return {k: _name_repeated(v, f"{path}.{k}" if path else k, out) for k, v in value.items()}


def duplicate_warnings(info: resources.ResourceInfo, duplicates: list[str], field_validation: str) -> list[str]:
    """Repeated keys as `fieldValidation` wants them: Strict a 400 worded as the strict decoder, Warn
    warnings, Ignore nothing (apiserver handlers/create.go over sigs.k8s.io/json's strict errors)."""
    if duplicates and field_validation == "Strict":
        raise errors.bad_request(f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
                                 "strict decoding error: " + ", ".join(f'duplicate field "{p}"' for p in duplicates))
    return [f'duplicate field "{p}"' for p in duplicates] if field_validation == "Warn" else []


def _check_json_object(data: bytes, kind: str) -> None:
    """400 "the object provided is unrecognized" unless `data` is one JSON object: the serializer's
    `SimpleMetaFactory.Interpret` fails with Go's json error, and `transformDecodeError` adds a summary of the
    body (its first 30 bytes, as text when it starts with "{", in hex otherwise; apiserver handlers/rest.go)."""
    problem = find_kind_problem(data)
    if problem is None:
        return
    head = data[:30]
    summary = "<empty>" if not data else (head.decode(errors="replace") if data[:1] == b"{" else head.hex()) + \
        (" ..." if len(data) > 30 else "")
    raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): couldn't get "
                             f"version/kind; json parse error: {problem} ({summary})")


def find_kind_problem(data: bytes) -> str | None:
    """None when `data` is one JSON object (or null), else the JSON serializer's words for why it cannot find
    its apiVersion/kind: Go's json error (a syntax error, or a value that is no object) after `json parse error`."""
    try:
        value = json.loads(data, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return go_json_syntax_error(exc, data.decode(errors="replace"))
    if isinstance(value, dict) or value is None:
        return None
    return f"json: cannot unmarshal {_go_kind(value)} into Go value of type {_FIND_KIND}"


def _go_kind(value: Any) -> str:
    return "bool" if isinstance(value, bool) else "array" if isinstance(value, list) else \
        "string" if isinstance(value, str) else "number"


def go_json_syntax_error(exc: Exception, text: str) -> str:
    """Go encoding/json's syntax error where Python's parser stopped in `text` (bytes as latin-1 characters),
    the character quoted as Go's quoteChar does (strconv.Quote: `'\\u009e'` for a non-printable one)."""
    pos = getattr(exc, "pos", len(text))
    if pos >= len(text.rstrip()):
        return "unexpected end of JSON input"
    char = text[pos]
    if char == "'":
        quoted = "'\\''"
    elif char == '"':
        quoted = "'\"'"
    elif char.isprintable():
        quoted = f"'{char}'"
    elif char in "\a\b\f\n\r\t\v":
        quoted = "'" + {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        "\v": "\\v"}[char] + "'"
    else:
        quoted = f"'\\x{ord(char):02x}'" if ord(char) < 0x80 else f"'\\u{ord(char):04x}'"
    message = str(getattr(exc, "msg", ""))
    if message.startswith("Extra data"):
        return f"invalid character {quoted} after top-level value"
    if message.startswith("Expecting property name"):
        return f"invalid character {quoted} looking for beginning of object key string"
    if message.startswith("Expecting ':'"):
        return f"invalid character {quoted} after object key"
    if message.startswith("Expecting ','"):
        inside = _innermost(text[:pos])
        return f"invalid character {quoted} after {'array element' if inside == '[' else 'object key:value pair'}"
    return f"invalid character {quoted} looking for beginning of value"


def _innermost(text: str) -> str:
    """The innermost open bracket of a JSON prefix ("" at the top level)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def as_object(obj: Any, what: str) -> dict[str, Any]:
    """`obj` as a Kubernetes object: a JSON object whose metadata (absent or null: {}) is an object; 400 otherwise.

    Also applied to the result of a patch, which can turn metadata into anything.
    """
    if not isinstance(obj, dict):
        raise errors.bad_request(f"{what} must be a JSON object (a Kubernetes object), got {type(obj).__name__}")
    meta = obj.get("metadata", {})
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.bad_request(f"metadata must be a JSON object, got {type(meta).__name__} in {what}")
    obj["metadata"] = meta
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_type_meta(info: resources.ResourceInfo, obj: dict[str, Any],
                    registry: resources.Registry | None = None, *, field_validation: str = "Warn") -> None:
    """apiVersion/kind must name this resource (filled in when absent, as the decoder does).

    Worded as kube-apiserver when `registry` is given: for a built-in, the codec's error inside
    `transformDecodeError` (rest.go): a kind of another type "unknown conversion", an unknown one "no kind ...
    is registered"; for a custom resource, the versioning decoder's 400 for another version and the
    validator's 422 for another kind (apiextensions customresource/validator.go `ValidateTypeMeta`).
    """
    api_version = obj.setdefault("apiVersion", info.api_version)
    kind = obj.setdefault("kind", info.kind)
    if registry is not None and (api_version, kind) != (info.api_version, info.kind):
        _type_meta_error(info, registry, str(api_version), str(kind), obj, warn=field_validation == "Warn")
    if api_version != info.api_version or kind != info.kind:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) and kind ({kind}) do not match the request "
            f"({info.api_version}, {info.kind}): send the object to the URL of its own resource type")


def _type_meta_error(info: resources.ResourceInfo, registry: resources.Registry, api_version: str, kind: str,
                     obj: dict[str, Any], *, warn: bool = True) -> None:
    version = api_version.rsplit("/", 1)[-1]
    if info.is_custom:
        if api_version != info.api_version:
            failure = errors.bad_request(f"the API version in the data ({api_version}) does not match the expected "
                                         f"API version ({info.api_version})")
            # the body was decoded with no schema (its version is not this one), so every field but TypeMeta and
            # metadata was an unknown one, and the default fieldValidation=Warn warned of each before the
            # versioning decoder failed (lwsconf fidelity crd/lws-validation/wrong-api-version)
            if warn:
                failure.warnings = [f'unknown field "{k}"' for k in obj if k not in ("apiVersion", "kind", "metadata")]
            raise failure
        name = (obj.get("metadata") or {}).get("name") or ""
        raise errors.invalid(kind, info.group, str(name), [errors.Cause(
            "kind", f"Invalid value: {json.dumps(kind)}: must be {info.kind}")])
    sent = registry.by_kind(api_version, kind)
    handled = f"{kind} in version {json.dumps(version)} cannot be handled as a {info.kind}"
    if sent is None or sent.is_custom:
        raise errors.bad_request(f"{handled}: no kind {json.dumps(kind)} is registered for version "
                                 f'{json.dumps(api_version)} in scheme "pkg/runtime/scheme.go:111"')
    if sent.kind != info.kind:  # the internal type's package: core for the legacy group, else the group's name
        internal = info.group.split(".")[0] if info.group else "core"
        raise errors.bad_request(f"{handled}: converting ({version}.{kind}) to ({internal}.{info.kind}): "
                                 "unknown conversion")


def check_namespace(info: resources.ResourceInfo, obj: dict[str, Any], namespace: str | None) -> None:
    meta = obj["metadata"]
    if not info.namespaced:
        meta.pop("namespace", None)
        return
    sent = meta.get("namespace")
    if sent and namespace and sent != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request")
    meta["namespace"] = namespace or sent or ""
