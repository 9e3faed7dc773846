"""The merge-style PATCH bodies: RFC 7386 JSON merge patch and Kubernetes strategic merge patch.

Both merge a partial object into the stored one: null deletes a field, maps merge recursively. They
differ on lists. A JSON merge patch replaces every list; a strategic merge patch knows, for the
built-in kinds, which lists are keyed (containers by `name`, conditions by `type`) or sets of scalars
(`finalizers`) and merges those element by element. Those facts are `STRUCTS`, the struct tags of
k8s.io/api. `patch` picks one of the two by the request's media type; server-side apply (`apply`)
merges with them as well, and reads `STRUCTS` to find its associative lists. Inputs are never
mutated; bad input is a 400 `StatusError`. No I/O here.

Strategic merge follows k8s.io/apimachinery `strategicpatch` as the apiserver runs it: keyed lists merge
element by element, scalar lists with strategy merge are unioned, other lists replace; `$patch`,
`$deleteFromPrimitiveList/<f>`, `$retainKeys` and `$setElementOrder/<f>` are honoured, with the element
order of `normalizeElementOrder`. Differences: `$patch: merge` is accepted as the default (Go rejects
it), a top-level `$patch: delete` is rejected (send DELETE), and directives and nulls inside a value
new to the object are processed rather than stored.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors

# --- RFC 7386 --------------------------------------------------------------------------------------

def merged_json_text(current: dict[str, Any], patch: dict[str, Any]) -> str:
    """The JSON text kube-apiserver's merge patch produces from `current` (keys in Go's struct order,
    `protobuf.godecode.go_order`) and `patch`: evanphx/json-patch's MergePatch keeps untouched values as the
    raw text they were, and re-marshals as Go maps (keys sorted) every object it merged into and every object
    it took from the patch (pruneNulls); Go's encoder escapes <, > and & (apiserver handlers/patch.go
    jsonPatcher, which embeds this text in the 422 when the result does not decode)."""
    text = json.dumps(_merged_doc(current, patch), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _merged_doc(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif out.get(key) is None:
            out[key] = _pruned(value)
        elif isinstance(out[key], dict) and isinstance(value, dict):
            out[key] = _merged_doc(out[key], value)
        else:
            out[key] = _pruned(value) if not isinstance(out[key], dict) else value
    return {key: out[key] for key in sorted(out)}


def _pruned(value: Any) -> Any:
    """A value taken from the patch: its objects lose their nulls and are written as Go maps (sorted keys)."""
    if isinstance(value, dict):
        return {k: _pruned(value[k]) for k in sorted(value) if value[k] is not None}
    if isinstance(value, list):
        return [_pruned(item) for item in value]
    return value


def merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 7386 JSON merge patch: null deletes, objects merge recursively, the rest replaces.

    Raises:
        StatusError: 400 when the patch is not a JSON object.
    """
    if not isinstance(patch, dict):  # patch.go decodes the patch into a map first
        raise errors.bad_request(f"error decoding patch: json: cannot unmarshal {go_json_kind(patch)} into Go "
                                 "value of type map[string]interface {}")
    return _merge(copy.deepcopy(obj), patch)  # type: ignore[no-any-return]


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


# --- strategic merge patch: the facts --------------------------------------------------------------

@dataclass(frozen=True)
class PatchField:
    """What strategic merge knows about one field: the struct type of its value (of each element for
    lists), its `patchMergeKey`, and whether it is a list of scalars with `patchStrategy:"merge"`."""

    struct: str | None = None
    key: str | None = None
    as_set: bool = False


_PLAIN = PatchField()
_META = PatchField("ObjectMeta")
_BY_TYPE = PatchField(key="type")
_BY_NAME = PatchField(key="name")
_CONTAINERS = PatchField("Container", key="name")
_WORKLOAD = {"metadata": _META, "spec": PatchField("WorkloadSpec"), "status": PatchField("Conditions")}
_CONDITIONS_ONLY = {"metadata": _META, "status": PatchField("Conditions")}

