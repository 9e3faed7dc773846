"""`LocalCluster`: a real control plane plus the simulated nodes, for sync callers (CLI, fixtures).

    with LocalCluster(versions.resolve("1.37")) as cluster:
        kubernetes.config.load_kube_config(str(cluster.kubeconfig))

`start()` reserves the cluster's own 127.X.0.0/16 (`ipam.reserve_pod_network`, the lock the sim
uses, so a local cluster and sim clusters side by side never share an address): its 127.X.128.0/17 is
kube-apiserver's `--service-cluster-ip-range`, its node and pod addresses are the agents'. It starts the
control plane (blocking, each component waited for by name), then the node agents, device plugins and
kube-proxy on a background loop (`sim.supervisor`, as `SimCluster` runs them), each with its own
client holding the admin certificate, and waits until every node is Ready (`StartTimeouts.nodes_ready`,
overridable by LWSCONF_LOCAL_NODES_READY). `dead()` names the control-plane components that exited
since. Starting and stopping hold signals (`shutdown.deferred`); a failed start stops what started.

Addresses: the API shows each pod under a 198.18 address (`podnet`; kube-apiserver refuses loopback
endpoints), its processes keep their loopback one, and kube-apiserver reaches pods, kubelets and Service
webhooks only through `egress.EgressProxy` on a unix socket in a private folder, which dials loopback
only (`egress_refused()` lists what it refused).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from lwsconf import _loopthread, kubeclient, shutdown
from lwsconf.controlplane import local, versions
from lwsconf.controlplane.process import Component
from lwsconf.kubeclient import client as kc
from lwsconf.localcluster import egress
from lwsconf.sim import supervisor
from lwsconf.sim.nodes import fleet as fleet_mod
from lwsconf.sim.nodes import layout
from lwsconf.sim.nodes.network import ipam, podnet
from lwsconf.waits.core import NotYet, wait_until

STOP_GRACE = 30.0
"""Seconds the node agents and kube-proxy get to stop before they are left to the loop's cancellation."""
NODES_READY = 120.0
"""Default seconds for every node to be registered and Ready (LWSCONF_LOCAL_NODES_READY overrides)."""
NODES_POLL = 0.5
NODES = kc.GVR("", "v1", "nodes", namespaced=False)


def nodes_ready_timeout(environ: dict[str, str] | None = None) -> float:
    raw = (dict(os.environ) if environ is None else environ).get("LWSCONF_LOCAL_NODES_READY")
    try:
        return float(raw) if raw else NODES_READY
    except ValueError as exc:
        raise ValueError(f"LWSCONF_LOCAL_NODES_READY={raw!r} is not a number of seconds") from exc


