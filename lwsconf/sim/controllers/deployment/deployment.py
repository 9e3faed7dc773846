"""The Deployment controller: rolls a Deployment out through ReplicaSets, as kube-controller-manager's does.

A Deployment owns ReplicaSets (controller reference) and never a pod: the ReplicaSet controller
(`replicaset.py`) creates and deletes the pods. Per Deployment (kubernetes/kubernetes
`pkg/controller/deployment/{deployment_controller,sync,rolling,recreate,progress}.go`; the pure parts in
`util.py` and `rolling.py`):

* claim ReplicaSets matching the selector (adopt orphans, release ones that stop matching, `claims`);
* the new ReplicaSet is the one whose template equals the Deployment's (hash label aside), else it is
  created as `<deployment>-<pod-template-hash>` with the next revision; a name taken by a ReplicaSet that
  is not ours raises `status.collisionCount`, which changes the hash. Taking back an old ReplicaSet
  (`kubectl rollout undo` patches the template back, client-side) gives it the next revision, so history
  and undo work as upstream. The Deployment carries its new ReplicaSet's `deployment.kubernetes.io/revision`;
* `RollingUpdate`: scale the new ReplicaSet up within maxSurge, then old ones down within maxUnavailable,
  one step a pass (`rolling`); `Recreate`: old ReplicaSets to 0, wait until their pods are
  gone, then the new one to replicas; each change is a `ScalingReplicaSet` event "Scaled up/down replica
  set NAME from A to B";
* paused: the Progressing condition says DeploymentPaused (then DeploymentResumed) and only a lone active
  ReplicaSet follows `spec.replicas` (simplified `sync`: no proportional scaling, none mid-rollout either);
* once complete, old ReplicaSets at 0 beyond revisionHistoryLimit are deleted;
* status (`calculateStatus`) and the Available / Progressing conditions (NewReplicaSetCreated,
  FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded after
  progressDeadlineSeconds without progress; a pass is queued for that deadline).

Not done: proportional scaling and the ReplicaFailure condition. The pod-template
hash is the sim's (see `workloads.template_hash`), so names differ from a real cluster's.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.common import workloads as wl
from lwsconf.sim.controllers.deployment import claims, rolling
from lwsconf.sim.controllers.deployment import util as du
from lwsconf.sim.controllers.deployment.replicaset import REPLICASETS

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "deployment-controller"
HASH_LABEL = du.HASH_LABEL


class DeploymentController:
    """Runs Deployments through their ReplicaSets and keeps their status.

    Args:
        client: an API client for this controller alone.
        workers: Deployments synced concurrently.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 2) -> None:
        self.client = client
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="Deployment")
        self.queue: kubeclient.WorkQueue[wl.Key] = kubeclient.WorkQueue(name="deployment")
        self.deployments = shared.informer(informers, client, wl.DEPLOYMENTS)
        self.deployments.add_handler(lambda et, obj, old: self.queue.add(wl.key_of(obj)))
        self.replicasets = shared.informer(informers, client, REPLICASETS)
        self.rs_index = wl.OwnerIndex("Deployment", lambda key, *_: self.queue.add(key))
        self.replicasets.add_handler(self.rs_index)
        self.replicasets.add_handler(self._on_orphan_rs)
        self.pods = shared.informer(informers, client, wl.PODS)
        self.pod_index = wl.OwnerIndex("ReplicaSet", self._on_rs_pod)
        self.pods.add_handler(self.pod_index)
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Sync Deployments until `stop` is set."""
        await wl.run_controller(stop, name="deployment", informers=[self.deployments, self.replicasets, self.pods],
                                queue=self.queue, reconcile=self._reconcile, workers=self._workers,
                                recorder=self.recorder)

    async def wait_synced(self, timeout: float | None = None) -> None:
        for informer in (self.deployments, self.replicasets, self.pods):
            await informer.wait_synced(timeout)

    def _on_orphan_rs(self, event_type: str, rs: Obj, old: Obj | None) -> None:
        if wl.controller_ref(rs) is not None or event_type == informer_mod.DELETED:
            return
        for d in self.deployments.list(wl.meta(rs).get("namespace")):
            if claims.claim(d, du.spec(d).get("selector"), [rs]).adopt:
                self.queue.add(wl.key_of(d))

    def _on_rs_pod(self, key: wl.Key, event_type: str, pod: Obj, old: Obj | None) -> None:
        """A pod of a ReplicaSet changed: its Deployment may be waiting for it (Recreate's old pods)."""
        rs = self.replicasets.get(key[1], key[0])
        ref = wl.controller_ref(rs) if rs is not None else None
        if ref is not None and ref.get("kind") == "Deployment":
            self.queue.add((key[0], str(ref.get("name"))))

    # --- one pass ----------------------------------------------------------------------------------

    async def _reconcile(self, key: wl.Key) -> float | None:
        cached = self.deployments.get(key[1], key[0])
        if cached is None:
            return None
        d = copy.deepcopy(cached)
        rss = await self._claim(d)
        if wl.is_terminating(d):
            return await self._sync_status(d, rss, du.find_new(d, rss)[0], progress=False)
        paused = bool(du.spec(d).get("paused"))
        self._paused_condition(d, paused)
        if paused:
            return await self._sync_paused(d, rss)
        if (du.spec(d).get("strategy") or {}).get("type") == "Recreate":
            return await self._recreate(d, rss)
        return await self._rolling(d, rss)

    async def _rolling(self, d: Obj, rss: list[Obj]) -> float | None:
        """`rolloutRolling`: new ReplicaSet up first, then old ones down, then clean up once complete."""
        new_rs, old_rss = await self._new_replicaset(d, rss, create=True)
        if new_rs is None:
            return None
        all_rss = [*old_rss, new_rs]
        target = rolling.reconcile_new(d, all_rss, new_rs)
        if target is not None:
            new_rs = await self._scale(d, new_rs, target)
            return await self._sync_status(d, [*old_rss, new_rs], new_rs)
        targets = rolling.reconcile_old(d, all_rss, old_rss, new_rs)
        if targets:
            old_rss = [await self._scale(d, rs, targets[n]) if (n := wl.meta(rs).get("name")) in targets else rs
                       for rs in old_rss]
            return await self._sync_status(d, [*old_rss, new_rs], new_rs)
        if du.complete(d, d.get("status") or {}):
            await self._cleanup(d, old_rss)
        return await self._sync_status(d, all_rss, new_rs)

    async def _recreate(self, d: Obj, rss: list[Obj]) -> float | None:
        """`rolloutRecreate`: every old ReplicaSet to 0, wait for their pods to go, then the new one up."""
        new_rs, old_rss = await self._new_replicaset(d, rss, create=False)
        active_old = [rs for rs in old_rss if du.replicas(rs) > 0]
        if active_old:
            scaled = {wl.meta(rs)["name"]: await self._scale(d, rs, 0) for rs in active_old}
            old_rss = [scaled.get(wl.meta(rs)["name"], rs) for rs in old_rss]
            return await self._sync_status(d, old_rss + ([new_rs] if new_rs else []), new_rs)
        if self._old_pods_running(new_rs, old_rss):
            return await self._sync_status(d, old_rss + ([new_rs] if new_rs else []), new_rs)
        if new_rs is None:
            new_rs, old_rss = await self._new_replicaset(d, rss, create=True)
            if new_rs is None:
                return None
        if du.replicas(new_rs) != du.replicas(d):
            new_rs = await self._scale(d, new_rs, du.replicas(d))
        if du.complete(d, d.get("status") or {}):
            await self._cleanup(d, old_rss)
        return await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _sync_paused(self, d: Obj, rss: list[Obj]) -> float | None:
        """A paused Deployment (`sync`, simplified): no rollout; a lone active ReplicaSet follows replicas."""
        new_rs, old_rss = await self._new_replicaset(d, rss, create=False)
        rss = [*old_rss, *([new_rs] if new_rs is not None else [])]
        active = [rs for rs in rss if du.replicas(rs) > 0]
        lone = active[0] if len(active) == 1 else (new_rs if not active else None)
        if lone is not None and du.replicas(lone) != du.replicas(d):
            scaled = await self._scale(d, lone, du.replicas(d))
            rss = [scaled if rs is lone else rs for rs in rss]
            new_rs = scaled if lone is new_rs else new_rs
        return await self._sync_status(d, rss, new_rs, progress=False)

    # --- ReplicaSets ---------------------------------------------------------------------------------

    async def _claim(self, d: Obj) -> list[Obj]:
        ns = wl.meta(d).get("namespace")
        owned = [self.replicasets.get(name, rns) for rns, name in self.rs_index.owned(str(wl.meta(d)["uid"]))]
        orphans = [rs for rs in self.replicasets.list(ns) if wl.controller_ref(rs) is None]
        decided = claims.claim(d, du.spec(d).get("selector"),
                               [copy.deepcopy(rs) for rs in owned + orphans if rs is not None])
        kept = list(decided.owned)
        for rs in decided.adopt:
            if (adopted := await claims.adopt(self.client, REPLICASETS, rs, d, "Deployment")) is not None:
                kept.append(adopted)
        for rs in decided.release:
            await claims.release(self.client, REPLICASETS, rs, d)
        return kept

    async def _new_replicaset(self, d: Obj, rss: list[Obj], *, create: bool) -> tuple[Obj | None, list[Obj]]:
        """`getNewReplicaSet`: the new ReplicaSet with its annotations synced, created when asked and missing."""
        new_rs, old_rss = du.find_new(d, rss)
        new_revision = du.next_revision(old_rss)
        conditions = (d.setdefault("status", {})).setdefault("conditions", [])
        if new_rs is not None:
            new_rs = await self._sync_annotations(d, new_rs, new_revision)
            if du.condition(d["status"], "Progressing") is None:
                du.set_condition(conditions, "Progressing", "True", "FoundNewReplicaSet",
                                 f'Found new replica set "{wl.meta(new_rs)["name"]}"', wl.now_rfc3339())
            await self._set_revision(d, new_rs)
            return new_rs, old_rss
        if not create:
            return None, old_rss
        count = du.new_rs_replicas(d, old_rss, None)
        body = du.new_replicaset(d, du.template_hash(d), new_revision, count)
        try:
            new_rs = await self.client.create(REPLICASETS, body)
        except errors.ApiError as exc:
            if not exc.is_already_exists:
                raise
            new_rs = await self._taken_name(d, body)
        else:
            if count > 0:
                self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                    f"Scaled up replica set {wl.meta(new_rs)['name']} from 0 to {count}")
        du.set_condition(conditions, "Progressing", "True", "NewReplicaSetCreated",
                         f'Created new replica set "{wl.meta(new_rs)["name"]}"', wl.now_rfc3339())
        await self._set_revision(d, new_rs)
        return new_rs, old_rss

    async def _taken_name(self, d: Obj, body: Obj) -> Obj:
        """The name `<deployment>-<hash>` exists: ours with this template (a stale cache) is the new
        ReplicaSet; anything else is a hash collision, counted in status.collisionCount for the next pass."""
        existing = await self.client.get(REPLICASETS, body["metadata"]["name"], namespace=wl.meta(d)["namespace"])
        ref = wl.controller_ref(existing) or {}
        if ref.get("uid") == wl.meta(d).get("uid") and du.equal_ignore_hash(
                du.spec(existing).get("template") or {}, du.spec(d).get("template") or {}):
            return existing
        status = dict(d.get("status") or {})
        status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
        await wl.write_status(self.client, wl.DEPLOYMENTS, d, status)
        raise RuntimeError(f"replica set {body['metadata']['name']} already exists and is not deployment "
                           f"{wl.meta(d)['name']}'s: collisionCount raised to {status['collisionCount']}, retrying")

    async def _sync_annotations(self, d: Obj, rs: Obj, new_revision: int) -> Obj:
        annotations = du.synced_annotations(d, rs, new_revision)
        min_ready = du.spec(d).get("minReadySeconds") or 0
        if (annotations == (wl.meta(rs).get("annotations") or {})
                and (du.spec(rs).get("minReadySeconds") or 0) == min_ready):
            return rs
        body = copy.deepcopy(rs)
        body["metadata"]["annotations"] = annotations
        body["spec"]["minReadySeconds"] = min_ready
        return await self._update_rs(body) or rs

    async def _set_revision(self, d: Obj, new_rs: Obj) -> None:
        """`SetDeploymentRevision`: the Deployment shows its new ReplicaSet's revision, written as
        kube-controller-manager writes it, through `UpdateStatus` (sync.go getNewReplicaSet): the Deployment's
        status strategy keeps annotations, so the annotation is owned by the controller's status entry."""
        wanted = (wl.meta(new_rs).get("annotations") or {}).get(du.REVISION)
        if wanted is None or (wl.meta(d).get("annotations") or {}).get(du.REVISION) == wanted:
            return
        body = copy.deepcopy(d)
        body["metadata"].setdefault("annotations", {})[du.REVISION] = wanted
        updated = await self.client.replace(wl.DEPLOYMENTS, body, subresource="status")
        d["metadata"] = updated["metadata"]

    async def _scale(self, d: Obj, rs: Obj, count: int) -> Obj:
        """`scaleReplicaSet`: new replica count and replica annotations; a ScalingReplicaSet event."""
        before = du.replicas(rs)
        body = copy.deepcopy(rs)
        body["spec"]["replicas"] = count
        body["metadata"]["annotations"] = {**(wl.meta(rs).get("annotations") or {}), **du.replica_annotations(d)}
        updated = await self._update_rs(body)
        if updated is None:
            return rs
        if before != count:
            direction = "up" if count > before else "down"
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled {direction} replica set {wl.meta(rs)['name']} from {before} to {count}")
        return updated

    async def _update_rs(self, body: Obj) -> Obj | None:
        """PUT with the cached resourceVersion; None on a conflict (the informer's event brings a new pass)."""
        try:
            return await self.client.replace(REPLICASETS, body)
        except errors.ApiError as exc:
            if exc.is_conflict or exc.is_not_found:
                return None
            raise

    async def _cleanup(self, d: Obj, old_rss: list[Obj]) -> None:
        for rs in du.cleanable(d, old_rss):
            m = wl.meta(rs)
            try:
                await self.client.delete(REPLICASETS, m["name"], namespace=m["namespace"],
                                         preconditions={"uid": m["uid"]})
            except errors.ApiError as exc:
                if not (exc.is_not_found or exc.is_conflict):
                    raise

    def _old_pods_running(self, new_rs: Obj | None, old_rss: list[Obj]) -> bool:
        """`oldPodsRunning`: an old ReplicaSet still reports pods, or one of its pods is not finished."""
        if sum(du.status_count(rs, "replicas") for rs in old_rss) > 0:
            return True
        for rs in old_rss:
            for ns, name in self.pod_index.owned(str(wl.meta(rs)["uid"])):
                pod = self.pods.get(name, ns)
                if pod is not None and wl.phase(pod) not in ("Failed", "Succeeded"):
                    return True
        return False

    # --- status --------------------------------------------------------------------------------------

    def _paused_condition(self, d: Obj, paused: bool) -> None:
        """`checkPausedConditions`: Progressing Unknown DeploymentPaused while paused, DeploymentResumed after."""
        status = d.setdefault("status", {})
        cond = du.condition(status, "Progressing")
        reason = (cond or {}).get("reason")
        conditions = status.setdefault("conditions", [])
        if paused and reason != "DeploymentPaused":
            du.set_condition(conditions, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused",
                             wl.now_rfc3339())
        elif not paused and reason == "DeploymentPaused":
            du.set_condition(conditions, "Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed",
                             wl.now_rfc3339())

    async def _sync_status(self, d: Obj, rss: list[Obj], new_rs: Obj | None, *, progress: bool = True) -> float | None:
        """`syncRolloutStatus` (or `syncDeploymentStatus` without progress): write the status if it changed,
        and ask for a pass at the progress deadline while the rollout is not complete."""
        stamp = wl.now_rfc3339()
        status = du.calculate_status(d, rss, new_rs, stamp)
        if progress:
            du.progress_condition(d, status, new_rs, time.time(), stamp)
        stored = copy.deepcopy(self.deployments.get(wl.meta(d)["name"], wl.meta(d)["namespace"]) or d)
        if status != (stored.get("status") or {}):
            await wl.write_status(self.client, wl.DEPLOYMENTS, stored, status)
        return self._deadline_in(d, status) if progress else None

    def _deadline_in(self, d: Obj, status: Obj) -> float | None:
        """`requeueStuckDeployment`: seconds until a progressing rollout would exceed its deadline."""
        cond = du.condition(status, "Progressing")
        deadline = du.spec(d).get("progressDeadlineSeconds")
        if cond is None or deadline is None or du.complete(d, status) or cond.get("reason") in (
                "ProgressDeadlineExceeded", "NewReplicaSetAvailable"):
            return None
        since = wl.parse_time(cond.get("lastUpdateTime"))
        return None if since is None else max(0.5, since + int(deadline) - time.time() + 0.5)
