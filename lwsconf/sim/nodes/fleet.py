"""All node agents of a simulated cluster, built from one layout: what `SimCluster` runs.

`NodeFleet` holds the cluster-wide choices (layout, pod network, work folder, stage sets, seed,
whether fake device plugins run) and hands out one runner per node agent, plus one per fake device
plugin and resource of a node (`nvidia.com/gpu`, `google.com/tpu`: the DaemonSets a real cluster runs) and,
when containers may run as processes, the cluster's one DNS ("coredns/cluster-dns",
`dns.SharedClusterDNS`: the hosts files of every node's pods, fed by one pod and one service watch):

    fleet = NodeFleet(layout.default_layout(), workdir=tmp)      # reserves a 127.X.0.0/16
    SimCluster(controllers=default_controllers() + fleet.controllers(), nodes=[],
               pod_network=fleet.pod_network)                    # Services from the same network
    ...
    fleet.close()                                                 # after the cluster stopped

The runtime, the device manager and the fake GPU plugin are imported only when used, so the fleet
works (with every container emulated by stages) before or without them.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from lwsconf import shutdown
from lwsconf.kubeclient import client as kc
from lwsconf.sim.nodes import layout
from lwsconf.sim.nodes.kubelet import agent as agent_mod
from lwsconf.sim.nodes.kubelet import nodectx
from lwsconf.sim.nodes.network import dns, ipam, podnet
from lwsconf.sim.nodes.stages import lifecycle, settings

log = logging.getLogger(__name__)
Runner = Callable[[asyncio.Event], Awaitable[None]]
ControllerFactory = Callable[[kc.Client], Runner]
ClientFactory = Callable[[str], kc.Client]
"""client_factory(user_agent) -> a new client of the API server (the caller of `run` closes none)."""
DNS_CONTROLLER = "coredns/cluster-dns"
"""The cluster DNS's controller name, also its User-Agent (the component first, as `kubelet/<node>`)."""
_MAX_SOCKET_DIR = 70
"""Unix socket paths are limited to 107 bytes; long work folders get a short socket folder instead."""


