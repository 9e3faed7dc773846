"""The simulated kubelet's device manager with the fake GPU plugin, over real unix sockets.

Each test starts a `DeviceManager` (kubelet.sock) and one or more `FakeGPUPlugin`s in a short temp
directory (unix socket paths are limited to 107 bytes) inside the test's event loop, and waits for
registration and ListAndWatch updates by polling with a bounded timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from lwsconf import deviceplugin as dp
from lwsconf.deviceplugin import plugin as plugin_mod
from lwsconf.deviceplugin import v1beta1_pb2 as pb
from lwsconf.deviceplugin import v1beta1_pb2_grpc as pb_grpc
from lwsconf.sim.nodes.devices import devicemanager as dm

GPU = "nvidia.com/gpu"


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


def fake_gpus(sockdir: Path, count: int = 8, **kwargs: Any) -> plugin_mod.FakeGPUPlugin:
    kwargs.setdefault("node_name", "gpu-node-0")
    return plugin_mod.FakeGPUPlugin(sockdir, GPU, count, poll_interval=0.05, **kwargs)


@contextlib.asynccontextmanager
async def node(sockdir: Path, *plugins: plugin_mod.FakeGPUPlugin,
               **options: Any) -> AsyncIterator[dm.DeviceManager]:
    """A started manager plus started plugins; waits until the first plugin's devices are listed."""
    manager = dm.DeviceManager(sockdir, **options)
    await manager.start()
    try:
        for plugin in plugins:
            await plugin.start()
        if plugins:
            expected = len(plugins[0].device_ids)
            await eventually(lambda: manager.capacity().get(plugins[0].resource) == expected,
                             lambda: (manager.capacity(), [p.last_error for p in plugins]))
        yield manager
    finally:
        await manager.stop()
        for plugin in plugins:
            await plugin.stop()


async def register_raw(sockdir: Path, **fields: Any) -> grpc.StatusCode:
    """Send one RegisterRequest by hand; the status code the manager answers."""
    async with grpc.aio.insecure_channel(f"unix://{sockdir / dp.KUBELET_SOCKET}") as channel:
        try:
            await pb_grpc.RegistrationStub(channel).Register(pb.RegisterRequest(**fields), timeout=5)
        except grpc.aio.AioRpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


