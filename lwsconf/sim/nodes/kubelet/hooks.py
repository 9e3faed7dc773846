"""Container lifecycle hooks the kubelet runs: preStop before a container is stopped.

Why: serving stacks put a preStop delay on their pods so a terminating pod keeps answering while
endpoint controllers and proxies learn it is going away; without it a rollout drops requests. The
sim's kubelet runs the hook as pkg/kubelet/kuberuntime's killContainer does:

* only when the grace period is above zero; the hook gets at most the grace period, and what it
  used is taken off the grace period left for SIGTERM -> SIGKILL, never below the kubelet's
  minimum of 2 seconds (minimumGracePeriodInSeconds);
* handlers: `sleep` (PodLifecycleSleepAction: wait `seconds`, cut at the grace period), `exec`
  (the runtime's exec in the container; a non-zero exit is a failure), `httpGet` and the deprecated
  `tcpSocket` (one attempt, as a probe makes it: loopback only);
* a failed hook is a Warning event FailedPreStopHook and the container is stopped anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from lwsconf.sim.nodes.kubelet import probes

MINIMUM_GRACE_SECONDS = 2.0
"""The kubelet's floor for SIGTERM -> SIGKILL after a preStop hook (minimumGracePeriodInSeconds)."""

Obj = dict[str, Any]


def prestop_of(container: Obj) -> Obj | None:
    """The container's preStop handler, or None."""
    handler = ((container.get("lifecycle") or {}).get("preStop"))
    return handler if isinstance(handler, dict) and handler else None


async def run_prestop(handler: Obj, *, grace: float, pod_ip: str, container: Obj,
                      exec_runner: probes.ExecRunner | None) -> tuple[float, str | None]:
    """Run `handler` for at most `grace` seconds.

    Returns:
        The grace period left for stopping the process (>= MINIMUM_GRACE_SECONDS), and the failure
        message for a FailedPreStopHook event, None when the hook succeeded.
    """
    started = time.monotonic()
    failure: str | None = None
    # A hook that runs out of the grace period is cut short; the kubelet then stops the container.
    with contextlib.suppress(TimeoutError):
        failure = await asyncio.wait_for(_handle(handler, pod_ip, container, exec_runner), grace)
    left = grace - (time.monotonic() - started)
    return max(left, MINIMUM_GRACE_SECONDS), failure


async def _handle(handler: Obj, pod_ip: str, container: Obj, exec_runner: probes.ExecRunner | None) -> str | None:
    sleep = handler.get("sleep")
    if isinstance(sleep, dict):
        # The hook's own meaning is to wait: this is the sleep action, not a wait for a condition.
        await asyncio.sleep(max(float(sleep.get("seconds") or 0), 0.0))
        return None
    attempt: Obj = {key: handler[key] for key in ("exec", "httpGet", "tcpSocket") if key in handler}
    if not attempt:
        return "preStop handler has no action: set sleep, exec, httpGet or tcpSocket"
    # probes.check bounds one attempt by timeoutSeconds; a hook is bounded by the grace period instead.
    result = await probes.check({**attempt, "timeoutSeconds": 1 << 30}, pod_ip=pod_ip, exec_runner=exec_runner,
                                container=container)
    return None if result.ok else result.message
