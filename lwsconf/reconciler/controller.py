"""The reference reconciler's I/O layer: informers, the two reconcile loops, and the API writes.

Two level-based loops, as upstream has (docs/lws-contract.md section 0):

* the **LWS loop** (key: the LeaderWorkerSet) owns ControllerRevisions, the leader StatefulSet
  (rollout partition and surge), the shared headless Service and the status;
* the **pod loop** (key: a pod carrying the `name` label) stamps the labels upstream's pod webhook
  would, decides group recreation, and creates each leader's worker StatefulSet and per-group Service;
  with gang scheduling (`gang_scheduling="volcano"`) also each leader's Volcano PodGroup and every pod's
  `scheduling.k8s.io/group-name` annotation (`gang`).

Everything is read from informer caches filled by LIST+WATCH; every decision comes from the pure core
(`revision`, `rollout`, `desired`, `status`, `groups`, `restart`, `pods`); this module only wires
caches to those functions and applies the answers with optimistic concurrency (a 409 is a retry).
It never deletes anything it does not own, and never imports the simulator.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from lwsconf import kubeclient, lwsapi
from lwsconf.reconciler import (
    desired,
    eventrecorder,
    events,
    gang,
    groups,
    labels,
    names,
    pods,
    restart,
    revision,
    rollout,
    runtime,
    spec,
    status,
)

log = logging.getLogger("lwsconf.reconciler")

Obj = dict[str, Any]
LWS = kubeclient.GVR(lwsapi.GROUP, lwsapi.VERSION, lwsapi.PLURAL)
STATEFULSETS = kubeclient.GVR("apps", "v1", "statefulsets")
REVISIONS = kubeclient.GVR("apps", "v1", "controllerrevisions")
PODS = kubeclient.GVR("", "v1", "pods")
SERVICES = kubeclient.GVR("", "v1", "services")
NODES = kubeclient.GVR("", "v1", "nodes", namespaced=False)
PODGROUPS = kubeclient.GVR(lwsapi.VOLCANO_GROUP, lwsapi.VOLCANO_VERSION, lwsapi.PODGROUP_PLURAL)
OWNED = labels.NAME  # every object the reconciler creates or watches carries this label key
REQUEUE_WAITING = 5.0


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _lws_name_of(obj: Obj) -> str | None:
    return (_meta(obj).get("labels") or {}).get(OWNED)


class Manager:
    """All informers and both loops for one cluster; `run(stop)` until stop is set."""

    def __init__(self, client: kubeclient.Client, *, workers: int = 4, namespace: str | None = None,
                 gang_scheduling: str | None = None) -> None:
        self.client = client
        self.gang_scheduling = gang.check_provider(gang_scheduling)
        """The gang-scheduling provider (`volcano`), as upstream's gangSchedulingManagement; None: off."""
        self.recorder = eventrecorder.EventRecorder(client, component="lws-reference")
        selector = OWNED
        self.lws = kubeclient.Informer(client, LWS, namespace=namespace)
        self.statefulsets = kubeclient.Informer(client, STATEFULSETS, namespace=namespace, label_selector=selector)
        self.revisions = kubeclient.Informer(client, REVISIONS, namespace=namespace, label_selector=selector)
        self.pods = kubeclient.Informer(client, PODS, namespace=namespace, label_selector=selector)
        self.services = kubeclient.Informer(client, SERVICES, namespace=namespace, label_selector=selector)
        self.podgroups = (kubeclient.Informer(client, PODGROUPS, namespace=namespace, label_selector=selector)
                          if self.gang_scheduling else None)
        self.lws_loop = runtime.Controller("lws", LwsReconciler(self), workers=workers)
        self.pod_loop = runtime.Controller("lws-pods", PodReconciler(self), workers=workers)
        self._wire()

    @property
    def informers(self) -> list[kubeclient.Informer]:
        extra = [self.podgroups] if self.podgroups is not None else []
        return [self.lws, self.statefulsets, self.revisions, self.pods, self.services, *extra]

    def _wire(self) -> None:
        def lws_event(_t: str, obj: Obj, _old: Obj | None) -> None:
            self.lws_loop.enqueue(runtime.Request(_meta(obj).get("namespace", ""), _meta(obj)["name"]))

        def child_event(_t: str, obj: Obj, _old: Obj | None) -> None:
            name = _lws_name_of(obj)
            if name:
                self.lws_loop.enqueue(runtime.Request(_meta(obj).get("namespace", ""), name))

        def pod_event(t: str, obj: Obj, old: Obj | None) -> None:
            child_event(t, obj, old)
            if t != "DELETED":
                self.pod_loop.enqueue(runtime.Request(_meta(obj).get("namespace", ""), _meta(obj)["name"]))

        def leader_owned_event(_t: str, obj: Obj, _old: Obj | None) -> None:
            for ref in _meta(obj).get("ownerReferences") or []:
                if ref.get("kind") == "Pod" and ref.get("controller"):
                    self.pod_loop.enqueue(runtime.Request(_meta(obj).get("namespace", ""), ref["name"]))

        def worker_sts_event(t: str, obj: Obj, old: Obj | None) -> None:
            child_event(t, obj, old)
            for ref in _meta(obj).get("ownerReferences") or []:
                if ref.get("kind") == "Pod" and ref.get("controller"):
                    self.pod_loop.enqueue(runtime.Request(_meta(obj).get("namespace", ""), ref["name"]))

        def lws_to_leader_pods(t: str, obj: Obj, old: Obj | None) -> None:
            # A changed startupPolicy, template or restart policy can unblock leader pods' groups.
            lws_event(t, obj, old)
            ns, name = _meta(obj).get("namespace", ""), _meta(obj)["name"]
            for pod in self.pods.list(ns):
                if _lws_name_of(pod) == name and pods.is_leader(pod):
                    self.pod_loop.enqueue(runtime.Request(ns, _meta(pod)["name"]))

        self.lws.add_handler(lws_to_leader_pods)
        self.statefulsets.add_handler(worker_sts_event)
        self.revisions.add_handler(child_event)
        self.services.add_handler(child_event)
        self.pods.add_handler(pod_event)
        if self.podgroups is not None:
            self.podgroups.add_handler(leader_owned_event)

    async def run(self, stop: asyncio.Event) -> None:
        await runtime.run_with_informers(self.informers, stop,
                                         lambda: asyncio.gather(self.lws_loop.run(stop), self.pod_loop.run(stop)))

    # --- shared reads ---------------------------------------------------------------------------

    def owned_revisions(self, lws: Obj) -> list[Obj]:
        ns = _meta(lws).get("namespace", "")
        return revision.owned([r for r in self.revisions.list(ns) if _lws_name_of(r) == _meta(lws)["name"]], lws)

    def lws_pods(self, ns: str, name: str) -> list[Obj]:
        return [p for p in self.pods.list(ns) if _lws_name_of(p) == name]

    def worker_sets(self, ns: str, name: str) -> dict[str, Obj]:
        return {_meta(s)["name"]: s for s in self.statefulsets.list(ns)
                if _lws_name_of(s) == name and _meta(s)["name"] != name}


