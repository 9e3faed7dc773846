"""One pod's containers: start, stop, restart policy, back-off, and the logs of emulated containers.

`ContainerOps` is the part of a pod worker that acts on containers. An emulated container only
changes its record; a process container goes through the `Launcher` (env, volumes, hosts file,
argv) and the runtime. Who may start when is decided here too (`advance`): init containers one
after another, app containers once every init container is done, restarts after the kubelet's
back-off (pkg/kubelet/kuberuntime: the first restart is immediate, then the delay doubles up to a cap).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lwsconf.sim.nodes.kubelet import hooks, nodectx, prober, status, termination
from lwsconf.sim.nodes.kubelet import state as st

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def cri_line(text: str, stream: str = "stdout") -> str:
    """One line in the CRI log format the kubelet reads: `<RFC3339Nano> <stream> F <text>`."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
    return f"{stamp} {stream} F {text}\n"


class ContainerOps:
    """Container actions for one pod worker."""

    def __init__(self, ctx: nodectx.NodeContext, state: st.PodState, pod: Callable[[], Obj],
                 wake: Callable[[], None]) -> None:
        self.ctx = ctx
        self.state = state
        self._pod = pod
        self._wake = wake
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- bookkeeping ------------------------------------------------------------------------------

    def spawn(self, coro: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def cancel_tasks(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def log_path(self, rec: st.ContainerRecord) -> Path:
        meta = self._pod().get("metadata") or {}
        folder = self.ctx.logs_dir / f"{meta.get('namespace')}_{meta.get('name')}_{meta.get('uid')}" / rec.name
        return folder / f"{rec.restart_count}.log"

    def append_log(self, rec: st.ContainerRecord, text: str) -> None:
        path = rec.log_path or self.log_path(rec)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            for line in text.splitlines() or [""]:
                handle.write(cri_line(line))

    # --- gating and restarts ----------------------------------------------------------------------

    def advance(self) -> None:
        """Move records along: pending -> created when allowed, exited -> restart or done."""
        loop_now = asyncio.get_running_loop().time()
        closing = self.state.terminating or self.state.terminal
        for rec in self.state.all_records():
            if rec.state == "exited":
                self._after_exit(rec, closing)
            elif rec.state == "backoff" and (closing or (rec.backoff_until or 0) <= loop_now):
                if closing:
                    rec.state = "done"
                else:
                    self._restart(rec)
        if closing or not self.state.sandbox:
            return
        for rec in self.state.init_containers:
            if rec.state == "pending":
                rec.state = "created"
            if not (rec.started if rec.sidecar else (rec.terminated and rec.exit_code == 0)):
                return  # the next init container waits for this one
        for rec in self.state.containers:
            if rec.state == "pending":
                rec.state = "created"

    def exits_to_restart(self) -> bool:
        """A container has exited and will be restarted (now or after its back-off) by the next `advance`."""
        if self.state.terminating or self.state.terminal:
            return False
        return any(rec.state == "exited" and self._should_restart(rec) for rec in self.state.all_records())

    def next_deadline(self) -> float | None:
        times = [r.backoff_until for r in self.state.all_records() if r.state == "backoff" and r.backoff_until]
        return min(times) if times else None

    def _after_exit(self, rec: st.ContainerRecord, closing: bool) -> None:
        if closing or not self._should_restart(rec):
            rec.state = "done"
            return
        rec.last_terminated = rec.terminated_dict()
        if rec.restart_count == 0:
            self._restart(rec)  # the first restart is immediate
            return
        delay = self.ctx.settings.restart_delay(rec.restart_count - 1)
        rec.state = "backoff"
        rec.backoff_until = asyncio.get_running_loop().time() + delay
        rec.waiting_reason = "CrashLoopBackOff"
        rec.waiting_message = status.backoff_message(rec, self._pod(), delay)
        meta = self._pod().get("metadata") or {}
        self.ctx.recorder.record(self._pod(), "Warning", "BackOff",
                                 f"Back-off restarting failed container {rec.name} in pod "
                                 f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})", container=rec.name)

    def _should_restart(self, rec: st.ContainerRecord) -> bool:
        policy = str((self._pod().get("spec") or {}).get("restartPolicy") or "Always")
        if rec.sidecar:
            return True
        if rec.init:
            return rec.exit_code != 0 and policy != "Never"
        if policy == "Always":
            return True
        return policy == "OnFailure" and rec.exit_code != 0

    def _restart(self, rec: st.ContainerRecord) -> None:
        if rec.exit_code is None:  # it never ran (a config error): try again, no restart counted
            rec.new_instance()
            return
        if rec.terminated:
            rec.last_terminated = rec.terminated_dict()
        rec.restart_count += 1
        rec.new_instance()

    # --- start and stop ----------------------------------------------------------------------------

    async def start(self, rec: st.ContainerRecord) -> bool:
        """Start `rec` (the `start` step); False when it failed (the stage's later steps are skipped)."""
        if rec.state != "created":
            return False
        rec.log_path = self.log_path(rec)
        rec.log_path.parent.mkdir(parents=True, exist_ok=True)
        rec.log_path.touch()
        if rec.emulated or self.ctx.launcher is None:
            rec.mark_running()
        else:
            try:
                proc = await self.ctx.launcher.launch(
                    self._pod(), rec.spec, pod_ip=self.state.pod_ip, log_path=rec.log_path,
                    extra_env=self.state.device_env.get(rec.name, {}))
            except nodectx.LaunchError as exc:
                self._start_failed(rec, exc)
                return False
            rec.mark_running()
            rec.start_failures = 0
            rec.process = proc
            self.spawn(self._watch_process(rec, proc), f"wait {rec.name}")
        if any(rec.has_probe(kind) for kind in st.PROBE_KINDS):
            self.spawn(prober.run_probes(self.ctx, self._pod, rec, rec.container_id, self._wake,
                                         self.state), f"probe {rec.name}")
        return True

    def _start_failed(self, rec: st.ContainerRecord, exc: nodectx.LaunchError) -> None:
        self.ctx.recorder.record(self._pod(), "Warning", "Failed", f"Error: {exc.message}", container=rec.name)
        if exc.retry:
            rec.waiting_reason, rec.waiting_message = exc.reason, exc.message
            rec.state = "backoff"
            rec.backoff_until = asyncio.get_running_loop().time() + max(
                0.05, self.ctx.settings.restart_delay(rec.start_failures))
            rec.start_failures += 1
            return
        rec.started_at = None
        rec.mark_exited(128, exc.reason, exc.message)

    async def _watch_process(self, rec: st.ContainerRecord, proc: nodectx.Process) -> None:
        code = await proc.wait()
        if rec.process is proc:
            rec.mark_exited(code, message=self._termination_message(rec, proc, code))
            self._wake()

    def _termination_message(self, rec: st.ContainerRecord, proc: nodectx.Process, code: int) -> str:
        """What the exited container left at its terminationMessagePath, or its log's tail (`termination`)."""
        launch = getattr(proc, "launch", None)
        return termination.read(rec.spec, getattr(launch, "termination_file", None), exit_code=code, reason="",
                                log_path=rec.log_path)

    async def stop(self, rec: st.ContainerRecord, *, grace: float, exit_code: int | None = None,
                   reason: str = "", message: str = "", prestop: bool = False) -> None:
        """Stop a running container; `exit_code` overrides the process's own (chaos, emulated kills).

        With `prestop` (pod termination), the container's preStop hook runs first and takes its time
        off the grace period (`hooks`), as the kubelet's killContainer does.
        """
        if rec.state != "running":
            return
        handler = hooks.prestop_of(rec.spec) if prestop and grace > 0 else None
        if handler is not None:
            grace, failure = await hooks.run_prestop(
                handler, grace=grace, pod_ip=self.state.pod_ip, container=rec.spec,
                exec_runner=getattr(rec.process, "exec", None))
            if failure is not None:
                self.ctx.recorder.record(self._pod(), "Warning", "FailedPreStopHook", f"PreStopHook failed: {failure}",
                                         container=rec.name)
            if rec.state != "running":  # it exited on its own during the hook
                return
        proc, rec.process = rec.process, None
        code = 0 if exit_code is None else exit_code
        if proc is not None:
            try:
                real = await proc.stop(grace)
            except Exception as exc:  # a runtime failure must not leave the record running
                log.warning("stopping container %s failed: %s", rec.name, exc)
                real = 137
            code = real if exit_code is None else exit_code
            message = message or self._termination_message(rec, proc, code)
        rec.mark_exited(code, reason, message)

    async def stop_all(self, *, grace: float, events: bool = True, exit_code: int | None = None,
                       reason: str = "", message: str = "", prestop: bool = False) -> None:
        """Stop every running container at once (sidecars included), as pod termination does (`prestop`:
        each container's preStop hook first)."""
        running = [r for r in self.state.all_records() if r.state == "running"]
        for rec in running:
            if events:
                self.ctx.recorder.record(self._pod(), "Normal", "Killing", f"Stopping container {rec.name}",
                                         container=rec.name)
        await asyncio.gather(*(self.stop(r, grace=grace, exit_code=exit_code, reason=reason, message=message,
                                         prestop=prestop) for r in running))
        for rec in self.state.all_records():
            if rec.state in ("pending", "created", "backoff", "exited"):
                rec.state = "done"

    async def kill_unhealthy(self) -> None:
        """Stop containers whose liveness or startup probe gave up (they restart per policy)."""
        for rec in self.state.all_records():
            if rec.kill_reason and rec.state == "running":
                why = rec.kill_reason
                self.ctx.recorder.record(self._pod(), "Normal", "Killing",
                                         f"Container {rec.name} failed {why} probe, will be restarted",
                                         container=rec.name)
                grace = float((self._pod().get("spec") or {}).get("terminationGracePeriodSeconds") or 30)
                await self.stop(rec, grace=min(grace, 2.0), exit_code=137 if rec.emulated else None)

    async def shutdown(self, grace: float) -> None:
        """The agent stops: end every process now, without events or API writes."""
        await self.cancel_tasks()
        with contextlib.suppress(Exception):
            await self.stop_all(grace=grace, events=False)
