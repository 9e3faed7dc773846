"""Node agents against the real API server: registration, pod lifecycle, chaos, deletion, logs, lease.

Each test starts an API server and one agent per node of a two-node layout (one GPU node, one CPU
node) inside `asyncio.run`, binds pods itself (no scheduler here) and polls the API for the outcome.
Containers are emulated by the `fast` and `chaos` stage sets; `test_agent_processes.py` runs real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from lwsconf.kubeclient import client as kc
from lwsconf.sim import nodes
from lwsconf.sim.nodes import layout
from lwsconf.sim.nodes.kubelet import lease as lease_mod
from lwsconf.sim.nodes.network import ipam
from tests.sim.nodes import kubelet_sim as ks
from tests.sim.nodes.kubelet_sim import NS, pod_body


def test_node_registers_with_layout_capacity_gpu_labels_and_addresses(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            gpu = await sim.client.get(ks.NODES, "gpu-0")
            labels, status = gpu["metadata"]["labels"], gpu["status"]
            assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
            assert labels["nvidia.com/gpu.count"] == "2" and labels["nvidia.com/gpu.present"] == "true"
            assert labels[layout.ZONE_LABEL] == "zone-a" and labels[layout.HOSTNAME_LABEL] == "gpu-0"
            assert status["capacity"]["nvidia.com/gpu"] == "2" == status["allocatable"]["nvidia.com/gpu"]
            assert status["capacity"]["cpu"] == "8" and status["capacity"]["pods"] == "20"
            net = ipaddress.ip_network(sim.network)
            addresses = {a["type"]: a["address"] for a in status["addresses"]}
            assert addresses == {"InternalIP": str(net.network_address + 1), "Hostname": "gpu-0"}
            assert gpu["spec"]["podCIDR"] == str(ipaddress.ip_network(f"{net.network_address + 256}/24"))
            assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
            assert ks.condition(gpu, "Ready") == "True"
            cpu = await sim.client.get(ks.NODES, "cpu-0")
            assert "nvidia.com/gpu" not in cpu["status"]["capacity"]
            assert "nvidia.com/gpu.present" not in cpu["metadata"]["labels"]
    ks.run(scenario)


def test_bound_pods_become_running_and_ready_with_unique_pod_ips(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, pod_body("a"), "gpu-0")
            first = await ks.pod_until(sim.client, "a", ks.is_ready, "Running and Ready")
            await ks.create_bound(sim.client, pod_body("b"), "gpu-0")
            await ks.create_bound(sim.client, pod_body("c"), "cpu-0")
            second = await ks.pod_until(sim.client, "b", ks.is_ready, "Running and Ready")
            third = await ks.pod_until(sim.client, "c", ks.is_ready, "Running and Ready")
            octet = ipaddress.ip_network(sim.network).network_address.packed[1]
            ips = [p["status"]["podIP"] for p in (first, second, third)]
            assert len(set(ips)) == 3, ips
            assert ips[0].startswith(f"127.{octet}.1.") and ips[1].startswith(f"127.{octet}.1.")
            assert ips[2].startswith(f"127.{octet}.2.")
            assert first["status"]["hostIP"] == f"127.{octet}.0.1" and third["status"]["hostIP"] == f"127.{octet}.0.2"
            assert first["status"]["podIPs"] == [{"ip": ips[0]}] and first["status"]["startTime"]
            for ctype in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
                assert ks.condition(first, ctype) == "True", ks.describe(first)
            status = ks.container(first)
            assert status["ready"] and status["started"] and status["restartCount"] == 0
            assert "running" in status["state"] and status["containerID"].startswith("containerd://")
            assert status["imageID"].startswith("nginx@sha256:") and status["lastState"] == {}
            assert first["status"]["qosClass"] == "BestEffort"
            # Ready at once: the fast stages delay nothing (test_lifecycle.py checks that on the stage data, not
            # with a stopwatch here: design rule 7)
            await ks.until(lambda: ks.events_for(sim.client, "a"),
                           lambda found: {"Pulled", "Created", "Started"} <= {r for r, _ in found},
                           "Pulled, Created and Started events")
    ks.run(scenario)


def test_failing_readiness_probe_keeps_pod_unready_until_it_recovers(tmp_path: Path) -> None:
    probe = {"exec": {"command": ["true"]}, "periodSeconds": 1, "failureThreshold": 1}
    main = {"name": "main", "image": "nginx:1.27", "readinessProbe": probe}
    body = pod_body("unready", containers=[main], annotations={"chaos.lwsconf.dev/fail-readiness": "main"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, body, "cpu-0")
            pod = await ks.pod_until(sim.client, "unready", lambda p: bool(ks.container(p).get("started")),
                                     "container started")
            pod = await ks.stays(lambda: ks.get_pod(sim.client, "unready"),
                                 lambda p: p["status"]["phase"] == "Running" and ks.condition(p, "Ready") == "False",
                                 "Running but not Ready over several probe rounds", show=ks.describe)
            assert ks.condition(pod, "ContainersReady") == "False" and ks.container(pod)["ready"] is False
            await sim.client.patch(ks.PODS, "unready", {"metadata": {"annotations": {
                "chaos.lwsconf.dev/fail-readiness": None}}}, namespace=NS)
            await ks.pod_until(sim.client, "unready", ks.is_ready, "Ready after the annotation is removed",
                               timeout=5)
    ks.run(scenario)


def test_crashed_container_is_reported_terminated_and_not_ready_before_its_restart(tmp_path: Path) -> None:
    """Kubelet.SyncPod sets the pod status it found, then the runtime restarts the container (kubelet.go):
    the API shows the crash (terminated, not Ready) before the restarted instance, so endpoints drop the pod
    before a new process can listen behind it."""
    body = pod_body("crash", annotations={"chaos.lwsconf.dev/crash-container": "main",
                                          "chaos.lwsconf.dev/exit-code": "42"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            seen: list[tuple[str, bool | None, int | None, str | None]] = []

            async def record_until_ready_again() -> None:
                async with contextlib.aclosing(sim.client.watch(
                        ks.PODS, namespace=NS, field_selector="metadata.name=crash")) as events:
                    async for event in events:
                        status = ks.container(event.object)
                        if status:
                            state = next(iter(status.get("state") or {}), "")
                            seen.append((state, status.get("ready"), status.get("restartCount"),
                                         ks.condition(event.object, "Ready")))
                        if seen and seen[-1] == ("running", True, 1, "True"):
                            return
            watcher = asyncio.create_task(record_until_ready_again())
            await ks.create_bound(sim.client, body, "gpu-0")
            try:
                await asyncio.wait_for(watcher, 15)
            except TimeoutError:
                raise AssertionError(f"the pod was not seen restarted once and Ready within 15 s: {seen}") from None
            restarted = next(i for i, s in enumerate(seen) if s[2] == 1)
            assert ("terminated", False, 0, "False") in seen[:restarted], (
                f"no status showed the crashed container terminated and the pod not Ready before the restart: "
                f"{seen}")
    ks.run(scenario)


def test_chaos_crash_restarts_container_under_restart_policy_always(tmp_path: Path) -> None:
    body = pod_body("crash", annotations={"chaos.lwsconf.dev/crash-container": "main",
                                          "chaos.lwsconf.dev/exit-code": "42"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, body, "gpu-0")
            pod = await ks.pod_until(sim.client, "crash", lambda p: ks.is_ready(p) and
                                     ks.container(p).get("restartCount") == 1, "restarted once and Ready")
            status = ks.container(pod)
            assert status["lastState"]["terminated"]["exitCode"] == 42
            assert status["lastState"]["terminated"]["reason"] == "Error"
            assert "running" in status["state"]
            await ks.stays(lambda: ks.get_pod(sim.client, "crash"), lambda p: ks.container(p)["restartCount"] == 1,
                           "no second crash (crash-times defaults to 1)", show=ks.describe)
            previous = await ks.pod_log(sim.client, "crash", previous="true")
            assert "lwsconf chaos: container main crashing" in previous
    ks.run(scenario)


def test_chaos_crash_under_restart_policy_never_fails_the_pod(tmp_path: Path) -> None:
    body = pod_body("never", restart_policy="Never", annotations={"chaos.lwsconf.dev/crash-container": "main",
                                                                  "chaos.lwsconf.dev/exit-code": "3"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, body, "cpu-0")
            pod = await ks.pod_until(sim.client, "never",
                                     lambda p: (p or {}).get("status", {}).get("phase") == "Failed", "phase Failed")
            status = ks.container(pod)
            assert status["state"]["terminated"]["exitCode"] == 3 and status["restartCount"] == 0
            assert ks.condition(pod, "Ready") == "False"
    ks.run(scenario)


def test_crash_loop_backs_off_and_counts_restarts(tmp_path: Path) -> None:
    body = pod_body("loop", annotations={"chaos.lwsconf.dev/crash-container": "main",
                                         "chaos.lwsconf.dev/crash-times": "3"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, body, "cpu-0")
            pod = await ks.pod_until(sim.client, "loop", lambda p: ks.is_ready(p) and
                                     ks.container(p).get("restartCount") == 3, "three restarts, then Ready")
            assert ks.container(pod)["lastState"]["terminated"]["exitCode"] == 1
            await ks.until(lambda: ks.events_for(sim.client, "loop"),
                           lambda found: "BackOff" in [r for r, _ in found], "a BackOff event")
    ks.run(scenario)


def test_pod_fail_chaos_ends_in_failed_phase(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, pod_body("doomed"), "cpu-0")
            await ks.pod_until(sim.client, "doomed", ks.is_ready, "Ready")
            await sim.client.patch(ks.PODS, "doomed", {"metadata": {"labels": {"chaos.lwsconf.dev/fail-pod": "true"}}},
                                   namespace=NS)
            pod = await ks.pod_until(sim.client, "doomed",
                                     lambda p: (p or {}).get("status", {}).get("phase") == "Failed", "phase Failed")
            assert pod["status"]["reason"] == "Evicted"
            assert ks.container(pod)["state"]["terminated"]["exitCode"] == 137
    ks.run(scenario)


def test_graceful_delete_is_finished_by_the_agent(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, pod_body("bye"), "gpu-0")
            await ks.pod_until(sim.client, "bye", ks.is_ready, "Ready")
            await sim.client.request("DELETE", ks.PODS.object_path("bye", NS),
                                     body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 30})
            await ks.pod_until(sim.client, "bye", lambda p: p is None, "deleted by its kubelet", timeout=5)
            await ks.until(lambda: ks.events_for(sim.client, "bye"),
                           lambda found: "Killing" in [r for r, _ in found], "a Killing event")
    ks.run(scenario)


def test_a_deletion_that_lands_while_a_status_write_is_in_flight_is_still_carried_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The status patch's answer is older than a deletion the watch has already delivered; the agent must not take
    it as the pod (it did, and the pod stayed Terminating with its containers running: issue 30's local flakes)."""
    original = kc.Client.patch
    raced: list[str] = []

    async def patch_then_delete(self: kc.Client, gvr: kc.GVR, name: str, body: object, **kwargs: Any) -> Any:
        answer = await original(self, gvr, name, body, **kwargs)
        if name == "race" and kwargs.get("subresource") == "status" and not raced:
            raced.append(name)
            await self.request("DELETE", ks.PODS.object_path("race", NS),
                               body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 30})
            worker = next(w for a in fleet.agents.values() for w in a.workers.values() if w.key.endswith("/race"))
            await ks.until(_async(lambda: (worker.pod.get("metadata") or {}).get("deletionTimestamp")), bool,
                           "the agent's watch to deliver the deletion")
        return answer  # as the pod was before the deletion

    async def scenario() -> None:
        nonlocal fleet
        async with ks.sim_with_nodes(tmp_path) as sim:
            fleet = sim.running.fleet
            monkeypatch.setattr(kc.Client, "patch", patch_then_delete)
            await ks.create_bound(sim.client, pod_body("race"), "gpu-0")
            await ks.pod_until(sim.client, "race", lambda p: p is None, "deleted by its kubelet", timeout=10)
            assert raced, "no status write of pod race was raced with its deletion"
    fleet: Any = None
    ks.run(scenario)