async def _create_or_ignore(client: kubeclient.Client, gvr: kubeclient.GVR, body: Obj, ns: str) -> Obj | None:
    try:
        return await client.create(gvr, body, namespace=ns)
    except kubeclient.ApiError as exc:
        if exc.is_already_exists:
            return None
        raise


def _with_labels(pod: Obj, added: dict[str, str]) -> Obj:
    """`pod` as it reads once `added` labels are patched on (the PodGroup name needs the group index)."""
    if not added:
        return pod
    meta = _meta(pod)
    return {**pod, "metadata": {**meta, "labels": {**(meta.get("labels") or {}), **added}}}


def _owned_by(obj: Obj, owner: Obj) -> bool:
    return any(ref.get("uid") == _meta(owner).get("uid") for ref in _meta(obj).get("ownerReferences") or [])


class LwsReconciler:
    """Revisions, leader StatefulSet (rollout), shared Service, status; then retire old revisions."""

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    async def reconcile(self, req: runtime.Request) -> runtime.Result:
        lws = self.mgr.lws.get(req.name, req.namespace)
        if lws is None or _meta(lws).get("deletionTimestamp"):
            return runtime.Result()
        lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
        if lwt.get("restartPolicy") == "Default":
            # Upstream's mutating webhook stores the deprecated Default as None (contract 1.3); the
            # leaderworkerset-defaults MutatingAdmissionPolicy does it at admission where the cluster serves
            # it (Kubernetes >= 1.36). Elsewhere the controller rewrites it before anything is created from
            # the spec, so the revision snapshot never sees "Default" (README, "Validation and defaulting").
            await self.mgr.client.patch(LWS, req.name, {"spec": {"leaderWorkerTemplate": {"restartPolicy": "None"}}},
                                        namespace=req.namespace)
            return runtime.Result()
        try:
            view = spec.LwsSpec.of(lws)
        except ValueError as exc:
            await self.mgr.recorder.record(lws, events.Event("Warning", "InvalidSpec", str(exc), "Reconcile"))
            raise runtime.TerminalError(f"{req}: {exc}") from exc
        sts = self.mgr.statefulsets.get(req.name, req.namespace)
        if sts is not None and _meta(sts).get("deletionTimestamp"):
            return runtime.Result(requeue_after=REQUEUE_WAITING)
        revisions = self.mgr.owned_revisions(lws)
        plan = revision.plan(lws, sts, revisions)
        if plan.create is not None:
            await _create_or_ignore(self.mgr.client, REVISIONS, plan.create, req.namespace)
            revisions = [*revisions, plan.create]
        if plan.event is not None:
            await self.mgr.recorder.record(lws, plan.event)
        sts = await self._apply_leader_set(lws, view, sts, plan)
        for svc in desired.lws_services(lws):
            if self.mgr.services.get(_meta(svc)["name"], req.namespace) is None:
                await _create_or_ignore(self.mgr.client, SERVICES, svc, req.namespace)
        return await self._write_status(lws, view, sts, plan.current_key, revisions)

    async def _apply_leader_set(self, lws: Obj, view: spec.LwsSpec, sts: Obj | None,
                                plan: revision.RevisionPlan) -> Obj | None:
        ns, name = _meta(lws)["namespace"], _meta(lws)["name"]
        leader_set = rollout.LeaderSet.of(sts) if sts is not None else None
        states = rollout.group_states(
            name, size=view.size, current_key=plan.current_key,
            sts_replicas=leader_set.replicas if leader_set else 0,
            leader_pods=[p for p in self.mgr.lws_pods(ns, name) if pods.is_leader(p) and not pods.is_deleting(p)],
            worker_statefulsets=self.mgr.worker_sets(ns, name).values())
        decision = rollout.decide(rollout.RolloutInput(
            lws_name=name, replicas=view.replicas, partition=view.partition,
            budget=rollout.resolve_budget(view.replicas, view.max_unavailable, view.max_surge),
            leader_set=leader_set, updated_now=plan.updated_now, states=states))
        want = desired.leader_statefulset(lws, revision_key=plan.current_key, partition=decision.partition,
                                          replicas=decision.replicas)
        if sts is None:
            created = await _create_or_ignore(self.mgr.client, STATEFULSETS, want, ns)
            if created is not None:
                await self.mgr.recorder.record(lws, events.created_leader_statefulset(name))
            return created
        if not desired.differs(want, sts):
            return sts
        updated = await self.mgr.client.replace(STATEFULSETS, desired.merged_for_update(sts, want), namespace=ns)
        for event in decision.events:
            await self.mgr.recorder.record(lws, event)
        return updated

    async def _write_status(self, lws: Obj, view: spec.LwsSpec, sts: Obj | None, key: str,
                            revisions: list[Obj]) -> runtime.Result:
        ns, name = _meta(lws)["namespace"], _meta(lws)["name"]
        observed = status.observe_groups(
            name, size=view.size, current_key=key,
            leader_pods=[p for p in self.mgr.lws_pods(ns, name) if pods.is_leader(p) and not pods.is_deleting(p)],
            worker_statefulsets=self.mgr.worker_sets(ns, name))
        result = status.compute(lws, leader_sts_replicas=int(((sts or {}).get("status") or {}).get("replicas") or 0),
                                groups=observed, now=eventrecorder.now())
        if result.changed:
            # A merge patch of the whole status: computed from caches (level-based), so a stale base
            # object must not turn into a 409 loop; the next reconcile corrects any lag.
            await self.mgr.client.patch(LWS, name, {"status": result.status}, namespace=ns, subresource="status")
            for event in result.events:
                await self.mgr.recorder.record(lws, event)
        if result.update_done:
            for old in revision.to_delete(revisions, key, update_done=True):
                with contextlib.suppress(kubeclient.ApiError):
                    await self.mgr.client.delete(REVISIONS, _meta(old)["name"], namespace=ns)
        return runtime.Result()


