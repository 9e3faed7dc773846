"""Probe workers: startup, liveness and readiness probes of one running container instance.

As in the kubelet's prober (pkg/kubelet/prober/worker.go): each probe kind runs on its own schedule
(first after initialDelaySeconds, then every periodSeconds), a result flips after successThreshold
successes or failureThreshold failures in a row, readiness and liveness wait until the startup probe
has succeeded, and a readiness result starts as failure. A failed liveness or startup probe asks the
pod worker to kill the container (it then restarts per restartPolicy). Every failed attempt records
an `Unhealthy` event.

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
