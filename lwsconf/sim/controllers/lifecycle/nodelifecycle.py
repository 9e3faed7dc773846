"""The node lifecycle controller: notices nodes that stop reporting, taints them, evicts their pods.

What kube-controller-manager does (pkg/controller/nodelifecycle/node_lifecycle_controller.go,
`monitorNodeHealth`, `tryUpdateNodeHealth`, `doNoScheduleTaintingPass`, `processTaintBaseEviction`,
`handleDisruption`; pkg/controller/util/node `MarkPodsNotReady`), on a short period:

* **Health**: a node is heard from when its Lease in kube-node-lease is renewed or its Ready
  condition's lastHeartbeatTime moves; the time of that observation is the controller's own clock,
  not the kubelet's. Unheard for `grace_period` (`--node-monitor-grace-period`: 40 s upstream until
  v1.31, 50 s since v1.32; the sim default is 5 s, the sim kubelets renew every second) - or for
  `startup_grace_period` when the node never posted a Ready condition - its Ready, MemoryPressure,
  DiskPressure and PIDPressure conditions become Unknown (reason NodeStatusUnknown, "Kubelet stopped
  posting node status."; NodeStatusNeverUpdated when missing). Before writing, the sim re-reads the
  Lease, so an informer lagging behind never declares a live node lost.
* **Ready -> not Ready**: a Node event NodeNotReady ("Node X status is now: NodeNotReady"), and
  every pod on the node gets Ready=False with a Warning event NodeNotReady ("Node is not ready"), so
  Services stop sending it traffic.
* **Taints**: NoSchedule taints mirror the conditions (TaintNodesByCondition: Ready False ->
  `node.kubernetes.io/not-ready`, Unknown -> `node.kubernetes.io/unreachable`, pressure conditions,
  NetworkUnavailable, and `node.kubernetes.io/unschedulable` for a cordoned node). NoExecute
  `not-ready`/`unreachable` taints (with timeAdded) follow Ready the same way and are removed once
  the node is Ready again; `taint_eviction` then evicts the pods that do not tolerate them.
* **Zones** (`topology.kubernetes.io/region` + zone): a zone with no Ready node is fully disrupted;
  one with more than 2 and at least `unhealthy_zone_threshold` (55 %) not-Ready nodes is partially
  disrupted, and gets no new NoExecute taints while the cluster has at most
  `large_cluster_threshold` (50) nodes in it. When every zone is fully disrupted (the control plane
  more likely lost the nodes than the other way round) all NoExecute taints are removed and none
  added. Nodes labelled `node.kubernetes.io/exclude-disruption` do not count.
* **Orphans**: pods bound to a deleted Node are failed and force-deleted (`podgc`).

Simplified: NoExecute tainting is not rate limited (upstream: `--node-eviction-rate` 0.1 nodes/s per
healthy zone, `--secondary-node-eviction-rate` 0.01 in a partially disrupted large zone); pods newly
bound to a not-Ready node are not marked NotReady (the scheduler does not bind there). The sim
kubelet stops its work when its Node is deleted (a deleted machine), which is why orphans matter.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.lifecycle import podgc, taint_eviction

log = logging.getLogger(__name__)
Obj = dict[str, Any]
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
LEASES = kc.GVR("coordination.k8s.io", "v1", "leases")
LEASE_NAMESPACE = "kube-node-lease"
COMPONENT = "node-controller"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
CONDITION_TAINTS = {("Ready", "False"): NOT_READY, ("Ready", "Unknown"): UNREACHABLE,
                    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
                    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
                    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
                    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable"}
"""nodeConditionToTaintKeyStatusMap: (condition, status) -> the NoSchedule taint it brings."""
_MANAGED_NO_SCHEDULE = frozenset({*CONDITION_TAINTS.values(), UNSCHEDULABLE})
_UNKNOWN_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
FULL, PARTIAL, NORMAL = "FullDisruption", "PartialDisruption", "Normal"


# --- pure decisions --------------------------------------------------------------------------------

def condition(node: Obj, ctype: str) -> Obj | None:
    return next((c for c in (node.get("status") or {}).get("conditions") or () if c.get("type") == ctype), None)


def ready_status(node: Obj) -> str:
    """The Ready condition's status; a node without one counts as Unknown."""
    cond = condition(node, "Ready")
    return str(cond.get("status") or "Unknown") if cond else "Unknown"


