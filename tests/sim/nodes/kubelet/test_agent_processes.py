"""Node agents running real processes: a python container serving HTTP on its pod IP.

The workload is `lwsconf/sim/nodes/testdata/hello_http.py`, shipped to the pod in a ConfigMap volume
at /app, as a user would. Traffic goes through the API server's pods/NAME:PORT/proxy, logs through
pods/NAME/log, so these tests see what a conformance test sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from lwsconf.kubeclient import client as kc
from lwsconf.sim.nodes.kubelet import probes
from lwsconf.sim.nodes.runtime import runtime
from tests.sim.nodes import kubelet_sim as ks
from tests.sim.nodes.kubelet_sim import NS, pod_body

HELLO = Path(runtime.__file__).parents[1] / "testdata" / "hello_http.py"


def hello_pod(name: str, **extra: object) -> dict[str, object]:
    main = {"name": "main", "image": "python:3.12-slim", "command": ["python3", "/app/hello_http.py"],
            "args": ["--port", "8080"], "ports": [{"containerPort": 8080, "name": "http"}],
            "env": [{"name": "GREETING", "value": "hi $(POD_NAME)"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "volumeMounts": [{"name": "app", "mountPath": "/app"}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1},
            **extra}
    return pod_body(name, containers=[main], volumes=[{"name": "app", "configMap": {"name": "hello"}}])


async def proxy_get(client: kc.Client, pod: str, path: str) -> dict[str, object]:
    answer = await client.request("GET", f"/api/v1/namespaces/{NS}/pods/{pod}:8080/proxy/{path}")
    return answer


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def create_script(client: kc.Client) -> None:
    await client.create(kc.CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "hello", "namespace": NS},
                                        "data": {"hello_http.py": HELLO.read_text()}})


def test_process_container_serves_on_its_pod_ip_and_restarts_after_exit(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await create_script(sim.client)
            await ks.create_bound(sim.client, hello_pod("hello"), "cpu-0")
            pod = await ks.pod_until(sim.client, "hello", ks.is_ready, "Running and Ready (HTTP probe)", timeout=20)
            info = await proxy_get(sim.client, "hello", "")
            assert info["ip"] == pod["status"]["podIP"], info
            env = info["env"]
            assert isinstance(env, dict) and env["GREETING"] == "hi $(POD_NAME)" and env["POD_NAME"] == "hello"
            log = await ks.pod_log(sim.client, "hello")
            assert "listening on" in log, log
            await proxy_get(sim.client, "hello", "exit?code=7")
            pod = await ks.pod_until(sim.client, "hello", lambda p: ks.is_ready(p) and
                                     ks.container(p).get("restartCount") == 1, "restarted and Ready", timeout=20)
            assert ks.container(pod)["lastState"]["terminated"]["exitCode"] == 7
    ks.run(scenario, timeout=90)


def _init_status(pod: dict[str, object] | None, name: str) -> dict[str, object]:
    statuses = ((pod or {}).get("status") or {}).get("initContainerStatuses") or []  # type: ignore[union-attr]
    return next((dict(s) for s in statuses if s.get("name") == name), {})


def test_a_crashed_sidecar_process_restarts_counted_in_init_statuses_while_the_pod_stays_running(
        tmp_path: Path) -> None:
    """A native sidecar (init container with restartPolicy Always) runs as its own process beside the app
    container; when it exits the kubelet starts it again whatever the pod's restartPolicy
    (kuberuntime_container.go `computeInitContainerActions`), its `restartCount` in initContainerStatuses
    rises, and the pod stays Running and Initialized (kubelet_pods.go `getPhase`: a pod whose app containers
    have run is not sent back to Pending) while Ready follows the sidecar's readiness (generate.go). Before,
    the sim wrote Pending and Initialized False while the sidecar was down and kept the pod Ready."""
    sidecar = {**hello_pod("x")["spec"]["containers"][0], "name": "side", "args": ["--port", "8081"],  # type: ignore[index]
               "ports": [{"containerPort": 8081, "name": "side"}], "restartPolicy": "Always",
               "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8081}, "periodSeconds": 1}}
    body = hello_pod("sc")
    body["spec"]["initContainers"] = [sidecar]  # type: ignore[index]

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await create_script(sim.client)
            await ks.create_bound(sim.client, body, "cpu-0")
            pod = await ks.pod_until(sim.client, "sc", lambda p: ks.is_ready(p) and _init_status(p, "side").get(
                "ready") is True, "Ready with its sidecar ready", timeout=30)
            seen: list[tuple[object, ...]] = []

            async def record_until_ready_again() -> None:
                async with contextlib.aclosing(sim.client.watch(
                        ks.PODS, namespace=NS, field_selector="metadata.name=sc",
                        resource_version=pod["metadata"]["resourceVersion"])) as events:
                    async for event in events:
                        side = _init_status(event.object, "side")
                        seen.append((event.object["status"]["phase"], ks.condition(event.object, "Initialized"),
                                     ks.condition(event.object, "Ready"), next(iter(side.get("state") or {}), ""),
                                     side.get("restartCount"), ks.container(event.object).get("restartCount")))
                        if ks.is_ready(event.object) and side.get("restartCount") == 1 and side.get("ready"):
                            return
            watcher = asyncio.create_task(record_until_ready_again())
            await sim.client.request("GET", f"/api/v1/namespaces/{NS}/pods/sc:8081/proxy/exit?code=3")
            try:
                await asyncio.wait_for(watcher, 20)
            except TimeoutError:
                raise AssertionError(f"the sidecar was not seen restarted once and the pod Ready within 20 s: "
                                     f"{seen}") from None
            assert all(s[:2] == ("Running", "True") for s in seen), f"left Running/Initialized: {seen}"
            assert any(s[2] == "False" for s in seen), f"never unready while the sidecar was down: {seen}"
            assert all(s[5] == 0 for s in seen), f"the app container restarted too: {seen}"
            pod = await ks.pod_until(sim.client, "sc", ks.is_ready, "Ready")
            assert _init_status(pod, "side")["lastState"]["terminated"]["exitCode"] == 3  # type: ignore[index]
    ks.run(scenario, timeout=90)


def test_missing_configmap_keeps_container_waiting_with_config_error(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            body = hello_pod("lost", envFrom=[{"configMapRef": {"name": "absent"}}])
            await create_script(sim.client)
            await ks.create_bound(sim.client, body, "cpu-0")
            pod = await ks.pod_until(sim.client, "lost", lambda p: (ks.container(p).get("state") or {}).get(
                "waiting", {}).get("reason") == "CreateContainerConfigError", "waiting on its config")
            assert pod["status"]["phase"] == "Pending" and ks.container(pod)["restartCount"] == 0
            assert "absent" in json.dumps(ks.container(pod)["state"])
    ks.run(scenario, timeout=60)


def test_deleting_or_stopping_leaves_no_process_behind(tmp_path: Path) -> None:
    async def scenario() -> None:
        pids: list[int] = []
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await create_script(sim.client)
            for name in ("gone", "kept"):
                await ks.create_bound(sim.client, hello_pod(name), "cpu-0")
            for name in ("gone", "kept"):
                await ks.pod_until(sim.client, name, ks.is_ready, "Ready", timeout=20)
            agent = sim.running.fleet.agents["cpu-0"]
            for worker in agent.workers.values():
                pids.extend(r.process.pid for r in worker.state.containers if r.process is not None)
            assert len(pids) == 2, pids
            await sim.client.request("DELETE", ks.PODS.object_path("gone", NS),
                                     body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 5})
            await ks.pod_until(sim.client, "gone", lambda p: p is None, "deleted by its kubelet", timeout=10)
            assert sum(alive(p) for p in pids) == 1
        assert [p for p in pids if alive(p)] == [], "processes survived the agent"
    ks.run(scenario, timeout=90)


def test_http_probes_run_on_the_prober_thread_which_ends_with_the_last_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe attempt is timed on the prober's own loop, not on the loop the API server and controllers share
    (`prober.ProbeThread`), and no prober thread outlives the nodes."""
    threads: set[str] = set()
    check = probes.check

    async def recording_check(probe: dict[str, Any], **kwargs: Any) -> probes.ProbeResult:
        threads.add(threading.current_thread().name)
        return await check(probe, **kwargs)

    monkeypatch.setattr(probes, "check", recording_check)

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await create_script(sim.client)
            await ks.create_bound(sim.client, hello_pod("probed"), "cpu-0")
            await ks.pod_until(sim.client, "probed", ks.is_ready, "Ready (HTTP probe)", timeout=20)
            assert threads == {"lwsconf-prober"}, threads
    ks.run(scenario, timeout=90)
    assert [t for t in threading.enumerate() if t.name == "lwsconf-prober"] == [], "prober thread left running"