class PodReconciler:
    """Labels upstream's webhook would stamp, group recreation, and each leader's group objects."""

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    async def reconcile(self, req: runtime.Request) -> runtime.Result:
        pod = self.mgr.pods.get(req.name, req.namespace)
        name = _lws_name_of(pod) if pod is not None else None
        if pod is None or name is None:
            return runtime.Result()
        lws = self.mgr.lws.get(name, req.namespace)
        if lws is None or _meta(lws).get("deletionTimestamp"):
            return runtime.Result()
        patch: Obj = {}
        if label_patch := pods.label_patch(pod):
            patch["labels"] = label_patch
        if self.mgr.gang_scheduling and (annotations := gang.annotation_patch(_with_labels(pod, label_patch))):
            patch["annotations"] = annotations
        if patch:
            with contextlib.suppress(kubeclient.ApiError):
                pod = await self.mgr.client.patch(PODS, req.name, {"metadata": patch}, namespace=req.namespace)
        if await self._maybe_recreate_group(lws, pod):
            return runtime.Result()
        if not pods.is_leader(pod):
            return runtime.Result()
        return await self._ensure_group(lws, pod)

    async def _maybe_recreate_group(self, lws: Obj, pod: Obj) -> bool:
        ns, name = _meta(pod)["namespace"], _meta(pod)["name"]
        lws_name = _meta(lws)["name"]
        parsed = names.parent_and_ordinal(name)
        leader = pod if pods.is_leader(pod) or parsed is None else self.mgr.pods.get(parsed[0], ns)
        controlling = None
        for ref in _meta(pod).get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "StatefulSet":
                controlling = self.mgr.statefulsets.get(ref["name"], ns)
        index = pods.group_index(leader or pod, lws_name)
        group_pods = pods.in_group(self.mgr.lws_pods(ns, lws_name), lws_name, index) if index is not None else [pod]
        decision = restart.decide(lws, pod, group_pods=group_pods, leader=leader, controlling_sts=controlling)
        if decision.action == "delete-leader" and decision.leader_name:
            try:
                await self.mgr.client.delete(PODS, decision.leader_name, namespace=ns, propagation_policy="Foreground",
                                             preconditions={"uid": decision.leader_uid or ""})
            except kubeclient.ApiError as exc:
                if not (exc.is_not_found or exc.is_conflict):
                    raise
                return True
            if decision.event is not None:
                await self.mgr.recorder.record(lws, decision.event)
            return True
        return decision.action == "leader-deleting"

    async def _ensure_group(self, lws: Obj, leader: Obj) -> runtime.Result:
        ns = _meta(leader)["namespace"]
        node = None
        node_name = (leader.get("spec") or {}).get("nodeName")
        if spec.LwsSpec.of(lws).exclusive_topology and node_name:
            with contextlib.suppress(kubeclient.ApiError):
                node = await self.mgr.client.get(NODES, node_name)
        plan = groups.plan(lws, leader, revisions=self.mgr.owned_revisions(lws), node=node,
                           gang_scheduling=self.mgr.gang_scheduling is not None)
        if plan.service is not None and self.mgr.services.get(_meta(plan.service)["name"], ns) is None:
            await _create_or_ignore(self.mgr.client, SERVICES, plan.service, ns)
        podgroup_pending = await self._ensure_pod_group(plan.pod_group, leader)
        if plan.worker_statefulset is not None:
            sts_name = _meta(plan.worker_statefulset)["name"]
            existing = self.mgr.statefulsets.get(sts_name, ns)
            if existing is None:
                if await _create_or_ignore(self.mgr.client, STATEFULSETS, plan.worker_statefulset, ns) is not None:
                    await self.mgr.recorder.record(lws, events.created_worker_statefulset(_meta(leader)["name"]))
            elif _meta(existing).get("deletionTimestamp") or not _owned_by(existing, leader):
                return runtime.Result(requeue_after=1.0)  # T5: the old group's StatefulSet must be gone first
        if plan.event is not None:
            await self.mgr.recorder.record(lws, plan.event)
        if plan.retry or podgroup_pending:
            return runtime.Result(requeue_after=1.0)
        return runtime.Result()

    async def _ensure_pod_group(self, podgroup: Obj | None, leader: Obj) -> bool:
        """Create the group's PodGroup if absent; True while a same-named one of a former leader is still there
        (it goes with that leader; look again then). Upstream's is create-once too (volcano_provider.go:54-98)."""
        if podgroup is None or self.mgr.podgroups is None:
            return False
        ns = _meta(leader)["namespace"]
        existing = self.mgr.podgroups.get(_meta(podgroup)["name"], ns)
        if existing is None:
            await _create_or_ignore(self.mgr.client, PODGROUPS, podgroup, ns)
            return False
        return not gang.owned_by(existing, leader)