def zone_key(node: Obj) -> str:
    """`GetZoneKey`: region and zone labels joined with ":\\x00:", "" when the node has neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region, zone = labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def zone_state(statuses: list[str], unhealthy_threshold: float) -> str:
    """`ComputeZoneState` over the Ready statuses of one zone's nodes."""
    not_ready = sum(1 for s in statuses if s != "True")
    if not_ready and not_ready == len(statuses):
        return FULL
    if not_ready > 2 and not_ready / len(statuses) >= unhealthy_threshold:
        return PARTIAL
    return NORMAL


def mark_unknown(status: Obj, *, now: str, created: str) -> bool:
    """Set Ready and the pressure conditions to Unknown, as `tryUpdateNodeHealth`; True if anything changed."""
    conditions = status.setdefault("conditions", [])
    changed = False
    for ctype in _UNKNOWN_CONDITIONS:
        cond = next((c for c in conditions if c.get("type") == ctype), None)
        if cond is None:
            conditions.append({"type": ctype, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                               "message": "Kubelet never posted node status.", "lastHeartbeatTime": created,
                               "lastTransitionTime": now})
            changed = True
        elif cond.get("status") != "Unknown":
            cond.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.",
                        lastTransitionTime=now)
            changed = True
    return changed


def desired_taints(node: Obj, *, no_execute: str, now: str) -> list[Obj]:
    """The node's taints with the controller's own brought in line with its conditions.

    `no_execute`: "taint" (add the NoExecute taint Ready calls for), "hold" (swap not-ready and
    unreachable but add nothing new: a partially disrupted zone) or "clear" (remove them all).
    Taints the controller does not manage, and the timeAdded of those it keeps, are preserved.
    """
    current = [t for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, dict)]
    want_schedule = {key for (ctype, status), key in CONDITION_TAINTS.items()
                     if (condition(node, ctype) or {}).get("status") == status}
    if (node.get("spec") or {}).get("unschedulable"):
        want_schedule.add(UNSCHEDULABLE)
    ready = ready_status(node)
    want_execute = {"False": NOT_READY, "Unknown": UNREACHABLE}.get(ready)
    has_execute = {t.get("key") for t in current if t.get("effect") == "NoExecute"} & {NOT_READY, UNREACHABLE}
    if no_execute == "clear" or (no_execute == "hold" and not has_execute):
        want_execute = None
    kept = [t for t in current if not _managed(t) or _still_wanted(t, want_schedule, want_execute)]
    present = {(t.get("key"), t.get("effect")) for t in kept}
    added = [{"key": k, "effect": "NoSchedule"} for k in sorted(want_schedule) if (k, "NoSchedule") not in present]
    if want_execute and (want_execute, "NoExecute") not in present:
        added.append({"key": want_execute, "effect": "NoExecute", "timeAdded": now})
    return kept + added


def _managed(taint: Obj) -> bool:
    if taint.get("effect") == "NoSchedule":
        return taint.get("key") in _MANAGED_NO_SCHEDULE
    return taint.get("effect") == "NoExecute" and taint.get("key") in (NOT_READY, UNREACHABLE)


def _still_wanted(taint: Obj, want_schedule: set[str], want_execute: str | None) -> bool:
    if taint.get("effect") == "NoSchedule":
        return taint.get("key") in want_schedule
    return taint.get("key") == want_execute


def same_taints(a: list[Obj], b: list[Obj]) -> bool:
    def keys(taints: list[Obj]) -> set[tuple[Any, Any, Any]]:
        return {(t.get("key"), t.get("value"), t.get("effect")) for t in taints}
    return keys(a) == keys(b)


# --- the controller --------------------------------------------------------------------------------

@dataclass
class _Health:
    """What the controller last saw of a node, and when (its own clock) it last heard from it."""

    probe: float
    heartbeat: str | None
    renew: str | None
    ready: str
    marking_pods: bool = False
    """Ready went away and not every pod could be marked NotReady yet: try again next pass."""