class NodeFleet:
    """The nodes of one cluster.

    Args:
        specs: the layout (default: `layout.default_layout()`).
        pod_network: "127.X.0.0/16"; default: a free one is reserved (see `ipam.reserve_pod_network`).
        workdir: per-node logs, volumes and sockets go under it (default: a new temp folder, removed
            by `close`).
        stage_set: "fast" or "general"; the chaos set is always added (its stages only act on pods
            that ask for them). A comma-separated list picks sets explicitly ("general,chaos").
        seed: seeds the stages' jitter.
        processes: run runnable containers (python) as real processes when the runtime is installed.
        device_plugins: run a fake device plugin per device resource of a node (`NodeSpec.devices`: its
            GPUs, TPUs, ...), with a device manager in its agent, when those modules are installed.
        cluster_addresses: show pod IPs to the API as 198.18 addresses (`podnet`), for a real
            kube-apiserver, which refuses loopback endpoints (`LocalCluster`); False on the sim.
    """

    def __init__(self, specs: Sequence[layout.NodeSpec] | None = None, *,
                 pod_network: str | ipam.PodNetwork | None = None, workdir: str | Path | None = None,
                 stage_set: str = "fast", seed: int = 0, processes: bool = True,
                 device_plugins: bool = True, cluster_addresses: bool = False) -> None:
        self.specs = list(specs) if specs is not None else layout.default_layout()
        self._reservation: ipam.PodNetworkReservation | None = None
        if pod_network is None:
            self._reservation = ipam.reserve_pod_network()
            self.pod_network = self._reservation.network
        else:
            self.pod_network = ipam.PodNetwork.parse(pod_network)
        self.addresses = podnet.PodAddressMap.for_network(self.pod_network.cidr) if cluster_addresses \
            else podnet.IDENTITY
        """How the agents show pod IPs to the API (and read them back)."""
        self._own_workdir = workdir is None
        self.workdir = (Path(workdir) if workdir is not None
                        else Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("nodes"))))
        self.stage_sets = stage_sets(stage_set)
        self.lifecycle = lifecycle.load_sets(self.stage_sets)
        self.settings = settings.load_settings(self.stage_sets)
        self.seed = seed
        self.processes = processes
        self.device_plugins = device_plugins
        self._socket_dirs: dict[str, Path] = {}
        self.agents: dict[str, agent_mod.NodeAgent] = {}
        """The most recent agent per node name (for tests and diagnostics)."""
        self.plugins: dict[str, Any] = {}
        """The most recent fake GPU plugin per node name."""
        self.resource_plugins: dict[tuple[str, str], Any] = {}
        """The most recent fake plugin per (node name, resource), GPUs included."""
        self.dns = dns.SharedClusterDNS(addresses=self.addresses)
        """The cluster's DNS, shared by every agent's process launcher (its watches open at the first launch)."""
        shutdown.at_exit(self.close)  # should the process end without close(): no folder or lock left

    def controllers(self) -> list[tuple[str, ControllerFactory]]:
        """(name, factory) pairs in SimCluster's format: the cluster DNS (when containers may run as processes),
        one kubelet per node, one plugin per device resource of a node."""
        out: list[tuple[str, ControllerFactory]] = []
        if self.processes and _optional("lwsconf.sim.nodes.runtime.runtime") is not None:
            out.append((DNS_CONTROLLER, self._dns_factory))
        for index, spec in enumerate(self.specs):
            out.append((f"kubelet/{spec.name}", self._agent_factory(index)))
            if self._with_devices(spec):
                for resource in spec.devices:
                    out.append((f"{plugin_name(resource)}/{spec.name}", self._plugin_factory(spec, resource)))
        return out

    def _dns_factory(self, client: kc.Client) -> Runner:
        return lambda stop: self.dns.run(client, stop)

    def _agent_factory(self, index: int) -> ControllerFactory:
        return lambda client: self.agent(client, index).run

    def _plugin_factory(self, spec: layout.NodeSpec, resource: str) -> ControllerFactory:
        return lambda _client: (lambda stop: self._run_plugin(spec, resource, stop))

    def agent(self, client: kc.Client, index: int) -> agent_mod.NodeAgent:
        """A new agent for node `index` (SimCluster calls this again after a crash)."""
        spec = self.specs[index]
        node_dir = self.workdir / spec.name
        made = agent_mod.NodeAgent(client, spec, index=index, pod_network=self.pod_network, workdir=node_dir,
                                   stages=self.lifecycle, runtime=self._runtime(node_dir),
                                   device_manager=self._device_manager(spec), kubelet_settings=self.settings,
                                   seed=self.seed, addresses=self.addresses, cluster_dns=self.dns)
        self.agents[spec.name] = made
        return made

    async def run(self, client_factory: ClientFactory, stop: asyncio.Event) -> None:
        """Run every agent and plugin with its own client until `stop`; closes those clients."""
        clients: list[kc.Client] = []
        tasks: list[asyncio.Future[None]] = []
        for name, factory in self.controllers():
            client = client_factory(name)
            clients.append(client)
            tasks.append(asyncio.ensure_future(factory(client)(stop)))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for client in clients:
                await client.close()

    def close(self) -> None:
        """Release the pod network and remove a work folder the fleet created (after the agents stopped)."""
        shutdown.remove_at_exit(self.close)
        if self._reservation is not None:
            self._reservation.release()
            self._reservation = None
        for folder in self._socket_dirs.values():
            if not folder.is_relative_to(self.workdir):
                shutdown.remove_tree(folder)
        if self._own_workdir:
            shutdown.remove_tree(self.workdir)  # retries: a just-killed container may still be writing

    # --- optional parts ----------------------------------------------------------------------------

    def _runtime(self, node_dir: Path) -> nodectx.Runtime | None:
        if not self.processes:
            return None
        module = _optional("lwsconf.sim.nodes.runtime.runtime")
        if module is None:
            return None
        runtime: nodectx.Runtime = module.ProcessRuntime(node_dir / "runtime")
        return runtime

    def _with_devices(self, spec: layout.NodeSpec) -> bool:
        return self.device_plugins and bool(spec.devices) \
            and _optional("lwsconf.sim.nodes.devices.devicemanager") is not None \
            and _optional("lwsconf.deviceplugin.plugin") is not None

    def socket_dir(self, spec: layout.NodeSpec) -> Path:
        """The node's device-plugins folder (kubelet.sock and the plugins' sockets)."""
        if spec.name not in self._socket_dirs:
            folder = self.workdir / spec.name / "device-plugins"
            if len(str(folder)) > _MAX_SOCKET_DIR:
                # $TMPDIR may itself be too deep (pytest's tmp_path under xdist: kubelet.sock at 111 bytes, and
                # the node's device manager crash-looped); close() removes it, sweep_temp if the process was killed
                folder = Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("dp"),
                                               dir=shutdown.short_temp_dir(_MAX_SOCKET_DIR // 2)))
            folder.mkdir(parents=True, exist_ok=True)
            self._socket_dirs[spec.name] = folder
        return self._socket_dirs[spec.name]

    def _device_manager(self, spec: layout.NodeSpec) -> nodectx.DeviceManager | None:
        if not self._with_devices(spec):
            return None
        module = importlib.import_module("lwsconf.sim.nodes.devices.devicemanager")
        manager: nodectx.DeviceManager = module.DeviceManager(self.socket_dir(spec))
        return manager

    async def _run_plugin(self, spec: layout.NodeSpec, resource: str, stop: asyncio.Event) -> None:
        """The fake plugin of one node and resource, as a vendor's device-plugin DaemonSet would run it."""
        module = importlib.import_module("lwsconf.deviceplugin.plugin")
        product = spec.labels.get("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3") \
            if resource == layout.GPU_RESOURCE else None
        plugin = module.FakeGPUPlugin(self.socket_dir(spec), resource, spec.devices[resource], product=product,
                                      node_name=spec.name, poll_interval=0.1)
        if resource == layout.GPU_RESOURCE:
            self.plugins[spec.name] = plugin
        self.resource_plugins[(spec.name, resource)] = plugin
        await plugin.run(stop)


def plugin_name(resource: str) -> str:
    """The plugin's controller name (and User-Agent) before `/<node>`: `nvidia-device-plugin` for GPUs,
    `google-tpu-device-plugin` for `google.com/tpu`, `<vendor>-<name>-device-plugin` otherwise."""
    if resource == layout.GPU_RESOURCE:
        return "nvidia-device-plugin"
    domain, _, name = resource.partition("/")
    return f"{domain.split('.')[0]}-{name}-device-plugin".replace(".", "-").lower()


def stage_sets(stage_set: str) -> list[str]:
    """"fast" -> ["fast", "chaos"]; "general,chaos" -> as given."""
    names = [s.strip() for s in stage_set.split(",") if s.strip()]
    if len(names) == 1 and names[0] != "chaos":
        names.append("chaos")
    return names


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        log.debug("optional node module %s not available: %s", module, exc)
        return None