# The `patchStrategy:"merge" patchMergeKey:"..."` struct tags of k8s.io/api (core/v1, apps/v1, batch/v1
# types.go) and k8s.io/apimachinery meta/v1 ObjectMeta, keyed by the struct a field sits in, so that
# `ports` is keyed by containerPort in a Container and by port in a ServiceSpec. Kinds are roots.
# Fields not listed: maps merge, lists replace (tolerations, containerStatuses, envFrom, args, command).
STRUCTS: dict[str, dict[str, PatchField]] = {
    "ObjectMeta": {"ownerReferences": PatchField(key="uid"), "finalizers": PatchField(as_set=True)},
    "PodTemplateSpec": {"metadata": _META, "spec": PatchField("PodSpec")},
    "PodSpec": {
        "containers": _CONTAINERS, "initContainers": _CONTAINERS, "ephemeralContainers": _CONTAINERS,
        "volumes": _BY_NAME, "imagePullSecrets": _BY_NAME, "resourceClaims": _BY_NAME,
        "schedulingGates": _BY_NAME, "hostAliases": PatchField(key="ip"),
        "readinessGates": PatchField(key="conditionType"),
        "topologySpreadConstraints": PatchField(key="topologyKey"),
    },
    "Container": {"env": _BY_NAME, "ports": PatchField(key="containerPort"),
                  "volumeMounts": PatchField(key="mountPath"), "volumeDevices": PatchField(key="devicePath")},
    "PodStatus": {"conditions": _BY_TYPE, "podIPs": PatchField(key="ip")},
    "Conditions": {"conditions": _BY_TYPE},
    "WorkloadSpec": {"template": PatchField("PodTemplateSpec")},
    "JobTemplateSpec": {"metadata": _META, "spec": PatchField("WorkloadSpec")},
    "ServiceSpec": {"ports": PatchField(key="port")},
    "Object": {"metadata": _META},
    "Pod": {"metadata": _META, "spec": PatchField("PodSpec"), "status": PatchField("PodStatus")},
    "PodTemplate": {"metadata": _META, "template": PatchField("PodTemplateSpec")},
    "Deployment": _WORKLOAD, "StatefulSet": _WORKLOAD, "DaemonSet": _WORKLOAD, "ReplicaSet": _WORKLOAD,
    "Job": _WORKLOAD, "ReplicationController": _WORKLOAD,
    "CronJob": {"metadata": _META, "spec": PatchField("CronJobSpec")},
    "CronJobSpec": {"jobTemplate": PatchField("JobTemplateSpec")},
    "Service": {"metadata": _META, "spec": PatchField("ServiceSpec"), "status": PatchField("Conditions")},
    "Node": {"metadata": _META, "spec": PatchField("NodeSpec"), "status": PatchField("NodeStatus")},
    "NodeSpec": {"podCIDRs": PatchField(as_set=True)},
    "NodeStatus": {"conditions": _BY_TYPE, "addresses": _BY_TYPE},
    "Namespace": _CONDITIONS_ONLY, "PersistentVolumeClaim": _CONDITIONS_ONLY,
    # admissionregistration/v1: `webhooks` is patchStrategy merge, patchMergeKey name (listType map).
    "MutatingWebhookConfiguration": {"metadata": _META, "webhooks": _BY_NAME},
    "ValidatingWebhookConfiguration": {"metadata": _META, "webhooks": _BY_NAME},
}


def root_struct(kind: str) -> str:
    """The `STRUCTS` entry for a kind's top level ("Object": only metadata is known)."""
    return kind if "metadata" in STRUCTS.get(kind, {}) else "Object"


def field_of(struct: str | None, name: str) -> PatchField:
    """The facts for field `name` inside `struct` (plain map-merge/list-replace when unknown)."""
    return STRUCTS.get(struct or "", {}).get(name, _PLAIN)


