"""StatefulSet revision history: the ControllerRevisions behind `status.currentRevision`/`updateRevision`.

What upstream does (kubernetes/kubernetes `pkg/controller/statefulset/stateful_set_utils.go` and
`stateful_set_control.go`, `pkg/controller/history/controller_history.go`), and so what this does:

* A revision's `data` is a strategic-merge patch holding only `spec.template`, marked
  `"$patch": "replace"` (`getPatch`). Its name is `<set name, cut to 223>-<hash>` where the hash is
  32-bit FNV-1 over the data bytes followed by the collision count in decimal, printed as decimal and
  safe-encoded (`HashControllerRevision`; `getStatefulSetRevisions` always passes a non-nil count, so
  "0" is hashed too). It carries the template's labels plus
  `controller.kubernetes.io/hash: <hash>`, the set's annotations, a controller reference to the set, and a
  `revision` number one above the highest existing one (`nextRevision`).
* Each sync computes the would-be revision of the live template: if the newest revision has the
  same data it is the update revision; if an older one does, that one is renumbered to the next
  number (a rollback); otherwise a new one is created, bumping `collisionCount` when the name is
  taken by different data. The current revision is the one named by `status.currentRevision`, or the
  update revision when there is none.
* History is trimmed (`truncateHistory`) to `revisionHistoryLimit` non-live revisions, oldest first;
  live = current, update, and every revision a pod still carries in its `controller-revision-hash`.

Pods carry the revision *name* in their `controller-revision-hash` label; the revision object holds just
the hash, under `controller.kubernetes.io/hash`. The data is Go's `json.Marshal` of a map (sorted keys, compact),
which `canonical_json` reproduces, so for the same defaulted template the name is the one
kube-controller-manager 1.37 gives (lwsconf fidelity controllers/ctl-statefulset: `web-5fbf5f4544`);
still, nothing may rely on hash values (docs/lws-contract.md trap T6).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.controllers.common import workloads as wl

Obj = dict[str, Any]
REVISIONS = wl.CONTROLLERREVISIONS
_NAME_PREFIX_LIMIT = 223
_UPDATE_ATTEMPTS = 5


def patch_data(sts: Obj) -> Obj:
    """`getPatch`: `{"spec": {"template": <template>, "$patch": "replace" inside the template}}`."""
    template = copy.deepcopy((sts.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_hash(data: Obj, collision_count: int) -> str:
    """`history.HashControllerRevision(revision, &collisionCount)`: the count is written even when 0."""
    raw = wl.canonical_json(data) + str(collision_count).encode()
    return wl.safe_encode(str(wl.fnv32(raw)))


def revision_name(set_name: str, hash_: str) -> str:
    return f"{set_name[:_NAME_PREFIX_LIMIT]}-{hash_}"


def template_of(revision: Obj) -> Obj:
    """The pod template a revision restores (`ApplyRevision` for a template-only patch)."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def sort_key(revision: Obj) -> tuple[int, str, str]:
    """`history.SortControllerRevisions`: by revision number, then creation time, then name."""
    m = wl.meta(revision)
    return (int(revision.get("revision") or 0), str(m.get("creationTimestamp") or ""), str(m.get("name") or ""))


