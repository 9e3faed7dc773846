"""The kubelet's device manager for a simulated node: device plugins register here, pods get devices.

Why: a node advertises `nvidia.com/gpu` only because a device plugin registered it with the
kubelet. Doing the same over the real v1beta1 gRPC API (unix sockets, grpc.aio) means the fake
plugin that the kind backend deploys is exercised by every simulated run too. What it does, as
pkg/kubelet/cm/devicemanager does:

* serves `Registration` on `<socket_dir>/kubelet.sock`, after deleting stale sockets in the
  directory (the kubelet does this at start; plugins take it as the signal to re-register);
* Register rejects versions other than v1beta1, names that are not extended resource names
  (`v1helper.IsExtendedResourceName`) and endpoints that are not a file name in the directory,
  dials the plugin's socket and consumes its ListAndWatch stream;
* `resources()` is the healthy (allocatable) count per resource, `capacity()` healthy + unhealthy;
  when a plugin's stream ends all its devices turn unhealthy, and the resource is dropped after
  `stop_grace_seconds` (the kubelet's endpointStopGracePeriod is 5 minutes);
* `allocate` picks free healthy devices (asking GetPreferredAllocation when the plugin offers it),
  calls Allocate (and PreStartContainer when required) and remembers the result per pod until
  `release`; asking again for the same pod container returns the same devices, as the kubelet does.

Departure: the kubelet accepts a second plugin for a taken resource name and replaces the first
(manager.go: "always accepts newest device plugin"); here a registration for a resource held by an
*active* plugin on a *different* socket is rejected with ALREADY_EXISTS — the rule the API's own
comment states — so a misconfigured second plugin shows up as an error instead of silently
replacing devices. The same socket re-registering still replaces its old connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import grpc

from lwsconf import deviceplugin as dp
from lwsconf.deviceplugin import v1beta1_pb2 as pb
from lwsconf.deviceplugin import v1beta1_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
PRE_START_TIMEOUT = 30.0  # KubeletPreStartContainerRPCTimeoutInSecs


class AllocationError(RuntimeError):
    """Devices could not be allocated (no plugin, too few free healthy devices, or the plugin failed)."""


@dataclass(frozen=True)
class Mount:
    container_path: str
    host_path: str
    read_only: bool = False


@dataclass(frozen=True)
class DeviceSpec:
    container_path: str
    host_path: str
    permissions: str = "rw"


@dataclass(frozen=True)
class Allocation:
    """What one container gets from a device plugin: apply envs last, keep annotations for the runtime."""

    device_ids: tuple[str, ...]
    envs: Mapping[str, str]
    annotations: Mapping[str, str]
    mounts: tuple[Mount, ...] = ()
    devices: tuple[DeviceSpec, ...] = ()
    cdi_devices: tuple[str, ...] = ()


EMPTY_ALLOCATION = Allocation((), {}, {})


def is_extended_resource_name(name: str) -> bool:
    """Kubernetes' IsExtendedResourceName: `domain/name`, outside kubernetes.io, not `requests.*`."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    prefix, _, short = ("requests." + name).partition("/")
    return (len(prefix) <= 253 and bool(_DNS_SUBDOMAIN.match(prefix))
            and len(short) <= 63 and bool(_QUALIFIED_NAME.match(short)))


@dataclass(eq=False)
class _Endpoint:
    """One registered plugin connection."""

    resource: str
    socket_path: Path
    options: pb.DevicePluginOptions
    channel: Any
    stub: pb_grpc.DevicePluginAsyncStub
    devices: dict[str, bool] = field(default_factory=dict)  # id -> healthy, in the plugin's order
    active: bool = True
    task: asyncio.Task[None] | None = None
    call: Any = None  # the ListAndWatch call, once started
    expiry: asyncio.TimerHandle | None = None


class _RegisterRejected(Exception):
    def __init__(self, code: Any, message: str) -> None:
        super().__init__(message)
        self.code = code


