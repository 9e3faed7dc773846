"""Server-side apply: merge an applied configuration into the live object and track field ownership.

Enough of SSA for `kubectl apply --server-side` and for controllers that apply with a field manager:
the applied configuration is merged in (strategic semantics for built-ins: keyed lists merge by their
merge key, set lists union, maps merge; custom resources: maps merge, lists replace), ownership is
recorded in `metadata.managedFields` with the real FieldsV1 encoding (`f:<field>`, `k:{"name":"x"}`,
`v:"x"`, `.` markers), fields a manager stops applying are removed, and a field the apply changes that
another manager owns, whether it applied or updated it, is a 409 `FieldManagerConflict` cause unless `force`
is set (structured-merge-diff's `Updater.Apply`: the other managers' sets against the fields added or
modified; a forced apply takes them over, and fields it removes leave every entry). What a field is (atomic,
associative list and keys, set) comes from `fieldmanager.types`, the comparison from `fieldmanager.compare`,
both shared with the Update entries every other write records (`fieldmanager.entries`). No I/O here.

Simplified compared with sigs.k8s.io/structured-merge-diff, on purpose:
* The merge itself is strategic merge for built-ins (keyed lists by their single patch merge key) and JSON
  merge for custom resources (lists replace), not a schema-driven merge.
* Null values in the applied configuration are dropped (neither set nor owned).
* A field that its manager stops applying is removed only when no other manager owns it or anything
  beneath it; maps emptied by removals are left in place.
* Nothing is converted between API versions: `apiVersion` in an entry is recorded as given.
* `status` and other reset fields are merged as sent; the caller decides what a subresource may write.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.patch import merge_patches
from lwsconf.sim.apiserver.patch.fieldmanager import compare, types
from lwsconf.sim.apiserver.patch.fieldmanager.types import Path

STRIPPED: tuple[Path, ...] = (
    ("f:apiVersion",), ("f:kind",), ("f:metadata", "f:name"), ("f:metadata", "f:namespace"),
    ("f:metadata", "f:uid"), ("f:metadata", "f:resourceVersion"), ("f:metadata", "f:generation"),
    ("f:metadata", "f:creationTimestamp"), ("f:metadata", "f:selfLink"), ("f:metadata", "f:managedFields"),
)
"""Paths never owned by anyone (the apiserver's strip set for managed fields)."""


def server_side_apply(live: dict[str, Any] | None, applied: dict[str, Any], *, manager: str, force: bool,
                      kind: str, builtin: bool, api_version: str, now: str,
                      custom_schema: dict[str, Any] | None = None, subresource: str | None = None,
                      status_reset: bool = False) -> dict[str, Any]:
    """Apply `applied` for `manager` and return the new object with updated `managedFields`.

    Args:
        live: the stored object, or None when the apply creates it.
        applied: the decoded apply configuration (must carry apiVersion and kind).
        manager: the field manager; required.
        force: take ownership of conflicting fields instead of failing.
        kind: the resource's kind (must match `applied`), picking the strategic merge facts.
        builtin: False for custom resources (lists replace, no keyed merges).
        api_version: the apiVersion recorded in the manager's entry.
        now: RFC 3339 time recorded in the manager's entry ("" leaves it out).
        custom_schema: a custom resource's structural schema (its list and map types).
        subresource: "status" for an apply to /status: its entry names it, and it owns only status;
            `status_reset`: the kind has a status subresource, so an apply to the object owns no status.

    Raises:
        StatusError: 422 without a manager; 400 for a malformed configuration; 409 Conflict, with one
            `FieldManagerConflict` cause per field, when another manager owns a field the apply changes
            and `force` is false.
    """
    _check_applied(applied, kind, manager)
    config = _without_nulls(applied)
    root = types.of_kind(kind, custom_schema=custom_schema, builtin=builtin)
    mine = {p for p in owned_fields(config, root) if types.endpoint_owns(p, subresource, status_reset)}
    obj = copy.deepcopy(live) if live is not None else {}
    entries = _entries(obj)
    own = next((i for i, e in enumerate(entries) if e.get("manager") == manager and e.get("operation") == "Apply"
                and (e.get("subresource") or None) == subresource), None)
    sets = {i: decode(e.get("fieldsV1")) for i, e in enumerate(entries) if i != own}
    previous = decode(entries[own].get("fieldsV1")) if own is not None else set()
    _prune(obj, previous - mine, set().union(*sets.values()))
    if isinstance(obj.get("metadata"), dict):
        obj["metadata"].pop("managedFields", None)
    merged = (merge_patches.strategic_merge_patch(obj, config, kind=kind) if builtin
              else merge_patches.merge_patch(obj, config))
    diff = compare.compare(_without_managed_fields(live) if live is not None else {}, merged, root)
    changed = {p for p in diff.changed if p not in STRIPPED and p != ("f:metadata",)
               and types.endpoint_owns(p, subresource, status_reset)}
    conflicts = [(path, i) for i in sorted(sets) for path in sorted(sets[i] & changed)]
    if conflicts and not force and manager == KUBECTL:  # kubectl's migration from client-side apply
        allowed = _allowed_from_last_applied(live, root, api_version)
        conflicts = [(path, i) for path, i in conflicts if path not in allowed]
    if conflicts and not force:
        raise _conflict_error(conflicts, entries)
    if live is not None and merge_patches.identity(merged) == merge_patches.identity(_without_managed_fields(live)):
        # an apply that changes nothing leaves its manager's time as it was (none for a new manager), as
        # the apiserver's managedFieldsUpdater stamps the time only when the object changed
        now = str(entries[own].get("time") or "") if own is not None else ""
    entry = {"manager": manager, "operation": "Apply", "apiVersion": api_version, "time": now,
             "fieldsType": "FieldsV1", "fieldsV1": encode(mine), "subresource": subresource or ""}
    kept = []
    for i, e in enumerate(entries):
        if i == own:
            continue
        left = sets[i] - changed - {p for p in diff.removed if types.endpoint_owns(p, subresource, status_reset)}
        if left:
            kept.append(e if left == sets[i] else {**e, "fieldsV1": encode(left)})
    _set_entries(merged, [*kept, *([{k: v for k, v in entry.items() if v != ""}] if mine else [])])
    if manager == KUBECTL and _last_applied(merged):
        merged["metadata"].setdefault("annotations", {})[LAST_APPLIED] = last_applied_of(applied)
    return merged


# --- kubectl's move from client-side to server-side apply ------------------------------------------------

KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _last_applied(obj: dict[str, Any] | None) -> str:
    annotations = ((obj or {}).get("metadata") or {}).get("annotations")
    return str(annotations.get(LAST_APPLIED) or "") if isinstance(annotations, dict) else ""


def _allowed_from_last_applied(live: dict[str, Any] | None, root: types.FieldType, api_version: str) -> set[Path]:
    """The conflicts an apply by manager `kubectl` may take over (apimachinery managedfields
    `lastAppliedManager.allowedConflictsFromLastApplied`): the fields of the object's client-side
    last-applied-configuration whose values the live object still has, so `kubectl apply --server-side` after
    `kubectl apply` succeeds without --force-conflicts. None when the annotation is missing, not JSON, or of
    another apiVersion."""
    text = _last_applied(live)
    try:
        last = json.loads(text) if text else None
    except ValueError:
        return set()
    if not isinstance(last, dict) or last.get("apiVersion") != api_version or live is None:
        return set()
    differ = compare.compare(last, _without_managed_fields(live), root)
    return owned_fields(_without_nulls(last), root) - differ.changed - differ.removed


def last_applied_of(applied: dict[str, Any]) -> str:
    """The annotation `lastAppliedUpdater` writes after an apply by `kubectl` to an object that has one: the
    applied configuration without that annotation, as Go's encoding/json writes an unstructured object (keys
    sorted, no spaces, <, > and & escaped, a newline at the end); an annotations map the configuration gave
    stays, even when it held only that annotation (`SetAnnotations` drops only a nil map)."""
    config = copy.deepcopy(applied)
    meta = config.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        meta["annotations"].pop(LAST_APPLIED, None)
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _check_applied(applied: Any, kind: str, manager: str) -> None:
    if not manager:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", [errors.Cause(
            "fieldManager", "Required value: is required for apply patch; pass ?fieldManager=<name> "
            "(kubectl sets it with --field-manager)", reason="FieldValueRequired")])
    if not isinstance(applied, dict):
        raise errors.bad_request("an apply patch must be one object (a YAML or JSON map)")
    if not applied.get("apiVersion") or not applied.get("kind"):
        raise errors.bad_request("an apply patch must set apiVersion and kind (for example apiVersion: v1 "
                                 "and kind: Pod)")
    if applied["kind"] != kind:  # managedfields internal/versioncheck.go: the applied GroupVersionKind
        version = str(applied["apiVersion"])
        raise errors.bad_request(f"invalid object type: {version if '/' in version else '/' + version}, "
                                 f"Kind={applied['kind']}")
    metadata = applied.get("metadata", {})
    if not isinstance(metadata, dict):
        raise errors.bad_request("metadata in an apply patch must be an object")
    if metadata.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil in an apply patch; remove it from the "
                                 "applied configuration")


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    metadata = obj.get("metadata")
    found = metadata.get("managedFields") if isinstance(metadata, dict) else None
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def _set_entries(obj: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return
    if not entries:
        metadata.pop("managedFields", None)
        return
    metadata["managedFields"] = sorted(entries, key=lambda e: tuple(str(e.get(k, "")) for k in (
        "operation", "time", "manager", "apiVersion", "subresource")))


# --- field sets --------------------------------------------------------------------------------------

def owned_fields(config: dict[str, Any], root: types.FieldType) -> set[Path]:
    """The set of fields an applied configuration claims (structured-merge-diff's `ToFieldSet`: leaves,
    atomic and empty maps and lists, list elements; metadata identity fields excluded).

    Raises:
        StatusError: 400 when a keyed list element lacks its merge key.
    """
    out: set[Path] = set()
    _walk(config, root, (), out)
    return {p for p in out if p != ("f:metadata",) and not any(p[:len(s)] == s for s in STRIPPED)}


def _walk(obj: dict[str, Any], t: types.FieldType, path: Path, out: set[Path]) -> None:
    for key, value in obj.items():
        here = (*path, f"f:{key}")
        field = t.child(key)
        if isinstance(value, dict) and value and not field.atomic:
            _walk(value, field, here, out)
        elif isinstance(value, list) and value and field.granular_list and not field.atomic:
            item_type = field.item()
            for item in value:
                item_path = (*here, _element(item, field, here))
                out.add(item_path)
                if isinstance(item, dict) and not item_type.atomic:
                    _walk(item, item_type, item_path, out)
        else:
            out.add(here)


def _element(item: Any, field: types.FieldType, path: Path) -> str:
    found = compare.element(item, field)
    if found is not None:
        return found
    if field.as_set:
        raise errors.bad_request(f"{render(path)} is a set of scalars, got {item!r}")
    missing = [k for k in field.keys if not isinstance(item, dict) or (k not in item and k not in field.key_defaults)]
    raise errors.bad_request(f"{render(path)}: associative list with keys has an element that omits key "
                             f"field {(missing or list(field.keys))[0]!r}: {item!r}")


def encode(paths: Iterable[Path]) -> dict[str, Any]:
    """FieldsV1 JSON for a set of paths: `{}` leaves, `".": {}` on members that also have children."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    return _render_tree(tree)


def _render_tree(node: dict[str, Any]) -> dict[str, Any]:
    children = {k: _render_tree(v) for k, v in sorted(node.items()) if k != "."}
    return {".": {}, **children} if "." in node and children else children


def decode(fields: Any, prefix: Path = ()) -> set[Path]:
    """The member paths of a FieldsV1 document (anything malformed is skipped)."""
    out: set[Path] = set()
    if not isinstance(fields, dict):
        return out
    for key, value in fields.items():
        if key == ".":
            if prefix:
                out.add(prefix)
        elif isinstance(value, dict) and value:
            out |= decode(value, (*prefix, key))
        else:
            out.add((*prefix, key))
    return out


def render(path: Path) -> str:
    """The path as structured-merge-diff prints it: `.spec.containers[name="a"].image`."""
    out = []
    for element in path:
        tag, _, raw = element.partition(":")
        if tag == "f":
            out.append(f".{raw}")
        elif tag == "k":
            pairs = _json(raw)
            pairs = pairs if isinstance(pairs, dict) else {}
            out.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in pairs.items()) + "]")
        else:
            out.append(f"[={raw}]" if tag == "v" else f"[{raw}]")
    return "".join(out)


def _json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


# --- resolving paths in objects ------------------------------------------------------------------------

_MISSING = object()


def _get(obj: Any, path: Path) -> Any:
    cur = obj
    for element in path:
        at = _locate(cur, element)
        if at is None:
            return _MISSING
        cur = cur[at]
    return cur


def _locate(container: Any, element: str) -> Any:
    """The dict key or list index that `element` names in `container`, or None."""
    tag, _, raw = element.partition(":")
    if tag == "f":
        return raw if isinstance(container, dict) and raw in container else None
    if not isinstance(container, list):
        return None
    if tag == "i":
        return int(raw) if raw.isascii() and raw.isdigit() and int(raw) < len(container) else None
    want = _json(raw)
    for i, item in enumerate(container):
        if tag == "v" and merge_patches.identity(item) == merge_patches.identity(want):
            return i
        if tag == "k" and isinstance(want, dict) and isinstance(item, dict) and all(
                k in item and merge_patches.identity(item[k]) == merge_patches.identity(v)
                for k, v in want.items()):
            return i
    return None


def _prune(obj: dict[str, Any], removed: set[Path], kept: set[Path]) -> None:
    """Remove fields nobody applies any more, unless another manager owns them or something below."""
    protected = {q[:i] for q in kept for i in range(1, len(q) + 1)}
    for path in sorted(removed, key=len):
        if path in protected:
            continue
        parent = _get(obj, path[:-1])
        at = _locate(parent, path[-1]) if parent is not _MISSING else None
        if at is not None:
            del parent[at]


# --- conflicts -------------------------------------------------------------------------------------

def _conflict_error(conflicts: list[tuple[Path, int]], entries: list[dict[str, Any]]) -> errors.StatusError:
    """409 worded as the apiserver's `getConflictMessage` (kubectl adds the advice to use --force-conflicts)."""
    owners = [_print_manager(entries[i]) for _, i in conflicts]
    causes = [errors.Cause(render(path), f"conflict with {owner}", reason="FieldManagerConflict")
              for (path, _), owner in zip(conflicts, owners, strict=True)]
    if len(causes) == 1:
        summary = f"Apply failed with 1 conflict: {causes[0].message}: {causes[0].field}"
    else:
        lines = [f"Apply failed with {len(causes)} conflicts:"]
        for owner in sorted(set(owners)):
            lines += [f"conflicts with {owner}:", *(f"- {c.field}" for c in causes if c.message.endswith(owner))]
        summary = "\n".join(lines)
    return errors.StatusError(409, "Conflict", summary, causes=causes)


def _print_manager(entry: dict[str, Any]) -> str:
    """A manager as the apiserver's `printManager` names it: quoted, with its subresource, and for an
    Update manager the apiVersion it wrote (`"dave" using v1`)."""
    out = json.dumps(str(entry.get("manager") or ""))
    if entry.get("subresource"):
        out += f" with subresource {json.dumps(str(entry['subresource']))}"
    if entry.get("operation") == "Update":
        out += f" using {entry.get('apiVersion') or ''}"
    return out