def _async(read: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    async def call() -> Any:
        return read()
    return call


def test_admission_rejects_a_pod_that_does_not_fit_the_node(tmp_path: Path) -> None:
    greedy = {"name": "main", "image": "nginx:1.27",
              "resources": {"limits": {"nvidia.com/gpu": "3"}, "requests": {"nvidia.com/gpu": "3"}}}

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, pod_body("greedy", containers=[greedy]), "gpu-0")
            pod = await ks.pod_until(sim.client, "greedy",
                                     lambda p: (p or {}).get("status", {}).get("phase") == "Failed", "rejected")
            assert pod["status"]["reason"] == "OutOfnvidia.com/gpu"
            assert "requested: 3" in pod["status"]["message"] and "capacity: 2" in pod["status"]["message"]
    ks.run(scenario)


def test_init_containers_complete_before_app_containers_start(tmp_path: Path) -> None:
    inits = [{"name": "setup-a", "image": "busybox:1.36"}, {"name": "setup-b", "image": "busybox:1.36"}]

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, pod_body("init", init_containers=inits), "cpu-0")
            pod = await ks.pod_until(sim.client, "init", ks.is_ready, "Ready")
            for status in pod["status"]["initContainerStatuses"]:
                assert status["state"]["terminated"]["reason"] == "Completed", ks.describe(pod)
            starts = [s["state"]["terminated"]["finishedAt"] for s in pod["status"]["initContainerStatuses"]]
            assert starts == sorted(starts)
            assert ks.condition(pod, "Initialized") == "True"
    ks.run(scenario)


