"""`RealNodeCluster`: the real control plane with real nodes (kubelet, containerd, runc, CNI, kube-proxy).

    with RealNodeCluster(versions.resolve("1.37"), [NodeSpec("gpu-0", {"nvidia.com/gpu.present": "true"})]) as cluster:
        kubernetes.config.load_kube_config(str(cluster.kubeconfig))

Start order: the parts must be built (`lwsconf nodes build`; `installed` is checked first, so a missing build is
one clear error before anything starts), the images made (`catalog`), a network block reserved and built
(`network`), the control plane started advertising the nodes' API address, the cluster's DNS created through the API
(`dns`: CoreDNS behind the kube-dns Service, whose fixed ClusterIP every kubelet is given as clusterDNS) and the
default StorageClass's provisioner (`storage`), then every node, and the cluster is ready when every node reports
Ready (`NODES_READY`, LWSCONF_REALNODES_READY overrides) and CoreDNS is Available (`dns.DNS_READY`,
LWSCONF_REALNODES_DNS_READY overrides). A failure at any point stops what started. `stop()` removes nodes,
control plane and network, and says what it could not remove.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from lwsconf import shutdown
from lwsconf.controlplane import build as cpbuild
from lwsconf.controlplane import local, versions
from lwsconf.controlplane.process import Component
from lwsconf.realnodes import build, catalog, dns, hostlimits, hostpaths, network, storage
from lwsconf.realnodes.node import NodeConfig, RealNode

T = TypeVar("T")

NODES_READY = 180.0
"""Default seconds for every real node to register and be Ready (LWSCONF_REALNODES_READY overrides)."""
NODES_READY_ENV = "LWSCONF_REALNODES_READY"


HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class NodeSpec:
    """A node to start: its name and the labels its kubelet registers it with (the kubelet sets the hostname label
    itself). Callers turn a topology (`lwsconf.sim.nodes.layout`) into these; this package never reads one."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    devices: Mapping[str, int] = field(default_factory=dict)
    """Extended resource -> count of fake devices (`nvidia.com/gpu`, `google.com/tpu`): one device plugin of the
    node's own per resource, registered with its kubelet (none when empty)."""


class RealNodesError(Exception):
    """Real nodes that cannot start; one actionable message."""


def nodes_ready_timeout() -> float:
    raw = os.environ.get(NODES_READY_ENV)
    try:
        return float(raw) if raw else NODES_READY
    except ValueError as exc:
        raise RealNodesError(f"{NODES_READY_ENV}={raw!r} is not a number of seconds") from exc


