"""What every pod worker of one node shares, and the small interfaces of the parts it drives.

The runtime (processes), the device manager (device plugins) and the launcher (env, volumes, DNS
for a process) are written separately; the agent only needs the few methods named here, so any of
them can be absent (None): without a runtime every container is emulated by the stages, without a
device manager extended resources come from the node layout with fake device IDs.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lwsconf.kubeclient import client as kc
from lwsconf.sim.nodes.kubelet import events
from lwsconf.sim.nodes.network import ipam, podnet
from lwsconf.sim.nodes.stages import lifecycle, settings

Obj = dict[str, Any]


class Process(Protocol):
    """A running container process (the runtime helper's `Process`)."""

    pid: int

    async def wait(self) -> int: ...

    async def stop(self, grace_seconds: float) -> int: ...


class Runtime(Protocol):
    """Decides which containers run as real processes (the runtime helper's `ProcessRuntime`)."""

    def runnable(self, container: dict[str, Any]) -> bool: ...


class Allocation(Protocol):
    device_ids: Any
    envs: Any


class DeviceManager(Protocol):
    """The kubelet side of device plugins (the device helper's `DeviceManager`)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def resources(self) -> dict[str, int]: ...

    def on_change(self, callback: Callable[..., Any]) -> None: ...

    async def allocate(self, pod_uid: str, container: str, resource: str, count: int) -> Any: ...

    def release(self, pod_uid: str) -> None: ...


class Launcher(Protocol):
    """Starts one container of a pod as a process: env, volumes, hosts file, argv (see `processes`)."""

    async def launch(self, pod: Obj, container: Obj, *, pod_ip: str, log_path: Path,
                     extra_env: dict[str, str]) -> Process: ...

    def forget(self, pod_uid: str) -> None: ...

    async def close(self) -> None: ...


class LaunchError(Exception):
    """A container could not be started; `reason` is the kubelet's waiting/terminated reason."""

    def __init__(self, reason: str, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry = retry
        """True: stay waiting and try again (CreateContainerConfigError); False: the start failed."""


@dataclass
class FakeDevicePool:
    """Device IDs for an extended resource the layout declares but no device plugin serves."""

    resource: str
    ids: list[str]
    by_pod: dict[str, list[str]] = field(default_factory=dict)

    def allocate(self, pod_uid: str, count: int) -> list[str] | None:
        used = {i for ids in self.by_pod.values() for i in ids}
        free = [i for i in self.ids if i not in used]
        if len(free) < count:
            return None
        self.by_pod.setdefault(pod_uid, []).extend(free[:count])
        return free[:count]

    def release(self, pod_uid: str) -> None:
        self.by_pod.pop(pod_uid, None)


@dataclass
class NodeContext:
    """Per-node state and services handed to each pod worker."""

    client: kc.Client
    node_name: str
    host_ip: str
    labels: dict[str, str]
    lifecycle: lifecycle.Lifecycle
    settings: settings.KubeletSettings
    recorder: events.EventRecorder
    ips: ipam.IPAllocator
    logs_dir: Path
    seed: int = 0
    runtime: Runtime | None = None
    launcher: Launcher | None = None
    device_manager: DeviceManager | None = None
    fake_devices: dict[str, FakeDevicePool] = field(default_factory=dict)
    allocatable: Callable[[], dict[str, str]] = dict
    admitted_pods: Callable[[str], list[Obj]] = lambda uid: []
    """The pods this node admitted and that are not terminal, except the one with this UID."""
    on_terminal: Callable[[str], None] = lambda uid: None
    before_write: Callable[[], Awaitable[None]] | None = None
    """Awaited before every pod status write and final deletion (node chaos: cut off, slow)."""
    addresses: podnet.PodAddressMap = podnet.IDENTITY
    """How pod IPs appear in the API (`podnet`: 198.18 addresses on `--cluster=local`)."""

    def rng_for(self, pod: Obj) -> random.Random:
        """A random source for one pod's jitter, stable across runs for the same seed and pod name."""
        meta = pod.get("metadata") or {}
        return random.Random(f"{self.seed}/{self.node_name}/{meta.get('namespace')}/{meta.get('name')}")