def new_revision(sts: Obj, number: int, collision_count: int) -> Obj:
    """The ControllerRevision the live template would have (not yet created)."""
    m = wl.meta(sts)
    data = patch_data(sts)
    hash_ = revision_hash(data, collision_count)
    template_labels = dict(((sts.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {})
    template_labels[wl.REVISION_HASH_LABEL] = hash_
    rev_meta: Obj = {"name": revision_name(m["name"], hash_), "namespace": m["namespace"],
                     "labels": template_labels,
                     "ownerReferences": [wl.new_controller_ref(sts, "apps/v1", "StatefulSet")]}
    if m.get("annotations"):
        rev_meta["annotations"] = dict(m["annotations"])
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": rev_meta,
            "data": data, "revision": number}


@dataclass
class Revisions:
    """The outcome of `resolve`: the two revisions the sync works with, and the collision count."""

    current: Obj
    update: Obj
    collision_count: int

    @property
    def current_name(self) -> str:
        return str(wl.meta(self.current).get("name"))

    @property
    def update_name(self) -> str:
        return str(wl.meta(self.update).get("name"))


async def resolve(client: kc.Client, sts: Obj, revisions: list[Obj]) -> Revisions:
    """`getStatefulSetRevisions`: find or create the update revision; find the current one.

    `revisions` must be sorted with `sort_key`; a revision created or renumbered here is appended to it.
    """
    status = sts.get("status") or {}
    collision_count = int(status.get("collisionCount") or 0)
    number = int(revisions[-1].get("revision") or 0) + 1 if revisions else 1
    wanted = new_revision(sts, number, collision_count)
    equal = [r for r in revisions if r.get("data") == wanted["data"]]
    if equal and revisions[-1] is equal[-1]:
        update = revisions[-1]
    elif equal:
        update = await _renumber(client, equal[-1], number)
        revisions.remove(equal[-1])
        revisions.append(update)
    else:
        update, collision_count = await _create(client, sts, wanted, collision_count)
        revisions.append(update)
    current_name = status.get("currentRevision")
    current = next((r for r in revisions if wl.meta(r).get("name") == current_name), update)
    return Revisions(current, update, collision_count)


async def _create(client: kc.Client, sts: Obj, revision: Obj, collision_count: int) -> tuple[Obj, int]:
    """`CreateControllerRevision`: on a name taken by other data, bump the collision count and retry."""
    set_name = wl.meta(sts)["name"]
    while True:
        hash_ = revision_hash(revision["data"], collision_count)
        body = copy.deepcopy(revision)
        body["metadata"]["name"] = revision_name(set_name, hash_)
        body["metadata"]["labels"][wl.REVISION_HASH_LABEL] = hash_
        try:
            return await client.create(REVISIONS, body), collision_count
        except errors.ApiError as exc:
            if not exc.is_already_exists:
                raise
        existing = await client.get(REVISIONS, body["metadata"]["name"], namespace=body["metadata"]["namespace"])
        if existing.get("data") == body["data"]:
            return existing, collision_count
        collision_count += 1


async def _renumber(client: kc.Client, revision: Obj, number: int) -> Obj:
    """`UpdateControllerRevision`: give an older equal revision the next number (a rollback)."""
    current = copy.deepcopy(revision)
    for _ in range(_UPDATE_ATTEMPTS):
        if int(current.get("revision") or 0) == number:
            return current
        current["revision"] = number
        try:
            return await client.replace(REVISIONS, current)
        except errors.ApiError as exc:
            if not exc.is_conflict:
                raise
        current = await client.get(REVISIONS, wl.meta(revision)["name"], namespace=wl.meta(revision)["namespace"])
    raise RuntimeError(f"ControllerRevision {wl.meta(revision).get('name')}: renumbering kept conflicting")


async def truncate_history(client: kc.Client, sts: Obj, revisions: list[Obj], live: Iterable[str]) -> int:
    """Delete the oldest non-live revisions beyond `spec.revisionHistoryLimit`; returns how many went."""
    limit = (sts.get("spec") or {}).get("revisionHistoryLimit")
    limit = 10 if limit is None else int(limit)
    alive = set(live)
    history = [r for r in sorted(revisions, key=sort_key) if wl.meta(r).get("name") not in alive]
    if limit < 0 or len(history) <= limit:
        return 0
    deleted = 0
    for revision in history[:len(history) - limit]:
        m = wl.meta(revision)
        try:
            await client.delete(REVISIONS, m["name"], namespace=m["namespace"], preconditions={"uid": m["uid"]})
            deleted += 1
        except errors.ApiError as exc:
            if not (exc.is_not_found or exc.is_conflict):
                raise
    return deleted
