"""`NodeAgent`: the simulated kubelet of one node, an HTTP client of the API server like a real one.

`run(stop)` registers the Node (labels, taints, podCIDR, capacity/allocatable, addresses, the log
server's port, nodeInfo, Ready), keeps its Lease in kube-node-lease fresh, watches the pods bound to
it (`fieldSelector=spec.nodeName=<node>`) and runs one `PodWorker` per pod. When `stop` is set it
ends every container process, closes its servers and returns; pods stay in the API as they are (the
node simply went away), as when a real kubelet stops.

It also watches its own Node: the `chaos.lwsconf.dev/*` annotations there switch node faults on and
off (`nodechaos`: cut off from the control plane, reporting NotReady, slow pod writes). When its Node
is deleted, the machine is taken to be gone: the agent stops every container, its Lease and its
status reports, and idles until `stop` without re-registering (a kubelet registers only at start-up),
so the pods left bound to the node are orphans for the pod garbage collector to delete.

The agent never imports the API server: everything goes through `lwsconf.kubeclient`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import hashlib
import importlib
import logging
import uuid
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any, cast

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, informer
from lwsconf.sim.nodes import aio, layout
from lwsconf.sim.nodes.kubelet import agentlogs, events, lease, nodechaos, nodectx, nodeobj, podworker, prober
from lwsconf.sim.nodes.network import dns, ipam, podnet
from lwsconf.sim.nodes.stages import lifecycle, settings

log = logging.getLogger(__name__)
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
Obj = dict[str, Any]
DEFAULT_STAGE_SETS = ("fast", "chaos")


class _Scoped:
    """The client as an informer sees it: every LIST and WATCH narrowed by one field selector."""

    def __init__(self, client: kc.Client, field_selector: str) -> None:
        self._client = client
        self._selector = field_selector

    async def list_all(self, gvr: kc.GVR, **kwargs: Any) -> tuple[list[Obj], str]:
        return await self._client.list_all(gvr, field_selector=self._selector, **kwargs)

    def watch(self, gvr: kc.GVR, **kwargs: Any) -> AsyncGenerator[kc.WatchEvent, None]:
        return self._client.watch(gvr, field_selector=self._selector, **kwargs)


class NodeAgent:
    """The kubelet of one simulated node.

    Args:
        client: this agent's own API client (the caller closes it).
        spec: the node's name, labels, capacity and taints.
        index: the node's position in the layout (0-based): fixes its IP and pod CIDR.
        pod_network: the cluster's 127.X.0.0/16.
        workdir: where the node keeps logs, volumes and device-plugin sockets (created if missing).
        stages: a Lifecycle, or stage set names (default fast + chaos).
        runtime: the process runtime (None: every container is emulated).
        device_manager: the device-plugin manager (None: extended resources from the layout).
        kubelet_settings: timings (default: those of the stage sets named in `stages`).
        seed: seeds the stages' jitter.
        launcher: what starts process containers (default: built from `runtime` when it is given).
        addresses: how pod IPs appear in the API (`podnet`; default the identity, as on the sim).
        cluster_dns: the cluster's one DNS, shared by every node's launcher (`NodeFleet` runs it);
            default: the default launcher runs one of its own.
    """

    def __init__(self, client: kc.Client, spec: layout.NodeSpec, *, index: int,
                 pod_network: str | ipam.PodNetwork, workdir: str | Path,
                 stages: lifecycle.Lifecycle | Sequence[str] = DEFAULT_STAGE_SETS,
                 runtime: nodectx.Runtime | None = None, device_manager: nodectx.DeviceManager | None = None,
                 kubelet_settings: settings.KubeletSettings | None = None, seed: int = 0,
                 launcher: nodectx.Launcher | None = None,
                 addresses: podnet.PodAddressMap = podnet.IDENTITY,
                 cluster_dns: dns.SharedClusterDNS | None = None) -> None:
        self.client = client
        self.addresses = addresses
        self.cluster_dns = cluster_dns
        self.spec = spec
        self.name = spec.name
        self.network = ipam.PodNetwork.parse(pod_network)
        self.host_ip = self.network.node_ip(index)
        self.pod_cidr = self.network.pod_cidr(index)
        self.workdir = Path(workdir)
        if isinstance(stages, lifecycle.Lifecycle):
            self.lifecycle, set_names = stages, list(DEFAULT_STAGE_SETS)
        else:
            self.lifecycle, set_names = lifecycle.load_sets(list(stages)), list(stages)
        self.settings = kubelet_settings or settings.load_settings(set_names)
        self.runtime = runtime
        self.device_manager = device_manager
        self.launcher = launcher
        self.seed = seed
        self.boot_id = str(uuid.uuid4())
        self.node_uid: str | None = None
        self.workers: dict[str, podworker.PodWorker] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._finished: set[str] = set()
        self._node_dirty = asyncio.Event()
        self.recorder = events.EventRecorder(client, self.name)
        # The kubelet port's client CA is the CA `client` trusts for the API server: as kubeadm's, whose one cluster CA
        # signs kube-apiserver's kubelet client certificate too (the sim's and local's do the same); with none, only
        # bearer tokens the API server reviews pass (`kubeletauth`).
        self.logs = agentlogs.AgentLogs(self, client, client.ca_pem)
        self.lease = lease.NodeLease(client, self.name, duration_seconds=self.settings.lease_duration,
                                     renew_interval=self.settings.lease_renew_interval)
        self.ctx: nodectx.NodeContext | None = None
        self.pods: informer.Informer | None = None
        self.node: informer.Informer | None = None
        self.chaos = nodechaos.ChaosSwitch()
        self.node_gone = asyncio.Event()
        """Set when this agent's Node object was deleted: the agent has stopped its work."""

    # --- lifecycle ------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Register, serve and run pods until `stop` is set; then stop every container and return."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        await self.logs.start(self.host_ip)
        side_tasks: list[asyncio.Task[Any]] = []
        prober.PROBE_THREAD.acquire()  # probe attempts off this loop while the agent runs (prober.ProbeThread)
        try:
            if self.device_manager is not None:
                await self.device_manager.start()
                self.device_manager.on_change(lambda *_: self._node_dirty.set())
            self.ctx = self._context()
            await self._register()
            self.recorder.start()
            self.lease.node_uid = self.node_uid
            side_tasks.append(asyncio.create_task(self.lease.run(stop), name=f"lease {self.name}"))
            side_tasks.append(asyncio.create_task(self._report_status(stop), name=f"node-status {self.name}"))
            self.node = informer.Informer(cast(kc.Client, _Scoped(self.client, f"metadata.name={self.name}")),
                                          NODES, watch_timeout=60.0)
            self.node.add_handler(self._on_node)
            self.node.start()
            self.pods = informer.Informer(cast(kc.Client, _Scoped(self.client, f"spec.nodeName={self.name}")),
                                          kc.PODS, watch_timeout=60.0)
            self.pods.add_handler(self._on_pod)
            self.pods.start()
            await aio.until_any(stop, self.node_gone)
            if not stop.is_set():
                log.warning("node %s: its Node object was deleted; stopping its pods until the agent stops",
                            self.name)
                await self._halt(side_tasks)
                await stop.wait()
        finally:
            try:
                await self._shutdown(side_tasks)
            finally:
                prober.PROBE_THREAD.release()

    async def _halt(self, side_tasks: list[asyncio.Task[Any]]) -> None:
        """Stop watching, stop every pod worker (and its containers), the Lease and status reports."""
        for watcher in (self.node, self.pods):
            if watcher is not None:
                watcher.stop()
                await watcher.join()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for task in side_tasks:
            task.cancel()
        await asyncio.gather(*side_tasks, return_exceptions=True)

    async def _shutdown(self, side_tasks: list[asyncio.Task[Any]]) -> None:
        await self._halt(side_tasks)
        if self.ctx is not None and self.ctx.launcher is not None:
            await self.ctx.launcher.close()
        await self.recorder.stop()
        await self.logs.stop()
        if self.device_manager is not None:
            with contextlib.suppress(Exception):
                await self.device_manager.stop()

    def _context(self) -> nodectx.NodeContext:
        logs_dir = self.workdir / "logs"
        logs_dir.mkdir(parents=True, exist_ok=True)
        launcher = self.launcher
        if launcher is None and self.runtime is not None:
            launcher = _default_launcher(self)
        return nodectx.NodeContext(
            client=self.client, node_name=self.name, host_ip=self.host_ip, labels=dict(self.spec.labels),
            lifecycle=self.lifecycle, settings=self.settings, recorder=self.recorder,
            ips=ipam.IPAllocator(self.pod_cidr), logs_dir=logs_dir, seed=self.seed, runtime=self.runtime,
            launcher=launcher, device_manager=self.device_manager, fake_devices=self._fake_pools(),
            allocatable=self.allocatable, admitted_pods=self._admitted_pods,
            before_write=self.chaos.before_pod_write, addresses=self.addresses)

    def _fake_pools(self) -> dict[str, nodectx.FakeDevicePool]:
        pools = {}
        for resource, quantity in self.spec.capacity.items():
            if "/" not in resource or not quantity.isdigit():
                continue
            digests = [hashlib.sha256(f"{self.name}/{resource}/{i}".encode()).hexdigest() for i in range(int(quantity))]
            prefix = "GPU-" if resource == layout.GPU_RESOURCE else f"{resource.rsplit('/', 1)[-1]}-"
            ids = [prefix + str(uuid.UUID(d[:32])) for d in digests]
            pools[resource] = nodectx.FakeDevicePool(resource, ids)
        return pools

    # --- node registration and status -----------------------------------------------------------

    def allocatable(self) -> dict[str, str]:
        """The layout's resources, with healthy device counts for device-plugin resources."""
        counts = self.device_manager.resources() if self.device_manager is not None else {}
        return nodeobj.capacity(self.spec, counts)

    def capacity(self) -> dict[str, str]:
        """As `allocatable`, but counting unhealthy devices too (as the kubelet's capacity does)."""
        totals = getattr(self.device_manager, "capacity", None)
        counts = totals() if callable(totals) else (self.device_manager.resources() if self.device_manager else {})
        return nodeobj.capacity(self.spec, counts)

    async def _register(self) -> None:
        """Create the Node, or adopt an existing one (filling in what this agent owns)."""
        body = nodeobj.node_object(self.spec, pod_cidr=self.pod_cidr)
        try:
            node = await self.client.create(NODES, body)
        except errors.ApiError as exc:
            if not exc.is_already_exists:
                raise
            node = await self.client.get(NODES, self.name)
            patch = {"metadata": {"labels": dict(self.spec.labels)},
                     "spec": {} if (node.get("spec") or {}).get("podCIDR") else body["spec"]}
            node = await self.client.patch(NODES, self.name, patch)
        self.node_uid = node["metadata"]["uid"]
        await self._write_node_status(node.get("status"))

    async def _write_node_status(self, previous: Obj | None = None) -> None:
        not_ready = nodechaos.NOT_READY_MESSAGE if self.chaos.state.ready == "False" else None
        status = nodeobj.node_status(self.spec, host_ip=self.host_ip, kubelet_port=self.logs.port,
                                     caps=self.capacity(), allocatable=self.allocatable(), now=_now(),
                                     boot_id=self.boot_id, previous=previous, not_ready_message=not_ready)
        await self.client.patch(NODES, self.name, {"status": status}, subresource="status")

    async def _report_status(self, stop: asyncio.Event) -> None:
        """Rewrite node status when device capacity changes, and every report interval."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._node_dirty.wait(), self.settings.node_status_report_interval)
            self._node_dirty.clear()
            if stop.is_set():
                return
            if self.chaos.state.unreachable:
                continue  # cut off: the status waits until the node is back (`_on_node` sets it dirty)
            try:
                node = await self.client.get(NODES, self.name)
                await self._write_node_status(node.get("status"))
            except errors.KubeClientError as exc:
                log.info("node %s: status update failed: %s", self.name, exc)
                self._node_dirty.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)

    # --- chaos and deletion of the Node ---------------------------------------------------------

    def _on_node(self, event_type: str, node: Obj, old: Obj | None) -> None:
        if (node.get("metadata") or {}).get("uid") != self.node_uid:
            return  # another Node of the same name (re-created by someone else): not ours
        if event_type == informer.DELETED:
            self.node_gone.set()
            return
        wanted = nodechaos.from_node(node)
        previous = self.chaos.apply(wanted)
        self.lease.suspended = wanted.unreachable
        if previous != wanted:
            log.info("node %s: chaos %s -> %s", self.name, previous, wanted)
        if previous.unreachable and not wanted.unreachable:
            self.lease.wake()
            self._replay_pods()
        if previous.ready != wanted.ready and wanted.ready == "True":
            for worker in self.workers.values():
                worker.resync()  # others (the node lifecycle controller) may have marked them NotReady
        if not wanted.unreachable and _ready_status(node) != wanted.ready:
            self._node_dirty.set()  # e.g. the node lifecycle controller set Unknown: say how we are

    def _replay_pods(self) -> None:
        """Back from a cut: act on the pods as they are now (changes seen while cut off were ignored)."""
        if self.pods is None:
            return
        cached = {str((p.get("metadata") or {}).get("uid")): p for p in self.pods.list()}
        for uid, worker in list(self.workers.items()):
            if uid not in cached:
                worker.removed()
        self._finished &= set(cached)
        for pod in cached.values():
            self._on_pod(informer.MODIFIED, pod, None)

    # --- pods -----------------------------------------------------------------------------------

    def _admitted_pods(self, except_uid: str) -> list[Obj]:
        return [w.pod for w in self.workers.values()
                if w.uid != except_uid and w.state.admitted and not w.state.terminal]

    def _on_pod(self, event_type: str, pod: Obj, old: Obj | None) -> None:
        if self.chaos.state.unreachable:
            return  # cut off: the informer's cache keeps the latest state for `_replay_pods`
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid"))
        worker = self.workers.get(uid)
        if event_type == informer.DELETED:
            if worker is not None:
                worker.removed()
            self._finished.discard(uid)
            return
        if worker is not None:
            worker.update(pod)
            return
        if uid in self._finished or (pod.get("spec") or {}).get("nodeName") != self.name or self.ctx is None:
            return
        worker = podworker.PodWorker(self.ctx, pod)
        self.workers[uid] = worker
        task = asyncio.get_running_loop().create_task(worker.run(), name=f"pod {worker.key}")
        self._tasks[uid] = task
        task.add_done_callback(functools.partial(self._worker_done, uid))

    def _worker_done(self, uid: str, task: asyncio.Task[None]) -> None:
        worker = self.workers.pop(uid, None)
        self._tasks.pop(uid, None)
        if worker is not None and worker.done:
            self._finished.add(uid)
        if not task.cancelled() and task.exception() is not None:
            log.error("pod worker %s failed", worker.key if worker else uid, exc_info=task.exception())


def _ready_status(node: Obj) -> str | None:
    """The status of the Node's Ready condition, or None when it has none."""
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return None


def _default_launcher(agent: NodeAgent) -> nodectx.Launcher | None:
    """The process launcher (env, volumes, DNS), if the runtime modules are installed."""
    try:
        processes = importlib.import_module("lwsconf.sim.nodes.kubelet.processes")
    except ImportError as exc:
        log.warning("node %s: process containers disabled, cannot import the launcher: %s", agent.name, exc)
        return None
    return cast(nodectx.Launcher, processes.ProcessLauncher(agent.client, agent.runtime, agent.workdir / "pods",
                                                            node_name=agent.name, host_ip=agent.host_ip,
                                                            allocatable=agent.allocatable(),
                                                            addresses=agent.addresses,
                                                            cluster_dns=agent.cluster_dns))


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
