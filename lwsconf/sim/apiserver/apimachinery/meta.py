"""ObjectMeta, label and label-selector validation, as `ValidateObjectMeta` and friends do it.

Metadata is checked for every kind (built-in or custom) before kind-specific rules run. Besides the
Kubernetes formats, values the v37 typed client reads as strings (label values, annotation values,
finalizers) must be strings, otherwise every later GET of the object fails to deserialize. Label
selectors live here too because Deployments, StatefulSets, DaemonSets and Services all validate and
match them the same way. No I/O here.
"""

from __future__ import annotations

import json
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, names
from lwsconf.sim.apiserver.apimachinery import fields as f

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""`TotalAnnotationSizeLimitB`: keys plus values of all annotations, in bytes."""

BANNED_OWNERS = {("", "v1", "Event")}
"""`BannedOwners`: kinds that may never be an owner (an Event would keep its subject alive)."""

_ORPHAN, _FOREGROUND = "orphan", "foregroundDeletion"


def validate_metadata(meta: dict[str, Any], *, namespaced: bool, name_rule: str,
                      path: str = "metadata") -> list[errors.Cause]:
    """Check an object's metadata on write, as `ValidateObjectMeta` does.

    Args:
        meta: the object's `metadata` (any JSON; wrong types become causes).
        namespaced: whether the kind is namespaced (then `namespace` is required, else forbidden).
        name_rule: a key of `names.RULES` (the kind's `NAME_RULES` entry).
        path: field path of `meta` in the causes.

    Returns:
        The causes; empty when the metadata is valid.
    """
    causes = _name_causes(meta, name_rule, path)
    causes += _namespace_causes(meta.get("namespace"), namespaced, f.child(path, "namespace"))
    causes += f.nonnegative(f.child(path, "generation"), meta.get("generation"))
    causes += validate_labels(meta.get("labels"), f.child(path, "labels"))
    causes += validate_annotations(meta.get("annotations"), f.child(path, "annotations"))
    causes += validate_owner_references(meta.get("ownerReferences"), f.child(path, "ownerReferences"))
    causes += validate_finalizers(meta.get("finalizers"), f.child(path, "finalizers"))
    return causes


def _name_causes(meta: dict[str, Any], rule: str, path: str) -> list[errors.Cause]:
    name, generate = meta.get("name"), meta.get("generateName")
    causes: list[errors.Cause] = []
    if generate not in (None, ""):
        if not isinstance(generate, str):
            return [f.invalid(f.child(path, "generateName"), generate, "must be a string")]
        causes += f.invalid_each(f.child(path, "generateName"), generate,
                                 names.object_name(rule, generate, prefix=True))
    if name in (None, ""):
        if generate in (None, ""):
            causes.append(f.required(f.child(path, "name"), "name or generateName is required"))
        return causes
    if not isinstance(name, str):
        return causes + [f.invalid(f.child(path, "name"), name, "must be a string")]
    return causes + f.invalid_each(f.child(path, "name"), name, names.object_name(rule, name))


def _namespace_causes(namespace: Any, namespaced: bool, path: str) -> list[errors.Cause]:
    if not namespaced:
        return [f.forbidden(path, "not allowed on this type")] if namespace not in (None, "") else []
    if namespace in (None, ""):
        return [f.required(path)]
    if not isinstance(namespace, str):
        return [f.invalid(path, namespace, "must be a string")]
    return f.invalid_each(path, namespace, names.dns1123_label(namespace))


def validate_labels(labels: Any, path: str) -> list[errors.Cause]:
    """`ValidateLabels`: qualified keys, valid string values (causes name the map, not the key)."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [f.invalid(path, labels, "must be a map of string keys to string values")]
    causes: list[errors.Cause] = []
    for k, v in labels.items():
        causes += f.invalid_each(path, k, names.qualified_name(k))
        if not isinstance(v, str):
            causes.append(f.invalid(path, v, "label values must be strings"))
        else:
            causes += f.invalid_each(path, v, names.label_value(v))
    return causes


def validate_annotations(annotations: Any, path: str) -> list[errors.Cause]:
    """`ValidateAnnotations`: keys qualified (case-insensitively), total size at most 256 KiB."""
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [f.invalid(path, annotations, "must be a map of string keys to string values")]
    causes: list[errors.Cause] = []
    size = 0
    for k, v in annotations.items():
        causes += f.invalid_each(path, k, names.qualified_name(k.lower()))
        if not isinstance(v, str):
            causes.append(f.invalid(f.key(path, k), v, "annotation values must be strings"))
            continue
        size += len(k.encode()) + len(v.encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(f.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def _group_version(api_version: str) -> tuple[str, str]:
    """`schema.ParseGroupVersion`, giving ("", "") for a malformed value."""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2 and parts[0] and parts[1]:
        return parts[0], parts[1]
    return "", ""


def validate_owner_references(refs: Any, path: str) -> list[errors.Cause]:
    """`ValidateOwnerReferences`: each ref complete, at most one controller (paths are not indexed)."""
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [f.invalid(path, refs, "must be a list")]
    causes: list[errors.Cause] = []
    controller = ""
    for _, ref in f.dicts(refs):
        causes += _owner_reference(ref, path)
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if controller:
                causes.append(f.invalid(path, refs, "Only one reference can have Controller set to true. "
                                        f'Found "true" in references for {controller} and {current}'))
            else:
                controller = current
    return causes


def _owner_reference(ref: dict[str, Any], path: str) -> list[errors.Cause]:
    group, version = _group_version(f.as_str(ref.get("apiVersion")))
    causes = []
    if not version:
        causes.append(f.invalid(f.child(path, "apiVersion"), ref.get("apiVersion", ""), "version must not be empty"))
    for field in ("kind", "name", "uid"):
        if not isinstance(ref.get(field), str) or not ref[field]:
            causes.append(f.invalid(f.child(path, field), ref.get(field, ""), "must not be empty"))
    if (group, version, f.as_str(ref.get("kind"))) in BANNED_OWNERS:
        causes.append(f.invalid(path, ref,
                                f"{group}/{version}, Kind={ref.get('kind')} is disallowed from being an owner"))
    return causes


def validate_finalizers(finalizers: Any, path: str) -> list[errors.Cause]:
    """`ValidateFinalizers`: qualified names; `orphan` and `foregroundDeletion` are exclusive."""
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [f.invalid(path, finalizers, "must be a list of strings")]
    causes: list[errors.Cause] = []
    for item in finalizers:
        if not isinstance(item, str):
            causes.append(f.invalid(path, item, "finalizers must be strings"))
        else:
            causes += f.invalid_each(path, item, names.qualified_name(item))
    if _ORPHAN in finalizers and _FOREGROUND in finalizers:
        causes.append(f.invalid(path, finalizers, f"finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set"))
    return causes


_STANDARD_FINALIZERS = ("kubernetes", _ORPHAN, _FOREGROUND)


def validate_kube_finalizer_names(finalizers: Any, path: str) -> list[errors.Cause]:
    """Built-in kinds only (pkg/apis/core/validation `ValidateObjectMeta` -> `validateKubeFinalizerName`,
    after the generic metadata checks): a finalizer without a `/` must be a standard one. kube-apiserver
    1.37.2 refuses a ConfigMap with finalizer `no-domain` (lwsconf fidelity deletion/delete-finalizers/
    create-bad-finalizer); custom resources take any qualified name."""
    causes: list[errors.Cause] = []
    for i, item in enumerate(finalizers if isinstance(finalizers, list) else []):
        if isinstance(item, str) and "/" not in item and item not in _STANDARD_FINALIZERS:
            causes.append(f.invalid(f"{path}[{i}]", item, "name is neither a standard finalizer name nor is it "
                                                          "fully qualified"))
    return causes


def validate_no_new_finalizers(meta: dict[str, Any], old_meta: dict[str, Any], path: str) -> list[errors.Cause]:
    """apimachinery `ValidateObjectMetaUpdate` -> `ValidateNoNewFinalizers`: once deletionTimestamp is set,
    an update may not add a finalizer (lwsconf fidelity deletion/delete-finalizers/
    add-finalizer-while-terminating); the names are printed as Go's `%#v` of the sorted list."""
    if not old_meta.get("deletionTimestamp"):
        return []
    old = {x for x in old_meta.get("finalizers") or [] if isinstance(x, str)}
    extra = sorted({x for x in meta.get("finalizers") or [] if isinstance(x, str)} - old)
    if not extra:
        return []
    listed = ", ".join(json.dumps(x) for x in extra)  # strconv.Quote, as %#v prints strings
    return [f.forbidden(path, f"no new finalizers can be added if the object is being deleted, "
                              f"found new finalizers []string{{{listed}}}")]


# --- label selectors ----------------------------------------------------------------------------

_SET_OPS = ("In", "NotIn")
_EXIST_OPS = ("Exists", "DoesNotExist")


def validate_label_selector(selector: Any, path: str) -> list[errors.Cause]:
    """`ValidateLabelSelector`: valid matchLabels, and values present exactly for In/NotIn."""
    sel = f.as_dict(selector)
    causes = validate_labels(sel.get("matchLabels"), f.child(path, "matchLabels"))
    for i, expr in f.dicts(sel.get("matchExpressions")):
        at = f.index(f.child(path, "matchExpressions"), i)
        op, values = expr.get("operator"), f.as_list(expr.get("values"))
        if op in _SET_OPS and not values:
            causes.append(f.required(f.child(at, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in _EXIST_OPS and values:
            causes.append(f.forbidden(f.child(at, "values"),
                                      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        elif op not in _SET_OPS + _EXIST_OPS:
            causes.append(f.invalid(f.child(at, "operator"), op, "not a valid selector operator"))
        causes += f.invalid_each(f.child(at, "key"), expr.get("key"), names.qualified_name(f.as_str(expr.get("key"))))
    return causes


def selector_is_empty(selector: Any) -> bool:
    sel = f.as_dict(selector)
    return not f.as_dict(sel.get("matchLabels")) and not f.as_list(sel.get("matchExpressions"))


def selector_matches(selector: Any, labels: Any) -> bool:
    """Whether a LabelSelector selects a label set (an empty selector selects everything)."""
    sel, have = f.as_dict(selector), f.as_dict(labels)
    if any(have.get(k) != v for k, v in f.as_dict(sel.get("matchLabels")).items()):
        return False
    for _, expr in f.dicts(sel.get("matchExpressions")):
        k, op, values = f.as_str(expr.get("key")), expr.get("operator"), f.as_list(expr.get("values"))
        present = k in have
        ok = {"In": present and have.get(k) in values, "NotIn": not present or have.get(k) not in values,
              "Exists": present, "DoesNotExist": not present}.get(f.as_str(op), False)
        if not ok:
            return False
    return True
