"""The GPU smoke test's pieces (manifest, preflight, GPU inventory, settings) and its behaviour on sim.

The real test needs GPU nodes; here we check what it would deploy, which clusters it refuses and why,
and (through pytester, as a user would run it) that on the simulator it is NOT_SUPPORTED by default
and SKIPPED with a reason naming the simulated GPUs once GPU-SMOKE is claimed.
"""

from __future__ import annotations

import copy
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from conformance import test_vllm_smoke as smoke
from tests.conftest import SimAPI

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]
CFG = smoke.VLLMConfig()


def node(name: str, gpus: int, *, simulated: bool = False, ready: bool = True, cordoned: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {smoke.SIMULATED_GPU_LABEL: "true"} if simulated else {}},
            "spec": {"unschedulable": True} if cordoned else {},
            "status": {"allocatable": {smoke.GPU: str(gpus)},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(on: str, gpus: int, phase: str = "Running") -> dict[str, Any]:
    return {"spec": {"nodeName": on, "containers": [{"resources": {"limits": {smoke.GPU: str(gpus)}}}]},
            "status": {"phase": phase}}


# --- the workload ----------------------------------------------------------------------------------

def test_default_workload_is_upstreams_example_shape_and_passes_preflight() -> None:
    lws, service = smoke.vllm_manifests("vllm", CFG)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    leader_cmd = lwt["leaderTemplate"]["spec"]["containers"][0]["command"][-1]
    worker_cmd = lwt["workerTemplate"]["spec"]["containers"][0]["command"][-1]
    assert "leader --ray_cluster_size=$(LWS_GROUP_SIZE)" in leader_cmd and f"--model {CFG.model}" in leader_cmd
    assert "worker --ray_address=$(LWS_LEADER_ADDRESS)" in worker_cmd
    assert lwt["size"] == 2 and lwt["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert service["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": "vllm", "role": "leader"}
    assert smoke.preflight_problems(lws) == []
    assert "env" not in lwt["workerTemplate"]["spec"]["containers"][0], "no HF token unless HF_TOKEN is set"


def test_hf_token_is_read_from_a_secret_not_written_into_the_manifest() -> None:
    lws, _ = smoke.vllm_manifests("vllm", smoke.VLLMConfig(hf_token=True))
    env = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}]


def test_preflight_accepts_upstreams_405b_layout() -> None:
    lws, _ = smoke.vllm_manifests("vllm", smoke.VLLMConfig(gpus_per_pod=8, tensor_parallel=8, pipeline_parallel=2))
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    leader["command"][-1] = leader["command"][-1].replace("--pipeline-parallel-size", "--pipeline_parallel_size")
    assert smoke.preflight_problems(lws) == []


def test_preflight_names_each_way_the_group_could_never_form() -> None:
    lws, _ = smoke.vllm_manifests("vllm", smoke.VLLMConfig(tensor_parallel=2, pipeline_parallel=2))
    assert any("TP x PP = 2 x 2 = 4 but the group has 2 pods x 1 GPUs = 2" in p for p in smoke.preflight_problems(lws))
    bad = copy.deepcopy(smoke.vllm_manifests("vllm", CFG)[0])
    lwt = bad["spec"]["leaderWorkerTemplate"]
    leader = lwt["leaderTemplate"]["spec"]
    leader["containers"][0]["command"][-1] = leader["containers"][0]["command"][-1].replace(
        "$(LWS_GROUP_SIZE)", "3")
    lwt["workerTemplate"]["spec"]["volumes"] = []
    lwt["workerTemplate"]["spec"]["containers"][0]["resources"]["limits"][smoke.GPU] = "2"
    problems = " | ".join(smoke.preflight_problems(bad))
    assert "Ray cluster size 3 != group size 2" in problems
    assert "worker pods have no memory-backed /dev/shm" in problems
    assert "leader and worker request different GPU counts" in problems


# --- where it can run ------------------------------------------------------------------------------

