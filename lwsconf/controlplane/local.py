"""A real etcd + kube-apiserver on loopback, from the binaries `lwsconf controlplane build` made.

`LocalControlPlane(release).start()` makes a private folder (certificates, etcd's data, logs,
kubeconfig), starts etcd on two free 127.0.0.1 ports and waits for its /health, then kube-apiserver
and waits for its /readyz: TLS with a fresh CA, client-certificate auth, service-account keys, the
service range envtest uses, `--advertise-address` and `--bind-address` 127.0.0.1 (it cannot find an
address on a machine without a default route), and `--endpoint-reconciler-type=none`, since 1.37
refuses a loopback advertise address for the `kubernetes` Service's endpoints (kubernetes/kubernetes
#138102): that Service has no endpoints, and the backend's kube-proxy is to map it to the API server.
Each wait has a named timeout and fails with the component's log tail; a component that exits while
being waited for fails the wait at once. `stop()` ends the API server, then etcd, and removes the
folder; an exit hook does the same should the process exit without it. Nothing listens or connects
outside 127.0.0.0/8 (ClusterIPs come from SERVICE_RANGE, but nothing of ours routes to them yet).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import ssl
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from lwsconf import shutdown
from lwsconf.controlplane import build, pki
from lwsconf.controlplane.process import Component
from lwsconf.controlplane.versions import Release
from lwsconf.waits.core import NotYet, Terminal, wait_until

SERVICE_RANGE = "10.0.0.0/24"
"""kube-apiserver's ClusterIP range (envtest's default); its first address is the `kubernetes` Service."""
KUBERNETES_SERVICE_IP = "10.0.0.1"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
PROBE_TIMEOUT = 5.0
"""Seconds one health request may take."""


@dataclass(frozen=True)
class StartTimeouts:
    """How long each component may take to become ready (a loaded 2-core machine starts them slowly).

    Overridable by LWSCONF_LOCAL_ETCD_READY and LWSCONF_LOCAL_APISERVER_READY (seconds).
    """

    etcd_ready: float = 60.0
    """etcd answers /health with {"health":"true"}."""
    apiserver_ready: float = 180.0
    """kube-apiserver answers /readyz with 200 (its post-start hooks, RBAC bootstrap, done)."""

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


def free_port() -> int:
    """A port on 127.0.0.1 free right now (the component binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def etcd_argv(binary: Path, data: Path, client_port: int, peer_port: int) -> list[str]:
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [str(binary), "--name", "lwsconf", "--data-dir", str(data),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"lwsconf={peer}", "--initial-cluster-state", "new",
            "--unsafe-no-fsync", "--log-level", "warn"]


def apiserver_argv(binary: Path, folder: Path, etcd_port: int, port: int, serving: pki.Pair,
                   ca: pki.Pair, sa: pki.Pair, kubelet_client: pki.Pair) -> list[str]:
    return [str(binary), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
            f"--secure-port={port}",
            f"--cert-dir={folder}", f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}",
            f"--client-ca-file={ca.cert}",
            f"--service-account-key-file={sa.cert}", f"--service-account-signing-key-file={sa.key}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true", "--profiling=false",
            f"--kubelet-client-certificate={kubelet_client.cert}", f"--kubelet-client-key={kubelet_client.key}"]


def kubeconfig(server: str, ca: pki.Pair, user: pki.Pair) -> dict[str, object]:
    """A kubeconfig with the CA and the client certificate inline (one file to hand around)."""
    import base64

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    return {"apiVersion": "v1", "kind": "Config", "current-context": "lwsconf-local",
            "clusters": [{"name": "lwsconf-local",
                          "cluster": {"server": server, "certificate-authority-data": b64(ca.cert)}}],
            "users": [{"name": "lwsconf-admin", "user": {"client-certificate-data": b64(user.cert),
                                                          "client-key-data": b64(user.key)}}],
            "contexts": [{"name": "lwsconf-local", "context": {"cluster": "lwsconf-local", "user": "lwsconf-admin"}}]}


class LocalControlPlane:
    """etcd + kube-apiserver of one pinned release on loopback; `start()`, then `stop()`."""

    def __init__(self, release: Release, binaries: dict[str, Path], *,
                 timeouts: StartTimeouts | None = None) -> None:
        self.release, self.binaries = release, binaries
        self.timeouts = timeouts or StartTimeouts.from_env()
        self.folder = Path()
        self.components: list[Component] = []
        self.url = ""
        self.kubeconfig = Path()
        self._hook = self._last_resort

    @classmethod
    def from_cache(cls, release: Release, timeouts: StartTimeouts | None = None) -> LocalControlPlane:
        binaries = build.installed(release)
        if binaries is None:
            raise StartError(f"no Kubernetes {release.kubernetes} control plane is built: run "
                             f"`lwsconf controlplane build --kubernetes-version {release.kubernetes}` "
                             f"(needs Go), or use --cluster=sim")
        return cls(release, binaries, timeouts=timeouts)

    def start(self) -> LocalControlPlane:
        """Start etcd then kube-apiserver; on any failure everything started is stopped again."""
        shutdown.run_id()  # every component carries the run's LWSCONF_RUN_ID
        self.folder = Path(tempfile.mkdtemp(prefix="lwsconf-local-"))
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
        ca = pki.Authority(pki_dir)
        serving = ca.issue("apiserver", "kube-apiserver", server_ips=("127.0.0.1", KUBERNETES_SERVICE_IP),
                           server_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                         "kubernetes.default.svc.cluster.local"))
        admin = ca.issue("admin", "lwsconf-admin", org="system:masters")
        kubelet_client = ca.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                                  org="system:masters")
        sa = pki.service_account_keys(pki_dir)
        etcd_port, peer_port, port = free_port(), free_port(), free_port()
        etcd = self._launch("etcd", etcd_argv(self.binaries["etcd"], self.folder / "etcd", etcd_port, peer_port))
        wait_until(lambda: self._etcd_healthy(etcd, etcd_port), what=f"etcd on 127.0.0.1:{etcd_port} to be healthy",
                   timeout=self.timeouts.etcd_ready, poll=0.2, describe=etcd.describe)
        apiserver = self._launch("kube-apiserver", apiserver_argv(self.binaries["kube-apiserver"], pki_dir, etcd_port,
                                                                  port, serving, ca.pair, sa, kubelet_client))
        self.url = f"https://127.0.0.1:{port}"
        context = ssl.create_default_context(cafile=str(ca.pair.cert))
        context.load_cert_chain(str(admin.cert), str(admin.key))
        wait_until(lambda: self._apiserver_ready(apiserver, context), what=f"kube-apiserver at {self.url}/readyz",
                   timeout=self.timeouts.apiserver_ready, poll=0.5, describe=apiserver.describe)
        self.kubeconfig = self.folder / "kubeconfig"
        self.kubeconfig.touch(mode=0o600)
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig(self.url, ca.pair, admin)))

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

    def _apiserver_ready(self, apiserver: Component, context: ssl.SSLContext) -> bool:
        self._probe(apiserver, f"{self.url}/readyz", context)
        return True

    def dead(self) -> list[Component]:
        """Components that have exited on their own."""
        return [c for c in self.components if c.exited() is not None]

    def stop(self) -> None:
        """Stop the API server, then etcd, and remove the folder (idempotent)."""
        with shutdown.deferred("stopping the local control plane"):
            for component in reversed(self.components):
                component.stop()
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
