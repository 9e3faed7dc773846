"""Installing and running the reference implementation against any cluster, for every caller.

The pytest plugin (`fixtures/implementations/`, `fixtures/controller_restart.py`) and `lwsconf
diff-impls` (`lwsconf/implcompare/`) both need the reference's CRD and admission policies installed and its
reconciler run as a child process; they live here, below both (lwsconf never imports the plugin). Errors
are `InstallError`s saying what to do; the plugin turns them into `pytest.UsageError`.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import yaml
from kubernetes import client

from lwsconf import crds, lwsapi, project_files
from lwsconf.features import Feature
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core
from lwsconf.waits import lws as waits_lws

MANIFESTS = project_files.project_dir("manifests")
CRD_FILE = MANIFESTS / "crd" / "leaderworkersets.yaml"
CRD_NAME = lwsapi.CRD_NAME
DISAGGREGATED_CRD_FILES = (MANIFESTS / "crd" / "disaggregatedsets.yaml",
                           MANIFESTS / "crd" / "disaggregatedsetrolescalers.yaml")
"""The DisaggregatedSet and DisaggregatedSetRoleScaler CRDs (`python -m lwsconf.disaggcrds` writes them)."""
VAP_FILE = MANIFESTS / "crd" / "validating-admission-policy.yaml"
MAP_FILE = MANIFESTS / "crd" / "mutating-admission-policy.yaml"
GANG_MAP_FILE = MANIFESTS / "crd" / "gang-admission-policy.yaml"
RUNNING_LINE = "reference reconciler running against"
STOP_GRACE = 15.0


class InstallError(Exception):
    """The reference cannot be installed on this cluster; the message says why and what to do."""


class NotServed(Exception):
    """The cluster does not serve the kind a manifest needs (HTTP 404 on create)."""


def _established(ext: client.ApiextensionsV1Api, name: str = CRD_NAME) -> bool:
    try:
        crd = ext.read_custom_resource_definition(name)
    except client.ApiException:
        return False
    conditions = (crd.status.conditions if crd.status is not None else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def install_crd(api: client.ApiClient, timeouts: Timeouts) -> None:
    """Create or update our CRD and wait until it is Established."""
    if not CRD_FILE.is_file():
        raise InstallError(f"--lws-impl=reference needs {CRD_FILE}, which is missing: reinstall lwsconf (a "
                           "wheel carries it in lwsconf/_suite/manifests/) or run from a checkout of lwsconf")
    crds.create_crd(api, yaml.safe_load(CRD_FILE.read_text()), replace_existing=True)
    ext = client.ApiextensionsV1Api(api)

    def established() -> None:
        if not _established(ext):
            raise core.NotYet(f"CRD {CRD_NAME} is not Established")

    core.wait_until(established, what=f"CRD {CRD_NAME} to be Established", timeout=timeouts.create,
                    poll=timeouts.poll_interval)
    install_admission_policy(api)
    waits_lws.lws_kind_must_accept_writes(api, timeout=timeouts.create, poll=timeouts.poll_interval)


def install_disaggregated_crds(api: client.ApiClient, timeouts: Timeouts) -> None:
    """Create or update the DisaggregatedSet CRDs and wait until both are Established: the reference serves
    disaggregatedset.x-k8s.io/v1 beside LWS, as upstream's manager does (issue 34)."""
    ext = client.ApiextensionsV1Api(api)
    names = []
    for path in DISAGGREGATED_CRD_FILES:
        if not path.is_file():
            raise InstallError(f"--lws-impl=reference needs {path}, which is missing: reinstall lwsconf or run from a "
                               "checkout of lwsconf")
        manifest = yaml.safe_load(path.read_text())
        crds.create_crd(api, manifest, replace_existing=True)
        names.append(str(manifest["metadata"]["name"]))

    def established() -> None:
        waiting = [name for name in names if not _established(ext, name)]
        if waiting:
            raise core.NotYet(f"CRDs not Established yet: {', '.join(waiting)}")

    core.wait_until(established, what="the DisaggregatedSet CRDs to be Established", timeout=timeouts.create,
                    poll=timeouts.poll_interval)


def install_admission_policy(api: client.ApiClient) -> None:
    """Create or replace the ValidatingAdmissionPolicy and its binding (rule V19) from `VAP_FILE`."""
    try:
        _install_policies(api, VAP_FILE)
    except NotServed as exc:
        raise InstallError(
            f"the cluster does not serve admissionregistration.k8s.io/v1 {exc} (Kubernetes >= 1.30 does), which "
            "--lws-impl=reference needs for rule V19: use a newer cluster") from None


def install_mutating_policy(api: client.ApiClient) -> dict[Feature, str]:
    """Create or replace the MutatingAdmissionPolicy and its binding from `MAP_FILE`.

    Returns:
        The features the reference cannot claim without it: none when installed; UniquePerReplica
        subdomains and TPU env injection when the cluster does not serve admissionregistration.k8s.io/v1
        MutatingAdmissionPolicy.
    """
    try:
        _install_policies(api, MAP_FILE)
    except NotServed as exc:
        missing = f"the cluster does not serve admissionregistration.k8s.io/v1 {exc} (Kubernetes >= 1.36), which the "
        where = f" (manifests/crd/{MAP_FILE.name})"
        return {
            Feature.SUBDOMAIN_UNIQUE_PER_REPLICA: missing + "reference needs to give UniquePerReplica leader pods "
                                                            "their own subdomain" + where,
            Feature.TPU_ENV_INJECTION: missing + "reference needs to give each TPU worker pod its own "
                                                 "TPU_WORKER_ID and subgroup host list" + where,
        }
    return {}


