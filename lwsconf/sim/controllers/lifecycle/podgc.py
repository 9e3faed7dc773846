"""Orphan pod collection: pods bound to a Node that no longer exists are failed and force-deleted.

kube-controller-manager's pod garbage collector (pkg/controller/podgc/gc_controller.go `gcOrphaned`):
a pod whose `spec.nodeName` names a node missing from the node informer is quarantined for
`quarantineTime` (40 s upstream), then, if a live GET confirms the node is gone, it is patched to
phase Failed with a `DisruptionTarget` condition (reason DeletionByPodGC, message "PodGC: node no
longer exists"; a pod already Succeeded or Failed keeps its status) and deleted with
gracePeriodSeconds 0 (`markFailedAndDeletePodWithCondition`). No kubelet is left to finish a
graceful deletion, so only a forced one frees the pod's name for a StatefulSet to create it again.

Left out: `gcTerminated` (the terminated-pod threshold, 12500 upstream), `gcTerminating` (pods on
out-of-service nodes) and `gcUnscheduledTerminating` (the sim API server already deletes unbound pods
at once). `OrphanPodGC` is driven by `nodelifecycle.NodeLifecycleController`, which calls `sync` on
each pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.controllers.lifecycle import taint_eviction

log = logging.getLogger(__name__)
Obj = dict[str, Any]
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
REASON = "DeletionByPodGC"
MESSAGE = "PodGC: node no longer exists"


class OrphanPodGC:
    """Deletes the pods of deleted nodes after `quarantine` seconds and a confirming GET."""

    def __init__(self, client: kc.Client, *, quarantine: float) -> None:
        self.client = client
        self.quarantine = quarantine
        self.missing_since: dict[str, float] = {}
        """Node names pods are bound to but the node informer lacks, and since when (controller clock)."""

    async def sync(self, node_names: set[str], pods: Iterable[Obj], now: float) -> None:
        orphans: dict[str, list[Obj]] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and node not in node_names:
                orphans.setdefault(node, []).append(pod)
        for name in [n for n in self.missing_since if n not in orphans]:
            del self.missing_since[name]
        for name, bound in orphans.items():
            since = self.missing_since.setdefault(name, now)
            if now - since < self.quarantine or await self._node_exists(name):
                continue
            for pod in bound:
                await self._fail_and_delete(pod)

    async def _node_exists(self, name: str) -> bool:
        try:
            await self.client.get(NODES, name)
        except errors.ApiError as exc:
            if exc.is_not_found:
                return False
            raise
        return True

    async def _fail_and_delete(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        ns, name, uid = meta.get("namespace", ""), meta.get("name", ""), str(meta.get("uid"))
        log.info("pod gc: force deleting orphaned pod %s/%s (node %s is gone)", ns, name,
                 (pod.get("spec") or {}).get("nodeName"))
        try:
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                await self._mark_failed(pod)
            body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                    "preconditions": {"uid": uid}}
            await self.client.request("DELETE", kc.PODS.object_path(name, ns), body=body)
        except errors.ApiError as exc:
            if not (exc.is_not_found or exc.is_conflict):
                log.info("pod gc: deleting %s/%s failed: %s; retrying", ns, name, exc)

    async def _mark_failed(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        fresh = await self.client.get(kc.PODS, meta.get("name", ""), namespace=meta.get("namespace"))
        if (fresh.get("metadata") or {}).get("uid") != meta.get("uid"):
            return
        status = fresh.setdefault("status", {})
        status["phase"] = "Failed"
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": REASON, "message": MESSAGE,
                           "lastTransitionTime": taint_eviction.now_rfc3339()})
        status["conditions"] = conditions
        await self.client.replace(kc.PODS, fresh, subresource="status")
