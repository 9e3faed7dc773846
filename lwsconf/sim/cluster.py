"""The simulated cluster as one unit: the API server plus the controllers that run beside it.

`SimCluster` is what `lwsconf sim up` and the test fixtures start. The controllers are HTTP clients
of the API server, exactly as kube-controller-manager is, and share no Python state with it.

    async with SimCluster() as cluster:          # in an event loop
        cluster.write_kubeconfig(path)

    with RunningSimCluster() as cluster:          # from sync code: runs on a background loop
        kubernetes.config.load_kube_config(str(cluster.kubeconfig))
"""

from __future__ import annotations

import gc
import logging
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from lwsconf import _loopthread, kubeclient, shutdown
from lwsconf.sim import supervisor
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.nodes import fleet as fleet_mod
from lwsconf.sim.nodes import layout
from lwsconf.sim.nodes.network import ipam

log = logging.getLogger("lwsconf.sim")

STOP_GRACE = 30.0
"""Seconds `SimCluster.stop` waits for controllers and node agents before leaving them behind."""

GC_THRESHOLDS = (50_000, 20, 20)
"""Python's cyclic-GC thresholds while a simulated cluster runs in the process (the default is 700, 10, 10).
A running sim allocates fast (every watch event decoded by each informer) over a large, long-lived heap, so
the default ran 24 full collections in 12 rollout tests where these ran 2. Measured with `python -m
bench.cluster` (sim in its own process, 2 cores, alternating runs): whole bench 59.0/56.7 s -> 46.7/43.9 s,
sim CPU per pod 22.6 -> 18.6 ms (800 emulated pods) and 73.4 -> 50.0 ms (100 probe processes), RSS unchanged.
Reference cycles are still collected; memory grows by at most the larger first generation."""

SWITCH_INTERVAL = 0.001
"""Seconds a thread may hold the GIL while another waits for it (`sys.setswitchinterval`; the default is 0.005),
while a simulated cluster runs in the process. The sim shares its process with the test thread and the in-process
reference reconciler, and a test's every step hops between their threads: an API write on the sim's loop, the
reconciler's reaction on its loop, the test's next poll. A thread woken by I/O waits for the GIL up to the interval
whenever another thread is busy computing. Measured with the conformance suite on the sim (2 cores, `-n 2`, runs
back to back): 187.9 s wall and 343.0 s summed test time with the default, 176.1 s and 320.3 s with 1 ms (an
earlier pair: 182.4/333.5 and 171.7/314.2); user CPU went down too (229.8 -> 219.3 s)."""