class DeviceManager:
    """The kubelet side of the device-plugin API for one node (see the module docstring)."""

    def __init__(self, socket_dir: Path | str, *, stop_grace_seconds: float = 300.0,
                 connect_timeout: float = 5.0, rpc_timeout: float = 10.0) -> None:
        self.socket_dir = Path(socket_dir).absolute()
        self.stop_grace_seconds = stop_grace_seconds
        self.connect_timeout = connect_timeout
        self.rpc_timeout = rpc_timeout
        self._server: Any = None
        self._handlers = dp.HandlerTasks()
        self._served: tuple[int, int] | None = None
        self._endpoints: dict[str, _Endpoint] = {}
        self._allocations: dict[str, dict[tuple[str, str], Allocation]] = {}
        self._callbacks: list[Callable[[], None]] = []
        self._register_lock = asyncio.Lock()
        self._allocate_lock = asyncio.Lock()
        dp.check_socket_path(str(self.socket_path))

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / dp.KUBELET_SOCKET

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Clean stale sockets from the directory and serve Registration on kubelet.sock."""
        if self._server is not None:
            raise RuntimeError("DeviceManager.start() called twice; call stop() first")
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        self._remove_stale_sockets()
        server = grpc.aio.server()
        pb_grpc.add_RegistrationServicer_to_server(_Registration(self, self._handlers), server)
        try:
            server.add_insecure_port(f"unix://{self.socket_path}")
        except RuntimeError as exc:
            raise RuntimeError(f"cannot listen on {self.socket_path}: {exc}; is the directory writable?") from exc
        await server.start()
        self._server = server
        st = self.socket_path.stat()
        self._served = (st.st_dev, st.st_ino)
        log.info("device manager serving registration on %s", self.socket_path)

    async def stop(self) -> None:
        """Stop serving, close every plugin connection and remove kubelet.sock."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop(None)  # grpc unlinks the socket file it bound
            await self._handlers.drain()  # stop() cancels Register calls without waiting for them
        for endpoint in list(self._endpoints.values()):
            await self._close(endpoint)
        self._endpoints.clear()
        with contextlib.suppress(FileNotFoundError):
            st = self.socket_path.stat()
            if (st.st_dev, st.st_ino) == self._served:
                self.socket_path.unlink()
        self._served = None

    def _remove_stale_sockets(self) -> None:
        for path in self.socket_dir.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(path.lstat().st_mode):
                    log.info("removing stale socket %s", path)
                    path.unlink()

    # -- queries -----------------------------------------------------------------------------------

    def resources(self) -> dict[str, int]:
        """Healthy device count per registered resource (what node status.allocatable shows)."""
        return {r: sum(e.devices.values()) for r, e in self._endpoints.items()}

    def capacity(self) -> dict[str, int]:
        """Healthy plus unhealthy device count per registered resource (node status.capacity)."""
        return {r: len(e.devices) for r, e in self._endpoints.items()}

    def devices(self, resource: str) -> dict[str, bool]:
        """Device id -> healthy for one resource ({} when no plugin registered it)."""
        endpoint = self._endpoints.get(resource)
        return dict(endpoint.devices) if endpoint else {}

    def in_use(self, resource: str) -> set[str]:
        """Device ids of `resource` currently allocated to some pod."""
        return {d for per_pod in self._allocations.values() for (_, r), alloc in per_pod.items()
                if r == resource for d in alloc.device_ids}

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call `callback()` (on the event loop; it must not block) whenever devices or health change."""
        self._callbacks.append(callback)

    def _notify(self) -> None:
        for callback in list(self._callbacks):
            try:
                callback()
            except Exception:
                log.exception("device manager on_change callback %r failed", callback)

    # -- registration ------------------------------------------------------------------------------

    async def register(self, request: pb.RegisterRequest) -> None:
        """Validate and connect a plugin; raises _RegisterRejected with a gRPC code."""
        async with self._register_lock:
            self._validate(request)
            path = self.socket_dir / request.endpoint
            channel = grpc.aio.insecure_channel(f"unix://{path}")
            try:
                await asyncio.wait_for(channel.channel_ready(), self.connect_timeout)
            except (TimeoutError, grpc.aio.AioRpcError) as exc:
                await channel.close()
                raise _RegisterRejected(grpc.StatusCode.UNAVAILABLE,
                                        f"cannot connect to device plugin at {path}: {exc!r}") from exc
            old = self._endpoints.get(request.resource_name)
            endpoint = _Endpoint(request.resource_name, path, request.options, channel,
                                 cast("pb_grpc.DevicePluginAsyncStub", pb_grpc.DevicePluginStub(channel)),
                                 devices=dict(old.devices) if old else {})
            if old is not None:  # the same socket again: the newest connection wins
                await self._close(old)
            self._endpoints[request.resource_name] = endpoint
            endpoint.task = asyncio.create_task(self._consume(endpoint), name=f"listandwatch-{endpoint.resource}")
            log.info("device plugin %s registered for %s", request.endpoint, request.resource_name)

    def _validate(self, request: pb.RegisterRequest) -> None:
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        if request.version not in dp.SUPPORTED_VERSIONS:
            raise _RegisterRejected(invalid, f"requested device plugin API version {request.version!r} "
                                    f"is not supported by the kubelet; supported versions are {dp.SUPPORTED_VERSIONS}")
        if not is_extended_resource_name(request.resource_name):
            raise _RegisterRejected(invalid, f"resource name {request.resource_name!r} is not an extended resource "
                                    "name (want <domain>/<name> outside kubernetes.io, e.g. nvidia.com/gpu)")
        name = request.endpoint
        if not name or "/" in name or name in (".", "..") or name == dp.KUBELET_SOCKET:
            raise _RegisterRejected(invalid, f"endpoint {name!r} must be the file name of the plugin's socket "
                                    f"in {self.socket_dir}")
        held = self._endpoints.get(request.resource_name)
        if held is not None and held.active and held.socket_path.name != name:
            raise _RegisterRejected(grpc.StatusCode.ALREADY_EXISTS,
                                    f"resource {request.resource_name} is already registered by the active plugin "
                                    f"at {held.socket_path}; stop that plugin first")

    async def _consume(self, endpoint: _Endpoint) -> None:
        """Apply every ListAndWatch list; when the stream ends, the plugin's devices turn unhealthy."""
        try:
            endpoint.call = endpoint.stub.ListAndWatch(pb.Empty())
            async for response in endpoint.call:
                devices = {d.ID: d.health == dp.HEALTHY for d in response.devices}
                if devices != endpoint.devices:
                    endpoint.devices = devices
                    self._notify()
            reason = "stream closed by the plugin"
        except grpc.aio.AioRpcError as exc:
            reason = f"{exc.code().name}: {exc.details()}"
        except Exception as exc:  # whatever broke the stream, the devices are gone
            reason = repr(exc)
        log.info("ListAndWatch for %s from %s ended (%s)", endpoint.resource, endpoint.socket_path, reason)
        await endpoint.channel.close()
        if self._endpoints.get(endpoint.resource) is not endpoint:
            return
        endpoint.active = False
        endpoint.devices = dict.fromkeys(endpoint.devices, False)
        endpoint.expiry = asyncio.get_running_loop().call_later(self.stop_grace_seconds, self._expire, endpoint)
        self._notify()

    def _expire(self, endpoint: _Endpoint) -> None:
        if self._endpoints.get(endpoint.resource) is endpoint and not endpoint.active:
            del self._endpoints[endpoint.resource]
            self._notify()

    async def _close(self, endpoint: _Endpoint) -> None:
        if endpoint.expiry is not None:
            endpoint.expiry.cancel()
        task = endpoint.task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await endpoint.channel.close()
        await _call_finished(endpoint.call)

    # -- allocation --------------------------------------------------------------------------------

    async def allocate(self, pod_uid: str, container: str, resource: str, count: int) -> Allocation:
        """Give `count` free healthy devices of `resource` to one container; raises AllocationError."""
        if count <= 0:
            return EMPTY_ALLOCATION
        async with self._allocate_lock:
            existing = self._allocations.get(pod_uid, {}).get((container, resource))
            if existing is not None:
                return existing
            endpoint = self._endpoints.get(resource)
            if endpoint is None or not endpoint.active:
                raise AllocationError(f"no active device plugin for {resource} on this node (registered: "
                                      f"{sorted(r for r, e in self._endpoints.items() if e.active)}); "
                                      "start one, e.g. lwsconf.deviceplugin.plugin.FakeGPUPlugin")
            used = self.in_use(resource)
            free = [d for d, healthy in endpoint.devices.items() if healthy and d not in used]
            if len(free) < count:
                raise AllocationError(f"pod {pod_uid} container {container} asks for {count} {resource} but only "
                                      f"{len(free)} healthy devices are free ({len(used)} in use, "
                                      f"{len(endpoint.devices)} in total)")
            chosen = await self._choose(endpoint, free, count)
            allocation = await self._call_allocate(endpoint, chosen)
            self._allocations.setdefault(pod_uid, {})[(container, resource)] = allocation
            return allocation

    def release(self, pod_uid: str) -> None:
        """Free every device the pod holds (call when the pod is gone from the node)."""
        self._allocations.pop(pod_uid, None)

    async def _choose(self, endpoint: _Endpoint, free: list[str], count: int) -> list[str]:
        chosen: list[str] = []
        if endpoint.options.get_preferred_allocation_available:
            request = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
                available_deviceIDs=free, allocation_size=count)])
            try:
                response = await endpoint.stub.GetPreferredAllocation(request, timeout=self.rpc_timeout)
                if response.container_responses:
                    preferred = response.container_responses[0].deviceIDs
                    chosen = [d for d in dict.fromkeys(preferred) if d in free][:count]
            except grpc.aio.AioRpcError as exc:  # the kubelet falls back to its own choice too
                log.warning("GetPreferredAllocation for %s failed: %s", endpoint.resource, exc.details())
        return chosen + [d for d in free if d not in chosen][:count - len(chosen)]

    async def _call_allocate(self, endpoint: _Endpoint, ids: list[str]) -> Allocation:
        request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])
        try:
            response = await endpoint.stub.Allocate(request, timeout=self.rpc_timeout)
            if endpoint.options.pre_start_required:
                await endpoint.stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=ids),
                                                      timeout=PRE_START_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            raise AllocationError(f"device plugin for {endpoint.resource} at {endpoint.socket_path} failed to "
                                  f"allocate {ids}: {exc.code().name}: {exc.details()}") from exc
        if len(response.container_responses) != 1:
            raise AllocationError(f"device plugin for {endpoint.resource} answered Allocate with "
                                  f"{len(response.container_responses)} container responses for 1 request")
        return _to_allocation(ids, response.container_responses[0])


