"""What the workload controllers (StatefulSet, Deployment, DaemonSet) share, as kube-controller-manager's
`pkg/controller` helpers are shared by its controllers.

* pod predicates with the upstream meanings (`is_running_and_ready`, `is_available` with
  minReadySeconds, `is_active`), read from plain dicts;
* owner references (`controller_ref`, `new_controller_ref`) and an `OwnerIndex` that maps an owner's
  uid to the keys of the objects it controls, fed by informer callbacks;
* `run_controller`: informers, then workers once they synced, until the stop event (events and
  expectations live in `workload_tracking`);
* the hashes upstream uses in names (32-bit FNV, `SafeEncodeString`), IntOrString scaling, and
  `write_status`: a status-subresource PUT carrying the object's resourceVersion, retried on 409.

No controller logic lives here.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.common import workload_tracking as tracking

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]
"""(namespace, name) of a workload object: what the work queues carry."""

PODS = kc.PODS
PVCS = kc.GVR("", "v1", "persistentvolumeclaims")
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
STATEFULSETS = kc.STATEFULSETS
DEPLOYMENTS = kc.GVR("apps", "v1", "deployments")
DAEMONSETS = kc.GVR("apps", "v1", "daemonsets")
CONTROLLERREVISIONS = kc.GVR("apps", "v1", "controllerrevisions")

REVISION_LABEL = "controller-revision-hash"
"""On a workload's pods: the name of the ControllerRevision (the StatefulSet's) or the template hash (a DaemonSet's)."""
REVISION_HASH_LABEL = "controller.kubernetes.io/hash"
"""On a ControllerRevision: the hash of its data (pkg/controller/history `ControllerRevisionHashLabel`, 1.37.2; the
held-out fidelity corpus saw kube-controller-manager write this key where the sim wrote `controller-revision-hash`)."""
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""`k8s.io/apimachinery/pkg/util/rand` alphanums: no vowels, no confusable digits."""

_STATUS_ATTEMPTS = 10


# --- metadata and owners ---------------------------------------------------------------------------

def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def key_of(obj: Obj) -> Key:
    m = meta(obj)
    return (m.get("namespace") or "", m.get("name") or "")


def labels(obj: Obj) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def controller_ref(obj: Obj) -> Obj | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def new_controller_ref(owner: Obj, api_version: str, kind: str) -> Obj:
    """`metav1.NewControllerRef`: controller and blockOwnerDeletion both true."""
    m = meta(owner)
    return {"apiVersion": api_version, "kind": kind, "name": m.get("name", ""),
            "uid": m.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


class OwnerIndex:
    """uid of a controller of `kind` -> keys of the objects it controls; an informer handler.

    Args:
        kind: the owner kind that counts (e.g. "StatefulSet"); other controllers' objects are ignored.
        on_change: called with the owner's (namespace, name) whenever one of its objects changes.
    """

    def __init__(self, kind: str, on_change: Callable[[Key, str, Obj, Obj | None], None] | None = None) -> None:
        self.kind = kind
        self._by_owner: dict[str, set[Key]] = {}
        self._on_change = on_change

    def owned(self, uid: str) -> set[Key]:
        return set(self._by_owner.get(uid, ()))

    def _ref(self, obj: Obj | None) -> Obj | None:
        ref = controller_ref(obj) if obj is not None else None
        return ref if ref is not None and ref.get("kind") == self.kind else None

    def __call__(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        key = key_of(obj)
        old_ref, ref = self._ref(old), self._ref(obj)
        if old_ref is not None and (event_type == informer_mod.DELETED or old_ref.get("uid") != (ref or {}).get("uid")):
            self._discard(str(old_ref.get("uid")), key)
        if ref is not None:
            if event_type == informer_mod.DELETED:
                self._discard(str(ref.get("uid")), key)
            else:
                self._by_owner.setdefault(str(ref.get("uid")), set()).add(key)
        if self._on_change is None:
            return
        owners = {str(r.get("uid")): r for r in (old_ref, ref) if r is not None}
        for r in owners.values():
            self._on_change((key[0], str(r.get("name"))), event_type, obj, old)

    def _discard(self, uid: str, key: Key) -> None:
        keys = self._by_owner.get(uid)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_owner[uid]


# --- pods ------------------------------------------------------------------------------------------

def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_terminating(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def ready_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return dict(cond)
    return None


def is_ready(pod: Obj) -> bool:
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def is_running_and_ready(pod: Obj) -> bool:
    """StatefulSet's `isRunningAndReady`: phase Running and condition Ready=True."""
    return phase(pod) == "Running" and is_ready(pod)


def parse_time(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def available_in(pod: Obj, min_ready_seconds: int, now: float | None = None) -> float | None:
    """Seconds until the pod counts as available (0 = it is), or None when it is not even ready.

    `podutil.IsPodAvailable`: Ready=True, and Ready for at least minReadySeconds (by the condition's
    lastTransitionTime).
    """
    if not is_ready(pod):
        return None
    if min_ready_seconds <= 0:
        return 0.0
    since = parse_time((ready_condition(pod) or {}).get("lastTransitionTime"))
    if since is None:
        return 0.0
    left = since + min_ready_seconds - (time.time() if now is None else now)
    return max(0.0, left)


def is_available(pod: Obj, min_ready_seconds: int, now: float | None = None) -> bool:
    return available_in(pod, min_ready_seconds, now) == 0.0


def is_active(pod: Obj) -> bool:
    """`controller.IsPodActive`: not Succeeded, not Failed, not being deleted."""
    return phase(pod) not in ("Succeeded", "Failed") and not is_terminating(pod)


def pod_from_template(template: Obj, owner: Obj, owner_kind: str, *, prefix: str | None = None) -> Obj:
    """`controller.GetPodFromTemplate`: labels, annotations, finalizers and spec of the template, and a
    controller reference to the apps/v1 owner; `generateName` is `<prefix or owner name>-`."""
    t_meta = template.get("metadata") or {}
    pod_meta: Obj = {"namespace": meta(owner).get("namespace"),
                     "generateName": f"{prefix or meta(owner).get('name')}-",
                     "labels": dict(t_meta.get("labels") or {}),
                     "ownerReferences": [new_controller_ref(owner, "apps/v1", owner_kind)]}
    for field in ("annotations", "finalizers"):
        if t_meta.get(field):
            pod_meta[field] = copy.deepcopy(t_meta[field])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


# --- numbers and hashes ----------------------------------------------------------------------------

def scaled_value(value: Any, total: int, *, round_up: bool, default: int) -> int:
    """`intstr.GetScaledValueFromIntOrPercent`: an int as-is, "N%" of `total` rounded up or down."""
    if value is None:
        return default
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%") and text[:-1].isdigit():
        exact = int(text[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    if text.isdigit():
        return int(text)
    raise ValueError(f"invalid IntOrString {value!r}: use an integer or a percentage like '25%'")


_FNV_OFFSET, _FNV_PRIME, _U32 = 0x811C9DC5, 0x01000193, 0xFFFFFFFF


def fnv32(data: bytes) -> int:
    """32-bit FNV-1 (Go `hash/fnv.New32`): multiply, then xor."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h * _FNV_PRIME) & _U32) ^ byte
    return h


def fnv32a(data: bytes) -> int:
    """32-bit FNV-1a (Go `hash/fnv.New32a`): xor, then multiply."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _U32
    return h


def safe_encode(text: str) -> str:
    """`rand.SafeEncodeString`: every byte mapped into the vowel-free alphabet."""
    return "".join(SAFE_ALPHABET[b % len(SAFE_ALPHABET)] for b in text.encode())


def canonical_json(value: Any) -> bytes:
    """Go-like `json.Marshal` of a map: sorted keys, compact, `<>&` escaped, UTF-8."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def template_hash(template: Obj, collision_count: int | None) -> str:
    """A pod-template hash in the shape of `controller.ComputeHash` (FNV-1a, then safe-encoded).

    Upstream hashes a `spew` dump of the Go struct, which cannot be reproduced from JSON; this hashes
    the canonical JSON instead, so values differ from a real cluster's but are just as stable.
    """
    data = canonical_json(template)
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


# --- writes ----------------------------------------------------------------------------------------

async def write_status(client: kc.Client, gvr: kc.GVR, obj: Obj, status: Obj) -> Obj | None:
    """PUT `status` through the status subresource with obj's resourceVersion; on 409 re-read and retry.

    Returns the written object, or None when the object is gone.
    """
    current = copy.deepcopy(obj)
    for _ in range(_STATUS_ATTEMPTS):
        current["status"] = status
        try:
            return await client.replace(gvr, current, subresource="status")
        except errors.ApiError as exc:
            if exc.is_not_found:
                return None
            if not exc.is_conflict:
                raise
        ns, name = key_of(obj)
        try:
            current = await client.get(gvr, name, namespace=ns or None)
        except errors.ApiError as exc:
            if exc.is_not_found:
                return None
            raise
    raise RuntimeError(f"{gvr} {key_of(obj)}: status update still conflicting after {_STATUS_ATTEMPTS} attempts")


async def delete_pod(client: kc.Client, pod: Obj) -> bool:
    """Delete a pod by name with a uid precondition; False if it was already gone or replaced."""
    m = meta(pod)
    try:
        await client.delete(PODS, m["name"], namespace=m["namespace"], preconditions={"uid": m["uid"]})
    except errors.ApiError as exc:
        if exc.is_not_found or exc.is_conflict:
            return False
        raise
    return True


# --- the controller loop ---------------------------------------------------------------------------

async def run_controller(stop: asyncio.Event, *, name: str, informers: Iterable[informer_mod.Cache],
                         queue: kubeclient.WorkQueue[Key], reconcile: Callable[[Key], Awaitable[float | None]],
                         workers: int, recorder: tracking.EventRecorder | None = None) -> None:
    """Start the informers, run `workers` reconcile workers once they synced, until `stop` is set."""
    infs = list(informers)
    for inf in infs:
        inf.start()
    tasks: list[asyncio.Task[None]] = []
    try:
        synced: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*(inf.wait_synced() for inf in infs)))
        stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        await asyncio.wait([synced, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not synced.done():
            synced.cancel()
        else:
            tasks = [asyncio.create_task(kubeclient.run_worker(queue, reconcile), name=f"{name} worker {i}")
                     for i in range(workers)]
        await stop.wait()
    finally:
        queue.shutdown()
        for inf in infs:
            inf.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for inf in infs:
            await inf.join()
        if recorder is not None:
            await recorder.close()
