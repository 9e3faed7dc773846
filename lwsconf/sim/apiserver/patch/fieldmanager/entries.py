"""`metadata.managedFields` after one create, update or non-apply patch, as kube-apiserver's field manager
writes it (k8s.io/apimachinery/pkg/util/managedfields/internal and structured-merge-diff `merge.Updater`).

For a write by `manager` (the request's `fieldManager`, else the User-Agent up to its first "/": the
apiserver's `managerOrUserAgent`):

* the starting entries are the ones the request sent, when it sent any and is not a subresource write, else
  the stored ones (`FieldManager.Update`: clients unaware of managedFields cannot wipe it; sending `[{}]`
  therefore resets it: one empty entry, dropped below);
* the write is compared with the stored object (a create: with the kind's empty object); the fields it added
  or modified leave every entry, and so do the fields it removed (`Updater.update` with force);
* the added and modified fields join the writer's `Update` entry for the same manager, apiVersion and
  subresource (`managedFieldsUpdater`: a write that changed nothing leaves the entries and their times alone),
  which gets the write's time;
* entries left with no field are dropped, the rest sorted by operation, time, manager, apiVersion and
  subresource (`sortEncodedManagedFields`).

Fields nobody owns are never recorded: apiVersion, kind and the metadata the server sets (the strip set of
`stripMetaManager`), and the fields a subresource resets (`status` through the main resource, everything but
`status` through `/status`: the strategies' `GetResetFields`).

More than ten Update entries are capped (`cap`, the apiserver's `capManagersManager`).

Simplified: a manager's entry keeps the apiVersion it was written with and nothing is converted between
versions; managedFields a request sends are used as given, not validated. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lwsconf.sim.apiserver.patch import apply
from lwsconf.sim.apiserver.patch.fieldmanager import cap, compare, types
from lwsconf.sim.apiserver.patch.fieldmanager.types import Path

FIELD_MANAGER_MAX = 128
"""apimachinery's FieldManagerMaxLength: a manager taken from the User-Agent is cut to it."""


def manager_name(field_manager: str, user_agent: str) -> str:
    """The manager of an Update: `?fieldManager=`, else the User-Agent's part before the first "/",
    unprintable characters left out, at most 128 bytes (handlers' `prefixFromUserAgent`)."""
    if field_manager:
        return field_manager
    out = ""
    for ch in user_agent.split("/")[0]:
        if not ch.isprintable():
            continue
        if len((out + ch).encode()) > FIELD_MANAGER_MAX:
            break
        out += ch
    return out


def stripped(path: Path) -> bool:
    """A path no manager owns: the apiserver's strip set (exact paths, not what lies beneath them)."""
    return path == ("f:metadata",) or path in apply.STRIPPED


def record_update(old: dict[str, Any] | None, new: dict[str, Any], *, manager: str, api_version: str,
                  subresource: str | None, now: str, kind: str, builtin: bool,
                  custom_schema: dict[str, Any] | None = None, status_reset: bool = False,
                  sent: dict[str, Any] | None = None, status_keeps: tuple[str, ...] | None = None) -> None:
    """Set `new`'s `metadata.managedFields` for this write (`new` is changed in place).

    Args:
        old: the stored object, or None for a create.
        new: the object to be stored, decoded and defaulted, before mutating admission.
        manager: the writer (`manager_name`).
        api_version: the apiVersion the request was served in.
        subresource: "status" or "scale" for a subresource write, else None.
        now: RFC 3339 time of the writer's entry; "" for none (a /scale write: the scale handler's
            conversion back to the parent's entries drops it, as kube-apiserver 1.37.2 answers).
        kind, builtin, custom_schema: the object's type (`types.of_kind`).
        status_reset: the kind has a status subresource, so a main-resource write owns no status.
        sent: the object as the client sent it, before defaulting: fields kube-apiserver sets only after
            its field manager (`types.SET_AFTER_DECODING`) count only when sent.
        status_keeps: for a built-in kind whose status strategy keeps metadata (`ResourceInfo.status_write_resets`),
            the metadata fields it resets: a status write then owns metadata as well, less those.
    """
    meta = new.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return
    requested = meta.get("managedFields")
    base = requested if isinstance(requested, list) and requested and not subresource else (
        ((old or {}).get("metadata") or {}).get("managedFields"))
    entries = [e for e in base if isinstance(e, dict)] if isinstance(base, list) else []
    if old is not None and not entries:
        # kube-apiserver's skipNonAppliedManager (apimachinery managedfields/internal/skipnonapplied.go): an
        # update of an object that has no managed fields tracks none; only an apply starts them again (lwsconf
        # fidelity crud/crud-serviceaccounts/replace: a ServiceAccount created with nothing to own, relabelled)
        meta.pop("managedFields", None)
        return
    before = _without_managed_fields(old) if old is not None else types.empty_object(kind, builtin=builtin)
    after = _without_managed_fields(new) if sent is None else types.as_decoded(kind, _without_managed_fields(new), sent)
    diff = compare.compare(before, after,
                           types.of_kind(kind, custom_schema=custom_schema, builtin=builtin))
    changed = _owned(diff.changed, subresource, status_reset, status_keeps)
    removed = _owned(diff.removed, subresource, status_reset, status_keeps)
    mine_key = (manager, "Update", api_version, subresource or "")
    mine: set[Path] = set()
    kept: list[dict[str, Any]] = []
    for entry in entries:
        owned = apply.decode(entry.get("fieldsV1"))
        fields = owned - changed - removed
        if changed and _key(entry) == mine_key:
            mine |= fields
        elif fields:
            kept.append(entry if fields == owned else {**entry, "fieldsV1": apply.encode(fields)})
    if changed:
        entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": now,
                 "fieldsType": "FieldsV1", "fieldsV1": apply.encode(mine | changed)}
        if not now:
            del entry["time"]
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    set_entries(meta, cap.cap_update_managers(kept))


def set_entries(meta: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    """Store `entries` sorted as the apiserver encodes them; no entry means no managedFields at all."""
    if not entries:
        meta.pop("managedFields", None)
        return
    meta["managedFields"] = sorted(entries, key=lambda e: tuple(str(e.get(k) or "") for k in (
        "operation", "time", "manager", "apiVersion", "subresource")))


def _key(entry: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(entry.get("manager") or ""), str(entry.get("operation") or ""), str(entry.get("apiVersion") or ""),
            str(entry.get("subresource") or ""))


def _owned(paths: Iterable[Path], subresource: str | None, status_reset: bool,
           status_keeps: tuple[str, ...] | None = None) -> set[Path]:
    """The paths a write may own: not stripped, and not reset by the endpoint it came through."""
    return {p for p in paths if p and not stripped(p) and types.endpoint_owns(p, subresource, status_reset,
                                                                             status_keeps)}


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