def _to_allocation(ids: list[str], r: pb.ContainerAllocateResponse) -> Allocation:
    return Allocation(
        device_ids=tuple(ids), envs=dict(r.envs), annotations=dict(r.annotations),
        mounts=tuple(Mount(m.container_path, m.host_path, m.read_only) for m in r.mounts),
        devices=tuple(DeviceSpec(d.container_path, d.host_path, d.permissions) for d in r.devices),
        cdi_devices=tuple(c.name for c in r.cdi_devices))


async def _call_finished(call: Any) -> None:
    """Wait until a cancelled streaming call's own task (grpc.aio sends the request in one) has ended.

    Cancelling a call or closing its channel cancels that task without waiting for it; under load it is
    still pending when stop() returns unless waited for here. Its CancelledError is the call's, not ours:
    ours shows as `cancelling()` on the current task and is re-raised.
    """
    if call is None:
        return
    try:
        await call.wait_for_connection()
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except grpc.aio.AioRpcError:
        pass


class _Registration(pb_grpc.RegistrationServicer):
    """The gRPC face of a DeviceManager."""

    def __init__(self, manager: DeviceManager, handlers: dp.HandlerTasks) -> None:
        self._manager = manager
        self._handlers = handlers

    async def Register(self, request: pb.RegisterRequest, context: Any) -> pb.Empty:
        self._handlers.track()
        try:
            await self._manager.register(request)
        except _RegisterRejected as exc:
            log.info("rejected device plugin registration: %s", exc)
            await context.abort(exc.code, str(exc))
        return pb.Empty()
