"""Adoption and release of dependents by controller reference, as `ControllerRefManager.ClaimObject` does.

kube-controller-manager's ReplicaSet controller claims pods and its Deployment controller claims
ReplicaSets the same way (pkg/controller/controller_ref_manager.go): an object already controlled by the
owner is kept while the owner's selector matches it and released (its reference removed) once it stops
matching; an orphan that matches is adopted (a controller reference added) unless the owner or the orphan
is being deleted; an object controlled by someone else is never touched. The decision is pure (`claim`);
`adopt` and `release` write it, each a merge patch carrying the object's resourceVersion so a concurrent
change turns into a conflict and a later pass, never a lost update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.controllers.common import workloads as wl
from lwsconf.sim.controllers.scheduler import filters

Obj = dict[str, Any]


@dataclass
class Claim:
    """What one owner controls after a claim pass: kept (already its own and matching), to adopt, to release."""

    owned: list[Obj] = field(default_factory=list)
    adopt: list[Obj] = field(default_factory=list)
    release: list[Obj] = field(default_factory=list)


def claim(owner: Obj, selector: Obj | None, candidates: list[Obj]) -> Claim:
    """Sort `candidates` (objects of the owner's namespace) as `ClaimObject` would for `owner`."""
    uid = wl.meta(owner).get("uid")
    owner_deleting = wl.is_terminating(owner)
    out = Claim()
    for obj in candidates:
        ref = wl.controller_ref(obj)
        matches = filters.selector_matches(selector, wl.labels(obj))
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches:
                out.owned.append(obj)
            elif not owner_deleting:
                out.release.append(obj)
            continue
        if matches and not owner_deleting and not wl.is_terminating(obj):
            out.adopt.append(obj)
    return out


async def adopt(client: kc.Client, gvr: kc.GVR, obj: Obj, owner: Obj, kind: str) -> Obj | None:
    """Add a controller reference to `owner`; None when the object changed or went meanwhile."""
    refs = [r for r in wl.meta(obj).get("ownerReferences") or () if r.get("uid") != wl.meta(owner).get("uid")]
    return await _write_refs(client, gvr, obj, [*refs, wl.new_controller_ref(owner, "apps/v1", kind)])


async def release(client: kc.Client, gvr: kc.GVR, obj: Obj, owner: Obj) -> Obj | None:
    """Remove the reference to `owner`; None when the object changed or went meanwhile."""
    uid = wl.meta(owner).get("uid")
    return await _write_refs(client, gvr, obj, [r for r in wl.meta(obj).get("ownerReferences") or ()
                                                if r.get("uid") != uid])


async def _write_refs(client: kc.Client, gvr: kc.GVR, obj: Obj, refs: list[Obj]) -> Obj | None:
    m = wl.meta(obj)
    patch = {"metadata": {"ownerReferences": refs or None, "resourceVersion": m.get("resourceVersion")}}
    try:
        return await client.patch(gvr, m["name"], patch, namespace=m.get("namespace"))
    except errors.ApiError as exc:
        if exc.is_not_found or exc.is_conflict:
            return None
        raise