def identity(value: Any) -> str:
    """A comparable form of a JSON value (1 and 1.0 are the same, as in Go's float64 decoding)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True)


# --- strategic merge patch: the algorithm ----------------------------------------------------------

_ORDER = "$setElementOrder/"
_DELETE_FROM = "$deleteFromPrimitiveList/"


def strategic_merge_patch(obj: dict[str, Any], patch: Any, *, kind: str) -> dict[str, Any]:
    """Apply a Kubernetes strategic merge patch to a built-in object.

    Args:
        obj: the stored object (not mutated).
        patch: the decoded patch body.
        kind: the object's kind, which picks the merge-key facts.

    Raises:
        StatusError: 400 for a patch that is not an object, an unknown directive, or a keyed list
            element without its merge key.
    """
    if not isinstance(patch, dict):
        raise errors.bad_request(f"a strategic merge patch must be a JSON object, got {type(patch).__name__}")
    if patch.get("$patch") == "delete":
        raise errors.bad_request("a top-level $patch: delete would delete the whole object; send DELETE")
    return _smp_map(copy.deepcopy(obj), patch, root_struct(kind), "")


def _bad_patch_type(directive: Any, where: dict[str, Any]) -> errors.StatusError:
    """apimachinery's `mergepatch.ErrBadPatchType` (pkg/util/mergepatch/errors.go), word for word. kube-apiserver
    answers this plain Go error as a reasonless 500 (`ErrorToAPIStatus`); the sim answers the same words as a
    400 BadRequest, as it never answers a malformed request with a 5xx (lwsconf/fidelity/accepted.py)."""
    return errors.bad_request(f"unknown patch type: {go_format(directive)} in map: {go_format(where)}")


def go_json_kind(value: Any) -> str:
    """How Go's encoding/json names a JSON value's kind in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else "number"


