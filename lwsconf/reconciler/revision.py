"""ControllerRevisions of a LeaderWorkerSet: snapshot, key, semantic equality, naming and retention.

The snapshot (docs/lws-contract.md section 2.5) is a strategic-merge-patch document holding only
`spec.leaderWorkerTemplate` and `spec.networkConfig` (nil normalised to `{subdomainPolicy: Shared}`),
each marked `"$patch": "replace"`. Its key, the `template-revision-hash` label, is 32-bit FNV-1 (Go's
`hash/fnv.New32`, not FNV-1a) over the serialised bytes, printed in decimal and mapped byte by byte
through `bcdfghjklmnpqrstvwxz2456789`. Serialisation follows Go's `json.Marshal` of a map (sorted keys,
compact, `<>&` escaped) so keys look like upstream's, but keys are not portable (trap T6): whether the
spec changed is decided by `semantically_equal`, which ignores serialisation drift. No I/O here.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from lwsconf.reconciler import events, labels, names, spec

Obj = dict[str, Any]

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
PATCH_KEY = "$patch"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_QUANTITY_KEYS = frozenset({"requests", "limits", "capacity", "overhead"})
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "k": Fraction(10**3),
            "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12), "P": Fraction(10**15),
            "E": Fraction(10**18)}


def fnv1_32(data: bytes) -> int:
    """32-bit FNV-1: multiply by the prime, then xor the byte (FNV-1a does the opposite order)."""
    h = _FNV32_OFFSET
    for byte in data:
        h = (h * _FNV32_PRIME) & 0xFFFFFFFF
        h ^= byte
    return h


def safe_encode(text: str) -> str:
    """Map every byte of `text` to ALPHABET[byte % 27] (apimachinery's `rand.SafeEncodeString`)."""
    return "".join(ALPHABET[b % len(ALPHABET)] for b in text.encode())


def go_json(value: Any) -> bytes:
    """Bytes as Go's `json.Marshal` writes a decoded map: sorted keys, no spaces, HTML characters escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text.encode()


def key_of_bytes(data: bytes) -> str:
    """The revision key of serialised snapshot bytes: safe-encoded decimal FNV-1."""
    return safe_encode(str(fnv1_32(data)))


def snapshot(lws: Mapping[str, Any]) -> Obj:
    """The revision data of an LWS: leaderWorkerTemplate and networkConfig, each `$patch: replace`."""
    source = lws.get("spec") or {}
    template = copy.deepcopy(source.get("leaderWorkerTemplate") or {})
    network = copy.deepcopy(source.get("networkConfig") or {})
    if not network.get("subdomainPolicy"):
        network["subdomainPolicy"] = labels.SUBDOMAIN_SHARED
    template[PATCH_KEY] = "replace"
    network[PATCH_KEY] = "replace"
    return {"spec": {"leaderWorkerTemplate": template, "networkConfig": network}}


def snapshot_key(lws: Mapping[str, Any]) -> str:
    """The key a new revision of this LWS would get."""
    return key_of_bytes(go_json(snapshot(lws)))


def data_of(revision: Mapping[str, Any]) -> Obj:
    """A ControllerRevision's `data` as a dict (accepts the JSON text form of a RawExtension too)."""
    data = revision.get("data")
    if isinstance(data, str | bytes):
        data = json.loads(data)
    return data if isinstance(data, dict) else {}


def key_of(obj: Mapping[str, Any]) -> str:
    """The `template-revision-hash` label of any object ("" when absent)."""
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(labels.TEMPLATE_REVISION_HASH, ""))


