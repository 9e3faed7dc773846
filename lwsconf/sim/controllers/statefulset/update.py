"""One StatefulSet sync: create, recreate, scale and roll pods, as upstream's `updateStatefulSet` does.

The algorithm follows kubernetes/kubernetes `pkg/controller/statefulset/stateful_set_control.go`
(`updateStatefulSet`, `processReplica`, `processCondemned`, `updateStatefulSetAfterInvariantEstablished`)
with the MaxUnavailableStatefulSet feature on, as it is by default since Kubernetes 1.35:

1. Pods are split into *replicas* (ordinals `start .. start+replicas-1`, a missing one replaced by an
   in-memory pod built from the current revision below the partition, the update revision otherwise)
   and *condemned* pods (any other ordinal, highest first).
2. Each replica: a Failed or Succeeded pod is deleted (it is recreated on a later sync, once gone);
   a missing one is created, claims first. With `OrderedReady` (monotonic) the sync stops at the
   first pod it created, or that is terminating, not Running+Ready, or not yet available; with
   `Parallel` all replicas are processed at once.
3. Condemned pods get their claims' owner references fixed for `whenScaled: Delete`, then are
   deleted: with `OrderedReady` one per sync, and only while every other pod is healthy; with
   `Parallel` all at once.
4. `OnDelete` stops here. `RollingUpdate` counts unavailable replicas against `maxUnavailable` (default 1)
   and, from the highest ordinal down to `start + partition`, deletes pods whose revision is not the update
   revision: with `Parallel` every unavailable one, then available ones while the budget allows; with
   `OrderedReady` up to `maxUnavailable - unavailable` (`_rolling_update`). A deleted pod is recreated from the
   update revision by a later sync once it is gone.

Pods are deleted with a uid precondition (a stale cache never deletes a newer pod of the same name);
a create that finds the name taken waits for the informer instead of failing. Events are those of
upstream's `StatefulPodControl`: `SuccessfulCreate` "create Pod web-0 in StatefulSet web
successful", `SuccessfulDelete`, `FailedCreate` ..., and "create Claim data-web-0 Pod web-0 in
StatefulSet web success" for claims. Claims are marked `Bound` straight away: the sim has no volume
provisioner, and nothing downstream looks at storage.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.common import workloads as wl
from lwsconf.sim.controllers.statefulset import pods as sp
from lwsconf.sim.controllers.statefulset import revisions as revs_mod

Obj = dict[str, Any]
_PARALLEL_LIMIT = 64


class PodControl:
    """`StatefulPodControl`: pod and claim writes for a set, each recorded as an event on the set."""

    def __init__(self, client: kc.Client, recorder: tracking.EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    def _event(self, verb: str, sts: Obj, pod: Obj, err: Exception | None) -> None:
        names = f"Pod {wl.meta(pod).get('name')} in StatefulSet {wl.meta(sts).get('name')}"
        if err is None:
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}", f"{verb} {names} successful")
        else:
            self.recorder.event(sts, "Warning", f"Failed{verb.title()}", f"{verb} {names} failed error: {err}")

    async def create_pod(self, sts: Obj, pod: Obj) -> Obj | None:
        """Create the pod's claims, then the pod; None when the name is taken (the cache lags)."""
        try:
            await self.create_claims(sts, pod)
            created = await self.client.create(wl.PODS, pod)
        except errors.ApiError as exc:
            if exc.is_already_exists:
                return None
            self._event("create", sts, pod, exc)
            raise
        self._event("create", sts, pod, None)
        return created

    async def delete_pod(self, sts: Obj, pod: Obj) -> None:
        if not wl.meta(pod).get("uid"):
            return  # an in-memory pod that was never created
        try:
            if await wl.delete_pod(self.client, pod):
                self._event("delete", sts, pod, None)
        except errors.ApiError as exc:
            self._event("delete", sts, pod, exc)
            raise

    async def create_claims(self, sts: Obj, pod: Obj) -> None:
        """Create the claims the pod needs that do not exist yet (and mark them Bound)."""
        for claim in sp.new_claims(sts, pod):
            m = claim["metadata"]
            existing = await self._get_claim(m["namespace"], m["name"])
            if existing is not None:
                if wl.is_terminating(existing):
                    raise RuntimeError(f"PersistentVolumeClaim {m['namespace']}/{m['name']} is being deleted; "
                                       f"pod {wl.meta(pod).get('name')} waits for it to go away")
                continue
            try:
                created = await self.client.create(wl.PVCS, claim)
            except errors.ApiError as exc:
                if exc.is_already_exists:
                    continue
                self.recorder.event(sts, "Warning", "FailedCreate",
                                    f"create Claim {m['name']} for Pod {wl.meta(pod).get('name')} in StatefulSet "
                                    f"{wl.meta(sts).get('name')} failed error: {exc}")
                raise
            self.recorder.event(sts, "Normal", "SuccessfulCreate",
                                f"create Claim {m['name']} Pod {wl.meta(pod).get('name')} in StatefulSet "
                                f"{wl.meta(sts).get('name')} success")
            await wl.write_status(self.client, wl.PVCS, created, bound_status(created))

    async def fix_claim_owners(self, sts: Obj, pod: Obj) -> None:
        """`UpdatePodClaimForRetentionPolicy`: owner references as the retention policy wants them."""
        if sp.retention(sts) == ("Retain", "Retain"):
            return
        for template in sp.claim_templates(sts):
            name = sp.claim_name(sts, str(wl.meta(template).get("name")), sp.ordinal_of(pod))
            claim = await self._get_claim(wl.meta(sts)["namespace"], name)
            if claim is None or wl.is_terminating(claim):
                continue
            refs = sp.claim_owner_refs(sts, pod, claim)
            if refs != (wl.meta(claim).get("ownerReferences") or []):
                claim["metadata"]["ownerReferences"] = refs
                await self.client.replace(wl.PVCS, claim)

    async def update_identity(self, pod: Obj) -> None:
        name = wl.meta(pod)["name"]
        patch = {"metadata": {"labels": {sp.POD_NAME_LABEL: name, sp.POD_INDEX_LABEL: str(sp.ordinal_of(pod))}}}
        await self.client.patch(wl.PODS, name, patch, namespace=wl.meta(pod)["namespace"])

    async def _get_claim(self, namespace: str, name: str) -> Obj | None:
        try:
            return await self.client.get(wl.PVCS, name, namespace=namespace)
        except errors.ApiError as exc:
            if exc.is_not_found:
                return None
            raise


