"""A fake device plugin: N always-present GPUs (or TPUs, or any extended resource) that a kubelet can
count, hand out and lose.

Why: LWS workloads request `nvidia.com/gpu` or `google.com/tpu`, and kubelets only advertise such a
resource when a device plugin registers it. The resource name is a parameter; the rest follows from it.
This plugin speaks the real v1beta1 API over a unix socket, so the same
code serves a real kubelet (kind DaemonSet) and the simulator's kubelet side. What it does:

* serves `DevicePlugin` on `<socket_dir>/<socket_name>` and registers in one of two ways (`registration`):
  - `kubelet` (the classic way): a Register call to `<socket_dir>/kubelet.sock` (version v1beta1,
    endpoint = its socket file name, resource name, options);
  - `registry` (the kubelet's plugin watcher): it also serves the pluginregistration `Registration` service on
    `<registry_dir>/<socket_name>`, where `registry_dir` is a kubelet's `<root-dir>/plugins_registry`. That kubelet
    calls GetInfo (type `DevicePlugin`, name = the resource, endpoint = the absolute path of the DevicePlugin
    socket, versions [v1beta1]), hands it to its device manager, which dials the endpoint as given, and reports
    the outcome with NotifyRegistrationStatus (k8s.io/kubernetes@v1.37.2 pkg/kubelet/pluginmanager/
    operationexecutor/operation_generator.go:69-133, cm/devicemanager/plugin/v1beta1/handler.go:42-94). This is
    the way to reach one chosen kubelet when several share a host: the device manager's kubelet.sock is the
    fixed /var/lib/kubelet/device-plugins/kubelet.sock (cm/devicemanager/manager.go:135) whatever the root
    dir, and every kubelet start deletes all sockets in that directory (manager.go:189-223), so in this mode
    `socket_dir` must be elsewhere (the CLI puts it beside the registry, `<root-dir>/plugins/lwsconf`);
* devices have stable ids `GPU-<uuid5(node, resource, index)>` (`TPU-...` for `google.com/tpu`: the
  resource's name part, upper-cased), all Healthy until `set_health`; ListAndWatch sends the full list
  at once and again after every health change;
* Allocate answers env `<env_prefix>NVIDIA_VISIBLE_DEVICES=<ids>` (default prefix `MOCK_`, as
  run.ai's fake-gpu-operator does, so no real NVIDIA container-runtime hook ever fires) and
  `LWSCONF_FAKE_GPU_PRODUCT`, plus container annotations naming the devices; for another resource the
  env names are `<env_prefix><NAME>_VISIBLE_DEVICES` and `LWSCONF_FAKE_<NAME>_PRODUCT`
  (`MOCK_TPU_VISIBLE_DEVICES`, `LWSCONF_FAKE_TPU_PRODUCT` for `google.com/tpu`);
* a watcher polls the directory: when kubelet.sock is (re)created, or the kubelet wiped our socket on
  its restart (kubelets delete stale sockets at start, the documented re-registration signal), it
  serves again and re-registers. In `registry` mode a restarted kubelet registers the plugin by itself (its
  watcher walks plugins_registry at start, pluginwatcher/plugin_watcher.go:55-70); the plugin re-creates its
  registration socket when that socket is removed, and when it has to serve its DevicePlugin socket again (a
  new registration socket is what makes the kubelet's watcher register again: reconciler/reconciler.go:87-131).
  Stopping removes the registration socket first (the kubelet deregisters the plugin), then the DevicePlugin one.

All methods run on one asyncio loop; `set_health` may also be called from other threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

from lwsconf import deviceplugin as dp
from lwsconf.deviceplugin import pluginregistration_pb2 as reg_pb
from lwsconf.deviceplugin import pluginregistration_pb2_grpc as reg_grpc
from lwsconf.deviceplugin import v1beta1_pb2 as pb
from lwsconf.deviceplugin import v1beta1_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

DEFAULT_PRODUCT = "NVIDIA-H100-80GB-HBM3"
PRODUCT_ENV = "LWSCONF_FAKE_GPU_PRODUCT"
DEVICES_ANNOTATION = "lwsconf.dev/fake-gpu-devices"
NODE_ANNOTATION = "lwsconf.dev/fake-gpu-node"
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "fake-gpu.lwsconf.dev")
# Register answers the kubelet may give that are worth retrying without a new kubelet.sock.
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class RegistrationError(RuntimeError):
    """The kubelet did not accept the registration; `retryable` when it was merely unreachable."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


