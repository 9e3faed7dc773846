"""What a DisaggregatedSet owns, as the API should hold it: names, labels, the revision, and the LeaderWorkerSet,
Service and DisaggregatedSetRoleScaler it makes (contract sections 2.1-2.5, 3, 4.5, 4.6). Pure: dicts in,
dicts out.

Why the controller builds whole objects here and only ever patches `spec.replicas` afterwards: a new revision
is a new set of LWS objects (the rollout moves replicas between them, `planner`), so an LWS's template is fixed
at creation, placement terms included (trap DT15).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from lwsconf import disaggapi, lwsapi

Obj = dict[str, Any]


def revision(roles: Sequence[Mapping[str, Any]]) -> str:
    """The set's revision `h`: 8 hex characters over the role names, in order, and their LWS templates (2.5).

    Only what rolls counts (DT4): replicas, rollout strategy, startup policy, network config, role metadata,
    scaling, slices and placement do not. The bytes differ from upstream's (Go's JSON of its types): a revision
    is only ever compared with another of the same controller, and tests never spell one out (DT3)."""
    material = [{"name": r["name"], "template": (r.get("spec") or {}).get("leaderWorkerTemplate")} for r in roles]
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def lws_name(ds: str, slice_index: int, rev: str, role: str) -> str:
    return f"{ds}-{slice_index}-{rev}-{role}"


def service_name(lws: str) -> str:
    return lws + disaggapi.SERVICE_SUFFIX


def scaler_name(ds: str, role: str) -> str:
    return f"{ds}-{role}"


def labels(ds: str, role: str, slice_index: int, rev: str) -> dict[str, str]:
    """The five labels on an LWS and its pod templates (so on every pod of the role): section 2.2."""
    return {disaggapi.NAME: ds, disaggapi.ROLE: role, disaggapi.SLICE: str(slice_index), disaggapi.REVISION: rev,
            disaggapi.APP: f"{ds}-{slice_index}-{role}"}


def service_selector(ds: str, role: str, slice_index: int, rev: str) -> dict[str, str]:
    """A role Service's selector and labels: exactly the pods of one LWS (2.3)."""
    return {disaggapi.NAME: ds, disaggapi.ROLE: role, disaggapi.REVISION: rev, disaggapi.SLICE: str(slice_index)}


def owner(ds_obj: Mapping[str, Any], *, block: bool = False) -> Obj:
    """The controller reference to the set; only scalers block their owner's foreground deletion (2.6)."""
    ref: Obj = {"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.KIND, "name": ds_obj["metadata"]["name"],
                "uid": ds_obj["metadata"]["uid"], "controller": True}
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


def controlled_by(obj: Mapping[str, Any], uid: str) -> bool:
    """Whether `obj`'s controller reference names the set of `uid` (main manages only those, contract 2.6)."""
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in obj.get("metadata", {}).get("ownerReferences") or [])


