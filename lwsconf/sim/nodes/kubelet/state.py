"""What the agent knows about one pod and its containers: plain mutable records. No I/O here.

`podworker` changes these records; `status` turns them into the pod status the API shows; the
`sim` views handed to the stage interpreter are built from them here too.

Container states (`ContainerRecord.state`):

    pending  -> not allowed to start yet (no sandbox, earlier init containers unfinished)
    created  -> may start now; the `container-start` stage starts it
    running  -> started (process running, or emulated)
    exited   -> terminated; the agent decides between restart (backoff) and done
    backoff  -> waiting (CrashLoopBackOff) until `backoff_until`, then created again
    done     -> terminated for good (restartPolicy, or the pod is terminating)
"""

from __future__ import annotations

import datetime
import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
PROBE_KINDS = ("startup", "liveness", "readiness")
STATES = ("pending", "created", "running", "exited", "backoff", "done")


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def image_id(image: str) -> str:
    """A stable fake image digest, shaped like containerd's `repo@sha256:...`."""
    repo = image.split("@", 1)[0]
    if ":" in repo.rsplit("/", 1)[-1]:
        repo = repo.rsplit(":", 1)[0]
    digest = hashlib.sha256(image.encode()).hexdigest()
    return f"{repo}@sha256:{digest}"


@dataclass
class ContainerRecord:
    """One container of the pod (its current instance, plus the last terminated one)."""

    spec: Obj
    init: bool = False
    sidecar: bool = False
    emulated: bool = True
    state: str = "pending"
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    restart_count: int = 0
    container_id: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    last_terminated: Obj | None = None
    probe_results: dict[str, bool | None] = field(default_factory=dict)
    """Latest result per probe kind (None: not probed yet)."""
    forced_probes: dict[str, str] = field(default_factory=dict)
    """Results forced by a `probe` stage step ("success"/"failure"), kept across restarts."""
    backoff_until: float | None = None
    start_failures: int = 0
    """Consecutive starts that failed before the process ran (config errors): their retry back-off. Shown to
    stages as `.sim.startAttempt`, so a retried start is a new container view and its start stage fires again
    (without it a container whose ConfigMap appeared late stayed ContainerCreating for ever)."""
    kill_reason: str | None = None
    """Set by a prober (liveness/startup failure): the worker must stop and maybe restart it."""
    process: Any = None
    log_path: Path | None = None

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def image(self) -> str:
        return str(self.spec.get("image", ""))

    def has_probe(self, kind: str) -> bool:
        return isinstance(self.spec.get(f"{kind}Probe"), dict)

    @property
    def started(self) -> bool:
        """Running and past its startup probe (if any)."""
        return self.state == "running" and (not self.has_probe("startup") or self.probe_results.get("startup") is True)

    @property
    def ready(self) -> bool:
        if not self.started:
            return False
        return not self.has_probe("readiness") or self.probe_results.get("readiness") is True

    @property
    def terminated(self) -> bool:
        return self.state in ("exited", "done")

    def new_instance(self) -> None:
        """Start afresh after a restart (the restart count is raised by the caller)."""
        self.container_id = ""
        self.started_at = self.finished_at = None
        self.exit_code = None
        self.reason = self.message = ""
        self.probe_results = {}
        self.kill_reason = None
        self.process = None
        self.backoff_until = None
        self.state = "created"
        self.waiting_reason, self.waiting_message = "ContainerCreating", ""

    def mark_running(self) -> None:
        self.container_id = "containerd://" + secrets.token_hex(32)
        self.started_at = now_rfc3339()
        self.state = "running"

    def mark_exited(self, exit_code: int, reason: str = "", message: str = "") -> None:
        if self.state == "running" or self.started_at is not None:
            self.finished_at = now_rfc3339()
        self.exit_code = exit_code
        self.reason = reason or ("Completed" if exit_code == 0 else "Error")
        self.message = message
        self.process = None
        self.kill_reason = None
        self.state = "exited"

    def terminated_dict(self) -> Obj:
        out: Obj = {"exitCode": self.exit_code if self.exit_code is not None else 0, "reason": self.reason}
        if self.message:
            out["message"] = self.message
        out["startedAt"] = self.started_at
        out["finishedAt"] = self.finished_at or self.started_at
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass
class PodState:
    """The agent's facts about one pod (by UID)."""

    uid: str
    host_ip: str
    containers: list[ContainerRecord] = field(default_factory=list)
    init_containers: list[ContainerRecord] = field(default_factory=list)
    admitted: bool = False
    admitted_at: float | None = None
    """Event-loop time of admission: the kubelet starts the pod's probe workers (and their tickers) then."""
    sandbox: bool = False
    pod_ip: str = ""
    start_time: str | None = None
    phase: str | None = None
    """A terminal phase once reached (Failed/Succeeded): the kubelet never leaves it."""
    reason: str = ""
    message: str = ""
    terminating: bool = False
    device_ids: dict[str, list[str]] = field(default_factory=dict)
    device_env: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per container name: environment from the device plugin's Allocate answer."""

    def all_records(self) -> list[ContainerRecord]:
        return [*self.init_containers, *self.containers]

    def record(self, name: str) -> ContainerRecord | None:
        return next((r for r in self.all_records() if r.name == name), None)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Failed", "Succeeded")

    def init_done(self) -> bool:
        """Every regular init container succeeded and every sidecar started."""
        for rec in self.init_containers:
            if rec.sidecar and not rec.started:
                return False
            if not rec.sidecar and not (rec.terminated and rec.exit_code == 0):
                return False
        return True

    def regular_started(self) -> bool:
        """Some app container of this pod has run (the kubelet's `HasAnyActiveRegularContainerStarted`): the
        pod has been initialized, so a sidecar restarting later does not make it Pending again."""
        return any(rec.container_id or rec.last_terminated is not None for rec in self.containers)

    def app_container_seen(self) -> bool:
        """An app container's status shows it running or terminated (`HasAnyRegularContainerStarted`, which
        GeneratePodInitializedCondition reads from the statuses; `regular_started` is getPhase's runtime view)."""
        return any(r.state == "running" or (r.terminated and r.exit_code is not None) for r in self.containers)

    def initializing(self) -> bool:
        """Init containers hold the pod in Pending (the kubelet's `getPhase`): a regular init container has not
        succeeded yet, or a sidecar has not started while no app container has run yet."""
        if any(not r.sidecar and not (r.terminated and r.exit_code == 0) for r in self.init_containers):
            return True
        return any(r.sidecar and not r.started for r in self.init_containers) and not self.regular_started()


