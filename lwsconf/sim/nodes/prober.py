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
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from typing import Any

from lwsconf.sim.nodes import nodectx
from lwsconf.sim.nodes import state as st

log = logging.getLogger(__name__)
Obj = dict[str, Any]
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
    await asyncio.sleep(first_probe_delay(loop.time(), state.admitted_at, period, kind))
    successes = failures = 0
    while _current(rec, instance):
        ok, message = await _check(ctx, pod(), rec, probe, kind, state)
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
        await asyncio.sleep(period)


def first_probe_delay(now: float, admitted_at: float | None, period: float, kind: str) -> float:
    """Seconds from `now` (the container started, its initial delay passed) to its first probe: the worker's
    next tick (the ticker runs from admission, every `period`), or for readiness the next PLEG relist
    (every `PLEG_RELIST_PERIOD` on the event loop's clock), whichever comes first."""
    tick = period - ((now - admitted_at) % period) if admitted_at is not None else 0.0
    if kind != "readiness":
        return tick
    return min(tick, PLEG_RELIST_PERIOD - (now % PLEG_RELIST_PERIOD))


async def _check(ctx: nodectx.NodeContext, pod: Obj, rec: st.ContainerRecord, probe: Obj, kind: str,
                 state: st.PodState) -> tuple[bool, str]:
    if rec.emulated or ctx.launcher is None:
        forced = rec.forced_probes.get(kind, "success")
        return forced != "failure", "" if forced != "failure" else f"lwsconf chaos: {kind} probe forced to fail"
    try:
        probes = importlib.import_module("lwsconf.sim.nodes.probes")
    except ImportError:
        return True, ""
    exec_runner = getattr(rec.process, "exec", None)
    try:
        result = await probes.check(probe, pod_ip=state.pod_ip, exec_runner=exec_runner, container=rec.spec)
    except Exception as exc:  # a probe that cannot even run counts as failed, never kills the worker
        log.debug("probe %s of %s raised: %s", kind, rec.name, exc)
        return False, str(exc)
    return bool(result.ok), str(result.message)
