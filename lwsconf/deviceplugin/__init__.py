"""The kubelet device-plugin API (v1beta1) and a fake GPU device plugin speaking it.

Why this exists: LeaderWorkerSet workloads ask for `nvidia.com/gpu`. To test them without GPUs, nodes
must advertise fake GPUs the same way real ones are advertised: a device plugin registers with the
kubelet over gRPC on a unix socket, streams its device list (ListAndWatch) and answers Allocate with
the env a container needs. `plugin.FakeGPUPlugin` is such a plugin; it runs against a real kubelet
(the kind backend deploys it as a DaemonSet, `manifests/deviceplugin/daemonset.yaml`) and against the
simulator's kubelet side (`lwsconf.sim.nodes.devices.devicemanager`).

Contents:
  * `v1beta1.proto` — our own definition of the wire API, matching upstream's package, services,
    messages and field numbers (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto);
    `v1beta1_pb2*.py{,i}` are generated from it by `regenerate.sh` (do not edit them).
  * `pluginregistration.proto` — the kubelet's plugin-watcher API (upstream's package `pluginregistration`,
    k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto), for `--registration registry`: how real nodes
    sharing one host each register their own plugin; `pluginregistration_pb2*.py{,i}` are generated likewise.
  * `plugin.py` — `FakeGPUPlugin`; `cli.py` — `lwsconf deviceplugin`.

This package must not import the simulator: it ships alone in the plugin's container image.
"""

from __future__ import annotations

import asyncio
from typing import Any

# Constants of the kubelet's side of the API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/constants.go).
VERSION = "v1beta1"
SUPPORTED_VERSIONS = (VERSION,)
DEFAULT_SOCKET_DIR = "/var/lib/kubelet/device-plugins"
KUBELET_SOCKET = "kubelet.sock"
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"

# Unix socket paths (sockaddr_un.sun_path) hold 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107


def check_socket_path(path: str) -> None:
    """Raise ValueError with a fix when a unix socket path is too long for the kernel."""
    size = len(path.encode())
    if size > MAX_SOCKET_PATH:
        raise ValueError(
            f"unix socket path {path!r} is {size} bytes; the kernel allows at most {MAX_SOCKET_PATH}: "
            "use a shorter socket directory (e.g. tempfile.mkdtemp(prefix='dp'))"
        )


class HandlerTasks:
    """The tasks grpc.aio runs this server's RPC handlers in, so that stopping can wait for them.

    Why: `grpc.aio.Server.stop()` returns once the core server has shut down, but each RPC runs in two
    asyncio tasks grpc creates (the handler task, named `HandleExceptions[<method>]`, and the `rpc_task`
    that awaits it) and neither is awaited by stop(): a ListAndWatch stream cancelled by stop() or by the
    client going away is still unwinding when stop() returns (seen under load as a task left "cancelling").
    Every servicer method calls `track()` first; after `server.stop()`, `await drain()` returns once every
    handler task is done and the loop has run the step in which grpc's `rpc_task` ends after its handler
    (its wake-up is queued as soon as the handler task finishes, ahead of ours).
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def track(self) -> None:
        task = asyncio.current_task()
        if task is not None and task not in self._tasks:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.wait(set(self._tasks))
        await asyncio.sleep(0)