KUBELET_REGISTRATION = "kubelet"
REGISTRY_REGISTRATION = "registry"
REGISTRATIONS = (KUBELET_REGISTRATION, REGISTRY_REGISTRATION)
PLUGIN_TYPE = "DevicePlugin"
"""The plugin type a kubelet's device manager handles (k8s.io/kubelet pluginregistration/v1 constants.go)."""

GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"
DEFAULT_TPU_PRODUCT = "tpu-v5-lite-podslice"


def kind_of(resource: str) -> str:
    """`GPU` for `nvidia.com/gpu`, `TPU` for `google.com/tpu`: the name part of the resource, upper-cased."""
    return resource.rsplit("/", 1)[-1].upper().replace(".", "_").replace("-", "_")


def visible_devices_env(resource: str) -> str:
    """The env var Allocate names the devices in, before the prefix (NVIDIA's name for GPUs)."""
    return "NVIDIA_VISIBLE_DEVICES" if resource == GPU_RESOURCE else f"{kind_of(resource)}_VISIBLE_DEVICES"


def product_env(resource: str) -> str:
    return PRODUCT_ENV if resource == GPU_RESOURCE else f"LWSCONF_FAKE_{kind_of(resource)}_PRODUCT"


def device_id(node_name: str, resource: str, index: int) -> str:
    """The stable id of device `index`: the same node, resource and index always give the same id."""
    return f"{kind_of(resource)}-{uuid.uuid5(_ID_NAMESPACE, f'{node_name}/{resource}/{index}')}"


def default_node_name() -> str:
    """NODE_NAME (set from spec.nodeName in the DaemonSet), else the host name."""
    return os.environ.get("NODE_NAME") or socket.gethostname()