class _ProcessSettings:
    """`GC_THRESHOLDS` and `SWITCH_INTERVAL` while at least one sim runs in the process: the first sim to start
    sets them and the last to stop gives back what the process had. Sims overlap in one process (tests start one
    inside another's lifetime); each restoring what it saw at its own start left the tuned values behind when
    they stopped in start order (a unit test found the switch interval still at 1 ms)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved: tuple[tuple[int, int, int], float] | None = None

    def acquire(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = (gc.get_threshold(), sys.getswitchinterval())
                gc.set_threshold(*GC_THRESHOLDS)
                sys.setswitchinterval(SWITCH_INTERVAL)
            self._running += 1

    def release(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._saved is not None:
                thresholds, interval = self._saved
                gc.set_threshold(*thresholds)
                sys.setswitchinterval(interval)
                self._saved = None


_PROCESS_SETTINGS = _ProcessSettings()

Runner = supervisor.Runner
ControllerFactory = supervisor.ControllerFactory


def default_controllers() -> list[tuple[str, ControllerFactory]]:
    """The controllers every simulated cluster runs."""
    from lwsconf.sim.controllers.batch import cronjob, job
    from lwsconf.sim.controllers.daemonset import daemonset
    from lwsconf.sim.controllers.deployment import deployment, replicaset
    from lwsconf.sim.controllers.endpoints import endpoints, endpointslice
    from lwsconf.sim.controllers.kubeproxy import kubeproxy
    from lwsconf.sim.controllers.lifecycle import (
        disruption,
        garbage_collector,
        nodelifecycle,
    )
    from lwsconf.sim.controllers.lifecycle import (
        namespace as namespace_controller,
    )
    from lwsconf.sim.controllers.scheduler import scheduler
    from lwsconf.sim.controllers.serviceaccounts import accounts, rootca
    from lwsconf.sim.controllers.statefulset import statefulset

    # kube-controller-manager's controllers share one informer per resource (its SharedInformerFactory); the
    # scheduler and kube-proxy are other binaries with informers of their own.
    kcm = kubeclient.SharedInformers(user_agent("shared-informers"))
    return [
        ("garbage-collector", lambda c: garbage_collector.GarbageCollector(c).run),
        ("namespace-controller", lambda c: namespace_controller.NamespaceController(c, informers=kcm).run),
        ("serviceaccount-controller", lambda c: accounts.controller(c, informers=kcm).run),
        ("root-ca-certificate-publisher-controller", lambda c: rootca.controller(c, informers=kcm).run),
        ("endpointslice-controller", lambda c: endpointslice.EndpointSliceController(c, informers=kcm).run),
        ("endpoints-controller", lambda c: endpoints.EndpointsController(c, informers=kcm).run),
        ("scheduler", lambda c: scheduler.Scheduler(c).run),
        ("statefulset-controller", lambda c: statefulset.StatefulSetController(c, informers=kcm).run),
        ("deployment-controller", lambda c: deployment.DeploymentController(c, informers=kcm).run),
        ("replicaset-controller", lambda c: replicaset.ReplicaSetController(c, informers=kcm).run),
        ("daemonset-controller", lambda c: daemonset.DaemonSetController(c, informers=kcm).run),
        ("job-controller", lambda c: job.JobController(c, informers=kcm).run),
        ("cronjob-controller", lambda c: cronjob.CronJobController(c, informers=kcm).run),
        ("disruption-controller", lambda c: disruption.DisruptionController(c, informers=kcm).run),
        ("node-lifecycle-controller", lambda c: nodelifecycle.NodeLifecycleController(c, informers=kcm).run),
        ("kube-proxy", lambda c: kubeproxy.KubeProxy(c).run),
    ]


COMPONENTS = {"scheduler": "kube-scheduler", "kube-proxy": "kube-proxy"}
"""The binary a sim controller stands for, when not kube-controller-manager (node agents name theirs)."""


def user_agent(name: str) -> str:
    """The User-Agent of controller `name`: its component first, as the real binaries send it
    (`kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/<commit>/<controller>`), because the API server
    names a write's field manager after the part before the first "/"; the controller's own name follows, for
    the request journal. `kubelet/<node>` already has that form."""
    if "/" in name:
        return name
    return f"{COMPONENTS.get(name, 'kube-controller-manager')}/{name}"


class SimCluster:
    """API server + controllers + simulated nodes on the current event loop.

    Args:
        controllers: the control-plane controllers (default: `default_controllers()`).
        nodes: the node layout (default: `layout.default_layout()`, 4 GPU nodes in 2 zones + 2 CPU
            nodes); an empty list runs no nodes at all (API-only tests).
        stage_set: pod lifecycle stages for emulated containers ("fast": deterministic, no jitter).
        pod_network: the cluster's 127.X.0.0/16 (node IPs, pod CIDRs and the Service range
            127.X.128.0/17, see `ipam`); default: `start` reserves a free one and `stop` releases it.
            Pass the network of a `NodeFleet` run as extra controllers so Services share its range.
    """

    def __init__(self, *, port: int = 0, token: str | None = None,
                 controllers: list[tuple[str, ControllerFactory]] | None = None,
                 nodes: Sequence[layout.NodeSpec] | None = None, stage_set: str = "fast", seed: int = 0,
                 pod_network: str | ipam.PodNetwork | None = None) -> None:
        self.apiserver = app.APIServer(port=port, token=token)
        self._controllers = default_controllers() if controllers is None else list(controllers)
        self._node_specs = layout.default_layout() if nodes is None else list(nodes)
        self._stage_set, self._seed = stage_set, seed
        self.pod_network: ipam.PodNetwork | None = None if pod_network is None else ipam.PodNetwork.parse(pod_network)
        self._reservation: ipam.PodNetworkReservation | None = None
        self.fleet: fleet_mod.NodeFleet | None = None
        self._supervisor: supervisor.Supervisor | None = None
        self._tuned = False

    @property
    def url(self) -> str:
        return self.apiserver.url

    @property
    def token(self) -> str:
        return self.apiserver.token

    async def start(self) -> None:
        if self.pod_network is None:
            self._reservation = ipam.reserve_pod_network()  # a file lock, released by stop()
            self.pod_network = self._reservation.network
        # Before the first request: every ClusterIP of this cluster comes from its own network.
        self.apiserver.ctx.service_range = self.pod_network.service_range
        try:
            await self.apiserver.start()
        except BaseException:
            self._release_network()
            raise
        _PROCESS_SETTINGS.acquire()
        self._tuned = True
        controllers = list(self._controllers)
        if self._node_specs:
            self.fleet = fleet_mod.NodeFleet(self._node_specs, pod_network=self.pod_network,
                                             stage_set=self._stage_set, seed=self._seed)
            controllers += self.fleet.controllers()
        self._supervisor = supervisor.Supervisor(
            lambda name: kubeclient.Client(self.url, self.token, ca_pem=self.apiserver.ca_pem,
                                           user_agent=user_agent(name), unix_socket=self.apiserver.internal_socket))
        self._supervisor.start(controllers)

    async def stop(self) -> None:
        """Stop controllers and node agents, then the API server; bounded, and slow parts are named.

        Node agents kill their pods' processes on the way out, which under heavy CPU load can take a
        while; a controller still stopping after `STOP_GRACE` seconds is logged by name and left to the
        loop's final cancellation (and the runtime's exit hook), so a stuck one cannot hang the run.
        """
        started = time.monotonic()
        if self._tuned:
            _PROCESS_SETTINGS.release()
            self._tuned = False
        if self._supervisor is not None:
            await self._supervisor.stop(STOP_GRACE)
            self._supervisor = None
        await self.apiserver.stop()
        if self.fleet is not None:
            self.fleet.close()
            self.fleet = None
        self._release_network()
        log.info("simulated cluster stopped in %.1f s", time.monotonic() - started)

    def _release_network(self) -> None:
        if self._reservation is not None:
            self._reservation.release()
            self._reservation = None
            self.pod_network = None

    def write_kubeconfig(self, path: Path) -> Path:
        return self.apiserver.write_kubeconfig(path)

    async def __aenter__(self) -> SimCluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class RunningSimCluster:
    """A SimCluster on a background event loop, for sync code; writes a kubeconfig to a temp dir.

    Starting and stopping hold SIGINT/SIGTERM until done (`shutdown.deferred`): a signal in the middle
    would leave a half-started cluster nobody stops, or cut its stop short; it takes effect right after.
    Should the process exit without `__exit__` (a cleanup abandoned), an exit hook kills the container
    processes (the runtime's own hook) and removes the temp folders.
    """

    def __init__(self, **kwargs: object) -> None:
        self._kwargs = kwargs
        self._loop = _loopthread.LoopThread("lwsconf-sim")
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.cluster: SimCluster | None = None
        self.kubeconfig = Path()

    def __enter__(self) -> RunningSimCluster:
        shutdown.at_exit(self._remove_folders)
        try:
            with shutdown.deferred("starting the simulated cluster"):
                self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        self._loop.start()
        self._tmp = tempfile.TemporaryDirectory(prefix=shutdown.temp_prefix("sim"))

        async def make() -> SimCluster:
            self.cluster = SimCluster(**self._kwargs)  # type: ignore[arg-type]
            await self.cluster.start()
            return self.cluster

        self._loop.run(make())
        assert self.cluster is not None
        self.kubeconfig = self.cluster.write_kubeconfig(Path(self._tmp.name) / "kubeconfig")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with shutdown.deferred("stopping the simulated cluster"):
            try:
                if self.cluster is not None:
                    self._loop.run(self.cluster.stop())
                    self.cluster = None
                self._loop.stop()
            finally:
                self._remove_folders()
                shutdown.remove_at_exit(self._remove_folders)

    def _remove_folders(self) -> None:
        """The kubeconfig folder and, when stop() did not get to it, the node fleet's work folder."""
        fleet = self.cluster.fleet if self.cluster is not None else None
        if fleet is not None:
            fleet.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
