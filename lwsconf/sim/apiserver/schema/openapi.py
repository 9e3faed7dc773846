"""The sim's OpenAPI v3 documents: Kubernetes' own for built-ins when they are installed, else minimal ones.

With the upstream documents installed (`lwsconf sim openapi fetch`, or found at sim start in a warm Go
module cache: `openapi_cache`), a built-in group-version is served as kube-apiserver serves it
(`openapi_builtin`: upstream's document, its paths limited to the resources the sim serves), so `kubectl
explain` and apply's strategic merge patch read the real schemas and merge keys. Without them, and always
for custom resources, the documents below are generated; what follows explains their shape.

The minimal documents are what let plain `kubectl apply -f` (client-side validation on) work.

With default validation kubectl 1.37 downloads `/openapi/v3` and, per group-version, looks for a
PATCH operation tagged `x-kubernetes-group-version-kind` for the object's kind that accepts a
`fieldValidation` query parameter. When it finds one it skips client-side schema validation and
sends `fieldValidation=Strict`, leaving validation to the server. Without these documents it fails
with "failed to download openapi"; without the GVK extension it falls back to `/openapi/v2` and fails
the same way (seen with kubectl 1.37 at -v=6). So every post/put/patch operation here carries
both, on collection, item, `/status` and `/scale` paths.

kubectl also picks its apply patch type from these documents (measured with kubectl 1.37.1): it
sends a strategic merge patch when the kind's PATCH operation lists
`application/strategic-merge-patch+json`, so only built-ins list it; a custom resource then gets the
`merge-patch+json` that kube-apiserver expects for CRs. For the strategic-merge patch itself kubectl
uses the first component schema carrying the kind's GVK. Built-ins therefore get a permissive schema
(`x-kubernetes-preserve-unknown-fields`) *without* a schema-level GVK: with one, kubectl tries our
merge-key-less schema, logs "error calculating patch from openapi v3 spec" and only then falls back;
without one it goes straight to its compiled-in Go types, which know the merge keys (`env` by name,
`$patch: delete` for removals). A CRD's own `openAPIV3Schema` is embedded with its GVK (plus
`apiVersion`/`kind`/`metadata`), so `kubectl explain lws.spec` works.
tests/sim/apiserver/schema/test_openapi.py checks all of this against the real kubectl.

The index gives each group-version a `serverRelativeURL` whose `hash` is a digest of that document,
so it changes exactly when the group-version's content changes. Pure functions: no I/O.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from lwsconf.sim.apiserver.schema.openapi_builtin import BuiltinSpecs
from lwsconf.sim.apiserver.storage import resources

_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_OBJECT_META = f"{_META}.ObjectMeta"
_STATUS = f"{_META}.Status"
_PATCH = f"{_META}.Patch"
_DELETE_OPTIONS = f"{_META}.DeleteOptions"
_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_SCALE_GVK = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
_SMP = "application/strategic-merge-patch+json"
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")


def openapi_index(registry: resources.Registry, specs: BuiltinSpecs | None = None) -> dict[str, Any]:
    """The `/openapi/v3` discovery document: one entry per served group-version.

    Args:
        registry: the served resource types.
        specs: Kubernetes' documents for built-in group-versions (None: every document is generated).

    Returns:
        `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}`.
    """
    paths: dict[str, Any] = {}
    for group, version in _group_versions(registry):
        key = gv_path(group, version)
        builtin = _builtin(registry, group, version, specs)
        digest = builtin[1] if builtin is not None else document_hash(_generated(registry, group, version))
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


def openapi_group_version(registry: resources.Registry, group: str, version: str,
                          specs: BuiltinSpecs | None = None) -> dict[str, Any] | None:
    """The `/openapi/v3/api/v1` or `/openapi/v3/apis/G/V` document.

    Args:
        registry: the served resource types.
        group: "" for the core group.
        version: the version, e.g. "v1".
        specs: Kubernetes' documents for built-in group-versions (None: the generated permissive one).

    Returns:
        An OpenAPI 3.0 document, or None when the group-version is not served (answer 404).
    """
    builtin = _builtin(registry, group, version, specs)
    if builtin is not None:
        return dict(json.loads(builtin[0]))
    return _generated(registry, group, version)


def openapi_group_version_body(registry: resources.Registry, group: str, version: str,
                               specs: BuiltinSpecs | None = None) -> bytes | None:
    """`openapi_group_version` as the bytes the server sends (upstream documents from their cache, unparsed)."""
    builtin = _builtin(registry, group, version, specs)
    if builtin is not None:
        return builtin[0]
    doc = _generated(registry, group, version)
    return None if doc is None else json.dumps(doc, separators=(",", ":")).encode()


def _builtin(registry: resources.Registry, group: str, version: str,
             specs: BuiltinSpecs | None) -> tuple[bytes, str] | None:
    """Upstream's document and hash when the group-version holds only built-ins and one was installed."""
    if specs is None:
        return None
    key = gv_path(group, version)
    infos = registry.in_group_version(group, version)
    if not infos or any(info.is_custom for info in infos) or not specs.has(key):
        return None
    return specs.body_and_hash(key, [info.plural for info in infos])