def _identity(path: Path) -> tuple[int, int, int] | None:
    """What tells one incarnation of a socket file from the next (inode numbers can be reused)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


class FakeGPUPlugin:
    """A device plugin advertising `count` fake devices of `resource` (see the module docstring).

    `product` defaults per resource: an H100 for `nvidia.com/gpu`, `tpu-v5-lite-podslice` for `google.com/tpu`.
    """

    def __init__(self, socket_dir: Path | str, resource: str = "nvidia.com/gpu", count: int = 8, *,
                 product: str | None = None, env_prefix: str = "MOCK_", node_name: str | None = None,
                 socket_name: str | None = None, poll_interval: float = 1.0,
                 preferred_allocation: bool = True, pre_start_required: bool = False,
                 rpc_timeout: float = 10.0, registration: str = KUBELET_REGISTRATION,
                 registry_dir: Path | str | None = None) -> None:
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        if registration not in REGISTRATIONS:
            raise ValueError(f"registration must be one of {', '.join(REGISTRATIONS)}, got {registration!r}")
        if (registration == REGISTRY_REGISTRATION) != (registry_dir is not None):
            raise ValueError("a registry directory is needed with registration 'registry' and only with it")
        self.registration = registration
        self.registry_dir = Path(registry_dir).absolute() if registry_dir is not None else None
        self.socket_dir = Path(socket_dir).absolute()
        if self.registry_dir is not None and self.registry_dir == self.socket_dir:
            raise ValueError(f"the plugin's socket directory must not be the registry {self.registry_dir}: the "
                             "kubelet's watcher takes every socket there for a registration socket")
        self.resource = resource
        self.product = product or {GPU_RESOURCE: DEFAULT_PRODUCT,
                                   TPU_RESOURCE: DEFAULT_TPU_PRODUCT}.get(resource, resource)
        self.env_prefix = env_prefix
        self.node_name = node_name or default_node_name()
        self.socket_name = socket_name or "lwsconf-" + resource.replace("/", "_") + ".sock"
        self.poll_interval = poll_interval
        self.preferred_allocation = preferred_allocation
        self.pre_start_required = pre_start_required
        self.rpc_timeout = rpc_timeout
        self._health = {device_id(self.node_name, resource, i): True for i in range(count)}
        self._subscribers: set[asyncio.Queue[list[pb.Device]]] = set()
        self._server: Any = None
        self._handlers = dp.HandlerTasks()
        self._served: tuple[int, int, int] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._registered_with: tuple[int, int, int] | None = None
        self._rejected_by: tuple[int, int, int] | None = None
        self._registry_server: Any = None
        self._registry_handlers = dp.HandlerTasks()
        self._registry_served: tuple[int, int, int] | None = None
        self.registrations = 0
        self.last_error: str | None = None
        self.statuses: list[tuple[bool, str]] = []
        """Registry mode: every NotifyRegistrationStatus the kubelet sent, (registered, error), oldest first."""
        # What the kubelet asked, for tests (like kubernetes' e2e testdeviceplugin records its calls).
        self.allocate_calls: list[list[str]] = []
        self.pre_start_calls: list[list[str]] = []
        dp.check_socket_path(str(self.socket_path))
        if self.registry_socket is not None:
            dp.check_socket_path(str(self.registry_socket))
        else:
            dp.check_socket_path(str(self.kubelet_socket))

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / self.socket_name

    @property
    def kubelet_socket(self) -> Path:
        return self.socket_dir / dp.KUBELET_SOCKET

    @property
    def registry_socket(self) -> Path | None:
        """Registry mode: where the Registration service is served (the same file name as the plugin socket)."""
        return self.registry_dir / self.socket_name if self.registry_dir is not None else None

    def plugin_info(self) -> reg_pb.PluginInfo:
        """GetInfo's answer: the endpoint is absolute, as the device manager dials it as given (client.go:132-150)."""
        return reg_pb.PluginInfo(type=PLUGIN_TYPE, name=self.resource, endpoint=str(self.socket_path),
                                 supported_versions=list(dp.SUPPORTED_VERSIONS))

    def registration_status(self, registered: bool, error: str) -> None:
        """What the kubelet's watcher reported after GetInfo (registry mode)."""
        self.statuses.append((registered, error))
        if registered:
            self.registrations += 1
            self.last_error = None
            log.info("kubelet registered %s (registry %s)", self.resource, self.registry_socket)
        else:
            self.last_error = f"the kubelet did not register {self.resource}: {error}"
            log.warning("%s", self.last_error)

    @property
    def device_ids(self) -> list[str]:
        return list(self._health)

    def health(self) -> dict[str, bool]:
        """Device id -> healthy, in device order."""
        return dict(self._health)

    def set_health(self, device_id: str, healthy: bool) -> None:
        """Mark one device (un)healthy and push the new list to every ListAndWatch stream."""
        if device_id not in self._health:
            raise KeyError(f"unknown device {device_id!r}; this plugin has {self.device_ids}")
        loop = self._loop
        if loop is not None and not loop.is_closed() and _running_loop() is not loop:
            loop.call_soon_threadsafe(self._set_health, device_id, healthy)
        else:
            self._set_health(device_id, healthy)

    def _set_health(self, device_id: str, healthy: bool) -> None:
        if self._health[device_id] == healthy:
            return
        self._health[device_id] = healthy
        snapshot = self._device_list()
        for queue in self._subscribers:
            queue.put_nowait(snapshot)

    def _device_list(self) -> list[pb.Device]:
        return [pb.Device(ID=i, health=dp.HEALTHY if ok else dp.UNHEALTHY) for i, ok in self._health.items()]

    def options(self) -> pb.DevicePluginOptions:
        return pb.DevicePluginOptions(pre_start_required=self.pre_start_required,
                                      get_preferred_allocation_available=self.preferred_allocation)

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Serve on our socket, register if kubelet.sock is there, and watch the directory."""
        if self._watcher is not None:
            raise RuntimeError("FakeGPUPlugin.start() called twice; call stop() first")
        self._loop = asyncio.get_running_loop()
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        if self.registry_dir is not None:
            self.registry_dir.mkdir(parents=True, exist_ok=True)
        await self._serve()
        await self._tick()
        self._watcher = asyncio.create_task(self._watch(), name=f"deviceplugin-watch-{self.socket_name}")

    async def stop(self) -> None:
        """Stop watching and serving (ListAndWatch streams end); our socket files are removed."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await self._unserve_registry()
        await self._unserve()
        self._registered_with = None

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set (the shape every sim component has)."""
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()

    async def _serve(self) -> None:
        server = grpc.aio.server()
        pb_grpc.add_DevicePluginServicer_to_server(_Servicer(self, self._handlers), server)
        self._served = await _listen(server, self.socket_path)
        self._server = server
        log.info("device plugin for %s serving on %s", self.resource, self.socket_path)

    async def _unserve(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop(None)  # grpc unlinks the socket file it bound
            await self._handlers.drain()  # stop() cancels ListAndWatch streams without waiting for them
        if self._served is not None and _identity(self.socket_path) == self._served:
            self.socket_path.unlink()
        self._served = None

    async def _serve_registry(self) -> None:
        """Serve Registration on the registry socket; its appearance is what the kubelet's watcher acts on."""
        assert self.registry_socket is not None
        server = grpc.aio.server()
        reg_grpc.add_RegistrationServicer_to_server(_RegistrationServicer(self, self._registry_handlers), server)
        self._registry_served = await _listen(server, self.registry_socket)
        self._registry_server = server
        log.info("registration for %s served on %s (endpoint %s)", self.resource, self.registry_socket,
                 self.socket_path)

    async def _unserve_registry(self) -> None:
        server, self._registry_server = self._registry_server, None
        if server is not None:
            await server.stop(None)
            await self._registry_handlers.drain()
        if (self.registry_socket is not None and self._registry_served is not None
                and _identity(self.registry_socket) == self._registry_served):
            self.registry_socket.unlink()
        self._registry_served = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                await self._tick()
            except Exception:  # keep watching: the next tick may succeed
                log.exception("device plugin watcher for %s failed; retrying", self.resource)

    async def _tick(self) -> None:
        reserved = False
        if _identity(self.socket_path) != self._served:  # the kubelet removed our socket: it restarted
            log.info("socket %s was removed; serving again", self.socket_path)
            await self._unserve()
            await self._serve()
            self._registered_with = None
            reserved = True
        if self.registry_socket is not None:
            await self._tick_registry(reserved)
            return
        kubelet = _identity(self.kubelet_socket)
        if kubelet is None or kubelet in (self._registered_with, self._rejected_by):
            return
        try:
            await self.register()
        except RegistrationError as exc:
            self.last_error = str(exc)
            log.warning("%s", exc)
            if not exc.retryable:
                self._rejected_by = kubelet  # a rejection is final for this kubelet incarnation
            return
        self._registered_with = kubelet
        self.registrations += 1
        self.last_error = None

    async def _tick_registry(self, reserved: bool) -> None:
        """Registry mode: (re)create the registration socket when it is missing or replaced, or when the
        DevicePlugin socket was served anew (the kubelet dropped its connection to the old one and only registers
        again for a new registration socket)."""
        assert self.registry_socket is not None
        if self._registry_server is not None and not reserved \
                and _identity(self.registry_socket) == self._registry_served:
            return
        if self._registry_server is not None:
            log.info("registration socket %s is gone or the plugin socket is new; serving it again",
                     self.registry_socket)
        await self._unserve_registry()
        await self._serve_registry()

    async def register(self) -> None:
        """One Register call to kubelet.sock; raises RegistrationError when it is not accepted."""
        request = pb.RegisterRequest(version=dp.VERSION, endpoint=self.socket_name,
                                     resource_name=self.resource, options=self.options())
        async with grpc.aio.insecure_channel(f"unix://{self.kubelet_socket}") as channel:
            try:
                await pb_grpc.RegistrationStub(channel).Register(request, timeout=self.rpc_timeout)
            except grpc.aio.AioRpcError as exc:
                raise RegistrationError(
                    f"registering {self.resource} (endpoint {self.socket_name}) with {self.kubelet_socket} "
                    f"failed: {exc.code().name}: {exc.details()}",
                    retryable=exc.code() in _RETRYABLE) from exc
        log.info("registered %s with %s", self.resource, self.kubelet_socket)

    # -- RPC bodies (called by _Servicer) ----------------------------------------------------------

    async def list_and_watch(self) -> AsyncIterator[pb.ListAndWatchResponse]:
        queue: asyncio.Queue[list[pb.Device]] = asyncio.Queue()
        queue.put_nowait(self._device_list())
        self._subscribers.add(queue)
        try:
            while True:
                yield pb.ListAndWatchResponse(devices=await queue.get())
        finally:
            self._subscribers.discard(queue)

    def allocate_one(self, ids: list[str]) -> pb.ContainerAllocateResponse:
        unknown = [i for i in ids if i not in self._health]
        if unknown:
            raise ValueError(f"unknown devices {unknown} requested from {self.resource}; known: {self.device_ids}")
        self.allocate_calls.append(list(ids))
        joined = ",".join(ids)
        return pb.ContainerAllocateResponse(
            envs={f"{self.env_prefix}{visible_devices_env(self.resource)}": joined,
                  product_env(self.resource): self.product},
            annotations={DEVICES_ANNOTATION: joined, NODE_ANNOTATION: self.node_name})

    def prefer(self, request: pb.ContainerPreferredAllocationRequest) -> list[str]:
        """The must-include devices, then the lowest-indexed available ones, up to the size asked."""
        chosen = list(dict.fromkeys(request.must_include_deviceIDs))
        order = {d: n for n, d in enumerate(self._health)}
        for device in sorted(request.available_deviceIDs, key=lambda d: order.get(d, len(order))):
            if len(chosen) >= request.allocation_size:
                break
            if device not in chosen:
                chosen.append(device)
        return chosen