def pod_watches(sim: ks.Sim) -> int:
    return sum(len(t.watchers) for t in sim.server.ctx.db.tables() if t.key == ("", "pods"))


def test_every_node_shares_the_one_cluster_dns_and_its_watches_end_with_the_fleet(tmp_path: Path) -> None:
    """As a cluster runs one CoreDNS: one pod watch for DNS whatever the number of nodes running processes
    (each agent keeps its own, scoped to its node), and the hosts files of both nodes' pods on one table."""
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await create_script(sim.client)
            for name, node in (("on-gpu", "gpu-0"), ("on-cpu", "cpu-0")):
                await ks.create_bound(sim.client, hello_pod(name), node)
            for name in ("on-gpu", "on-cpu"):
                await ks.pod_until(sim.client, name, ks.is_ready, "Ready", timeout=20)
            nodes = len(sim.running.fleet.specs)

            async def watches() -> int:
                return pod_watches(sim)
            await ks.until(watches, lambda n: n == nodes + 1, f"{nodes} kubelet pod watches and one for DNS")
            fleet = sim.running.fleet
            launchers = [fleet.agents[node].ctx.launcher for node in ("gpu-0", "cpu-0")]  # type: ignore[union-attr]
            assert launchers[0].dns is launchers[1].dns is fleet.dns.table  # type: ignore[union-attr]
            assert fleet.dns.table.hosts_files == 2
        left = [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("informer") and not t.done()]
        assert left == [], left
    ks.run(scenario, timeout=90)