class RealNodeCluster:
    def __init__(self, release: versions.Release, nodes: Sequence[NodeSpec]) -> None:
        self.release = release
        self.specs = list(nodes)
        self.folder = Path()
        self.controlplane: local.LocalControlPlane | None = None
        self.nodes: list[RealNode] = []
        self.network: network.NetworkPlan | None = None
        self.images: list[catalog.CatalogEntry] = []
        self.volumes: storage.VolumeProvisioner | None = None
        self._block: network.BlockLock | None = None
        self._hook = self._last_resort
        self.ready_seconds = 0.0
        """Seconds from start() to every node Ready."""
        self.dns_seconds = 0.0
        """Seconds from every node Ready to the cluster's DNS Available."""

    @property
    def url(self) -> str:
        assert self.controlplane is not None, "start() first"
        return self.controlplane.url

    @property
    def node_names(self) -> list[str]:
        return [s.name for s in self.specs]

    def failed_services(self) -> list[str]:
        """What the cluster runs in-process (the volume provisioner) and has stopped on its own: why, one per line."""
        return [self.volumes.error] if self.volumes is not None and self.volumes.error else []

    def dead(self) -> list[Component]:
        """Control-plane components and node parts that have exited on their own."""
        dead = self.controlplane.dead() if self.controlplane is not None else []
        return dead + [c for node in self.nodes for c in node.components if c.exited() is not None]

    @property
    def kubeconfig(self) -> Path:
        assert self.controlplane is not None, "start() first"
        return self.controlplane.kubeconfig

    def start(self) -> RealNodeCluster:
        cp_binaries = cpbuild.installed(self.release)
        binaries = build.installed(self.release)
        if cp_binaries is None or binaries is None:
            missing = " and ".join(w for w, b in (("the control plane", cp_binaries), ("the node parts", binaries))
                                   if b is None)
            raise RealNodesError(f"{missing} of Kubernetes {self.release.kubernetes} are not built: run "
                                 f"`make nodes` (or `lwsconf controlplane build` and `lwsconf nodes build`; needs Go "
                                 f"and libseccomp-dev), or use the simulated nodes")
        network.require_tools()
        began = time.monotonic()
        self.folder = Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("realnodes")))
        shutdown.at_exit(self._hook)
        try:
            with shutdown.deferred("starting real nodes"):
                self.images = catalog.build_all(binaries)
                self._block = network.reserve_block()
                hostpaths.remember_missing(self._block.path.parent)
                hostlimits.raise_limit(self._block.path.parent)
                network.guard_space()
                self.network = network.plan(self._block.block, [s.name for s in self.specs])
                network.up(self.network)
                self.controlplane = local.LocalControlPlane(
                    self.release, cp_binaries, service_range=self.network.service_cidr,
                    advertise_address=self.network.api_address)
                self.controlplane.start()
                assert self.controlplane.ca is not None
                api_client = self._api_client()
                dns.install(api_client, self.network)
                self.volumes = storage.VolumeProvisioner(self.controlplane, self.folder / "volumes").start()
                for spec, net in zip(self.specs, self.network.nodes, strict=True):
                    config = NodeConfig(binaries=binaries, network=self.network, api_port=self.controlplane.port,
                                        ca=self.controlplane.ca, images=[e.built.archive for e in self.images],
                                        labels={k: v for k, v in spec.labels.items() if k != HOSTNAME_LABEL},
                                        devices=dict(spec.devices), cluster_dns=dns.service_ip(self.network))
                    self.nodes.append(RealNode(net, config, self.folder / net.name))
                for node in self.nodes:
                    node.start_runtime()
                _each_node(self.nodes, RealNode.import_images)
                for node in self.nodes:
                    node.start_agents()
                self._wait_ready()
                self.ready_seconds = time.monotonic() - began
                try:
                    self.dns_seconds = dns.wait_available(api_client)
                except dns.DNSError as exc:
                    raise RealNodesError(str(exc)) from None
        except BaseException:
            self.stop()
            raise
        return self

    def _api_client(self) -> Any:
        import kubernetes

        return kubernetes.config.new_client_from_config(str(self.kubeconfig))  # type: ignore[no-untyped-call]

    def _client(self) -> Any:
        import kubernetes

        return kubernetes.client.CoreV1Api(self._api_client())

    def _wait_ready(self) -> None:
        timeout = nodes_ready_timeout()
        deadline = time.monotonic() + timeout
        api = self._client()
        seen = "no node registered"
        while True:
            for node in self.nodes:
                dead = [c for c in node.components if c.exited() is not None]
                if dead:
                    raise RealNodesError(f"node {node.name}: {dead[0].describe()}")
            listed = api.list_node().items
            ready = {n.metadata.name for n in listed
                     if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])}
            seen = ", ".join(f"{n.metadata.name}={'Ready' if n.metadata.name in ready else 'NotReady'}"
                             for n in listed) or "no node registered"
            if all(s.name in ready for s in self.specs):
                return
            if time.monotonic() > deadline:
                raise RealNodesError(f"real nodes not Ready within {timeout:g}s ({NODES_READY_ENV} raises it): {seen}")
            time.sleep(0.5)

    def stop(self) -> list[str]:
        """Remove nodes, control plane, network and folder; what could not be removed is returned (and printed)."""
        problems: list[str] = []
        with shutdown.deferred("stopping real nodes"):
            for found in _each_node(self.nodes, RealNode.stop):
                problems += found
            self.nodes = []
            if self.volumes is not None:
                self.volumes.stop()
                self.volumes = None
            if self.controlplane is not None:
                self.controlplane.stop()
                self.controlplane = None
            if self.network is not None:
                problems += network.down(self.network)
            if self._block is not None:
                lock_dir, own = self._block.path.parent, self._block.path
                if not hostpaths.others_running(lock_dir, own):
                    problems += hostpaths.remove_created(lock_dir)
                    problems += hostlimits.restore_limit(lock_dir)
                    problems += network.unguard_space()
                self._block.release()
                self._block = None
            if self.folder != Path():
                shutil.rmtree(self.folder, ignore_errors=True)
            shutdown.remove_at_exit(self._hook)
        return problems

    def _last_resort(self) -> None:
        self.stop()

    def __enter__(self) -> RealNodeCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _each_node(nodes: Sequence[RealNode], step: Callable[[RealNode], T]) -> list[T]:
    """`step` on every node at once, one thread each; the results in the nodes' order, or the first error once
    every step has ended (none is left running behind a failure).

    Why threads: most of a node's start is containerd unpacking the images into its own store, and its stop waits
    for its processes; one node after the other, 6 nodes took 14-18 s each to start (about 105 s) and the cluster
    38 s to stop. Only steps that leave no process running may go here: a component dies with the thread that
    started it (PR_SET_PDEATHSIG), so a kubelet started on a pool thread was SIGKILLed when the pool ended."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(len(nodes), 1), thread_name_prefix="realnode") as pool:
        futures = [pool.submit(step, node) for node in nodes]
    return [f.result() for f in futures]