class NodeLifecycleController:
    """Node health, condition and NoExecute taints, taint-based eviction and orphan pod GC.

    Args:
        client: the controller's own API client.
        monitor_period: seconds between passes (`--node-monitor-period`, 5 s upstream).
        grace_period: seconds without a heartbeat before a node is Unknown (40-50 s upstream).
        startup_grace_period: the same for a node that never posted Ready (60 s upstream).
        unhealthy_zone_threshold, large_cluster_threshold: see the module docstring (0.55 and 50 upstream).
        orphan_quarantine: seconds a pod's node must be missing before the pod is force-deleted (40 s upstream).
        clock: monotonic seconds (tests may pass their own).
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 monitor_period: float = 0.5, grace_period: float = 5.0,
                 startup_grace_period: float = 10.0, unhealthy_zone_threshold: float = 0.55,
                 large_cluster_threshold: int = 50, orphan_quarantine: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.monitor_period = monitor_period
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.unhealthy_zone_threshold = unhealthy_zone_threshold
        self.large_cluster_threshold = large_cluster_threshold
        self.clock = clock
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="Node", api_version="v1")
        self.eviction = taint_eviction.TaintEviction(client,
                                                     tracking.EventRecorder(client, "taint-eviction-controller"))
        self.podgc = podgc.OrphanPodGC(client, quarantine=orphan_quarantine)
        self.health: dict[str, _Health] = {}
        self.all_disrupted = False
        self.nodes = shared.informer(informers, client, NODES, watch_timeout=60.0)
        self.leases = shared.informer(informers, client, LEASES, namespace=LEASE_NAMESPACE, watch_timeout=60.0)
        self.pods = shared.informer(informers, client, kc.PODS, watch_timeout=60.0)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch nodes, leases and pods and act on them every `monitor_period` until `stop` is set."""
        informers = (self.nodes, self.leases, self.pods)
        for inf in informers:
            inf.start()
        try:
            await self.wait_synced()
            while not stop.is_set():
                try:
                    await self.sync_once()
                except errors.KubeClientError as exc:
                    log.info("node lifecycle pass failed: %s; retrying", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.monitor_period)
        finally:
            for inf in informers:
                inf.stop()
            for inf in informers:
                await inf.join()
            await self.recorder.close()
            await self.eviction.recorder.close()

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Until the node, lease and pod caches are filled (for tests)."""
        for inf in (self.nodes, self.leases, self.pods):
            await inf.wait_synced(timeout)

    async def sync_once(self) -> None:
        """One pass: node health, taints, evictions, orphans."""
        now = self.clock()
        nodes = {n["metadata"]["name"]: n for n in self.nodes.list()}
        pods_by_node: dict[str, list[Obj]] = {}
        for pod in self.pods.list():
            if (pod.get("spec") or {}).get("nodeName"):
                pods_by_node.setdefault(pod["spec"]["nodeName"], []).append(pod)
        for name in [n for n in self.health if n not in nodes]:
            del self.health[name]
        for name in sorted(nodes):
            nodes[name] = await self._monitor(nodes[name], now, pods_by_node.get(name, []))
        modes = self._no_execute_modes(list(nodes.values()), now)
        for name in sorted(nodes):
            nodes[name] = await self._reconcile_taints(nodes[name], modes.get(name, "taint"))
        await self.eviction.sync(nodes.values(), pods_by_node, now)
        await self.podgc.sync(set(nodes), self.pods.list(), now)

    # --- health ------------------------------------------------------------------------------------

    async def _monitor(self, node: Obj, now: float, pods: list[Obj]) -> Obj:
        """Track heartbeats; mark the node Unknown when silent too long; react to Ready going away."""
        name = node["metadata"]["name"]
        cond = condition(node, "Ready")
        heartbeat = cond.get("lastHeartbeatTime") if cond else None
        lease = self.leases.get(name, LEASE_NAMESPACE)
        renew = (lease.get("spec") or {}).get("renewTime") if lease else None
        health = self.health.get(name)
        if health is None:
            health = self.health[name] = _Health(now, heartbeat, renew, ready_status(node))
        if heartbeat != health.heartbeat or (renew is not None and renew != health.renew):
            health.probe, health.heartbeat, health.renew = now, heartbeat, renew or health.renew
        grace = self.grace_period if cond is not None else self.startup_grace_period
        if now - health.probe > grace and not _all_unknown(node) and not await self._lease_moved(name, health, now):
            node = await self._mark_unknown(node)
        status = ready_status(node)
        if health.ready == "True" and status != "True":
            log.info("node %s: Ready is now %s", name, status)
            self.recorder.event(node, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            health.marking_pods = True
        health.ready = status
        if health.marking_pods:
            health.marking_pods = status != "True" and not await self._mark_pods_not_ready(pods)
        return node

    async def _lease_moved(self, name: str, health: _Health, now: float) -> bool:
        """A live read of the Lease: renewed since the informer's copy? (then the node is fine)."""
        try:
            lease = await self.client.get(LEASES, name, namespace=LEASE_NAMESPACE)
        except errors.ApiError as exc:
            if exc.is_not_found:
                return False
            raise
        renew = (lease.get("spec") or {}).get("renewTime")
        if renew is not None and renew != health.renew:
            health.probe, health.renew = now, renew
            return True
        return False

    async def _mark_unknown(self, node: Obj) -> Obj:
        name = node["metadata"]["name"]
        try:
            live = await self.client.get(NODES, name)
            if not mark_unknown(live.setdefault("status", {}), now=taint_eviction.now_rfc3339(),
                                created=str(live["metadata"].get("creationTimestamp", ""))):
                return live
            log.info("node %s: no heartbeat for %.1fs; marking it Unknown", name, self.grace_period)
            return await self.client.replace(NODES, live, subresource="status")
        except errors.ApiError as exc:
            if not (exc.is_conflict or exc.is_not_found):
                raise
            return node  # changed or gone meanwhile: the next pass looks again

    async def _mark_pods_not_ready(self, pods: list[Obj]) -> bool:
        """`MarkPodsNotReady`: Ready=False on each pod of the node; True when all are done."""
        done = True
        for pod in pods:
            cond = next((c for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"),
                        None)
            if cond is None or cond.get("status") == "False":
                continue
            updated = copy.deepcopy(pod)
            for c in updated["status"]["conditions"]:
                if c.get("type") == "Ready":
                    c.update(status="False", lastTransitionTime=taint_eviction.now_rfc3339())
            try:
                await self.client.replace(kc.PODS, updated, subresource="status")
            except errors.ApiError as exc:
                if not exc.is_not_found:
                    done = False
                continue
            self.recorder.event({"kind": "Pod", "apiVersion": "v1", "metadata": pod["metadata"]},
                                "Warning", "NodeNotReady", "Node is not ready")
        return done

    # --- taints ------------------------------------------------------------------------------------

    def _no_execute_modes(self, nodes: list[Obj], now: float) -> dict[str, str]:
        """Per node: "taint", "hold" (partially disrupted small zone) or "clear" (all zones down)."""
        zones: dict[str, list[str]] = {}
        for node in nodes:
            if EXCLUDE_DISRUPTION not in ((node.get("metadata") or {}).get("labels") or {}):
                zones.setdefault(zone_key(node), []).append(ready_status(node))
        states = {z: zone_state(s, self.unhealthy_zone_threshold) for z, s in zones.items()}
        all_disrupted = bool(states) and all(s == FULL for s in states.values())
        if all_disrupted != self.all_disrupted:
            log.warning("node lifecycle: %s master disruption mode", "entering" if all_disrupted else "leaving")
            if not all_disrupted:
                for health in self.health.values():
                    health.probe = now  # as upstream: every node gets a fresh grace period
            self.all_disrupted = all_disrupted
        modes = {}
        for node in nodes:
            state = states.get(zone_key(node), NORMAL)
            small = len(zones.get(zone_key(node), ())) <= self.large_cluster_threshold
            mode = "clear" if all_disrupted else ("hold" if state == PARTIAL and small else "taint")
            modes[node["metadata"]["name"]] = mode
        return modes

    async def _reconcile_taints(self, node: Obj, mode: str) -> Obj:
        now = taint_eviction.now_rfc3339()
        if same_taints(desired_taints(node, no_execute=mode, now=now), (node.get("spec") or {}).get("taints") or []):
            return node
        name = node["metadata"]["name"]
        try:
            live = await self.client.get(NODES, name)
            wanted = desired_taints(live, no_execute=mode, now=now)
            if same_taints(wanted, (live.get("spec") or {}).get("taints") or []):
                return live
            log.info("node %s: taints -> %s", name, [f"{t['key']}:{t['effect']}" for t in wanted])
            live.setdefault("spec", {})["taints"] = wanted
            return await self.client.replace(NODES, live)
        except errors.ApiError as exc:
            if not (exc.is_conflict or exc.is_not_found):
                raise
            return node


def _all_unknown(node: Obj) -> bool:
    return all((condition(node, c) or {}).get("status") == "Unknown" for c in _UNKNOWN_CONDITIONS)