def install_gang_policy(api: client.ApiClient) -> dict[Feature, str]:
    """Create or replace the MutatingAdmissionPolicy naming each LWS pod's PodGroup at creation (`GANG_MAP_FILE`).

    Returns:
        The features the reference cannot claim without it: none when installed; LWSGangScheduling when the cluster
        does not serve MutatingAdmissionPolicy (the reconciler would annotate pods only after they exist).
    """
    try:
        _install_policies(api, GANG_MAP_FILE)
    except NotServed as exc:
        return {Feature.GANG_SCHEDULING: (
            f"the cluster does not serve admissionregistration.k8s.io/v1 {exc} (Kubernetes >= 1.36), which the "
            "reference needs to name each pod's PodGroup when the pod is created "
            f"(manifests/crd/{GANG_MAP_FILE.name})")}
    return {}


def _install_policies(api: client.ApiClient, path: Path) -> None:
    """Create, or read and replace, every admission policy and binding of a manifest file."""
    adm = client.AdmissionregistrationV1Api(api)
    verbs: dict[str, tuple[Callable[..., Any], ...]] = {
        "ValidatingAdmissionPolicy": (adm.create_validating_admission_policy, adm.read_validating_admission_policy,
                                      adm.replace_validating_admission_policy),
        "ValidatingAdmissionPolicyBinding": (adm.create_validating_admission_policy_binding,
                                             adm.read_validating_admission_policy_binding,
                                             adm.replace_validating_admission_policy_binding),
        "MutatingAdmissionPolicy": (adm.create_mutating_admission_policy, adm.read_mutating_admission_policy,
                                    adm.replace_mutating_admission_policy),
        "MutatingAdmissionPolicyBinding": (adm.create_mutating_admission_policy_binding,
                                           adm.read_mutating_admission_policy_binding,
                                           adm.replace_mutating_admission_policy_binding),
    }
    for body in yaml.safe_load_all(path.read_text()):
        create, read, replace = verbs[body["kind"]]
        try:
            create(body)
        except client.ApiException as exc:
            if exc.status == 404:
                raise NotServed(body["kind"]) from None
            if exc.status != 409:
                raise
            name = body["metadata"]["name"]
            body["metadata"]["resourceVersion"] = read(name).metadata.resource_version
            replace(name, body)


class ReferenceProcess:
    """`lwsconf reconciler` as a child process; its output goes to a temporary log file, removed at exit."""

    how = "stop the reference reconciler process (SIGTERM) and start it again"

    def __init__(self, kubeconfig: Path, context: str | None, timeouts: Timeouts, *,
                 gang_scheduling: str | None = None, disaggregated: bool = False) -> None:
        self.args = [sys.executable, "-m", "lwsconf", "reconciler", "--kubeconfig", str(kubeconfig),
                     *(["--context", context] if context else []), "--exit-on-stdin-close",
                     *(["--disaggregated"] if disaggregated else []),
                     *([f"--gang-scheduling={gang_scheduling}"] if gang_scheduling else [])]
        self.timeouts = timeouts
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def log_path(self) -> Path:
        if self._dir is None:
            raise RuntimeError("ReferenceProcess is not started")
        return Path(self._dir.name) / "reconciler.log"

    @property
    def pid(self) -> int | None:
        """The running child's process id (None when stopped)."""
        return self._proc.pid if self._proc is not None else None

    def __enter__(self) -> ReferenceProcess:
        self._dir = tempfile.TemporaryDirectory(prefix="lwsconf-reconciler-")
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._stop()
        finally:
            if self._dir is not None:
                self._dir.cleanup()
                self._dir = None

    def restart(self) -> None:
        self._stop()
        self._start()

    def health(self) -> str | None:
        """None while the child runs (or between a restart's stop and start); once it has exited by itself,
        its status and log tail (`Implementation.health`: the run fails once, not test by test)."""
        proc = self._proc
        if proc is None or proc.poll() is None:
            return None
        return (f"the reference reconciler process (pid {proc.pid}) exited with status {proc.returncode} during "
                f"the run; no test from this one on can pass without a controller. Last lines of "
                f"{self.log_path}:\n{self._tail()}")

    def _start(self) -> None:
        self._log = self.log_path.open("ab")
        self._proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        started = self.log_path.stat().st_size

        def running() -> None:
            proc = self._proc
            if proc is not None and proc.poll() is not None:
                raise core.Terminal(f"it exited with status {proc.returncode}:\n{self._tail()}")
            if RUNNING_LINE.encode() not in self.log_path.read_bytes()[started:]:
                raise core.NotYet(f"no '{RUNNING_LINE}' line in {self.log_path} yet")

        core.wait_until(running, what=f"the reference reconciler process to start ({' '.join(self.args)})",
                        timeout=self.timeouts.controller_restart, poll=min(0.1, self.timeouts.poll_interval),
                        describe=self._tail)

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except (OSError, RuntimeError):
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"