def go_format(value: Any) -> str:
    """A decoded JSON value as Go's `%v` prints it (maps with sorted keys, numbers as float64 do)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, int | float):
        number = float(value)
        if number.is_integer() and abs(number) < 1e21:
            return str(int(number)) if abs(number) < 1e6 else f"{number:g}".replace("e+0", "e+")
        return repr(number)
    return str(value)


def _bad(path: str, problem: str) -> errors.StatusError:
    return errors.bad_request(f"strategic merge patch at {path or '<root>'}: {problem}")


def _smp_map(original: dict[str, Any], patch: dict[str, Any], struct: str | None, path: str) -> dict[str, Any]:
    directive = patch.get("$patch", "merge")
    if directive == "replace":
        return _smp_map({}, {k: v for k, v in patch.items() if k != "$patch"}, struct, path)
    if directive == "delete":
        return {}
    if directive != "merge":
        raise _bad_patch_type(directive, patch)
    result = dict(original)
    if "$retainKeys" in patch:
        retain = patch["$retainKeys"]
        if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
            raise _bad(path, "$retainKeys must be a list of field names")
        result = {k: v for k, v in result.items() if k in retain}
    befores = {k[len(_ORDER):]: result.get(k[len(_ORDER):]) for k in patch if k.startswith(_ORDER)}
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            _delete_from_list(result, key[len(_DELETE_FROM):], value, f"{path}.{key}")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith((_ORDER, _DELETE_FROM)):
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _smp_value(result.get(key), value, field_of(struct, key), f"{path}.{key}")
    for name, before in befores.items():
        _set_order(result, name, patch[_ORDER + name], before, field_of(struct, name), f"{path}.{name}")
    return result


def _smp_value(original: Any, value: Any, field: PatchField, path: str) -> Any:
    if isinstance(value, dict):
        return _smp_map(original if isinstance(original, dict) else {}, value, field.struct, path)
    if not isinstance(value, list):
        return value
    if field.key or field.as_set:
        return _smp_list(original if isinstance(original, list) else [], value, field, path)
    return [_smp_value(None, item, PatchField(field.struct), f"{path}[{i}]")
            for i, item in enumerate(value) if not _is_marker(item)]


def _is_marker(item: Any) -> bool:
    return isinstance(item, dict) and set(item) == {"$patch"}


def _smp_list(original: list[Any], patch: list[Any], field: PatchField, path: str) -> list[Any]:
    items: list[Any] = []
    deletes: list[Any] = []
    replace = False
    for item in patch:
        directive = item.get("$patch") if isinstance(item, dict) else None
        if directive in (None, "merge"):
            if not _is_marker(item):
                items.append({k: v for k, v in item.items() if k != "$patch"} if directive else item)
        elif directive == "replace":
            replace = True
        elif directive == "delete":
            deletes.append(item)
        else:
            raise _bad_patch_type(directive, item)
    if replace:
        return _smp_value(None, items, PatchField(field.struct), path)  # type: ignore[no-any-return]
    if field.as_set:
        if deletes:
            raise _bad(path, f"use $deleteFromPrimitiveList/{path.rsplit('.', 1)[-1]} to remove scalars")
        merged = _union(original, items, path)
    else:
        merged = _merge_keyed(original, items, deletes, field, path)
    return _ordered(merged, items, original, field)


def _union(original: list[Any], items: list[Any], path: str) -> list[Any]:
    result = list(original)
    seen = {identity(v) for v in result}
    for item in items:
        if isinstance(item, (dict, list)):
            raise _bad(path, f"this list holds scalars (it is merged as a set), got {item!r}")
        if identity(item) not in seen:
            seen.add(identity(item))
            result.append(item)
    return result


def _merge_keyed(original: list[Any], items: list[Any], deletes: list[Any], field: PatchField,
                 path: str) -> list[Any]:
    key = field.key or ""
    for item in [*deletes, *items]:
        if not isinstance(item, dict) or key not in item:
            raise _bad(path, f"element {item!r} does not contain the merge key {key!r}; every element of "
                             f"this list must name its {key}")
    gone = {identity(d[key]) for d in deletes}
    result = [e for e in original if not (isinstance(e, dict) and identity(e.get(key)) in gone)]
    for item in items:
        at = next((i for i, e in enumerate(result)
                   if isinstance(e, dict) and key in e and identity(e[key]) == identity(item[key])), None)
        where = f"{path}[{key}={item[key]!r}]"
        if at is None:
            result.append(_smp_map({}, item, field.struct, where))
        else:
            result[at] = _smp_map(result[at], item, field.struct, where)
    return result


def _element_id(item: Any, field: PatchField) -> str:
    if field.key and isinstance(item, dict):
        return identity(item.get(field.key))
    return identity(item)


def _ordered(merged: list[Any], patch_order: list[Any], server_order: list[Any],
             field: PatchField) -> list[Any]:
    """`normalizeElementOrder`: patch items in patch order, server-only items in server order, merged
    so that an item keeps its place relative to the server list when both sides know both items."""
    wanted: dict[str, int] = {}
    for i, item in enumerate(patch_order):
        wanted.setdefault(_element_id(item, field), i)
    server: dict[str, int] = {}
    for i, item in enumerate(server_order):
        server.setdefault(_element_id(item, field), i)
    ids = [_element_id(m, field) for m in merged]
    left = sorted((i for i, e in enumerate(ids) if e in wanted), key=lambda i: wanted[ids[i]])
    right = sorted((i for i, e in enumerate(ids) if e not in wanted), key=lambda i: server.get(ids[i], len(ids)))
    out: list[Any] = []
    while left or right:
        both_known = bool(left) and bool(right) and ids[left[0]] in server and ids[right[0]] in server
        # Keyed lists (mergeSortedSlice): unless the server orders both, the patch's item goes first, so a
        # new container is listed before the existing ones (observed on kube-apiserver 1.37.2 by lwsconf
        # fidelity, patches/patch-strategic/add-container). Set lists keep the server's items first.
        patch_first = field.key is not None and not both_known
        take_left = bool(left) and (not right or patch_first
                                    or (both_known and server[ids[left[0]]] < server[ids[right[0]]]))
        out.append(merged[(left if take_left else right).pop(0)])
    return out


def _set_order(result: dict[str, Any], name: str, order: Any, before: Any, field: PatchField,
               path: str) -> None:
    if not isinstance(order, list):
        raise _bad(path, f"$setElementOrder/{name} must be a list")
    if field.key and not all(isinstance(o, dict) and field.key in o for o in order):
        raise _bad(path, f"every $setElementOrder/{name} entry must be an object with {field.key!r}")
    current = result.get(name)
    if (field.key or field.as_set) and isinstance(current, list):
        result[name] = _ordered(current, order, before if isinstance(before, list) else [], field)


def _delete_from_list(result: dict[str, Any], name: str, values: Any, path: str) -> None:
    if not isinstance(values, list):
        raise _bad(path, "the value of a $deleteFromPrimitiveList directive must be a list of scalars")
    current = result.get(name)
    if isinstance(current, list):
        gone = {identity(v) for v in values}
        result[name] = [v for v in current if identity(v) not in gone]
