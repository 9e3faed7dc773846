"""Upstream's manager as a child process of ours, out of cluster, on loopback only.

`ManagerProcess(binary, kubeconfig).start()` makes a private folder holding a serving certificate for
127.0.0.1 (our own CA, `lwsconf.controlplane.pki`; controller-runtime reads `tls.crt`/`tls.key` from the
configured certDir), a kubeconfig (the one under test, its context made current) and upstream's
configuration file (kind Configuration, config.lws.x-k8s.io/v1alpha1) with internal certificate
management off, the webhook server, metrics and health probes on free 127.0.0.1 ports, leader election
on with generous durations (`LEADER_ELECTION`; the Lease goes to `lws-system`, which upstream's
utils.GetOperatorNamespace falls back to out of cluster). It then waits, with a named timeout, for
/readyz; a manager that exits fails at once with its log tail. The process runs in its own session
with PR_SET_PDEATHSIG (`controlplane.process`), so it
dies with us however we die; `stop()` (SIGTERM, then SIGKILL) and the exit hook remove the folder.
`restart()` is the LWSControllerRestart tests' stop-and-start; `halt()` and `launch()` are its halves, for
a caller that releases the old process's Lease in between (`run.Running.restart`).
"""

from __future__ import annotations

import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import urllib3
import yaml
from kubernetes import client
from kubernetes import config as k8sconfig

from lwsconf import lwsapi, podgroups, shutdown
from lwsconf.controlplane import pki
from lwsconf.controlplane.process import Component
from lwsconf.ports import Reserved, reserve_port
from lwsconf.waits.core import NotYet, Terminal, wait_until

PROBE_TIMEOUT = 5.0
LEASE_NAMESPACE = "lws-system"
"""Where upstream's manager keeps its leader-election Lease when not in a pod (pkg/utils/utils.go)."""
LEASE_NAME = "b8b2488c.x-k8s.io"
"""Its Lease's name: upstream's default leader-election id (api/config/v1alpha1/defaults.go,
DefaultLeaderElectionID), which our configuration leaves as it is."""
LEADER_ELECTION: dict[str, object] = {"leaderElect": True, "leaseDuration": "60s", "renewDeadline": "45s",
                                      "retryPeriod": "5s"}
"""The configuration's `leaderElection` (component-base's LeaderElectionConfiguration, which upstream's
pkg/config hands to controller-runtime's LeaseDuration/RenewDeadline/RetryPeriod). Upstream's defaults
(15s/10s/2s) make the manager exit with "leader election lost" when it cannot renew its Lease within
10s: under a load average of 20-30 on a 2-core machine the API server (the sim above all) answered that
slowly, the manager exited mid-run and every later test timed out. 45s to renew (controller-runtime
then gives each leader-election request 22.5s, RenewDeadline/2) rides that out; the lease must outlast
the renew deadline, and retrying every 5s keeps the Lease writes few. Leader election stays on, as in
upstream's own deployment: a longer lease only delays a *new* manager's first acquisition, which
`run.Running.restart` avoids by deleting the stopped manager's Lease."""


@dataclass(frozen=True)
class Ports:
    webhook: int
    metrics: int
    health: int

    @classmethod
    def of(cls, held: list[Reserved]) -> Ports:
        webhook, metrics, health = (r.port for r in held)
        return cls(webhook=webhook, metrics=metrics, health=health)


