"""The fake GPU device plugin over real unix sockets, seen from a kubelet's side of the wire.

A tiny recording Registration server stands in for the kubelet, and the tests call the plugin's
DevicePlugin service with the generated stubs, so what is checked is the v1beta1 wire contract:
registration fields, ListAndWatch updates, Allocate's env, re-registration after a kubelet restart.
The kind DaemonSet manifest is checked against the simulated API server and this CLI's flags.
Socket directories come from `tempfile.mkdtemp(prefix='dp')` because unix socket paths are limited
to 107 bytes, and pytest's tmp_path can exceed that.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from kubernetes import client as k8s

from lwsconf import deviceplugin as dp
from lwsconf.deviceplugin import cli
from lwsconf.deviceplugin import plugin as plugin_mod
from lwsconf.deviceplugin import pluginregistration_pb2 as reg_pb
from lwsconf.deviceplugin import pluginregistration_pb2_grpc as reg_grpc
from lwsconf.deviceplugin import v1beta1_pb2 as pb
from lwsconf.deviceplugin import v1beta1_pb2_grpc as pb_grpc
from lwsconf.sim.nodes.devices.devicemanager import DeviceManager

GPU = "nvidia.com/gpu"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sockdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 30.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


async def eventually(check: Callable[[], bool], describe: Callable[[], object], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s; observed: {describe()}")
        await asyncio.sleep(0.02)


class RecordingKubelet(pb_grpc.RegistrationServicer):
    """Accepts every registration and remembers it."""

    def __init__(self) -> None:
        self.requests: list[pb.RegisterRequest] = []

    async def Register(self, request: pb.RegisterRequest, context: Any) -> pb.Empty:
        self.requests.append(request)
        return pb.Empty()


@contextlib.asynccontextmanager
async def recording_kubelet(sockdir: Path) -> AsyncIterator[RecordingKubelet]:
    kubelet = RecordingKubelet()
    server = grpc.aio.server()
    pb_grpc.add_RegistrationServicer_to_server(kubelet, server)
    server.add_insecure_port(f"unix://{sockdir / dp.KUBELET_SOCKET}")
    await server.start()
    try:
        yield kubelet
    finally:
        await server.stop(None)


@contextlib.asynccontextmanager
async def running(plugin: plugin_mod.FakeGPUPlugin) -> AsyncIterator[plugin_mod.FakeGPUPlugin]:
    await plugin.start()
    try:
        yield plugin
    finally:
        await plugin.stop()


@contextlib.asynccontextmanager
async def stub_for(plugin: plugin_mod.FakeGPUPlugin) -> AsyncIterator[Any]:
    async with grpc.aio.insecure_channel(f"unix://{plugin.socket_path}") as channel:
        yield pb_grpc.DevicePluginStub(channel)


def test_proto_keeps_the_kubelet_wire_names_and_field_numbers() -> None:
    # Pinned from k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto: changing any of these
    # breaks interoperability with real kubelets.
    assert pb.DESCRIPTOR.package == "v1beta1"
    services = {s.full_name: sorted(m.name for m in s.methods) for s in pb.DESCRIPTOR.services_by_name.values()}
    assert services == {
        "v1beta1.Registration": ["Register"],
        "v1beta1.DevicePlugin": ["Allocate", "GetDevicePluginOptions", "GetPreferredAllocation",
                                 "ListAndWatch", "PreStartContainer"],
    }
    fields = {name: {f.name: f.number for f in m.fields} for name, m in pb.DESCRIPTOR.message_types_by_name.items()}
    assert fields["RegisterRequest"] == {"version": 1, "endpoint": 2, "resource_name": 3, "options": 4}
    assert fields["DevicePluginOptions"] == {"pre_start_required": 1, "get_preferred_allocation_available": 2}
    assert fields["Device"] == {"ID": 1, "health": 2, "topology": 3}
    assert fields["ContainerPreferredAllocationRequest"] == {
        "available_deviceIDs": 1, "must_include_deviceIDs": 2, "allocation_size": 3}
    assert fields["ContainerAllocateRequest"] == {"devices_ids": 1}
    assert fields["ContainerAllocateResponse"] == {
        "envs": 1, "mounts": 2, "devices": 3, "annotations": 4, "cdi_devices": 5}
    assert fields["Mount"] == {"container_path": 1, "host_path": 2, "read_only": 3}
    assert fields["DeviceSpec"] == {"container_path": 1, "host_path": 2, "permissions": 3}


def test_device_ids_are_stable_per_node_and_index(sockdir: Path) -> None:
    a = plugin_mod.FakeGPUPlugin(sockdir, count=3, node_name="gpu-node-0")
    again = plugin_mod.FakeGPUPlugin(sockdir, count=3, node_name="gpu-node-0")
    other = plugin_mod.FakeGPUPlugin(sockdir, count=3, node_name="gpu-node-1")
    assert a.device_ids == again.device_ids
    assert not set(a.device_ids) & set(other.device_ids)
    assert len(set(a.device_ids)) == 3
    for device in a.device_ids:
        assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", device), device
        assert len(device) <= 63  # the API's limit on device ids


def test_plugin_registers_with_version_endpoint_resource_and_options(sockdir: Path) -> None:
    async def scenario() -> None:
        async with recording_kubelet(sockdir) as kubelet, \
                running(plugin_mod.FakeGPUPlugin(sockdir, count=2, node_name="n0", poll_interval=0.05)) as plugin:
            await eventually(lambda: len(kubelet.requests) == 1, lambda: kubelet.requests)
            request = kubelet.requests[0]
            assert (request.version, request.endpoint, request.resource_name) == ("v1beta1", plugin.socket_name, GPU)
            assert (plugin.socket_dir / request.endpoint).exists()
            assert request.options.get_preferred_allocation_available
            assert not request.options.pre_start_required
            assert plugin.registrations == 1 and plugin.last_error is None
    run(scenario)


def test_list_and_watch_sends_all_devices_then_each_health_change(sockdir: Path) -> None:
    async def scenario() -> None:
        async with running(plugin_mod.FakeGPUPlugin(sockdir, count=4, node_name="n0")) as plugin, \
                stub_for(plugin) as stub:
            stream = stub.ListAndWatch(pb.Empty())
            first = await stream.read()
            assert [(d.ID, d.health) for d in first.devices] == [(i, "Healthy") for i in plugin.device_ids]
            sick = plugin.device_ids[2]
            plugin.set_health(sick, False)
            second = await stream.read()
            assert {d.ID: d.health for d in second.devices}[sick] == "Unhealthy"
            assert sum(d.health == "Healthy" for d in second.devices) == 3
            plugin.set_health(sick, True)
            third = await stream.read()
            assert all(d.health == "Healthy" for d in third.devices)
            stream.cancel()
    run(scenario)


def test_set_health_from_another_thread_reaches_the_stream(sockdir: Path) -> None:
    async def scenario() -> None:
        async with running(plugin_mod.FakeGPUPlugin(sockdir, count=2, node_name="n0")) as plugin, \
                stub_for(plugin) as stub:
            stream = stub.ListAndWatch(pb.Empty())
            await stream.read()
            worker = threading.Thread(target=plugin.set_health, args=(plugin.device_ids[0], False))
            worker.start()
            update = await stream.read()
            worker.join()
            assert [d.health for d in update.devices] == ["Unhealthy", "Healthy"]
            stream.cancel()
    run(scenario)


def test_set_health_of_unknown_device_names_the_known_ones(sockdir: Path) -> None:
    plugin = plugin_mod.FakeGPUPlugin(sockdir, count=1, node_name="n0")
    with pytest.raises(KeyError, match=plugin.device_ids[0]):
        plugin.set_health("GPU-nope", False)


def test_allocate_returns_mock_visible_devices_product_and_annotations(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = plugin_mod.FakeGPUPlugin(sockdir, count=4, node_name="n0", product="NVIDIA-A100-SXM4-40GB")
        async with running(plugin), stub_for(plugin) as stub:
            ids = plugin.device_ids[1:3]
            response = await stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=ids)]))
            (container,) = response.container_responses
            assert dict(container.envs) == {"MOCK_NVIDIA_VISIBLE_DEVICES": ",".join(ids),
                                            "LWSCONF_FAKE_GPU_PRODUCT": "NVIDIA-A100-SXM4-40GB"}
            assert "NVIDIA_VISIBLE_DEVICES" not in container.envs  # no real NVIDIA runtime hook may fire
            assert dict(container.annotations)[plugin_mod.DEVICES_ANNOTATION] == ",".join(ids)
            assert plugin.allocate_calls == [ids]
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Allocate(pb.AllocateRequest(container_requests=[
                    pb.ContainerAllocateRequest(devices_ids=["GPU-unknown"])]))
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "GPU-unknown" in caught.value.details()
    run(scenario)


def test_a_tpu_plugin_names_its_devices_and_env_after_the_resource(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = plugin_mod.FakeGPUPlugin(sockdir, "google.com/tpu", 4, node_name="n0")
        assert plugin.socket_name == "lwsconf-google.com_tpu.sock"
        assert all(re.fullmatch(r"TPU-[0-9a-f-]{36}", d) for d in plugin.device_ids), plugin.device_ids
        async with running(plugin), stub_for(plugin) as stub:
            response = await stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=plugin.device_ids[:2])]))
            (container,) = response.container_responses
            assert dict(container.envs) == {"MOCK_TPU_VISIBLE_DEVICES": ",".join(plugin.device_ids[:2]),
                                            "LWSCONF_FAKE_TPU_PRODUCT": "tpu-v5-lite-podslice"}
    run(scenario)


def test_preferred_allocation_keeps_must_include_then_lowest_indexes(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = plugin_mod.FakeGPUPlugin(sockdir, count=6, node_name="n0")
        async with running(plugin), stub_for(plugin) as stub:
            ids = plugin.device_ids
            request = pb.ContainerPreferredAllocationRequest(
                available_deviceIDs=[ids[5], ids[3], ids[1], ids[4]], must_include_deviceIDs=[ids[4]],
                allocation_size=3)
            response = await stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[request]))
            assert list(response.container_responses[0].deviceIDs) == [ids[4], ids[1], ids[3]]
            options = await stub.GetDevicePluginOptions(pb.Empty())
            assert options.get_preferred_allocation_available and not options.pre_start_required
    run(scenario)


def test_plugin_reregisters_when_kubelet_sock_is_recreated(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = plugin_mod.FakeGPUPlugin(sockdir, count=1, node_name="n0", poll_interval=0.05)
        async with running(plugin):
            async with recording_kubelet(sockdir) as first:
                await eventually(lambda: len(first.requests) == 1, lambda: first.requests)
            assert not (sockdir / dp.KUBELET_SOCKET).exists()
            async with recording_kubelet(sockdir) as second:
                await eventually(lambda: len(second.requests) == 1, lambda: (second.requests, plugin.last_error))
            assert plugin.registrations == 2
            assert len(first.requests) == 1
    run(scenario)


def test_plugin_serves_again_when_its_socket_is_deleted(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = plugin_mod.FakeGPUPlugin(sockdir, count=2, node_name="n0", poll_interval=0.05)
        async with recording_kubelet(sockdir) as kubelet, running(plugin):
            await eventually(lambda: len(kubelet.requests) == 1, lambda: kubelet.requests)
            plugin.socket_path.unlink()  # what a restarting kubelet does to stale sockets
            await eventually(plugin.socket_path.exists, lambda: sorted(os.listdir(sockdir)))
            async with stub_for(plugin) as stub:
                options = await stub.GetDevicePluginOptions(pb.Empty(), timeout=5)
            assert options.get_preferred_allocation_available
    run(scenario)


def test_stop_removes_the_socket_and_leaves_no_threads_or_tasks(sockdir: Path) -> None:
    threads_before = set(threading.enumerate())

    async def scenario() -> None:
        tasks_before = asyncio.all_tasks()
        plugin = plugin_mod.FakeGPUPlugin(sockdir, count=2, node_name="n0", poll_interval=0.05)
        async with recording_kubelet(sockdir) as kubelet, running(plugin), stub_for(plugin) as stub:
            await eventually(lambda: len(kubelet.requests) == 1, lambda: kubelet.requests)
            stream = stub.ListAndWatch(pb.Empty())
            await stream.read()
            await plugin.stop()
            with pytest.raises(grpc.aio.AioRpcError):  # the stream ends with the plugin
                await asyncio.wait_for(stream.read(), 5)
        assert os.listdir(sockdir) == []
        assert asyncio.all_tasks() <= tasks_before

    run(scenario)
    assert_no_new_threads(threads_before)


def assert_no_new_threads(before: set[threading.Thread], timeout: float = 5.0) -> None:
    """grpc.aio's poller thread lives while any channel or server object does: collect, then wait."""
    deadline = time.monotonic() + timeout
    while not set(threading.enumerate()) <= before:
        if time.monotonic() > deadline:
            pytest.fail(f"threads left running: {set(threading.enumerate()) - before}")
        gc.collect()
        time.sleep(0.02)


