"""A real control plane on loopback, from the binaries `lwsconf controlplane build` made.

`LocalControlPlane(release, binaries, service_range=...).start()` makes a private folder (certificates,
etcd's data, logs, kubeconfigs), then starts, each as its own process and each waited for with a named
timeout: etcd on two free 127.0.0.1 ports (/health), kube-apiserver (/readyz; TLS with a fresh CA,
client-certificate auth, service-account keys, `--advertise-address`/`--bind-address` 127.0.0.1, the
caller's loopback Service range), kube-controller-manager and kube-scheduler (/healthz on their own loopback secure
ports, each with its own client certificate and kubeconfig). Flags are in `flags`. A wait that fails
shows the component's log tail; a component that exits while waited for fails the wait at once, and
`dead()` names those that exited later (the caller reports them with `describe()`). `stop()` ends the
components in reverse order and removes the folder; an exit hook does the same should the process exit
without it. Nothing listens or connects outside 127.0.0.0/8.

The `kubernetes` Service has no endpoints: `--endpoint-reconciler-type=none` (1.37 refuses a loopback
advertise address for them, kubernetes/kubernetes#138102), and writing them ourselves is refused too:
Endpoints and EndpointSlices reject loopback addresses (422 "may not be in the loopback range").
`lwsconf.localcluster` hands that endpoint (127.0.0.1:<port>) to its kube-proxy directly instead (its pods get
198.18 API addresses for the same reason, `lwsconf.sim.nodes.network.podnet`). With `cluster_egress`, kube-apiserver's
`cluster` traffic goes through the caller's CONNECT proxy (`flags.egress_selector_configuration`).

There are no nodes here: `lwsconf.localcluster` adds the simulated ones (it may import the simulator;
this package may not).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import ssl
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from lwsconf import shutdown
from lwsconf.controlplane import build, flags, pki
from lwsconf.controlplane.process import Component
from lwsconf.controlplane.versions import Release
from lwsconf.ports import Reserved, reserve_port
from lwsconf.waits.core import NotYet, Terminal, wait_until

SERVICE_RANGE = "127.95.128.0/17"
"""ClusterIPs of a control plane started without a range: loopback, outside every range the sim reserves
(127.96-127.255 are pod networks, 127.96.0.0/16 a bare sim API server's); nothing binds them then."""
PROBE_TIMEOUT = 5.0
"""Seconds one health request may take."""


@dataclass(frozen=True)
class StartTimeouts:
    """How long each component may take to become ready (a loaded 2-core machine starts them slowly).

    Overridable by LWSCONF_LOCAL_<FIELD> in seconds (LWSCONF_LOCAL_ETCD_READY, ..._APISERVER_READY,
    ..._CONTROLLER_MANAGER_READY, ..._SCHEDULER_READY).
    """

    etcd_ready: float = 60.0
    """etcd answers /health with {"health":"true"}."""
    apiserver_ready: float = 180.0
    """kube-apiserver answers /readyz with 200 (its post-start hooks, RBAC bootstrap, done)."""
    controller_manager_ready: float = 120.0
    """kube-controller-manager answers /healthz with 200."""
    scheduler_ready: float = 120.0
    """kube-scheduler answers /healthz with 200."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> StartTimeouts:
        env = dict(os.environ) if environ is None else environ
        values: dict[str, float] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(f"LWSCONF_LOCAL_{f.name.upper()}")
            if raw:
                try:
                    values[f.name] = float(raw)
                except ValueError as exc:
                    raise ValueError(f"LWSCONF_LOCAL_{f.name.upper()}={raw!r} is not a number of seconds") from exc
        return cls(**values)


class StartError(Exception):
    """A component did not become ready; the message names it and carries its log tail."""


class LocalControlPlane:
    """etcd, kube-apiserver, kube-controller-manager and kube-scheduler of one pinned release on loopback.

    Args:
        service_range: the loopback ClusterIP range (each cluster its own, so parallel ones never share a
            ClusterIP); its first address is the `kubernetes` Service's.
        cluster_egress: a unix socket where the caller serves an HTTP CONNECT proxy for kube-apiserver's
            `cluster` egress (pods/services/nodes proxy, kubelet API, Service webhooks); None: direct.
        advertise_address: the `kubernetes` Service's endpoint, when the nodes can reach the API server at a
            non-loopback address of theirs (real nodes: `lwsconf.realnodes`); the API server then keeps that
            endpoint itself (the default lease reconciler) and its certificate names the address. None: loopback,
            and the caller writes the endpoint where its kube-proxy sees it.
    """

    def __init__(self, release: Release, binaries: dict[str, Path], *,
                 timeouts: StartTimeouts | None = None, service_range: str = SERVICE_RANGE,
                 controllers: bool = True, cluster_egress: Path | None = None,
                 advertise_address: str | None = None) -> None:
        self.release, self.binaries = release, binaries
        self.advertise_address = advertise_address
        self.cluster_egress = cluster_egress
        self.controllers = controllers
        """False: etcd + kube-apiserver only (API-only comparisons, where no controller may touch an object)."""
        self.timeouts = timeouts or StartTimeouts.from_env()
        self.service_range = service_range
        self.folder = Path()
        self.components: list[Component] = []
        self.url = ""
        self.port = 0
        self.kubeconfig = Path()
        self.ca_pem = b""
        self.admin: pki.Pair | None = None
        self.ca: pki.Authority | None = None
        """The cluster CA (with its key, in the control plane's private folder): issues node and kubelet
        certificates for real nodes."""
        self._ports: list[Reserved] = []
        """The components' ports, held until stop() (lwsconf/ports.py: picked and released, one was taken)."""
        self._hook = self._last_resort

    @classmethod
    def from_cache(cls, release: Release, timeouts: StartTimeouts | None = None, *,
                   service_range: str = SERVICE_RANGE, controllers: bool = True) -> LocalControlPlane:
        binaries = build.installed(release)
        if binaries is None:
            raise StartError(f"no Kubernetes {release.kubernetes} control plane is built: run "
                             f"`lwsconf controlplane build --kubernetes-version {release.kubernetes}` "
                             f"(needs Go), or use --cluster=sim")
        return cls(release, binaries, timeouts=timeouts, service_range=service_range, controllers=controllers)

    def start(self) -> LocalControlPlane:
        """Start every component in order; on any failure everything started is stopped again."""
        shutdown.run_id()  # every component carries the run's LWSCONF_RUN_ID
        self.folder = Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("local")))
        shutdown.at_exit(self._hook)
        try:
            with shutdown.deferred("starting the local control plane"):
                self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        pki_dir = self.folder / "pki"
        pki_dir.mkdir(mode=0o700)
        ca = self.ca = pki.Authority(pki_dir)
        sa = pki.service_account_keys(pki_dir)
        self.ca_pem = ca.pair.cert.read_bytes()
        self.admin = ca.issue("admin", "lwsconf-admin", org="system:masters")
        self._start_etcd_and_apiserver(ca, sa)
        self.kubeconfig = self._write_kubeconfig("kubeconfig", ca.pair, self.admin, "lwsconf-admin")
        if self.controllers:
            self._start_controllers(ca, sa)

    def _start_etcd_and_apiserver(self, ca: pki.Authority, sa: pki.Pair) -> None:
        pki_dir = self.folder / "pki"
        service_ip = flags.kubernetes_service_ip(self.service_range)
        advertised = (self.advertise_address,) if self.advertise_address else ()
        serving = ca.issue("apiserver", "kube-apiserver", server_ips=("127.0.0.1", service_ip, *advertised),
                           server_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                         "kubernetes.default.svc.cluster.local"))
        kubelet_client = ca.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                                  org="system:masters")
        etcd_port, peer_port, self.port = self._reserve(), self._reserve(), self._reserve()
        etcd = self._launch("etcd", flags.etcd_argv(self.binaries["etcd"], self.folder / "etcd", etcd_port,
                                                    peer_port))
        wait_until(lambda: self._etcd_healthy(etcd, etcd_port), what=f"etcd on 127.0.0.1:{etcd_port} to be healthy",
                   timeout=self.timeouts.etcd_ready, poll=0.2, describe=etcd.describe)
        egress_config = None
        if self.cluster_egress is not None:
            egress_config = self.folder / "egress-selector.yaml"
            egress_config.write_text(yaml.safe_dump(flags.egress_selector_configuration(self.cluster_egress)))
        apiserver = self._launch("kube-apiserver", flags.apiserver_argv(
            self.binaries["kube-apiserver"], pki_dir, etcd_port, self.port, serving, ca.pair, sa, kubelet_client,
            service_range=self.service_range, egress_selector_config=egress_config,
            advertise_address=self.advertise_address))
        self.url = f"https://127.0.0.1:{self.port}"
        context = self.ssl_context()
        wait_until(lambda: self._healthy(apiserver, f"{self.url}/readyz", context),
                   what=f"kube-apiserver at {self.url}/readyz",
                   timeout=self.timeouts.apiserver_ready, poll=0.5, describe=apiserver.describe)

    def _start_controllers(self, ca: pki.Authority, sa: pki.Pair) -> None:
        """kube-controller-manager and kube-scheduler, started together and then each waited for."""
        kcm_user = ca.issue("controller-manager", "system:kube-controller-manager")
        scheduler_user = ca.issue("scheduler", "system:kube-scheduler")
        kcm_config = self._write_kubeconfig("controller-manager.conf", ca.pair, kcm_user,
                                            "system:kube-controller-manager")
        scheduler_config = self._write_kubeconfig("scheduler.conf", ca.pair, scheduler_user, "system:kube-scheduler")
        kcm_port, scheduler_port = self._reserve(), self._reserve()
        for name in ("controller-manager", "scheduler"):
            (self.folder / name).mkdir(mode=0o700)
        kcm = self._launch("kube-controller-manager", flags.controller_manager_argv(
            self.binaries["kube-controller-manager"], self.folder / "controller-manager", kcm_port, kcm_config,
            ca.pair, sa))
        scheduler = self._launch("kube-scheduler", flags.scheduler_argv(
            self.binaries["kube-scheduler"], self.folder / "scheduler", scheduler_port, scheduler_config))
        unverified = ssl.create_default_context()  # their serving certificates are self-signed at start
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        for component, port, timeout in ((kcm, kcm_port, self.timeouts.controller_manager_ready),
                                         (scheduler, scheduler_port, self.timeouts.scheduler_ready)):
            url = f"https://127.0.0.1:{port}/healthz"
            wait_until(lambda c=component, u=url: self._healthy(c, u, unverified),  # type: ignore[misc]
                       what=f"{component.name} at {url}", timeout=timeout, poll=0.5, describe=component.describe)

    def ssl_context(self) -> ssl.SSLContext:
        """Trusts the cluster CA and presents the admin certificate."""
        assert self.admin is not None, "start() first"
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        context.load_cert_chain(str(self.admin.cert), str(self.admin.key))
        return context

    def _write_kubeconfig(self, name: str, ca: pki.Pair, user: pki.Pair, user_name: str) -> Path:
        path = self.folder / name
        path.touch(mode=0o600)
        path.write_text(yaml.safe_dump(flags.kubeconfig(self.url, ca, user, user_name)))
        return path

    def _reserve(self) -> int:
        held = reserve_port()
        self._ports.append(held)
        return held.port

    def _launch(self, name: str, argv: list[str]) -> Component:
        component = Component(name, argv, self.folder / f"{name}.log", cwd=self.folder)
        self.components.append(component)
        return component

    @staticmethod
    def _probe(component: Component, url: str, context: ssl.SSLContext | None = None) -> str:
        code = component.exited()
        if code is not None:
            raise Terminal(f"{component.name} exited with status {code}")
        try:
            with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT, context=context) as reply:  # noqa: S310
                return str(reply.read().decode(errors="replace"))
        except urllib.error.HTTPError as exc:
            raise NotYet(f"{url} answered {exc.code}: {exc.read()[:300]!r}") from None
        except (OSError, ValueError) as exc:
            raise NotYet(f"{url}: {exc}") from None

    def _etcd_healthy(self, etcd: Component, port: int) -> bool:
        body = self._probe(etcd, f"http://127.0.0.1:{port}/health")
        if json.loads(body).get("health") != "true":
            raise NotYet(f"etcd /health said {body.strip()}")
        return True

    def _healthy(self, component: Component, url: str, context: ssl.SSLContext) -> bool:
        self._probe(component, url, context)
        return True

    def dead(self) -> list[Component]:
        """Components that have exited on their own."""
        return [c for c in self.components if c.exited() is not None]

    def stop(self) -> None:
        """Stop the components in reverse order (etcd last) and remove the folder (idempotent)."""
        with shutdown.deferred("stopping the local control plane"):
            for component in reversed(self.components):
                component.stop()
            for held in self._ports:
                held.release()
            if self.folder != Path():
                shutil.rmtree(self.folder, ignore_errors=True)
            shutdown.remove_at_exit(self._hook)

    def _last_resort(self) -> None:
        for component in self.components:
            component.kill()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> LocalControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