def test_simulated_unready_and_cordoned_gpu_nodes_do_not_count() -> None:
    inv = smoke.gpu_inventory([node("sim", 8, simulated=True), node("down", 8, ready=False),
                               node("cordoned", 8, cordoned=True), node("cpu", 0)], [], 1)
    assert inv.real == {} and inv.simulated == ("sim",) and inv.slots == 0
    reason = smoke.skip_reason(inv, CFG)
    assert reason is not None and "1 node(s) carry lwsconf.dev/simulated-gpu=true" in reason


def test_gpus_in_use_are_subtracted_and_finished_pods_are_not() -> None:
    inv = smoke.gpu_inventory([node("a", 2), node("b", 1)], [pod("a", 1), pod("b", 1), pod("b", 1, "Succeeded")], 1)
    assert inv.real == {"a": 1, "b": 0} and inv.slots == 1
    reason = smoke.skip_reason(inv, CFG)
    assert reason is not None and "needs 2 pods" in reason and "room for 1" in reason
    assert smoke.skip_reason(smoke.gpu_inventory([node("a", 2)], [], 1), CFG) is None


def test_settings_come_from_the_environment_with_consistent_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSCONF_VLLM_MODEL", "facebook/opt-125m")
    monkeypatch.setenv("LWSCONF_VLLM_GROUP_SIZE", "4")
    monkeypatch.setenv("LWSCONF_VLLM_GPUS_PER_POD", "2")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    cfg = smoke.vllm_config()
    assert (cfg.model, cfg.size, cfg.gpus_per_pod, cfg.tensor_parallel, cfg.pipeline_parallel, cfg.hf_token) == (
        "facebook/opt-125m", 4, 2, 2, 4, False)
    monkeypatch.setenv("LWSCONF_VLLM_REPLICAS", "two")
    with pytest.raises(pytest.fail.Exception, match="LWSCONF_VLLM_REPLICAS='two': expected a positive integer"):
        smoke.vllm_config()


# --- talking to it --------------------------------------------------------------------------------

@pytest.fixture
def echo_server() -> Iterator[int]:
    """An OpenAI-ish stand-in on 127.0.0.1 that answers POSTs with what it received."""
    class Echo(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            out = json.dumps({"path": self.path, "received": body, "type": self.headers["Content-Type"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_completion_request_is_posted_as_json_through_the_service_proxy(sim_api: SimAPI, echo_server: int) -> None:
    core_api = client.CoreV1Api(sim_api.api)
    core_api.create_namespaced_service("default", {"metadata": {"name": "vllm-leader"}, "spec": {
        "selector": {"role": "leader"}, "ports": [{"name": "http", "port": smoke.PORT, "targetPort": echo_server}]}})
    client.DiscoveryV1Api(sim_api.api).create_namespaced_endpoint_slice("default", {
        "metadata": {"name": "vllm-leader-1", "labels": {"kubernetes.io/service-name": "vllm-leader"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": echo_server, "protocol": "TCP"}]})
    body = {"model": CFG.model, "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}
    reply = smoke.service_post(sim_api.api, "default", "vllm-leader", "/v1/completions", body, timeout=10)
    assert reply.status == 200 and reply.body == {"path": "/v1/completions", "received": body,
                                                  "type": "application/json"}, reply


def test_an_unreachable_service_is_an_observation_not_a_crash(sim_api: SimAPI) -> None:
    reply = smoke.service_post(sim_api.api, "default", "missing", "/v1/completions", {}, timeout=5)
    assert not reply.ok and reply.status in (0, 404, 503), reply


# --- on the simulator ------------------------------------------------------------------------------

@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PYTHONPATH", str(REPO))

    def go(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(str(REPO / "conformance" / "test_vllm_smoke.py"), "-rs", "-p",
                                             "no:randomly", f"--lwsconf-reports={pytester.path / 'reports'}", *args)
    return go


@pytest.mark.slow
def test_on_sim_it_is_not_supported_unless_gpu_smoke_is_claimed(run: Any) -> None:
    result = run()
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*NOT_SUPPORTED: the implementation does not claim VLLMMultiNode*"])


@pytest.mark.slow
def test_on_sim_it_is_skipped_because_its_gpus_are_simulated(run: Any) -> None:
    result = run("--profiles=GPU-SMOKE")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*GPU-SMOKE needs real GPU nodes*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