def test_cli_rejects_a_zero_count() -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["--count", "0"])
    assert caught.value.code == 2


def test_cli_serves_a_kubelet_until_sigterm(sockdir: Path) -> None:
    async def scenario() -> None:
        manager = DeviceManager(sockdir)
        await manager.start()
        proc = subprocess.Popen(
            [sys.executable, "-m", "lwsconf.deviceplugin.cli", "--socket-dir", str(sockdir), "--count", "3",
             "--node-name", "cli-node", "--poll-interval", "0.05"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            await eventually(lambda: manager.resources() == {GPU: 3}, manager.resources, timeout=20)
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(proc.wait, 10)
            output = proc.stdout.read() if proc.stdout else ""
            assert code == 0, output
            await eventually(lambda: manager.resources() == {GPU: 0}, manager.resources)
            assert sorted(os.listdir(sockdir)) == [dp.KUBELET_SOCKET], output
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            await manager.stop()

    run(scenario, timeout=40)


# -- registry mode: the kubelet's plugin watcher (pluginmanager) registers the plugin ---------------------------------

def registry_plugin(base: Path, **kwargs: Any) -> plugin_mod.FakeGPUPlugin:
    return plugin_mod.FakeGPUPlugin(base / "dp", node_name="n0", poll_interval=0.05, registration="registry",
                                    registry_dir=base / "plugins_registry", **kwargs)


async def watcher_registers(socket: Path, *, registered: bool = True, error: str = "") -> reg_pb.PluginInfo:
    """What a kubelet's plugin watcher does with a new socket in plugins_registry: GetInfo, then report the
    outcome (operation_generator.go:69-133)."""
    async with grpc.aio.insecure_channel(f"unix://{socket}") as channel:
        stub = reg_grpc.RegistrationStub(channel)
        info: reg_pb.PluginInfo = await stub.GetInfo(reg_pb.InfoRequest(), timeout=5)
        await stub.NotifyRegistrationStatus(reg_pb.RegistrationStatus(plugin_registered=registered, error=error),
                                            timeout=5)
    return info


def identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_ctime_ns)


def test_registration_proto_keeps_the_kubelet_wire_names_and_field_numbers() -> None:
    # Pinned from k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto (its package is "pluginregistration").
    assert reg_pb.DESCRIPTOR.package == "pluginregistration"
    services = {s.full_name: sorted(m.name for m in s.methods)
                for s in reg_pb.DESCRIPTOR.services_by_name.values()}
    assert services == {"pluginregistration.Registration": ["GetInfo", "NotifyRegistrationStatus"]}
    fields = {name: {f.name: f.number for f in m.fields} for name, m in reg_pb.DESCRIPTOR.message_types_by_name.items()}
    assert fields == {"PluginInfo": {"type": 1, "name": 2, "endpoint": 3, "supported_versions": 4},
                      "RegistrationStatus": {"plugin_registered": 1, "error": 2},
                      "RegistrationStatusResponse": {}, "InfoRequest": {}}


def test_registry_mode_tells_the_watcher_type_name_absolute_endpoint_and_versions(sockdir: Path) -> None:
    async def scenario() -> None:
        async with running(registry_plugin(sockdir, count=3)) as plugin:
            assert plugin.registry_socket == sockdir / "plugins_registry" / plugin.socket_name
            assert plugin.registry_socket.is_socket()
            assert not (sockdir / "dp" / dp.KUBELET_SOCKET).exists()
            info = await watcher_registers(plugin.registry_socket)
            assert (info.type, info.name, list(info.supported_versions)) == ("DevicePlugin", GPU, ["v1beta1"])
            assert info.endpoint == str(plugin.socket_path) and Path(info.endpoint).is_absolute()
            assert plugin.statuses == [(True, "")] and plugin.registrations == 1 and plugin.last_error is None
            # the endpoint is what the kubelet's device manager dials next
            async with grpc.aio.insecure_channel(f"unix://{info.endpoint}") as channel:
                stream = pb_grpc.DevicePluginStub(channel).ListAndWatch(pb.Empty())
                first = await stream.read()
                assert [d.ID for d in first.devices] == plugin.device_ids
                stream.cancel()
    run(scenario)


def test_registry_mode_records_a_refusal_and_registers_again_for_a_restarted_kubelet(sockdir: Path) -> None:
    async def scenario() -> None:
        async with running(registry_plugin(sockdir, count=1)) as plugin:
            assert plugin.registry_socket is not None
            await watcher_registers(plugin.registry_socket, registered=False, error="validation failed")
            assert plugin.registrations == 0 and plugin.last_error is not None
            assert "validation failed" in plugin.last_error
            # a kubelet that starts again walks plugins_registry and registers the socket it finds there
            await watcher_registers(plugin.registry_socket)
            await watcher_registers(plugin.registry_socket)
            assert plugin.statuses == [(False, "validation failed"), (True, ""), (True, "")]
            assert plugin.registrations == 2 and plugin.last_error is None
    run(scenario)


def test_registry_mode_recreates_its_registration_socket_when_removed(sockdir: Path) -> None:
    async def scenario() -> None:
        async with running(registry_plugin(sockdir, count=1)) as plugin:
            reg = plugin.registry_socket
            assert reg is not None
            reg.unlink()
            await eventually(reg.exists, lambda: sorted(os.listdir(reg.parent)))
            assert (await watcher_registers(reg)).name == GPU
    run(scenario)


def test_registry_mode_serving_its_plugin_socket_again_makes_a_new_registration_socket(sockdir: Path) -> None:
    # The kubelet only registers again for a new registration socket (reconciler.go:87-131), and its connection to
    # the old plugin socket is gone: so serving the plugin socket again must come with a new registration socket.
    async def scenario() -> None:
        async with running(registry_plugin(sockdir, count=1)) as plugin:
            reg = plugin.registry_socket
            assert reg is not None
            before = identity(reg)
            plugin.socket_path.unlink()
            await eventually(lambda: plugin.socket_path.exists() and identity(reg) not in (None, before),
                             lambda: (sorted(os.listdir(reg.parent)), sorted(os.listdir(plugin.socket_dir))))
            info = await watcher_registers(reg)
            async with grpc.aio.insecure_channel(f"unix://{info.endpoint}") as channel:
                options = await pb_grpc.DevicePluginStub(channel).GetDevicePluginOptions(pb.Empty(), timeout=5)
            assert options.get_preferred_allocation_available
    run(scenario)


def test_registry_mode_stop_removes_both_sockets_and_leaves_no_tasks(sockdir: Path) -> None:
    async def scenario() -> None:
        tasks_before = asyncio.all_tasks()
        plugin = registry_plugin(sockdir, count=2)
        async with running(plugin):
            assert plugin.registry_socket is not None
            await watcher_registers(plugin.registry_socket)
        assert os.listdir(sockdir / "plugins_registry") == [] and os.listdir(sockdir / "dp") == []
        assert asyncio.all_tasks() <= tasks_before
    run(scenario)


def test_registry_mode_needs_its_directory_apart_from_the_plugin_socket(sockdir: Path) -> None:
    with pytest.raises(ValueError, match="registry directory"):
        plugin_mod.FakeGPUPlugin(sockdir, registration="registry")
    with pytest.raises(ValueError, match="registry directory"):
        plugin_mod.FakeGPUPlugin(sockdir, registry_dir=sockdir / "r")
    with pytest.raises(ValueError, match="must not be the registry"):
        plugin_mod.FakeGPUPlugin(sockdir, registration="registry", registry_dir=sockdir)
    with pytest.raises(ValueError, match="registration must be one of"):
        plugin_mod.FakeGPUPlugin(sockdir, registration="nope")


def test_cli_registry_mode_flags(sockdir: Path) -> None:
    for argv in (["--registration", "registry"], ["--registry-dir", str(sockdir)]):
        with pytest.raises(SystemExit) as caught:
            cli.main(argv)
        assert caught.value.code == 2


def test_cli_registry_mode_serves_a_watcher_until_sigterm(sockdir: Path) -> None:
    registry = sockdir / "kubelet" / "plugins_registry"
    reg = registry / "lwsconf-nvidia.com_gpu.sock"

    async def scenario() -> None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lwsconf.deviceplugin.cli", "--registration", "registry", "--registry-dir",
             str(registry), "--count", "2", "--node-name", "cli-node", "--poll-interval", "0.05"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            await eventually(reg.is_socket, lambda: sorted(os.listdir(sockdir)), timeout=20)
            info = await watcher_registers(reg)
            assert info.endpoint == str(sockdir / "kubelet" / "plugins" / "lwsconf" / "lwsconf-nvidia.com_gpu.sock")
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(proc.wait, 10)
            output = proc.stdout.read() if proc.stdout else ""
            assert code == 0, output
            assert os.listdir(registry) == [] and not Path(info.endpoint).exists(), output
            assert "kubelet registered nvidia.com/gpu" in output
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    run(scenario, timeout=40)


def test_kind_daemonset_manifest_is_accepted_and_runs_this_cli(sim_api: Any) -> None:
    manifest = yaml.safe_load((REPO / "manifests/deviceplugin/daemonset.yaml").read_text())
    created = k8s.AppsV1Api(sim_api.api).create_namespaced_daemon_set("kube-system", manifest)
    pod = created.spec.template.spec
    container = pod.containers[0]
    assert container.command == ["python", "-m", "lwsconf.deviceplugin.cli"]
    assert container.security_context.privileged
    assert pod.volumes[0].host_path.path == dp.DEFAULT_SOCKET_DIR == container.volume_mounts[0].mount_path
    flags = cli.build_parser().parse_args(container.args)  # every flag in the manifest exists
    assert (flags.socket_dir, flags.count, flags.resource) == (dp.DEFAULT_SOCKET_DIR, 8, GPU)


def test_real_nodes_start_a_registry_mode_plugin_per_device_resource_of_a_node() -> None:
    from lwsconf.localcluster.cli import real_node_specs
    from lwsconf.realnodes.network import NodeNet
    from lwsconf.realnodes.node import device_plugin_argv

    assert [(s.name, dict(s.devices)) for s in real_node_specs(3)] == [
        ("gpu-0", {GPU: 8}), ("gpu-1", {GPU: 8}), ("cpu-0", {"google.com/tpu": 8})]
    folder = Path("/tmp/lwsconf-realnodes-0123abcd-01234567/gpu-0")
    net = NodeNet(name="gpu-0", netns="lwsconf-x-gpu-0", veth_host="lwx0", address="198.19.0.1",
                  pod_cidr="198.19.2.0/24")
    tpu = cli.build_parser().parse_args(device_plugin_argv(folder, net, "google.com/tpu", 4)[3:])
    assert (tpu.resource, tpu.count) == ("google.com/tpu", 4)
    argv = device_plugin_argv(folder, net, GPU, 8)
    assert argv[1:3] == ["-m", "lwsconf.deviceplugin.cli"]
    flags = cli.build_parser().parse_args(argv[3:])  # every flag exists
    assert (flags.registration, flags.count, flags.resource, flags.node_name) == ("registry", 8, GPU, "gpu-0")
    assert flags.registry_dir == str(folder / "kubelet" / "plugins_registry")
    plugin = plugin_mod.FakeGPUPlugin(flags.socket_dir, flags.resource, flags.count, node_name=flags.node_name,
                                      registration=flags.registration, registry_dir=flags.registry_dir)
    assert plugin.socket_dir == folder / "deviceplugin"  # out of the registry, and out of the shared kubelet.sock dir
