"""The disruption controller: each PodDisruptionBudget's status from the pods its selector matches.

Follows kubernetes pkg/controller/disruption/disruption.go (`trySync`, `getExpectedPodCount`,
`countHealthyPods`, `buildDisruptedPodMap`, `updatePdbStatus`), because the `pods/eviction` subresource
(`lwsconf.sim.apiserver.http.eviction`, eviction.go upstream) trusts exactly this status:

* the pods are those of the budget's namespace its selector selects (policy/v1: `{}` selects all, none
  without a selector);
* `minAvailable` as an integer: `desiredHealthy` is that number and `expectedPods` the number of pods;
  a percentage, or `maxUnavailable`: `expectedPods` is the sum of the `/scale` replicas of the pods'
  controllers (each counted once), `desiredHealthy` the percentage of it rounded up, or expected minus
  `maxUnavailable` (a percentage of it rounded up); a pod without a controller, or whose controller has
  no scale, fails the sync: 0 disruptions allowed, condition DisruptionAllowed False, reason SyncFailed;
* `currentHealthy`: Ready pods that are neither being deleted nor recorded in `disruptedPods` by an
  eviction in the last two minutes (`DeletionTimeout`); entries for pods gone or being deleted are
  dropped, older ones expire and the budget is looked at again when the next one would;
* `disruptionsAllowed` = currentHealthy - desiredHealthy, at least 0, and 0 when nothing is expected;
  the DisruptionAllowed condition True (SufficientPods) or False (InsufficientPods);
  `observedGeneration` the budget's generation. Written through `/status` only when it changed.

Left out: the events upstream records (NoPods, CalculateExpectedPodCountFailed) and the stale
DisruptionTarget condition clean-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import math
from collections.abc import Callable
from typing import Any

from lwsconf import kubeclient, lwsapi
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.scheduler import filters as sf
from lwsconf.sim.pdbcondition import CONDITION, set_condition

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Key = tuple[str, str]
PDBS = kc.GVR("policy", "v1", "poddisruptionbudgets")
DELETION_TIMEOUT = 120.0
"""Seconds an eviction's `disruptedPods` entry keeps the pod out of `currentHealthy` (upstream's 2 minutes)."""
SCALABLE: dict[tuple[str, str], kc.GVR] = {
    ("apps/v1", "StatefulSet"): kc.STATEFULSETS,
    ("apps/v1", "Deployment"): kc.GVR("apps", "v1", "deployments"),
    ("apps/v1", "ReplicaSet"): kc.GVR("apps", "v1", "replicasets"),
    ("v1", "ReplicationController"): kc.GVR("", "v1", "replicationcontrollers"),
    (lwsapi.API_VERSION, lwsapi.KIND): kc.GVR(lwsapi.GROUP, lwsapi.VERSION, lwsapi.PLURAL),
}
"""Controllers whose `/scale` gives the expected pod count (upstream's finders plus any scalable kind)."""

ScaleOf = Callable[[Obj], "int | str"]
"""A pod -> its controller's replicas, or the reason there is none (upstream's getExpectedScale errors)."""


class SyncFailed(Exception):
    """The expected pod count could not be found (`failSafe` upstream)."""


def _parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _rfc3339(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _percent_of(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent rounding up, as the disruption controller calls it."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def expected_and_desired(pdb: Obj, pods: list[Obj], scales: dict[str, int]) -> tuple[int, int]:
    """(expectedPods, desiredHealthy); `scales` maps a controller uid to its replicas (SyncFailed if a pod's
    controller is missing from it)."""
    spec = pdb.get("spec") or {}
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if isinstance(min_available, int) and not isinstance(min_available, bool):
        return len(pods), min_available
    if min_available is None and max_unavailable is None:
        return len(pods), 0
    expected = 0
    counted: set[str] = set()
    for pod in pods:
        ref = next((o for o in (pod.get("metadata") or {}).get("ownerReferences") or [] if o.get("controller")),
                   None)
        if ref is None:
            raise SyncFailed(f"found no controller ref for pod \"{pod['metadata'].get('name', '')}\"")
        uid = ref.get("uid", "")
        if uid not in scales:
            raise SyncFailed(f"found no controllers for pod \"{pod['metadata'].get('name', '')}\"")
        if uid not in counted:
            counted.add(uid)
            expected += scales[uid]
    if max_unavailable is not None:
        return expected, max(0, expected - _percent_of(max_unavailable, expected))
    return expected, _percent_of(min_available, expected)


def desired_status(pdb: Obj, pods: list[Obj], scales: dict[str, int], now: float) -> tuple[Obj, float | None]:
    """The budget's status from its pods, and in how many seconds a `disruptedPods` entry expires (None: none).

    Args:
        pdb: the budget.
        pods: the pods its selector selects.
        scales: controller uid -> `/scale` replicas, for the pods' controllers.
        now: the clock (epoch seconds).
    """
    meta, old = pdb.get("metadata") or {}, pdb.get("status") or {}
    generation = int(meta.get("generation") or 0)
    stamp = _rfc3339(now)
    by_name = {p["metadata"].get("name", ""): p for p in pods}
    disrupted: dict[str, str] = {}
    recheck: float | None = None
    for name, when in (old.get("disruptedPods") or {}).items():
        pod = by_name.get(name)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        expires = _parse_time(when) + DELETION_TIMEOUT
        if expires < now:
            log.info("disruption: pod %s/%s was expected to be deleted by %s but still exists", meta.get("namespace"),
                     name, when)
            continue
        disrupted[name] = when
        recheck = expires - now if recheck is None else min(recheck, expires - now)
    status: Obj = {"observedGeneration": generation}
    try:
        expected, desired = expected_and_desired(pdb, pods, scales)
    except SyncFailed as exc:
        status.update(disruptionsAllowed=0, currentHealthy=int(old.get("currentHealthy") or 0),
                      desiredHealthy=int(old.get("desiredHealthy") or 0),
                      expectedPods=int(old.get("expectedPods") or 0))
        status["conditions"] = [{"type": CONDITION, "status": "False", "observedGeneration": generation,
                                 "lastTransitionTime": stamp, "reason": "SyncFailed", "message": str(exc)}]
        return status, None
    healthy = sum(1 for p in pods if _ready(p) and not (p.get("metadata") or {}).get("deletionTimestamp")
                  and p["metadata"].get("name") not in disrupted)
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    status.update(disruptionsAllowed=allowed, currentHealthy=healthy, desiredHealthy=desired, expectedPods=expected)
    if disrupted:
        status["disruptedPods"] = disrupted
    status["conditions"] = set_condition(old.get("conditions") or [], allowed > 0, stamp, generation)
    return status, recheck


class DisruptionController:
    """PDB and pod informers, a queue of budget keys; `run(stop)` as every sim controller."""

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 2) -> None:
        self.client = client
        self.queue: kubeclient.WorkQueue[Key] = kubeclient.WorkQueue(name="disruption")
        self.pdbs = shared.informer(informers, client, PDBS)
        self.pdbs.add_handler(self._on_pdb)
        self.pods = shared.informer(informers, client, kc.PODS)
        self.pods.add_handler(self._on_pod)
        self.workers = workers

    def _on_pdb(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        if event_type != informer_mod.DELETED:
            self.queue.add(informer_mod.key_of(obj))

    def _on_pod(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        for pdb in self.pdbs.list(namespace):
            self.queue.add(informer_mod.key_of(pdb))

    async def run(self, stop: asyncio.Event) -> None:
        if self.queue.shutting_down:
            self.queue = kubeclient.WorkQueue(name="disruption")
        for informer in (self.pdbs, self.pods):
            informer.start()
        try:
            await kubeclient.run_workers(self.queue, self.sync, stop, workers=self.workers)
        finally:
            for informer in (self.pdbs, self.pods):
                informer.stop()
            for informer in (self.pdbs, self.pods):
                with contextlib.suppress(asyncio.CancelledError):
                    await informer.join()

    async def sync(self, key: Key) -> float | None:
        """Write one budget's status; seconds until it is looked at again (an expiring eviction entry)."""
        namespace, name = key
        if not (self.pdbs.has_synced and self.pods.has_synced):
            return 0.1
        pdb = self.pdbs.get(name, namespace)
        if pdb is None:
            return None
        selector = (pdb.get("spec") or {}).get("selector")
        pods = [p for p in self.pods.list(namespace)
                if selector is not None and sf.selector_matches(selector, (p.get("metadata") or {}).get("labels"))]
        scales = await self._scales(pods)
        status, recheck = desired_status(pdb, pods, scales, datetime.datetime.now(datetime.UTC).timestamp())
        if _same(status, pdb.get("status") or {}):
            return recheck
        body = {**pdb, "status": status}
        try:
            await self.client.replace(PDBS, body, namespace=namespace, subresource="status")
        except errors.ApiError as exc:
            if exc.is_not_found:
                return None
            if exc.is_conflict:
                return 0.2  # the informer will bring the newer budget; look again then
            raise
        return recheck

    async def _scales(self, pods: list[Obj]) -> dict[str, int]:
        """Controller uid -> its `/scale` replicas, for the pods' controllers that have one.

        A ReplicaSet controlled by a Deployment stands for the Deployment, as upstream's `getPodDeployment`
        finder has it: the Deployment's replicas are counted once, on the first of its ReplicaSets met,
        and its other ReplicaSets (a rollout's old and new) count 0.
        """
        out: dict[str, int] = {}
        deployments_seen: set[str] = set()
        for pod in pods:
            meta = pod.get("metadata") or {}
            for ref in meta.get("ownerReferences") or []:
                gvr = SCALABLE.get((ref.get("apiVersion", ""), ref.get("kind", "")))
                if not ref.get("controller") or gvr is None or ref.get("uid") in out:
                    continue
                owner = await self._deployment_of(ref, meta.get("namespace")) if ref.get("kind") == "ReplicaSet" \
                    else None
                if owner is not None:
                    if owner.get("uid") in deployments_seen:
                        out[ref["uid"]] = 0
                        continue
                    deployments_seen.add(str(owner.get("uid")))
                    ref, gvr = owner, SCALABLE[("apps/v1", "Deployment")]
                try:
                    scale = await self.client.request("GET", gvr.object_path(
                        ref.get("name", ""), meta.get("namespace"), subresource="scale"))
                except errors.ApiError as exc:
                    if exc.is_not_found:
                        continue
                    raise
                if (scale.get("metadata") or {}).get("uid") in (None, ref.get("uid")):
                    out[ref.get("rs_uid", ref["uid"])] = int((scale.get("spec") or {}).get("replicas") or 0)
        return out

    async def _deployment_of(self, rs_ref: Obj, namespace: str | None) -> Obj | None:
        """The Deployment controlling the ReplicaSet `rs_ref` names (its reference, plus `rs_uid`), or None."""
        try:
            rs = await self.client.get(SCALABLE[("apps/v1", "ReplicaSet")], rs_ref.get("name", ""), namespace=namespace)
        except errors.ApiError as exc:
            if exc.is_not_found:
                return None
            raise
        if (rs.get("metadata") or {}).get("uid") != rs_ref.get("uid"):
            return None
        owner = next((o for o in (rs.get("metadata") or {}).get("ownerReferences") or [] if o.get("controller")),
                     None)
        if owner is None or (owner.get("apiVersion"), owner.get("kind")) != ("apps/v1", "Deployment"):
            return None
        return {**owner, "rs_uid": rs_ref.get("uid")}


def _same(new: Obj, old: Obj) -> bool:
    """Whether writing `new` would change anything but condition times."""
    def strip(s: Obj) -> Obj:
        return {**s, "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                    for c in s.get("conditions") or []]}
    return strip(new) == strip(old)
