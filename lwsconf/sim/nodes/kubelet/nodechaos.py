"""Node-level fault injection: what the `chaos.lwsconf.dev/*` annotations on a Node ask of its agent.

Pod-level faults (crash a container, fail a pod) are stages (`stages/chaos/`). Node-level faults
change how the whole kubelet talks to the API server, so the agent reads them from its own Node
object (the only thing it still watches while "cut off", since it is the switch that heals it):

* `chaos.lwsconf.dev/not-ready: "true"` (or `"unreachable"`): the node is cut off from the control
  plane, as in a network partition or a dead kubelet. The agent stops renewing its Lease and stops
  writing node status, pod status and pod deletions, and no longer sees pod changes; its containers
  keep running. The node lifecycle controller then sets Ready=Unknown and taints the node
  `node.kubernetes.io/unreachable`. When the annotation goes, the agent catches up with what
  happened meanwhile (pods deleted or evicted while it was away are stopped and removed), as a
  kubelet does when it reconnects.
* `chaos.lwsconf.dev/not-ready: "not-ready"`: the kubelet stays connected but reports Ready=False
  (reason KubeletNotReady), as when its container runtime or network plugin is down. The node
  lifecycle controller taints it `node.kubernetes.io/not-ready`; evicted pods are terminated normally.
* `chaos.lwsconf.dev/slow: "<seconds>"`: every pod status write and every final pod deletion of the
  agent waits that long first, as a kubelet with a slow or overloaded API connection does.

Anything else (`"false"`, an empty value, a bad number) means no fault; bad values are logged.
`ChaosSwitch` holds the current state and the gate pod writes pass through. No I/O here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)
NOT_READY = "chaos.lwsconf.dev/not-ready"
SLOW = "chaos.lwsconf.dev/slow"
UNREACHABLE_VALUES = ("true", "unreachable")
NOT_READY_VALUES = ("not-ready",)
NOT_READY_MESSAGE = "lwsconf chaos: kubelet reports NotReady (annotation chaos.lwsconf.dev/not-ready)"


@dataclass(frozen=True)
class NodeChaos:
    """The faults a Node's annotations ask for. `ready` is the Ready status the fault leads to."""

    ready: str = "True"
    """"True": healthy; "Unknown": cut off (no heartbeats); "False": the kubelet reports NotReady."""
    slow: float = 0.0
    """Seconds every pod status write or deletion waits first."""

    @property
    def unreachable(self) -> bool:
        return self.ready == "Unknown"


def from_node(node: dict[str, Any]) -> NodeChaos:
    """The faults asked for by `node`'s annotations (unknown values mean no fault, and are logged)."""
    meta = node.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    name = meta.get("name")
    ready = "True"
    mode = str(annotations.get(NOT_READY, "")).strip().lower()
    if mode in UNREACHABLE_VALUES:
        ready = "Unknown"
    elif mode in NOT_READY_VALUES:
        ready = "False"
    elif mode not in ("", "false"):
        log.warning("node %s: ignoring %s=%r; use \"true\"/\"unreachable\" or \"not-ready\"", name, NOT_READY, mode)
    slow = 0.0
    raw = annotations.get(SLOW)
    if raw not in (None, ""):
        try:
            slow = float(raw)
        except ValueError:
            slow = -1.0
        if not math.isfinite(slow) or slow < 0:
            log.warning("node %s: ignoring %s=%r; it must be a number of seconds >= 0", name, SLOW, raw)
            slow = 0.0
    return NodeChaos(ready=ready, slow=slow)


class ChaosSwitch:
    """The agent's current node faults, and the gate every pod status write or deletion awaits."""

    def __init__(self) -> None:
        self.state = NodeChaos()
        self._connected = asyncio.Event()
        self._connected.set()
        self._changed = asyncio.Event()

    def apply(self, state: NodeChaos) -> NodeChaos:
        """Switch to `state`; returns the previous one."""
        previous, self.state = self.state, state
        if state.unreachable:
            self._connected.clear()
        else:
            self._connected.set()
        if state != previous:
            self._changed.set()
            self._changed = asyncio.Event()
        return previous

    async def before_pod_write(self) -> None:
        """Wait while the node is cut off; then wait `slow` seconds (cut short if the fault changes)."""
        await self._connected.wait()
        delay = self.state.slow
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), delay)
            await self._connected.wait()