def test_pod_logs_are_served_through_the_api_server(tmp_path: Path) -> None:
    body = pod_body("talk", annotations={"chaos.lwsconf.dev/crash-container": "main"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, body, "gpu-0")
            await ks.pod_until(sim.client, "talk", lambda p: ks.container(p).get("restartCount") == 1, "restarted")
            assert await ks.pod_log(sim.client, "talk") == ""
            previous = await ks.pod_log(sim.client, "talk", previous="true", timestamps="true")
            stamp, _, text = previous.strip().partition(" ")
            assert text == "lwsconf chaos: container main crashing" and stamp.endswith("Z"), previous
            assert await ks.pod_log(sim.client, "talk", previous="true", tailLines="0") == ""
            assert await ks.pod_log(sim.client, "talk", previous="true", limitBytes="7") == "lwsconf"
    ks.run(scenario)


def test_lease_is_created_and_renewed(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            lease = await ks.until(lambda: ks.get_or_none(sim.client, ks.LEASES, "cpu-0", "kube-node-lease"),
                                   lambda found: found is not None, "lease exists")
            assert lease["spec"]["holderIdentity"] == "cpu-0" and lease["spec"]["leaseDurationSeconds"] == 40
            assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
            agent = sim.running.fleet.agents["cpu-0"]
            assert agent.lease.renew_interval == 1.0  # the fast set's leaseRenewIntervalSeconds
            quick = lease_mod.NodeLease(sim.client, "cpu-0", renew_interval=0.05)
            stop = asyncio.Event()
            task = asyncio.create_task(quick.run(stop))
            seen = {lease["spec"]["renewTime"]}
            for _ in range(3):
                renewed = await ks.until(
                    lambda: sim.client.get(ks.LEASES, "cpu-0", namespace="kube-node-lease"),
                    lambda current: current["spec"]["renewTime"] not in seen, "renewTime moves on")
                seen.add(renewed["spec"]["renewTime"])
            stop.set()
            await task
            assert quick.renewals >= 3 and len(seen) == 4
    ks.run(scenario)


def test_stopping_the_agents_leaves_no_tasks_behind(tmp_path: Path) -> None:
    async def scenario() -> None:
        baseline = {t for t in asyncio.all_tasks()}
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, pod_body("x"), "gpu-0")
            await ks.pod_until(sim.client, "x", ks.is_ready, "Ready")
            assert len(asyncio.all_tasks()) > len(baseline) + 3
        await asyncio.sleep(0)
        left = [t for t in asyncio.all_tasks() if t not in baseline and not t.done()]
        assert left == [], [t.get_name() for t in left]
    ks.run(scenario)


def test_a_restarted_agent_adopts_its_pods_and_keeps_their_ips(tmp_path: Path) -> None:
    async def scenario() -> None:
        reservation = ipam.reserve_pod_network()
        try:
            async with ks.sim_with_nodes(tmp_path / "first", pod_network=reservation.network) as sim:
                await ks.create_bound(sim.client, pod_body("stay"), "cpu-0")
                before = await ks.pod_until(sim.client, "stay", ks.is_ready, "Ready")
                await sim.running.stop()  # the kubelet goes away; the pod stays in the API
                sim.running = await nodes.start_nodes(sim.factory, ks.small_layout(), workdir=tmp_path / "second",
                                                      pod_network=reservation.network, processes=False,
                                                      device_plugins=False)
                after = await ks.pod_until(sim.client, "stay", lambda p: ks.is_ready(p) and
                                           ks.container(p).get("restartCount") == 1, "Ready again, restarted once")
                assert after["status"]["podIP"] == before["status"]["podIP"]
                assert after["status"]["startTime"] == before["status"]["startTime"]
        finally:
            reservation.release()
    ks.run(scenario)


def test_general_stages_pass_through_pending_with_an_ip_and_pull_events(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, stage_set="general") as sim:
            await ks.create_bound(sim.client, pod_body("slow"), "cpu-0")
            pending = await ks.pod_until(sim.client, "slow", lambda p: bool((p or {}).get("status", {}).get("podIP")),
                                         "an IP while the image is pulled")
            assert pending["status"]["phase"] == "Pending", ks.describe(pending)
            assert ks.container(pending)["state"]["waiting"]["reason"] == "ContainerCreating"
            await ks.pod_until(sim.client, "slow", ks.is_ready, "Ready after the pull", timeout=10)
            events = await ks.until(lambda: ks.events_for(sim.client, "slow"),
                                    lambda found: "Started" in [r for r, _ in found], "a Started event")
            reasons = [r for r, _ in events]
            assert reasons.index("Pulling") < reasons.index("Started"), reasons
    ks.run(scenario)


def test_a_per_pod_delay_annotation_slows_its_termination(tmp_path: Path) -> None:
    body = pod_body("lingers", annotations={"pod-delete.stage.lwsconf.dev/delay": "600ms"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, body, "cpu-0")
            await ks.pod_until(sim.client, "lingers", ks.is_ready, "Ready")
            started = time.monotonic()
            await sim.client.delete(ks.PODS, "lingers", namespace=NS)
            terminating = await ks.get_pod(sim.client, "lingers")
            assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
            await ks.pod_until(sim.client, "lingers", lambda p: p is None, "deleted", timeout=5)
            assert time.monotonic() - started >= 0.55
    ks.run(scenario)


def test_failing_liveness_probe_kills_and_restarts_the_container(tmp_path: Path) -> None:
    probe = {"tcpSocket": {"port": 80}, "periodSeconds": 1, "failureThreshold": 1}
    main = {"name": "main", "image": "nginx:1.27", "livenessProbe": probe}
    body = pod_body("sick", containers=[main], annotations={"chaos.lwsconf.dev/fail-liveness": "main"})

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path) as sim:
            await ks.create_bound(sim.client, body, "cpu-0")
            pod = await ks.pod_until(sim.client, "sick", lambda p: ks.container(p).get("restartCount", 0) >= 2,
                                     "restarted by its liveness probe")
            assert ks.container(pod)["lastState"]["terminated"]["exitCode"] == 137
            await ks.until(lambda: ks.events_for(sim.client, "sick"),
                           lambda found: ("Killing", "Container main failed liveness probe, will be restarted")
                           in found, "a Killing event naming the liveness probe")
            await sim.client.patch(ks.PODS, "sick", {"metadata": {"annotations": {
                "chaos.lwsconf.dev/fail-liveness": None}}}, namespace=NS)
            await ks.pod_until(sim.client, "sick", ks.is_ready, "Ready once the probe passes again")
    ks.run(scenario)