def bound_status(claim: Obj) -> Obj:
    """What a PV controller would write once it bound the claim: phase, access modes, capacity."""
    spec = claim.get("spec") or {}
    requests = (spec.get("resources") or {}).get("requests") or {}
    status: Obj = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or [])}
    if "storage" in requests:
        status["capacity"] = {"storage": requests["storage"]}
    return status


@dataclass
class SyncResult:
    status: Obj
    error: Exception | None = None
    requeue_after: float | None = None


class StatefulSetSync:
    """One pass over one set; `run()` acts and returns the status to record."""

    def __init__(self, control: PodControl, sts: Obj, revisions: revs_mod.Revisions, pods: list[Obj]) -> None:
        self.control = control
        self.sts = sts
        self.revs = revisions
        self.min_ready = sp.min_ready_seconds(sts)
        self.replicas: list[Obj] = []
        self.condemned: list[Obj] = []
        self.replaced = 0
        """Pods deleted for the rolling update in this pass (upstream decrements currentReplicas)."""
        self._split(pods)

    def _split(self, pods: list[Obj]) -> None:
        start, count = sp.start_ordinal(self.sts), sp.replica_count(self.sts)
        slots: list[Obj | None] = [None] * count
        for pod in pods:
            ordinal = sp.ordinal_of(pod)
            if start <= ordinal < start + count:
                slots[ordinal - start] = pod
            elif ordinal >= 0:
                self.condemned.append(pod)
        self.replicas = [pod if pod is not None else self._versioned_pod(start + i) for i, pod in enumerate(slots)]
        self.condemned.sort(key=sp.ordinal_of, reverse=True)

    def _versioned_pod(self, ordinal: int) -> Obj:
        """`newVersionedStatefulSetPod`: current revision below the partition, update revision above."""
        revision = self.revs.current if sp.uses_current_revision(self.sts, ordinal) else self.revs.update
        name = str(wl.meta(revision)["name"])
        return sp.new_pod(self.sts, revs_mod.template_of(revision), ordinal, name)

    # --- predicates --------------------------------------------------------------------------------

    def _available(self, pod: Obj) -> bool:
        return wl.is_running_and_ready(pod) and wl.is_available(pod, self.min_ready)

    def _unavailable(self, pod: Obj) -> bool:
        return wl.is_terminating(pod) or not self._available(pod)

    # --- the pass ----------------------------------------------------------------------------------

    async def run(self) -> SyncResult:
        try:
            await self._act()
        except Exception as exc:  # the status is recorded anyway, then the sync is retried
            return SyncResult(self.status(), error=exc)
        return SyncResult(self.status(), requeue_after=self._availability_recheck())

    async def _act(self) -> None:
        if wl.is_terminating(self.sts):
            return
        monotonic = not sp.is_parallel(self.sts)
        first_unavailable = next((p for p in [*self.replicas, *reversed(self.condemned)] if self._unavailable(p)),
                                 None)
        # In burst mode the result of a replica's processing is not used, so replicas whose processing
        # would do nothing are skipped: one coroutine per pod per sync made large sets quadratic.
        replicas = self.replicas if monotonic else [p for p in self.replicas if not self._replica_settled(p)]
        if await self._for_all(replicas, lambda p: self._process_replica(p, monotonic), monotonic):
            return
        if await self._for_all(self.condemned, self._fix_claims, monotonic):
            return
        if await self._for_all(self.condemned, lambda p: self._process_condemned(p, first_unavailable, monotonic),
                               monotonic):
            return
        if sp.strategy(self.sts).get("type") == "OnDelete":
            return
        await self._rolling_update()

    @staticmethod
    async def _for_all(pods: list[Obj], fn: Callable[[Obj], Awaitable[bool]], monotonic: bool) -> bool:
        """`runForAll`: one by one until a pod blocks (monotonic), or all at once (burst)."""
        if monotonic:
            for pod in pods:
                if await fn(pod):
                    return True
            return False
        limit = asyncio.Semaphore(_PARALLEL_LIMIT)

        async def bounded(pod: Obj) -> bool:
            async with limit:
                return await fn(pod)

        results = await asyncio.gather(*(bounded(p) for p in pods), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]
        return False

    async def _process_replica(self, pod: Obj, monotonic: bool) -> bool:
        """`processReplica`; True means: stop here (monotonic mode)."""
        if wl.phase(pod) in ("Failed", "Succeeded"):
            if not wl.is_terminating(pod):
                await self.control.delete_pod(self.sts, pod)
            return True
        if not wl.phase(pod):  # not created yet (an in-memory pod)
            await self.control.create_pod(self.sts, pod)
            return monotonic
        if wl.phase(pod) == "Pending":
            await self.control.create_claims(self.sts, pod)
        if monotonic and (wl.is_terminating(pod) or not self._available(pod)):
            return True
        if not sp.identity_matches(self.sts, pod):
            await self.control.update_identity(pod)
        return False

    def _replica_settled(self, pod: Obj) -> bool:
        """Whether `_process_replica` would neither write nor wait for this pod (burst mode)."""
        phase = wl.phase(pod)
        if not phase or phase in ("Failed", "Succeeded"):
            return False
        if phase == "Pending" and sp.claim_templates(self.sts):
            return False
        return sp.identity_matches(self.sts, pod)

    async def _fix_claims(self, pod: Obj) -> bool:
        await self.control.fix_claim_owners(self.sts, pod)
        return False

    async def _process_condemned(self, pod: Obj, first_unavailable: Obj | None, monotonic: bool) -> bool:
        """`processCondemned`: delete a scaled-down pod (monotonic: only while the rest is healthy)."""
        if wl.is_terminating(pod):
            return monotonic
        if monotonic and pod is not first_unavailable and not self._available(pod):
            return True
        await self.control.delete_pod(self.sts, pod)
        return True

    async def _rolling_update(self) -> None:
        """`updateStatefulSetAfterInvariantEstablished` of Kubernetes 1.37.2 (stateful_set_control.go).

        Every replica that is unavailable counts against `maxUnavailable`, and so, with Parallel pod management,
        does each unavailable one still on an old revision (`unavailablePodsNeedingUpdate`). With unavailable
        replicas at the budget and none of them outdated, nothing is replaced. Otherwise, with Parallel:
        every unavailable outdated replica from the partition up is replaced at once (phase 1: waiting for it
        would keep a broken revision forever, kubernetes#137409), then available outdated ones, highest first,
        while `maxUnavailable - unavailable` allows (phase 2). With OrderedReady: outdated replicas from the
        highest down, `maxUnavailable - unavailable` of them. The held-out fidelity corpus found the sim's
        earlier version replacing one unavailable outdated pod per pass where kube-controller-manager replaced
        them all.
        """
        max_unavailable = sp.max_unavailable(self.sts)
        update_min = sp.partition(self.sts)
        parallel = sp.is_parallel(self.sts)

        def outdated(pod: Obj) -> bool:
            return sp.revision_of(pod) != self.revs.update_name

        unavailable = sum(1 for pod in self.replicas if self._unavailable(pod))
        needing_update = sum(1 for pod in self.replicas if parallel and self._unavailable(pod) and outdated(pod)
                             and not wl.is_terminating(pod))
        if unavailable >= max_unavailable and needing_update == 0:
            return
        targets = [self.replicas[i] for i in range(len(self.replicas) - 1, update_min - 1, -1)]
        budget = max_unavailable - unavailable
        if parallel:
            await self._replace(targets, lambda p: outdated(p) and not self._available(p) and not wl.is_terminating(p))
            await self._replace(targets, lambda p: outdated(p) and not self._unavailable(p), budget)
        else:
            await self._replace(targets, lambda p: outdated(p) and not wl.is_terminating(p), budget)

    async def _replace(self, pods: list[Obj], eligible: Callable[[Obj], bool], budget: int | None = None) -> None:
        """Delete, in order, each of `pods` that `eligible` admits, at most `budget` of them (None: every one); a
        later sync recreates each from the update revision."""
        for pod in pods:
            if budget is not None and budget <= 0:
                return
            if eligible(pod):
                await self.control.delete_pod(self.sts, pod)
                self.replaced += 1
                budget = None if budget is None else budget - 1

    # --- status ------------------------------------------------------------------------------------

    def status(self) -> Obj:
        """`updateStatus` over replicas and condemned pods, plus generation, revisions and collisions."""
        counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0,
                  "updatedReplicas": 0}
        for pod in [*self.replicas, *self.condemned]:
            created = bool(wl.phase(pod))
            counts["replicas"] += created
            if wl.is_running_and_ready(pod):
                counts["readyReplicas"] += 1
                counts["availableReplicas"] += wl.is_available(pod, self.min_ready)
            if created and not wl.is_terminating(pod):
                counts["currentReplicas"] += sp.revision_of(pod) == self.revs.current_name
                counts["updatedReplicas"] += sp.revision_of(pod) == self.revs.update_name
        counts["currentReplicas"] = max(0, counts["currentReplicas"] - self.replaced)
        return {"observedGeneration": wl.meta(self.sts).get("generation"), **counts,
                "currentRevision": self.revs.current_name, "updateRevision": self.revs.update_name,
                "collisionCount": self.revs.collision_count}

    def _availability_recheck(self) -> float | None:
        """Seconds until the next ready pod becomes available (minReadySeconds), if any."""
        waits = [w for pod in self.replicas if wl.is_running_and_ready(pod)
                 and (w := wl.available_in(pod, self.min_ready)) is not None and w > 0]
        return min(waits) + 0.05 if waits else None


def complete_rolling_update(sts: Obj, status: Obj) -> Obj:
    """`completeRollingUpdate`: once every replica is updated and ready, current := update."""
    out = copy.deepcopy(status)
    replicas = sp.replica_count(sts)
    if (sp.strategy(sts).get("type", "RollingUpdate") == "RollingUpdate"
            and out["updatedReplicas"] == replicas and out["readyReplicas"] == replicas
            and out["replicas"] == replicas):
        out["currentReplicas"] = out["updatedReplicas"]
        out["currentRevision"] = out["updateRevision"]
    return out


_COMPARED = ("replicas", "currentReplicas", "readyReplicas", "updatedReplicas", "currentRevision",
             "availableReplicas", "updateRevision", "collisionCount")


def status_changed(sts: Obj, status: Obj) -> bool:
    """`inconsistentStatus`: a newer observedGeneration, or any counter or revision differs."""
    old = sts.get("status") or {}
    if int(status.get("observedGeneration") or 0) > int(old.get("observedGeneration") or 0):
        return True
    return any((old.get(k) or 0) != (status.get(k) or 0) for k in _COMPARED)