def configuration(ports: Ports, cert_dir: Path, *, gang_scheduling: bool = False) -> dict[str, object]:
    """Upstream's configuration file for an out-of-cluster manager on loopback.

    `gang_scheduling` adds `gangSchedulingManagement: {schedulerProvider: volcano}` (api/config/v1alpha1/
    configuration_types.go:37-38, 140-144 in v0.9.0): the pod webhook then annotates pods with their PodGroup
    and the pod reconciler creates one per group (cmd/main.go:217-226).
    """
    config: dict[str, object] = {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration",
        "leaderElection": dict(LEADER_ELECTION),
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"}}
    if gang_scheduling:
        config["gangSchedulingManagement"] = {"schedulerProvider": lwsapi.GANG_PROVIDER_VOLCANO}
    return config


def serves_podgroups(kubeconfig: Path, context: str | None, temp_dir: Path) -> bool:
    """Whether the cluster serves Volcano's PodGroups: gang scheduling is configured then, and only then.

    The suite installs its PodGroup CRD when a run claims LWSGangScheduling (lwsconf/podgroups.py). With gang
    scheduling on and no such kind, upstream's pod reconciler fails every leader before it creates the
    worker StatefulSet (pkg/controllers/pod_controller.go:130-135 creates the PodGroup first), so no group
    would ever be complete; the manager itself starts either way. A kubeconfig naming no reachable cluster
    answers False (the manager will say what is wrong with it).
    """
    configuration = client.Configuration()
    try:
        k8sconfig.load_kube_config(config_file=str(kubeconfig), context=context,  # type: ignore[no-untyped-call]
                                   client_configuration=configuration, temp_file_path=str(temp_dir))
    except k8sconfig.ConfigException:
        return False
    api = client.ApiClient(configuration)
    try:
        return podgroups.served(api)
    except (client.ApiException, urllib3.exceptions.HTTPError, OSError):
        return False
    finally:
        api.close()  # type: ignore[no-untyped-call]


def own_kubeconfig(source: Path, context: str | None) -> str:
    """The kubeconfig text with `context` made current (controller-runtime takes no context flag)."""
    data = yaml.safe_load(source.read_text())
    if context:
        data["current-context"] = context
    return str(yaml.safe_dump(data))


class ManagerError(Exception):
    """The manager did not start or became unready; the message carries its log tail."""


class ManagerProcess:
    """One upstream manager; `start()`, `restart()`, `stop()`; `ca` is what the webhooks are trusted by."""

    def __init__(self, binary: Path, kubeconfig: Path, context: str | None = None, *,
                 ready_timeout: float = 60.0) -> None:
        self.binary, self.source_kubeconfig, self.context = binary, kubeconfig, context
        self.ready_timeout = ready_timeout
        self.folder = Path()
        self.ports = Ports(0, 0, 0)
        self._held: list[Reserved] = []
        """self.ports, held from start to stop (also across restart): see lwsconf/ports.py."""
        self.ca = b""
        self.component: Component | None = None
        self._hook = self._last_resort

    @property
    def webhook_url(self) -> str:
        return f"https://127.0.0.1:{self.ports.webhook}"

    def start(self) -> ManagerProcess:
        shutdown.run_id()
        self.folder = Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("lws")))
        shutdown.at_exit(self._hook)
        try:
            with shutdown.deferred("starting upstream's LWS manager"):
                self._prepare()
                self._launch()
        except BaseException:
            self.stop()
            raise
        return self

    def _prepare(self) -> None:
        certs = self.folder / "certs"
        certs.mkdir(mode=0o700)
        authority = pki.Authority(certs, name="lwsconf-lws-webhook-ca")
        authority.issue("tls", "lws-webhook-service", server_ips=("127.0.0.1",), server_names=("localhost",))
        self.ca = authority.pair.cert.read_bytes()
        self._held = [reserve_port() for _ in range(3)]
        self.ports = Ports.of(self._held)
        (self.folder / "kubeconfig").write_text(own_kubeconfig(self.source_kubeconfig, self.context))
        gang = serves_podgroups(self.source_kubeconfig, self.context, self.folder)
        (self.folder / "config.yaml").write_text(yaml.safe_dump(configuration(self.ports, certs,
                                                                              gang_scheduling=gang)))

    @property
    def argv(self) -> list[str]:
        return [str(self.binary), f"--config={self.folder / 'config.yaml'}",
                f"--kubeconfig={self.folder / 'kubeconfig'}", "--zap-log-level=info", "--zap-devel=false"]

    def _launch(self) -> None:
        self.component = Component("lws-manager", self.argv, self.folder / "manager.log", cwd=self.folder)
        wait_until(self._ready, what=f"upstream's LWS manager to answer /readyz on 127.0.0.1:{self.ports.health}",
                   timeout=self.ready_timeout, poll=0.2, describe=self.describe)

    def _ready(self) -> bool:
        self.check_alive()
        url = f"http://127.0.0.1:{self.ports.health}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT):  # noqa: S310 - our loopback URL
                return True
        except urllib.error.HTTPError as exc:
            raise NotYet(f"{url} answered {exc.code}") from None
        except OSError as exc:
            raise NotYet(f"{url}: {exc}") from None

    def check_alive(self) -> None:
        """Terminal (for a wait, whose `describe` adds the log tail) when the manager has exited."""
        code = self.component.exited() if self.component is not None else None
        if code is not None:
            raise Terminal(f"upstream's LWS manager exited with status {code}")

    def describe(self) -> str:
        return self.component.describe() if self.component is not None else "upstream's LWS manager is not started"

    def log_tail(self, lines: int = 40) -> str:
        return self.component.tail(lines) if self.component is not None else ""

    def restart(self) -> None:
        """Stop the process and start a new one with the same configuration, certificate and ports."""
        self.halt()
        self.launch()

    def halt(self) -> None:
        """Stop the process (its log kept as manager.previous.log); `launch()` starts the next one."""
        if self.component is not None:
            self.component.stop()
            previous = self.folder / "manager.log"
            previous.rename(self.folder / "manager.previous.log")

    def launch(self) -> None:
        """Start the process again after `halt()` and wait for /readyz."""
        self._launch()

    def stop(self) -> None:
        """Stop the manager (SIGTERM, then SIGKILL) and remove its folder (idempotent)."""
        with shutdown.deferred("stopping upstream's LWS manager"):
            if self.component is not None:
                self.component.stop()
            for held in self._held:
                held.release()
            if self.folder != Path():
                shutil.rmtree(self.folder, ignore_errors=True)
            shutdown.remove_at_exit(self._hook)

    def _last_resort(self) -> None:
        if self.component is not None:
            self.component.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