def _requirement(key: str, operator: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def placement_terms(policy: Mapping[str, Any] | None, ds: str, slice_index: int) -> tuple[list[Obj], list[Obj]]:
    """(required podAffinity terms, required podAntiAffinity terms) a placement policy adds (4.5); none for
    None, no policy, or no topology key."""
    kind = (policy or {}).get("type") or disaggapi.PLACEMENT_NONE
    topology = (policy or {}).get("topology") or ""
    if kind == disaggapi.PLACEMENT_NONE or not topology:
        return [], []
    own = str(slice_index)
    together = {"labelSelector": {"matchExpressions": [_requirement(disaggapi.NAME, "In", ds),
                                                       _requirement(disaggapi.SLICE, "In", own)]},
                "topologyKey": topology}
    # An unlabelled (pre-slices) pod counts as slice 0: slice 0 must not repel it, so its term needs the label.
    spread = [_requirement(disaggapi.NAME, "In", ds),
              *([_requirement(disaggapi.SLICE, "Exists")] if slice_index == 0 else []),
              _requirement(disaggapi.SLICE, "NotIn", own)]
    apart = [{"labelSelector": {"matchExpressions": spread}, "topologyKey": topology}]
    if kind == disaggapi.PLACEMENT_EXCLUSIVE_TOPOLOGY:
        apart.append({"labelSelector": {"matchExpressions": [
            _requirement(disaggapi.NAME, "Exists"), _requirement(disaggapi.NAME, "NotIn", ds),
            _requirement(disaggapi.SLICE, "Exists")]}, "topologyKey": topology})
    return [together], apart


def _stamp(template: Obj, stamped: Mapping[str, str], terms: tuple[list[Obj], list[Obj]]) -> None:
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **stamped}
    together, apart = terms
    if not together and not apart:
        return
    affinity = template.setdefault("spec", {}).setdefault("affinity", {})
    for field, added in (("podAffinity", together), ("podAntiAffinity", apart)):
        required = affinity.setdefault(field, {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
        required.extend(copy.deepcopy(added))  # after the user's own terms


def build_lws(ds_obj: Mapping[str, Any], role: Mapping[str, Any], slice_index: int, rev: str,
              replicas: int) -> Obj:
    """The LWS of one (slice, revision, role) at `replicas` (2.2): the role's spec as stored, its metadata's
    labels under ours and its annotations, our labels over both pod templates', the placement terms."""
    ds = ds_obj["metadata"]["name"]
    stamped = labels(ds, role["name"], slice_index, rev)
    spec = copy.deepcopy(dict(role.get("spec") or {}))
    spec["replicas"] = replicas
    template = spec.setdefault("leaderWorkerTemplate", {})
    terms = placement_terms((ds_obj.get("spec") or {}).get("placementPolicy"), ds, slice_index)
    for key in ("workerTemplate", "leaderTemplate"):
        if key in template:
            _stamp(template[key], stamped, terms)
    role_meta = role.get("metadata") or {}
    meta: Obj = {"name": lws_name(ds, slice_index, rev, role["name"]), "namespace": ds_obj["metadata"]["namespace"],
                 "labels": {**(role_meta.get("labels") or {}), **stamped}, "ownerReferences": [owner(ds_obj)]}
    if role_meta.get("annotations"):
        meta["annotations"] = dict(role_meta["annotations"])
    return {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND, "metadata": meta, "spec": spec}


def build_service(ds_obj: Mapping[str, Any], role: str, slice_index: int, rev: str) -> Obj:
    """The headless, portless Service of one LWS: ready pods only (no publishNotReadyAddresses), 2.3."""
    ds = ds_obj["metadata"]["name"]
    selector = service_selector(ds, role, slice_index, rev)
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": service_name(lws_name(ds, slice_index, rev, role)),
                         "namespace": ds_obj["metadata"]["namespace"], "labels": dict(selector),
                         "ownerReferences": [owner(ds_obj)]},
            "spec": {"clusterIP": "None", "selector": selector}}


def build_scaler(ds_obj: Mapping[str, Any], role: str, replicas: int) -> Obj:
    """The DisaggregatedSetRoleScaler of an External role, seeded at `replicas` (2.4, 4.6)."""
    ds = ds_obj["metadata"]["name"]
    return {"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.SCALER_KIND,
            "metadata": {"name": scaler_name(ds, role), "namespace": ds_obj["metadata"]["namespace"],
                         "labels": {disaggapi.NAME: ds, disaggapi.ROLE: role},
                         "ownerReferences": [owner(ds_obj, block=True)]},
            "spec": {"replicas": replicas}}


def scaler_selector(ds: str, role: str) -> str:
    """The scaler's status.selector: the role's leader pods of every revision (HPA counts groups, 4.6)."""
    return f"{disaggapi.NAME}={ds},{disaggapi.ROLE}={role},{lwsapi.WORKER_INDEX}=0"


def seed_replicas(role_lws: Sequence[Mapping[str, Any]]) -> int:
    """A new scaler's spec.replicas: 1 for a role without LWS (an HPA at 0 stops scaling), else the role's
    current size, the sum of its LWS spec.replicas over every revision, an unset one counting 1 (4.6)."""
    if not role_lws:
        return 1
    return sum(int((o.get("spec") or {}).get("replicas", 1)) for o in role_lws)


def is_external(role: Mapping[str, Any]) -> bool:
    return (role.get("scaling") or {}).get("mode") == disaggapi.SCALING_EXTERNAL


def target(role: Mapping[str, Any], scaler: Mapping[str, Any] | None) -> int | None:
    """A role's wanted replicas per slice: its spec.replicas (1 when unset) when Static; the scaler's
    spec.replicas when External, None while it has no usable scaler (the role then holds its size)."""
    if not is_external(role):
        return int((role.get("spec") or {}).get("replicas", 1))
    if scaler is None:
        return None
    return int((scaler.get("spec") or {}).get("replicas", 0))
