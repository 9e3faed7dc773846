"""Probe workers: startup, liveness and readiness probes of one running container instance.

As in the kubelet's prober (pkg/kubelet/prober/worker.go): each probe kind runs on its own schedule
(first after initialDelaySeconds, then every periodSeconds), a result flips after successThreshold
successes or failureThreshold failures in a row, readiness and liveness wait until the startup probe
has succeeded, and a readiness result starts as failure. A failed liveness or startup probe asks the
pod worker to kill the container (it then restarts per restartPolicy). Every failed attempt records
an `Unhealthy` event.

When the first probe runs (`first_probe_delay`) follows kubelet 1.37.2 too: a probe worker's ticker starts
when the pod is admitted (`prober_manager.AddPod`), not when the container starts, so the first tick after
the start comes within one period; and a readiness probe also runs as soon as the kubelet's status sync
sees the started container (`UpdatePodStatus` sends the worker's `manualTriggerCh` while the container is
running and not ready; that sync follows the generic PLEG's relist, every second, `pleg/generic.go`), after
which the ticker restarts from that run. A probe at the very instant of the start, which the sim used to
make, found nearly every server not yet listening and cost every pod a period.

Process containers are probed for real through `probes.check` (the runtime helper's module: httpGet,
tcpSocket, grpc, exec via the launcher). Emulated containers answer with the result a `probe` stage
step forced (default success), so chaos stages can make a probe fail.

An HTTP, TCP or gRPC attempt is scheduled (`next_tick`: one period after the previous attempt's start, as the
worker's ticker) and made on the prober's own event loop (`ProbeThread`), not on the sim's loop: a kubelet's
probe workers are goroutines that no other part of the kubelet holds up, while the sim's loop also runs the
API server, every controller and every node; only the result is handed back to the pod worker.
Measured on the sim under the soak's load (two busy loops beside the conformance suite, load 14-16,
2026-12-06): that loop answered a 0.1 s sleep up to 1 s late (p90 418 ms), so an attempt's every step
(connect, write, read) waited behind the rest of the cluster: a GET /readyz the probe program answers in
10 ms (p99 150 ms) took 689 ms median, 1.7 s p90 as timed there, and 46 of 262 attempts timed out against
timeoutSeconds 1; attempts started 844 ms late (median) against their period. With attempts on the prober's
loop: 41 ms late (median), none timed out (docs/sim-fidelity.md item 13). Exec probes stay on the sim's loop:
they run through the container's process (`Process.exec`), which belongs to it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from lwsconf import _loopthread
from lwsconf.sim.nodes.kubelet import nodectx
from lwsconf.sim.nodes.kubelet import state as st

log = logging.getLogger(__name__)
Obj = dict[str, Any]
T = TypeVar("T")
_STARTUP_POLL = 0.05
PLEG_RELIST_PERIOD = 1.0
"""The kubelet's generic PLEG relists containers every second (`relistPeriod`); the status sync that follows
a relist which found the container started triggers its readiness probe."""


def _int(probe: Obj, key: str, default: int) -> int:
    value = probe.get(key)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


async def run_probes(ctx: nodectx.NodeContext, pod: Callable[[], Obj], rec: st.ContainerRecord, instance: str,
                     wake: Callable[[], None], state: st.PodState) -> None:
    """Run every probe the container declares until this instance stops."""
    kinds = [k for k in st.PROBE_KINDS if rec.has_probe(k)]
    await asyncio.gather(*(_probe_loop(ctx, pod, rec, instance, kind, wake, state) for kind in kinds))


def _current(rec: st.ContainerRecord, instance: str) -> bool:
    return rec.container_id == instance and rec.state == "running"


async def _probe_loop(ctx: nodectx.NodeContext, pod: Callable[[], Obj], rec: st.ContainerRecord, instance: str,
                      kind: str, wake: Callable[[], None], state: st.PodState) -> None:
    probe: Obj = rec.spec.get(f"{kind}Probe") or {}
    period = max(1, _int(probe, "periodSeconds", 10))
    successes_needed = max(1, _int(probe, "successThreshold", 1))
    failures_allowed = max(1, _int(probe, "failureThreshold", 3))
    if kind != "startup":
        while _current(rec, instance) and not rec.started:
            await asyncio.sleep(_STARTUP_POLL)
    await asyncio.sleep(_int(probe, "initialDelaySeconds", 0))
    loop = asyncio.get_running_loop()
    tick = loop.time() + first_probe_delay(loop.time(), state.admitted_at, period, kind)
    successes = failures = 0
    while _current(rec, instance):
        ok, message, started = await _check(ctx, pod, rec, probe, kind, state, tick)
        tick = next_tick(started, period, loop.time())
        if not _current(rec, instance):
            return
        successes, failures = (successes + 1, 0) if ok else (0, failures + 1)
        if not ok:
            ctx.recorder.record(pod(), "Warning", "Unhealthy", f"{kind.capitalize()} probe failed: {message}",
                                container=rec.name)
        if ok and successes >= successes_needed and rec.probe_results.get(kind) is not True:
            rec.probe_results[kind] = True
            wake()
        elif not ok and failures >= failures_allowed:
            if rec.probe_results.get(kind) is not False:
                rec.probe_results[kind] = False
                wake()
            if kind in ("liveness", "startup"):
                rec.kill_reason = kind
                wake()
                return
        if kind == "startup" and rec.probe_results.get("startup") is True:
            return  # the startup probe stops once it succeeded


def next_tick(started: float, period: float, now: float) -> float:
    """When the attempt after one that `started` runs: one period after its start, as the worker's ticker
    (`time.NewTicker(probePeriod)`, worker.go) fires whatever an attempt took; a tick that came while an attempt
    ran waits in the ticker's one-slot channel, so an attempt that overran its period is followed at once
    (`now`), and later ticks keep the grid of `started`."""
    tick = started + period
    if tick <= now:
        return now
    return tick


def first_probe_delay(now: float, admitted_at: float | None, period: float, kind: str) -> float:
    """Seconds from `now` (the container started, its initial delay passed) to its first probe: the worker's
    next tick (the ticker runs from admission, every `period`), or for readiness the next PLEG relist
    (every `PLEG_RELIST_PERIOD` on the event loop's clock), whichever comes first."""
    tick = period - ((now - admitted_at) % period) if admitted_at is not None else 0.0
    if kind != "readiness":
        return tick
    return min(tick, PLEG_RELIST_PERIOD - (now % PLEG_RELIST_PERIOD))


class ProbeThread:
    """The event loop probe attempts run on, in its own thread, while at least one node agent holds it.

    `acquire` starts it (the first holder), `release` stops it (the last), so a process with no running
    node has no prober thread. `run` awaits a coroutine there from the caller's loop (cancelling the caller
    cancels it); with no thread running it runs on the caller's loop (unit tests that drive a pod worker
    without an agent).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._thread: _loopthread.LoopThread | None = None

    def acquire(self) -> None:
        with self._lock:
            self._holders += 1
            if self._thread is None:
                self._thread = _loopthread.LoopThread("lwsconf-prober").start()

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            thread = self._thread if self._holders == 0 else None
            if thread is not None:
                self._thread = None
        if thread is not None:
            thread.stop()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        thread = self._thread
        if thread is None:
            return await coro
        try:
            future = asyncio.run_coroutine_threadsafe(coro, thread.loop)
        except RuntimeError:  # stopped between the check and the call
            return await coro
        return await asyncio.wrap_future(future)


PROBE_THREAD = ProbeThread()
"""The process's prober loop: each `NodeAgent.run` holds it while the agent runs."""


async def _at(when: float, attempt: Callable[[], Coroutine[Any, Any, T]]) -> tuple[float, T]:
    """(start, result) of `attempt()` started at `when` on the running loop's clock (`time.monotonic`, the same
    on the sim's loop and the prober's)."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, when - loop.time()))
    started = loop.time()
    return started, await attempt()


async def _check(ctx: nodectx.NodeContext, pod: Callable[[], Obj], rec: st.ContainerRecord, probe: Obj, kind: str,
                 state: st.PodState, when: float) -> tuple[bool, str, float]:
    """(ok, message, start) of one attempt made at `when`: an HTTP, TCP or gRPC attempt is both timed and made
    on the prober's loop (`PROBE_THREAD`), so neither its start nor its timeout waits for the sim's loop."""
    if rec.emulated or ctx.launcher is None:
        started, forced = await _at(when, _forced(rec, kind))
        ok = forced != "failure"
        return ok, "" if ok else f"lwsconf chaos: {kind} probe forced to fail", started
    try:
        probes = importlib.import_module("lwsconf.sim.nodes.kubelet.probes")
    except ImportError:
        return True, "", (await _at(when, _nothing))[0]
    exec_runner = getattr(rec.process, "exec", None)
    started = when
    try:
        if probe.get("exec") is not None:
            started, result = await _at(when, lambda: probes.check(probe, pod_ip=state.pod_ip,
                                                                    exec_runner=exec_runner, container=rec.spec))
        else:
            started, result = await PROBE_THREAD.run(_at(when, lambda: probes.check(probe, pod_ip=state.pod_ip,
                                                                                    container=rec.spec)))
    except Exception as exc:  # a probe that cannot even run counts as failed, never kills the worker
        log.debug("probe %s of %s raised: %s", kind, rec.name, exc)
        return False, str(exc), started
    return bool(result.ok), str(result.message), started


def _forced(rec: st.ContainerRecord, kind: str) -> Callable[[], Coroutine[Any, Any, str]]:
    async def forced() -> str:  # read when the attempt runs: a chaos stage may force a result meanwhile
        return rec.forced_probes.get(kind, "success")
    return forced


async def _nothing() -> None:
    return None