def kubernetes_slice(apiserver_port: int) -> dict[str, object]:
    """The `kubernetes` Service's endpoint as kube-proxy is to see it: the API server on 127.0.0.1.

    kube-apiserver refuses to store it (loopback endpoint addresses are invalid), so our kube-proxy is
    given it directly; in-pod clients then reach the API server through the Service's loopback ClusterIP.
    """
    return {"metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": "IPv4", "ports": [{"name": "https", "port": apiserver_port, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]}


def node_controllers(fleet: fleet_mod.NodeFleet, apiserver_port: int) -> list[tuple[str, supervisor.ControllerFactory]]:
    """What runs beside a real control plane: kube-proxy, a volume provisioner (as kind has) and the fleet
    (agents, device plugins), no more. kube-proxy dials the loopback address behind each endpoint."""
    from lwsconf.localcluster import provisioner
    from lwsconf.sim.controllers.kubeproxy import kubeproxy

    static = {("default", "kubernetes"): [kubernetes_slice(apiserver_port)]}
    to_loopback = fleet.addresses.to_loopback
    return [("kube-proxy", lambda c: kubeproxy.KubeProxy(c, static_slices=static, to_loopback=to_loopback).run),
            ("local-path-provisioner", lambda c: provisioner.Provisioner(c).run), *fleet.controllers()]


class LocalCluster:
    """The real control plane of `release` with the simulated nodes of `nodes` (default layout)."""

    def __init__(self, release: versions.Release, *, nodes: Sequence[layout.NodeSpec] | None = None,
                 stage_set: str = "fast", seed: int = 0, timeouts: local.StartTimeouts | None = None) -> None:
        self.release = release
        self._specs = layout.default_layout() if nodes is None else list(nodes)
        self._stage_set, self._seed, self._timeouts = stage_set, seed, timeouts
        self._reservation: ipam.PodNetworkReservation | None = None
        self.controlplane: local.LocalControlPlane | None = None
        self.fleet: fleet_mod.NodeFleet | None = None
        self._loop = _loopthread.LoopThread("lwsconf-local")
        self._supervisor: supervisor.Supervisor | None = None
        self.egress: egress.EgressProxy | None = None
        self._egress_dir: Path | None = None
        self.kubeconfig = Path()
        self.ready_seconds = 0.0
        """How long `start` took until every node was Ready."""

    @property
    def node_names(self) -> list[str]:
        return [s.name for s in self._specs]

    @property
    def url(self) -> str:
        return self.controlplane.url if self.controlplane is not None else ""

    def start(self) -> LocalCluster:
        started = time.monotonic()
        nodes_timeout = nodes_ready_timeout()
        binaries = local.LocalControlPlane.from_cache(self.release, self._timeouts).binaries  # StartError first
        try:  # the control plane and the fleet each have their own exit hook should we never get to stop()
            with shutdown.deferred("starting the local cluster"):
                self._reservation = ipam.reserve_pod_network()
                network = self._reservation.network
                self._loop.start()
                socket_path = self._start_egress(network)
                self.controlplane = local.LocalControlPlane(self.release, binaries, timeouts=self._timeouts,
                                                            service_range=str(network.service_range),
                                                            cluster_egress=socket_path)
                self.controlplane.start()
                self.kubeconfig = self.controlplane.kubeconfig
                self._start_nodes(network)
                wait_until(self._nodes_ready, what=f"{len(self._specs)} simulated nodes to be Ready",
                           timeout=nodes_timeout, poll=NODES_POLL, describe=self._describe_nodes)
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - started
        return self

    def _start_egress(self, network: ipam.PodNetwork) -> Path:
        """The CONNECT proxy for kube-apiserver's `cluster` egress, before kube-apiserver starts."""
        self._egress_dir = Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("egress")))
        proxy = egress.EgressProxy(self._egress_dir / "cluster.sock", podnet.PodAddressMap.for_network(network.cidr))
        self.egress = self._loop.run(proxy.start())
        return proxy.path

    def egress_refused(self) -> list[str]:
        """CONNECT targets kube-apiserver asked for and the egress proxy refused (never dialed)."""
        return list(self.egress.refused) if self.egress is not None else []

    def _start_nodes(self, network: ipam.PodNetwork) -> None:
        if not self._specs:
            return
        self.fleet = fleet_mod.NodeFleet(self._specs, pod_network=network, stage_set=self._stage_set,
                                         seed=self._seed, cluster_addresses=True)
        fleet = self.fleet
        port = self.controlplane.port if self.controlplane is not None else 0

        async def run() -> None:
            self._supervisor = supervisor.Supervisor(self.client)
            self._supervisor.start(node_controllers(fleet, port))

        self._loop.run(run())

    def client(self, user_agent: str) -> kubeclient.Client:
        """A new client of the API server with the admin certificate (what every agent uses)."""
        cp = self.controlplane
        assert cp is not None and cp.admin is not None, "start() first"
        return kubeclient.Client(cp.url, None, ca_pem=cp.ca_pem, user_agent=user_agent,
                                 client_cert=(cp.admin.cert.read_bytes(), cp.admin.key.read_bytes()))

    def _list_nodes(self) -> list[kc.Obj]:
        async def nodes() -> list[kc.Obj]:
            api = self.client("lwsconf-local-check")
            try:
                items, _ = await api.list_all(NODES)
                return items
            finally:
                await api.close()

        return self._loop.run(nodes())

    def _nodes_ready(self) -> bool:
        for component in self.dead():
            raise NotYet(f"{component.name} exited")  # describe() shows it; the wait's end reports it
        ready = {n["metadata"]["name"] for n in self._list_nodes() if _is_ready(n)}
        missing = sorted({s.name for s in self._specs} - ready)
        if missing:
            raise NotYet(f"not Ready yet: {', '.join(missing)}")
        return True

    def _describe_nodes(self) -> str:
        try:
            lines = [f"{n['metadata']['name']}: Ready={_is_ready(n)}" for n in self._list_nodes()]
        except kubeclient.KubeClientError as exc:
            lines = [f"cannot list nodes: {exc}"]
        lines += [c.describe() for c in self.dead()]
        return "\n".join(lines) or "no Node objects registered"

    def dead(self) -> list[Component]:
        """Control-plane components that have exited on their own."""
        return self.controlplane.dead() if self.controlplane is not None else []

    def stop(self) -> None:
        """Node agents and kube-proxy first (they kill their pods' processes), then the control plane."""
        with shutdown.deferred("stopping the local cluster"):
            try:
                if self._supervisor is not None:
                    sup, self._supervisor = self._supervisor, None
                    self._loop.run(sup.stop(STOP_GRACE))
                if self.egress is not None:
                    proxy, self.egress = self.egress, None
                    self._loop.run(proxy.close())
                self._loop.stop()
            finally:
                if self.fleet is not None:
                    self.fleet.close()
                    self.fleet = None
                if self.controlplane is not None:
                    self.controlplane.stop()
                if self._egress_dir is not None:
                    shutil.rmtree(self._egress_dir, ignore_errors=True)
                    self._egress_dir = None
                if self._reservation is not None:
                    self._reservation.release()
                    self._reservation = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _is_ready(node: kc.Obj) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False