def adopt(state: PodState, old: Obj, reserve: Callable[[str, str], bool],
          to_loopback: Callable[[str], str] = str) -> None:
    """Continue a pod an earlier agent instance ran, from its status: phase, IP, start time, restarts.

    The earlier instance's processes are gone (an agent kills them when it stops), so each container
    that had run counts one restart, as after a node reboot. `to_loopback` turns the pod IP the API
    shows back into the loopback address the pod had (`podnet`; the identity on the sim).
    """
    if old.get("phase") in ("Failed", "Succeeded"):
        state.phase, state.admitted = old["phase"], True
        state.reason, state.message = old.get("reason", ""), old.get("message", "")
        return
    if not old.get("hostIP") or not old.get("startTime"):
        return
    state.admitted, state.start_time = True, old.get("startTime")
    ip = to_loopback(str(old.get("podIP") or ""))
    if ip and reserve(state.uid, ip):
        state.pod_ip = ip
    for field_name, records in (("containerStatuses", state.containers),
                                ("initContainerStatuses", state.init_containers)):
        by_name = {s.get("name"): s for s in old.get(field_name) or []}
        for rec in records:
            previous = by_name.get(rec.name) or {}
            rec.restart_count = int(previous.get("restartCount") or 0) + int(bool(previous.get("containerID")))
            rec.last_terminated = (previous.get("state") or {}).get("terminated") or \
                (previous.get("lastState") or {}).get("terminated")


def pod_view(pod: Obj, status: Obj, state: PodState) -> Obj:
    """What Pod stages look at: the pod with the status the agent would write, plus `sim`."""
    view = {k: v for k, v in pod.items() if k != "status"}
    view["status"] = status
    view["sim"] = {"admitted": state.admitted, "sandbox": state.sandbox, "terminal": state.terminal,
                   "terminating": state.terminating,
                   "emulated": all(r.emulated for r in state.all_records())}
    return view


def container_view(podview: Obj, rec: ContainerRecord, status: Obj) -> Obj:
    """What Container stages look at."""
    probes = {kind: rec.forced_probes.get(kind, "success") for kind in PROBE_KINDS}
    return {"pod": podview, "container": rec.spec, "status": status,
            "sim": {"emulated": rec.emulated, "init": rec.init, "sidecar": rec.sidecar, "state": rec.state,
                    "probes": probes, "startAttempt": rec.start_failures}}