def test_gpu_pod_gets_devices_from_the_fake_plugin_and_unhealthy_devices_leave_allocatable(tmp_path: Path) -> None:
    gpu = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True, device_plugins=True) as sim:
            plugin = await ks.until(lambda: _plugin(sim), lambda p: p is not None and p.registrations > 0,
                                    "fake GPU plugin registered")
            await create_script(sim.client)
            await ks.create_bound(sim.client, hello_pod("gpu", resources=gpu), "gpu-0")
            await ks.pod_until(sim.client, "gpu", ks.is_ready, "Ready", timeout=20)
            env = (await proxy_get(sim.client, "gpu", ""))["env"]
            assert isinstance(env, dict)
            assert plugin.allocate_calls and env["MOCK_NVIDIA_VISIBLE_DEVICES"] == plugin.allocate_calls[0][0]
            plugin.set_health(plugin.device_ids[1], False)
            node = await ks.until(lambda: sim.client.get(ks.NODES, "gpu-0"),
                                  lambda n: n["status"]["allocatable"]["nvidia.com/gpu"] == "1",
                                  "allocatable drops to the healthy count",
                                  show=lambda n: repr((n["status"]["capacity"], n["status"]["allocatable"])))
            assert node["status"]["capacity"]["nvidia.com/gpu"] == "2"
    ks.run(scenario, timeout=90)


async def _plugin(sim: ks.Sim) -> object:
    return sim.running.fleet.plugins.get("gpu-0")
