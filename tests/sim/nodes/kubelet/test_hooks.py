"""preStop hooks as the kubelet runs them (pkg/kubelet/kuberuntime killContainer): the hook comes before
SIGTERM, is cut at the grace period, leaves at least 2 s for stopping, and a failure is an event."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lwsconf.sim.nodes.kubelet import hooks
from tests.sim.nodes import kubelet_sim as ks
from tests.sim.nodes.kubelet.test_agent_processes import create_script, hello_pod, proxy_get
from tests.sim.nodes.kubelet_sim import NS


def test_sleep_hook_is_cut_at_the_grace_period_and_leaves_the_kubelet_minimum() -> None:
    left, failure = asyncio.run(hooks.run_prestop({"sleep": {"seconds": 3600}}, grace=0.2, pod_ip="127.0.0.1",
                                                  container={}, exec_runner=None))
    assert (left, failure) == (hooks.MINIMUM_GRACE_SECONDS, None)


def test_short_sleep_hook_leaves_the_rest_of_the_grace_period() -> None:
    left, failure = asyncio.run(hooks.run_prestop({"sleep": {"seconds": 0}}, grace=30, pod_ip="127.0.0.1",
                                                  container={}, exec_runner=None))
    assert failure is None and hooks.MINIMUM_GRACE_SECONDS < left <= 30


def test_failing_http_hook_reports_why(closed_port: int) -> None:
    handler = {"httpGet": {"path": "/drain", "port": closed_port}}
    _, failure = asyncio.run(hooks.run_prestop(handler, grace=5, pod_ip="127.0.0.1", container={}, exec_runner=None))
    assert failure is not None and "/drain" in failure and "dial tcp" in failure, failure


def test_exec_hook_runs_in_the_container_and_a_non_zero_exit_fails() -> None:
    calls: list[list[str]] = []

    async def runner(argv: object, timeout: float) -> tuple[int, str]:
        calls.append(list(argv))  # type: ignore[call-overload]
        return 3, "drain refused"
    _, failure = asyncio.run(hooks.run_prestop({"exec": {"command": ["drain", "--now"]}}, grace=5,
                                               pod_ip="127.0.0.1", container={}, exec_runner=runner))
    assert calls == [["drain", "--now"]] and failure is not None and "drain refused" in failure


def test_handler_without_an_action_is_a_failure() -> None:
    _, failure = asyncio.run(hooks.run_prestop({}, grace=5, pod_ip="127.0.0.1", container={}, exec_runner=None))
    assert failure is not None and "no action" in failure


def test_terminating_pod_keeps_serving_during_its_prestop_sleep_then_stops(tmp_path: Path) -> None:
    """Deleted with a 30 s grace period and a 30 s preStop sleep: while the hook runs the pod is terminating
    and its process still answers (what a rollout relies on); a deletion with grace 0 then ends it at once."""
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await create_script(sim.client)
            await ks.create_bound(sim.client, hello_pod("drain", lifecycle={"preStop": {"sleep": {"seconds": 30}}}),
                                  "cpu-0")
            await ks.pod_until(sim.client, "drain", ks.is_ready, "Ready", timeout=20)
            await sim.client.request("DELETE", ks.PODS.object_path("drain", NS),
                                     body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 30})
            pod = await ks.pod_until(sim.client, "drain", lambda p: p is not None and bool(
                p["metadata"].get("deletionTimestamp")), "terminating", timeout=10)
            assert ks.container(pod).get("state", {}).get("running") is not None, pod["status"]
            info = await proxy_get(sim.client, "drain", "")
            assert info["ip"] == pod["status"]["podIP"], info
            await sim.client.request("DELETE", ks.PODS.object_path("drain", NS),
                                     body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
            await ks.pod_until(sim.client, "drain", lambda p: p is None, "gone after grace 0", timeout=20)
    ks.run(scenario, timeout=90)