def parse_quantity(value: Any) -> Fraction | None:
    """The value of a Kubernetes quantity ("500m", "1Gi", "2e3", 4), or None when it is not one."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Fraction(value)
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if not match:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    if suffix:
        exponent = int(suffix[1:])
        scale = Fraction(10) ** exponent
        return number * scale
    return number


def normalize(value: Any) -> Any:
    """A canonical form for semantic comparison (apimachinery's Semantic.DeepEqual after a Go round trip).

    Drops nulls and empty maps/lists (nil and empty are equal there; `creationTimestamp: null` is Go's
    serialisation of an unset time), and compares quantities inside `requests`/`limits`/`capacity`/
    `overhead` maps and `sizeLimit` by value ("1000m" == "1"). Everything else, "" and 0 included, counts.
    """
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _QUANTITY_KEYS and isinstance(item, dict):
                norm = {k: _canonical_quantity(v) for k, v in item.items() if v is not None} or None
            elif key == "sizeLimit":
                norm = None if item is None else _canonical_quantity(item)
            else:
                norm = normalize(item)
            if norm is not None:
                out[key] = norm
        return out or None
    if isinstance(value, list):
        return [normalize(item) for item in value] or None
    return value


def _canonical_quantity(value: Any) -> Any:
    parsed = parse_quantity(value)
    return ("quantity", parsed) if parsed is not None else value


def _normalized_data(source: Mapping[str, Any]) -> Any:
    data = copy.deepcopy(dict(source))
    body = data.setdefault("spec", {})
    network = body.get("networkConfig") or {}
    if not network.get("subdomainPolicy"):
        network = {**network, "subdomainPolicy": labels.SUBDOMAIN_SHARED}
    network.setdefault(PATCH_KEY, "replace")
    body["networkConfig"] = network
    return normalize(data)


def semantically_equal(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """Whether two snapshots describe the same spec (section 4.4.1: drift is not an update)."""
    return bool(_normalized_data(left) == _normalized_data(right))


def lws_matches(lws: Mapping[str, Any], revision: Mapping[str, Any]) -> bool:
    """Whether the LWS's current snapshot is semantically the one stored in `revision`."""
    return semantically_equal(snapshot(lws), data_of(revision))


def apply_revision(lws: Mapping[str, Any], revision: Mapping[str, Any]) -> Obj:
    """The LWS with `spec.leaderWorkerTemplate` and `spec.networkConfig` restored from `revision`."""
    restored = copy.deepcopy(dict(lws))
    saved = data_of(revision).get("spec") or {}
    target = restored.setdefault("spec", {})
    for field in ("leaderWorkerTemplate", "networkConfig"):
        if field in saved:
            value = copy.deepcopy(saved[field])
            if isinstance(value, dict):
                value.pop(PATCH_KEY, None)
            target[field] = value
    return restored


def owned(revisions: Iterable[Mapping[str, Any]], lws: Mapping[str, Any]) -> list[Obj]:
    """Revisions labelled with the LWS's name and controlled by it (or by nothing), as upstream lists them."""
    meta = lws.get("metadata") or {}
    out = []
    for rev in revisions:
        rmeta = rev.get("metadata") or {}
        if (rmeta.get("labels") or {}).get(labels.NAME) != meta.get("name"):
            continue
        controller = [r for r in rmeta.get("ownerReferences") or () if r.get("controller")]
        if not controller or controller[0].get("uid") == meta.get("uid"):
            out.append(dict(rev))
    return out


def find(revisions: Iterable[Mapping[str, Any]], key: str) -> Obj | None:
    """The revision with this key (the highest-numbered one if several), or None; "" finds nothing."""
    matches = [dict(r) for r in revisions if key and key_of(r) == key]
    return max(matches, key=lambda r: int(r.get("revision") or 0)) if matches else None


def next_number(revisions: Iterable[Mapping[str, Any]]) -> int:
    """1 for the first revision, then the highest existing `revision` + 1."""
    return max((int(r.get("revision") or 0) for r in revisions), default=0) + 1


def new_revision(lws: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]], *, key: str | None = None) -> Obj:
    """A ControllerRevision object for the LWS's current spec, numbered after `revisions`.

    Args:
        lws: the LeaderWorkerSet.
        revisions: its existing (owned) revisions, for numbering.
        key: the label value to use instead of the computed hash (adoption of a leader StatefulSet's key,
            section 2.5); the name always uses the computed hash.
    """
    data = snapshot(lws)
    computed = key_of_bytes(go_json(data))
    number = next_number(revisions)
    meta = lws.get("metadata") or {}
    return {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {
            "name": names.revision_name(str(meta.get("name", "")), computed, number),
            "namespace": meta.get("namespace", ""),
            "labels": {labels.NAME: meta.get("name", ""), labels.TEMPLATE_REVISION_HASH: key or computed},
            "ownerReferences": [spec.owner_reference(lws, api_version=spec.API_VERSION, kind=spec.KIND)],
        },
        "data": data,
        "revision": number,
    }


def to_delete(revisions: Iterable[Mapping[str, Any]], current_key: str, *, update_done: bool) -> list[Obj]:
    """Revisions to delete: every one not carrying `current_key`, but only once the update is done."""
    if not update_done:
        return []
    return [dict(r) for r in revisions if key_of(r) != current_key]


@dataclass(frozen=True)
class RevisionPlan:
    """Which revision the reconcile works with, and whether it must be created first."""

    current_key: str
    create: Obj | None
    updated_now: bool
    event: events.Event | None


def plan(lws: Mapping[str, Any], leader_sts: Mapping[str, Any] | None,
         revisions: Sequence[Mapping[str, Any]]) -> RevisionPlan:
    """Decide the current revision (sections 2.5, 4.4.1): reuse, adopt the leader StatefulSet's key, or create.

    Args:
        lws: the LeaderWorkerSet.
        leader_sts: the leader StatefulSet `N`, or None when it does not exist.
        revisions: the LWS's owned revisions (see `owned`).
    """
    sts_key = key_of(leader_sts) if leader_sts is not None else ""
    existing = find(revisions, sts_key)
    if existing is None and sts_key:
        created = new_revision(lws, revisions, key=sts_key)
        return RevisionPlan(sts_key, created, False, events.creating_revision(sts_key, cause="missing"))
    if existing is not None and lws_matches(lws, existing):
        return RevisionPlan(sts_key, None, False, None)
    updated = existing is not None
    # Reuse a matching revision newer than the one in use: an earlier reconcile created it and failed before
    # the leader StatefulSet moved to it. An older match is a rollback and gets a new number, as upstream.
    floor = int(existing.get("revision") or 0) if existing is not None else -1
    reusable = [r for r in revisions if int(r.get("revision") or 0) > floor and lws_matches(lws, r)]
    if reusable:
        best = max(reusable, key=lambda r: int(r.get("revision") or 0))
        return RevisionPlan(key_of(best), None, updated, None)
    created = new_revision(lws, revisions)
    cause = "updated" if updated else "new"
    return RevisionPlan(key_of(created), created, updated, events.creating_revision(key_of(created), cause=cause))