async def _listen(server: Any, path: Path) -> tuple[int, int, int] | None:
    """Bind `server` to the unix socket `path` (replacing a stale one), start it, return the socket's identity."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a stale socket from a previous run
    try:
        server.add_insecure_port(f"unix://{path}")
    except RuntimeError as exc:
        raise RuntimeError(f"cannot listen on {path}: {exc}; is the directory writable?") from exc
    await server.start()
    return _identity(path)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Servicer(pb_grpc.DevicePluginServicer):
    """The gRPC face of a FakeGPUPlugin."""

    def __init__(self, plugin: FakeGPUPlugin, handlers: dp.HandlerTasks) -> None:
        self._plugin = plugin
        self._handlers = handlers

    async def GetDevicePluginOptions(self, request: pb.Empty, context: Any) -> pb.DevicePluginOptions:
        self._handlers.track()
        return self._plugin.options()

    async def ListAndWatch(self, request: pb.Empty, context: Any) -> AsyncIterator[pb.ListAndWatchResponse]:
        self._handlers.track()
        async for response in self._plugin.list_and_watch():
            yield response

    async def GetPreferredAllocation(self, request: pb.PreferredAllocationRequest,
                                     context: Any) -> pb.PreferredAllocationResponse:
        self._handlers.track()
        return pb.PreferredAllocationResponse(container_responses=[
            pb.ContainerPreferredAllocationResponse(deviceIDs=self._plugin.prefer(r))
            for r in request.container_requests])

    async def Allocate(self, request: pb.AllocateRequest, context: Any) -> pb.AllocateResponse:
        self._handlers.track()
        try:
            responses = [self._plugin.allocate_one(list(r.devices_ids)) for r in request.container_requests]
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            raise  # abort raises; this line only satisfies type checkers
        return pb.AllocateResponse(container_responses=responses)

    async def PreStartContainer(self, request: pb.PreStartContainerRequest,
                                context: Any) -> pb.PreStartContainerResponse:
        self._handlers.track()
        self._plugin.pre_start_calls.append(list(request.devices_ids))
        return pb.PreStartContainerResponse()


class _RegistrationServicer(reg_grpc.RegistrationServicer):
    """The pluginregistration face of a FakeGPUPlugin in registry mode: called by a kubelet's plugin watcher."""

    def __init__(self, plugin: FakeGPUPlugin, handlers: dp.HandlerTasks) -> None:
        self._plugin = plugin
        self._handlers = handlers

    async def GetInfo(self, request: reg_pb.InfoRequest, context: Any) -> reg_pb.PluginInfo:
        self._handlers.track()
        return self._plugin.plugin_info()

    async def NotifyRegistrationStatus(self, request: reg_pb.RegistrationStatus,
                                       context: Any) -> reg_pb.RegistrationStatusResponse:
        self._handlers.track()
        self._plugin.registration_status(request.plugin_registered, request.error)
        return reg_pb.RegistrationStatusResponse()