def test_registered_plugin_devices_appear_in_resources(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = fake_gpus(sockdir)
        async with node(sockdir, plugin) as manager:
            await eventually(lambda: manager.resources() == {GPU: 8}, manager.resources)
            assert manager.capacity() == {GPU: 8}
            assert manager.devices(GPU) == dict.fromkeys(plugin.device_ids, True)
            assert plugin.registrations == 1
    run(scenario)


def test_allocate_returns_the_plugins_env_for_exactly_the_requested_count(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = fake_gpus(sockdir, product="NVIDIA-H100-80GB-HBM3")
        async with node(sockdir, plugin) as manager:
            allocation = await manager.allocate("uid-a", "main", GPU, 3)
            assert len(allocation.device_ids) == 3
            assert set(allocation.device_ids) <= set(plugin.device_ids)
            assert allocation.envs == {"MOCK_NVIDIA_VISIBLE_DEVICES": ",".join(allocation.device_ids),
                                       "LWSCONF_FAKE_GPU_PRODUCT": "NVIDIA-H100-80GB-HBM3"}
            assert allocation.annotations[plugin_mod.DEVICES_ANNOTATION] == ",".join(allocation.device_ids)
            assert plugin.allocate_calls == [list(allocation.device_ids)]
            assert manager.in_use(GPU) == set(allocation.device_ids)
    run(scenario)


def test_allocations_never_share_a_device_until_released(sockdir: Path) -> None:
    async def scenario() -> None:
        async with node(sockdir, fake_gpus(sockdir)) as manager:
            concurrent = await asyncio.gather(*(manager.allocate(f"uid-{n}", "main", GPU, 2) for n in range(3)))
            taken = [d for a in concurrent for d in a.device_ids]
            assert len(taken) == len(set(taken)) == 6
            with pytest.raises(dm.AllocationError, match="asks for 3 nvidia.com/gpu but only 2"):
                await manager.allocate("uid-big", "main", GPU, 3)
            manager.release("uid-0")
            big = await manager.allocate("uid-big", "main", GPU, 3)
            held = {d for a in concurrent[1:] for d in a.device_ids}
            assert not set(big.device_ids) & held
            assert manager.in_use(GPU) == held | set(big.device_ids)
    run(scenario)


def test_allocating_the_same_container_again_returns_the_same_devices(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = fake_gpus(sockdir)
        async with node(sockdir, plugin) as manager:
            first = await manager.allocate("uid-a", "main", GPU, 2)
            again = await manager.allocate("uid-a", "main", GPU, 2)
            sidecar = await manager.allocate("uid-a", "sidecar", GPU, 1)
            assert again == first
            assert not set(sidecar.device_ids) & set(first.device_ids)
            assert len(plugin.allocate_calls) == 2
            assert await manager.allocate("uid-a", "none", GPU, 0) == dm.EMPTY_ALLOCATION
    run(scenario)


def test_unhealthy_device_reduces_resources_and_is_never_allocated(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = fake_gpus(sockdir, count=4)
        async with node(sockdir, plugin) as manager:
            changes: list[dict[str, int]] = []
            manager.on_change(lambda: changes.append(manager.resources()))
            sick = plugin.device_ids[0]
            plugin.set_health(sick, False)
            await eventually(lambda: manager.resources() == {GPU: 3}, manager.resources)
            assert manager.capacity() == {GPU: 4}
            assert changes == [{GPU: 3}]
            allocation = await manager.allocate("uid-a", "main", GPU, 3)
            assert sick not in allocation.device_ids
            with pytest.raises(dm.AllocationError, match="only 0 healthy devices are free"):
                await manager.allocate("uid-b", "main", GPU, 1)
            plugin.set_health(sick, True)
            await eventually(lambda: manager.resources() == {GPU: 4}, manager.resources)
            assert (await manager.allocate("uid-b", "main", GPU, 1)).device_ids == (sick,)
    run(scenario)


def test_plugin_stop_makes_devices_unhealthy_then_drops_the_resource(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = fake_gpus(sockdir, count=2)
        async with node(sockdir, plugin, stop_grace_seconds=0.3) as manager:
            await plugin.stop()
            await eventually(lambda: manager.resources() == {GPU: 0}, manager.resources)
            assert manager.capacity() == {GPU: 2}
            with pytest.raises(dm.AllocationError, match="no active device plugin for nvidia.com/gpu"):
                await manager.allocate("uid-a", "main", GPU, 1)
            await eventually(lambda: manager.resources() == {}, manager.resources)
    run(scenario)


def test_kubelet_restart_makes_the_plugin_register_again(sockdir: Path) -> None:
    async def scenario() -> None:
        plugin = fake_gpus(sockdir, count=2)
        async with node(sockdir, plugin) as first:
            await first.stop()
            assert not (sockdir / dp.KUBELET_SOCKET).exists()
            async with node(sockdir) as second:  # deletes the plugin's socket, as a starting kubelet does
                await eventually(lambda: second.resources() == {GPU: 2},
                                 lambda: (second.resources(), plugin.last_error, sorted(os.listdir(sockdir))))
                assert plugin.registrations == 2
                allocation = await second.allocate("uid-a", "main", GPU, 2)
                assert set(allocation.device_ids) == set(plugin.device_ids)
    run(scenario)


def test_second_plugin_for_a_taken_resource_is_rejected(sockdir: Path) -> None:
    async def scenario() -> None:
        first = fake_gpus(sockdir, count=2)
        second = fake_gpus(sockdir, count=3, node_name="other", socket_name="second.sock")
        async with node(sockdir, first) as manager:
            with pytest.raises(plugin_mod.RegistrationError, match="ALREADY_EXISTS") as caught:
                await second.register()
            assert not caught.value.retryable
            assert manager.devices(GPU) == dict.fromkeys(first.device_ids, True)
            await second.start()
            try:
                await eventually(lambda: second.last_error is not None, lambda: second.registrations)
                assert "already registered" in (second.last_error or "")
                assert second.registrations == 0
                assert manager.capacity() == {GPU: 2}
            finally:
                await second.stop()
    run(scenario)


@pytest.mark.parametrize(("fields", "why"), [
    ({"version": "v1alpha1", "endpoint": "x.sock", "resource_name": GPU}, "unsupported version"),
    ({"version": "v1beta1", "endpoint": "x.sock", "resource_name": "gpu"}, "no domain"),
    ({"version": "v1beta1", "endpoint": "x.sock", "resource_name": "kubernetes.io/gpu"}, "native namespace"),
    ({"version": "v1beta1", "endpoint": "../x.sock", "resource_name": GPU}, "endpoint outside the dir"),
    ({"version": "v1beta1", "endpoint": "kubelet.sock", "resource_name": GPU}, "endpoint is the kubelet"),
])
def test_invalid_registrations_are_rejected(sockdir: Path, fields: dict[str, str], why: str) -> None:
    async def scenario() -> None:
        async with node(sockdir) as manager:
            assert await register_raw(sockdir, **fields) == grpc.StatusCode.INVALID_ARGUMENT, why
            assert manager.resources() == {}
    run(scenario)


def test_registration_fails_when_the_plugin_socket_is_unreachable(sockdir: Path) -> None:
    async def scenario() -> None:
        async with node(sockdir, connect_timeout=0.3) as manager:
            code = await register_raw(sockdir, version="v1beta1", endpoint="absent.sock", resource_name=GPU)
            assert code == grpc.StatusCode.UNAVAILABLE
            assert manager.resources() == {}
    run(scenario)


def test_manager_asks_for_a_preferred_allocation_and_calls_pre_start(sockdir: Path) -> None:
    class PrefersLast(plugin_mod.FakeGPUPlugin):
        def prefer(self, request: pb.ContainerPreferredAllocationRequest) -> list[str]:
            return list(request.available_deviceIDs)[-request.allocation_size:]

    async def scenario() -> None:
        plugin = PrefersLast(sockdir, GPU, 4, node_name="n0", poll_interval=0.05, pre_start_required=True)
        async with node(sockdir, plugin) as manager:
            allocation = await manager.allocate("uid-a", "main", GPU, 2)
            assert allocation.device_ids == tuple(plugin.device_ids[-2:])
            assert plugin.pre_start_calls == [plugin.device_ids[-2:]]
    run(scenario)


@pytest.mark.parametrize(("name", "ok"), [
    ("nvidia.com/gpu", True), ("example.com/fpga-x_1", True), ("gpu", False), ("kubernetes.io/gpu", False),
    ("foo.kubernetes.io/gpu", False), ("requests.example.com/x", False), ("example.com/-bad", False),
    ("Example.com/gpu", False), ("example.com/" + "x" * 64, False),
])
def test_extended_resource_names_follow_kubernetes(name: str, ok: bool) -> None:
    assert dm.is_extended_resource_name(name) is ok


def test_socket_paths_that_are_too_long_are_refused_with_a_fix() -> None:
    with pytest.raises(ValueError, match="mkdtemp"):
        dm.DeviceManager("/tmp/" + "d" * 110)


def test_stopping_everything_leaves_no_sockets_threads_or_tasks(sockdir: Path) -> None:
    gc.collect()  # grpc objects of earlier tests in this worker keep its poller thread alive until collected
    threads_before = {t for t in threading.enumerate() if t.is_alive()}

    async def scenario() -> None:
        tasks_before = asyncio.all_tasks()
        plugin = fake_gpus(sockdir, count=2)
        async with node(sockdir, plugin) as manager:
            await manager.allocate("uid-a", "main", GPU, 1)
        sockets = [p for p in sockdir.iterdir() if stat.S_ISSOCK(p.lstat().st_mode)]
        assert sockets == []
        assert asyncio.all_tasks() <= tasks_before
        assert manager.resources() == {}

    run(scenario)
    deadline = time.monotonic() + 5
    def new_threads() -> set[threading.Thread]:
        # Only grpc's threads: under xdist, background loops of other tests' module-scoped clusters in this
        # worker start executor threads at any time, which says nothing about this test's cleanup.
        return {t for t in threading.enumerate()
                if t.is_alive() and ("poll" in t.name or "grpc" in t.name.lower())} - threads_before

    while new_threads():  # grpc's poller ends with its last object
        if time.monotonic() > deadline:
            pytest.fail(f"threads left running: {new_threads()}")
        gc.collect()
        time.sleep(0.02)
