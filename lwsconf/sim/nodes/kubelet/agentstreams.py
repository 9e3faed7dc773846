"""The agent's side of the streaming endpoints: which process an exec enters, what attach follows.

Answers `streamserver.StreamServer` from the agent's pod workers, with the kubelet's wording where it
has one: a pod not on this node is 404 `pod does not exist`, an unknown container `container not
found`. Only containers the sim runs as processes (`runtime.runnable`) can be exec'd into or
attached to; an emulated container has no process, and the error says so and what would work.
Port-forward needs only the pod's IP, whatever its containers are.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lwsconf.sim.nodes.runtime import runtime
from lwsconf.sim.nodes.streams.streamserver import AttachTarget, ExecTarget, StreamNotAvailable

if TYPE_CHECKING:
    from lwsconf.sim.nodes.kubelet import podworker, state

FOLLOW_POLL = 0.05
"""Seconds between looks at a followed log file (as `logserver` follows logs)."""


class NodeWorkers(Protocol):
    """What the streaming and log endpoints read of a node agent (`agent.NodeAgent`), so they need not import
    the agent module, which imports them."""

    name: str
    workers: dict[str, podworker.PodWorker]


class AgentStreams:
    def __init__(self, agent: NodeWorkers) -> None:
        self._agent = agent

    def _worker(self, namespace: str, pod: str) -> podworker.PodWorker:
        matches = [w for w in self._agent.workers.values() if w.key == f"{namespace}/{pod}" and not w.done]
        if not matches:
            raise StreamNotAvailable("pod does not exist", 404)
        return max(matches, key=lambda w: str((w.pod.get("metadata") or {}).get("creationTimestamp") or ""))

    def _running(self, namespace: str, pod: str, container: str) -> tuple[state.ContainerRecord, Any]:
        rec = self._worker(namespace, pod).state.record(container)
        if rec is None:
            raise StreamNotAvailable(f'container not found ("{container}")', 404)
        if rec.emulated:
            raise StreamNotAvailable(
                f'container "{container}" of pod "{pod}" is emulated by the simulator and has no process; '
                f"exec, attach and cp (tar over exec) work on containers the sim runs as processes (a python "
                f"image whose command runs python), and port-forward on any pod")
        if rec.state != "running" or rec.process is None:
            raise StreamNotAvailable(f'container "{container}" of pod "{pod}" is not running '
                                     f"({rec.state}: {rec.waiting_reason or rec.reason})")
        return rec, rec.process

    def exec_target(self, namespace: str, pod: str, container: str) -> ExecTarget:
        _, process = self._running(namespace, pod, container)
        if not isinstance(process, runtime.Process):
            raise StreamNotAvailable(f'container "{container}" has no process this node can enter')
        return ExecTarget(command_for=process.exec_command, env=process.environment)

    def attach_target(self, namespace: str, pod: str, container: str) -> AttachTarget:
        rec, process = self._running(namespace, pod, container)
        path = rec.log_path
        if path is None:
            raise StreamNotAvailable(f'container "{container}" of pod "{pod}" has no output yet')
        offset = path.stat().st_size if path.exists() else 0

        async def follow() -> bytes:
            nonlocal offset
            while True:
                alive = rec.process is process and rec.state == "running"
                chunk = _read_from(path, offset)
                offset += len(chunk)
                if chunk or not alive:
                    return chunk
                await asyncio.sleep(FOLLOW_POLL)  # polling the file, as the log server follows it

        launch = process.launch if isinstance(process, runtime.Process) else None
        if launch is None or not launch.stdin:
            return AttachTarget(follow=follow)
        return AttachTarget(follow=follow, stdin=process.write_stdin,
                            end_stdin=process.close_stdin if launch.stdin_once else None)

    def pod_address(self, namespace: str, pod: str) -> tuple[str, str]:
        worker = self._worker(namespace, pod)
        if not worker.state.pod_ip:
            raise StreamNotAvailable(f'pod "{pod}" has no IP address yet')
        return worker.state.pod_ip, worker.uid


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(64 * 1024)
    except OSError:
        return b""