def _generated(registry: resources.Registry, group: str, version: str) -> dict[str, Any] | None:
    infos = registry.in_group_version(group, version)
    if not infos:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = _shared_schemas()
    for info in infos:
        paths.update(_resource_paths(info))
        schemas[schema_name(info)] = _object_schema(info)
        schemas[schema_name(info) + "List"] = _list_schema(info)
        if info.scale is not None:
            schemas[_SCALE] = _permissive()
    title = f"Kubernetes {gv_path(group, version)}"
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": "v1.37.0-lwsconf-sim"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def gv_path(group: str, version: str) -> str:
    """The index key of a group-version: `api/v1` for core, `apis/G/V` otherwise."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def parse_gv_path(path: str) -> tuple[str, str] | None:
    """Inverse of `gv_path` for routing `/openapi/v3/<path>`; None when `path` is not a GV path."""
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        return "", parts[1]
    if len(parts) == 3 and parts[0] == "apis":
        return parts[1], parts[2]
    return None


def document_hash(doc: dict[str, Any] | None) -> str:
    """A digest of a document's canonical JSON (upper-case hex, like kube-apiserver's)."""
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha512(canonical.encode()).hexdigest().upper()


def schema_name(info: resources.ResourceInfo) -> str:
    """The component name kube-apiserver uses, e.g. `io.k8s.api.core.v1.Pod`, `io.x-k8s.leaderworkerset.v1.X`."""
    if not info.group:
        prefix = "io.k8s.api.core"
    elif "." not in info.group:
        prefix = f"io.k8s.api.{info.group}"
    else:
        prefix = ".".join(reversed(info.group.split(".")))
    return f"{prefix}.{info.version}.{info.kind}"


def _group_versions(registry: resources.Registry) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for info in registry.all():
        if (info.group, info.version) not in seen:
            seen.append((info.group, info.version))
    return sorted(seen, key=lambda gv: gv[0] != "")


def _gvk(info: resources.ResourceInfo) -> dict[str, str]:
    return {"group": info.group, "version": info.version, "kind": info.kind}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _permissive() -> dict[str, Any]:
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _shared_schemas() -> dict[str, Any]:
    meta = _permissive()
    meta["properties"] = {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    }
    return {
        _OBJECT_META: meta,
        _STATUS: _permissive(),
        _PATCH: {"type": "object", "description": "A patch body; its format follows Content-Type."},
        _DELETE_OPTIONS: _permissive(),
    }


def _object_schema(info: resources.ResourceInfo) -> dict[str, Any]:
    if info.schema is None:
        return _permissive()
    schema = copy.deepcopy(info.schema)
    schema.setdefault("type", "object")
    props = schema.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = {"allOf": [_ref(_OBJECT_META)]}
    schema["x-kubernetes-group-version-kind"] = [_gvk(info)]
    return schema


def _list_schema(info: resources.ResourceInfo) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "items": {"type": "array", "items": _ref(schema_name(info))},
        },
    }
    if info.schema is not None:
        gvk = {**_gvk(info), "kind": info.list_kind_name}
        schema["x-kubernetes-group-version-kind"] = [gvk]
    return schema


def _resource_paths(info: resources.ResourceInfo) -> dict[str, Any]:
    """Collection, item, `/status` and `/scale` paths (namespaced and all-namespaces forms)."""
    base = f"/{gv_path(info.group, info.version)}"
    scoped = f"{base}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{base}/{info.plural}"
    name = schema_name(info)
    gvk = _gvk(info)
    paths: dict[str, Any] = {
        scoped: _path_item(info, ("get", "post", "delete"), name, gvk, item=False),
        f"{scoped}/{{name}}": _path_item(info, ("get", "put", "patch", "delete"), name, gvk, item=True),
    }
    if info.namespaced:
        paths[f"{base}/{info.plural}"] = _path_item(info, ("get",), name, gvk, item=False, all_ns=True)
    if info.has_status:
        paths[f"{scoped}/{{name}}/status"] = _path_item(info, ("get", "put", "patch"), name, gvk, item=True)
    if info.scale is not None:
        paths[f"{scoped}/{{name}}/scale"] = _path_item(
            info, ("get", "put", "patch"), _SCALE, _SCALE_GVK, item=True
        )
    return paths


def _path_item(
    info: resources.ResourceInfo,
    methods: tuple[str, ...],
    schema: str,
    gvk: dict[str, str],
    *,
    item: bool,
    all_ns: bool = False,
) -> dict[str, Any]:
    params: list[dict[str, Any]] = []
    if item:
        params.append(_param("name", "path", required=True))
    if info.namespaced and not all_ns:
        params.append(_param("namespace", "path", required=True))
    params.append(_param("pretty", "query"))
    path_item: dict[str, Any] = {"parameters": params}
    for method in methods:
        path_item[method] = _operation(info, method, schema, gvk, item=item)
    return path_item


def _operation(
    info: resources.ResourceInfo, method: str, schema: str, gvk: dict[str, str], *, item: bool
) -> dict[str, Any]:
    action = _action(method, item)
    body_schema = schema if item or method != "get" else schema + "List"
    if schema == _SCALE:
        body_schema = _SCALE
    op: dict[str, Any] = {
        "operationId": f"{action}{info.kind}",
        "responses": {"200": _response(body_schema), "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }
    if method in ("post", "put", "patch"):
        op["parameters"] = [_param(p, "query") for p in _WRITE_PARAMS]
        media = _patch_types(info) if method == "patch" else ("application/json", "application/yaml")
        request_schema = _PATCH if method == "patch" else schema
        op["requestBody"] = {"required": True, "content": {m: {"schema": _ref(request_schema)} for m in media}}
        op["responses"]["201"] = _response(schema)
    if method == "patch":
        op["parameters"].append(_param("force", "query", type_="boolean"))
    if method == "delete":
        op["parameters"] = [_param("dryRun", "query"), _param("propagationPolicy", "query")]
        op["responses"]["200"] = _response(_STATUS)
    if method == "get" and not item:
        op["parameters"] = [_param("labelSelector", "query"), _param("fieldSelector", "query"),
                            _param("limit", "query", type_="integer"), _param("watch", "query", type_="boolean")]
    return op


def _patch_types(info: resources.ResourceInfo) -> tuple[str, ...]:
    """Custom resources take no strategic merge patch; kubectl reads this list to pick its patch type."""
    return _PATCH_TYPES if info.is_custom else (*_PATCH_TYPES, _SMP)


def _action(method: str, item: bool) -> str:
    if method == "get":
        return "get" if item else "list"
    if method == "delete" and not item:
        return "deletecollection"
    return {"post": "post", "put": "put", "patch": "patch", "delete": "delete"}[method]


def _param(name: str, where: str, *, required: bool = False, type_: str = "string") -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "in": where, "schema": {"type": type_, "uniqueItems": True}}
    if required:
        param["required"] = True
    return param


def _response(schema: str) -> dict[str, Any]:
    return {"description": "OK", "content": {"application/json": {"schema": _ref(schema)}}}
