"""The GPU acceptance test as a user meets it on the simulator, and its preflight refusing wrong manifests.

Why: the `[vllm]` case needs real GPUs, so here we check (through pytester, as a user would run it) what
the sim does with both cases: `[emulator]` runs by default (LWS-SERVING) and passes on the sim's fake GPUs,
`[vllm]` is NOT_SUPPORTED unless GPU-SMOKE is claimed, then SKIPPED naming the simulated GPUs, and passes
with the emulator standing in (`--vllm-stand-in=emulator`: the whole GPU path on the sim). Wrong settings
fail before anything is deployed, with every reason: as a user sees it (pytester) and, on an embedded sim,
with the namespace shown empty afterwards. The readiness wait is ModelReady, shown on a server still loading
its model. The pure parts are tested in tests/serving/test_vllm.py.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from conformance import gpu_serving
from conformance.harness import LWSHarness
from fixtures.implementations import bundled
from lwsconf import workloads
from lwsconf.reconciler import run as reconciler_run
from lwsconf.serving import servers, vllm
from lwsconf.waits import core, observe
from tests import sim_e2e

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    for var in [v for _, _, v, _ in vllm.SETTINGS] + ["HF_TOKEN"]:
        monkeypatch.delenv(var, raising=False)

    def go(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(str(REPO / "conformance" / "test_vllm_smoke.py"), "-rs", "-p",
                                             "no:randomly", "-n", "0",
                                             f"--lwsconf-reports={pytester.path / 'reports'}", *args)
    return go


@pytest.mark.slow
def test_on_sim_the_emulator_case_passes_and_vllm_is_not_supported_by_default(run: Any) -> None:
    result = run()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*NOT_SUPPORTED: the implementation does not claim VLLMMultiNode*"])
    junit = next((Path(result.stdout.str().split("generated xml file: ")[1].split()[0])).parent.glob("junit.xml"))
    text = junit.read_text()
    for prop in ("server", "image", "imageID", "gpusPerNode", "timeToFirstReadySeconds",
                 "completionLatencySeconds", "tokensPerSecond"):
        assert f'property name="{prop}"' in text, (prop, text)
    assert 'name="gpusPerNode" value="' in text and "=1," in text, text


@pytest.mark.slow
def test_on_sim_vllm_is_skipped_because_its_gpus_are_simulated(run: Any) -> None:
    result = run("--profiles=GPU-SMOKE", "--serving-server=vllm")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*SKIPPED*GPU-SMOKE needs real GPU nodes*simulated-gpu=true*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.slow
def test_on_sim_the_emulator_standing_in_for_vllm_runs_the_gpu_path_and_the_report_says_so(run: Any) -> None:
    result = run("--profiles=GPU-SMOKE", "--serving-server=vllm", "--vllm-stand-in=emulator")
    result.assert_outcomes(passed=1, skipped=1)
    junit = next((Path(result.stdout.str().split("generated xml file: ")[1].split()[0])).parent.glob("junit.xml"))
    props = dict(re.findall(r'property name="([^"]+)" value="([^"]*)"', junit.read_text()))
    assert props["server"] == "emulator standing in for vllm", props
    nodes = dict(pair.split("=") for pair in props["podNodes"].split(","))
    assert set(nodes) == {"vllm-0", "vllm-0-1"} and len(set(nodes.values())) == 2, props
    assert props["ranksByPod"] == "vllm-0=0;vllm-0-1=1" and props["gpusPerNode"].count("=1") == 2, props


@pytest.mark.slow
def test_tp_times_pp_not_matching_the_group_fails_before_deploying_with_the_reason(run: Any) -> None:
    result = run("--vllm-tensor-parallel=2")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*emulator settings cannot work here (nothing was created):*",
                                 "*TP x PP = 2 x 2 = 4 but the group has 2 pods x 1 GPUs = 2*"])


def test_an_unknown_serving_server_is_a_usage_error(run: Any) -> None:
    result = run("--serving-server=tgi", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--serving-server 'tgi': choose one of emulator, vllm*"])


# --- preflight against an embedded sim -------------------------------------------------------------

@pytest.fixture(scope="module")
def sim() -> Iterator[sim_e2e.Sim]:
    with sim_e2e.running_cluster() as running:
        bundled.install_crd(running.api, running.t)
        yield running


@pytest.fixture
def harness(sim: sim_e2e.Sim, request: pytest.FixtureRequest) -> Iterator[LWSHarness]:
    with sim_e2e.fresh_namespace(sim, request.node.name, probe_configmap=False) as ns:
        yield LWSHarness(sim.api, ns, sim.t)


def _nothing_created(h: LWSHarness) -> None:
    def names(items: Any) -> list[str]:
        return [o["metadata"]["name"] for o in observe.raw(items)["items"]]

    assert names(h.custom.list_namespaced_custom_object(workloads.GROUP, workloads.VERSION, h.namespace,
                                                        workloads.PLURAL, _preload_content=False)) == []
    assert [n for n in names(h.core.list_namespaced_config_map(h.namespace, _preload_content=False))
            if n != "kube-root-ca.crt"] == []
    assert names(h.core.list_namespaced_service(h.namespace, _preload_content=False)) == []


def test_more_pods_than_gpu_nodes_fails_before_deploying(harness: LWSHarness) -> None:
    cfg = vllm.VLLMConfig(replicas=3, size=2)  # 6 pods of 1 GPU: 32 fake GPUs, but one pod per node on 4 nodes
    with pytest.raises(pytest.fail.Exception) as failed:
        gpu_serving.deploy(harness, vllm.EmulatedVLLMServer.of(cfg), cfg, "vllm")
    message = str(failed.value)
    assert "emulator settings cannot work here (nothing was created)" in message
    assert "not enough GPU nodes: 6 pods (3 group(s) x size 2) of 1 nvidia.com/gpu each, one pod per node" in message
    assert "but 4 GPU node(s) have 1 free" in message, message
    _nothing_created(harness)


def test_every_problem_of_a_wrong_manifest_is_listed_before_deploying(harness: LWSHarness) -> None:
    cfg = vllm.VLLMConfig(size=2, tensor_parallel=1, pipeline_parallel=3, gpus_per_pod=9)
    with pytest.raises(pytest.fail.Exception) as failed:
        gpu_serving.deploy(harness, vllm.EmulatedVLLMServer.of(cfg), cfg, "vllm")
    message = str(failed.value)
    assert "TP x PP = 1 x 3 = 3 but the group has 2 pods x 9 GPUs = 18" in message, message
    assert "GPU-SMOKE needs GPU nodes: none is Ready and schedulable with allocatable nvidia.com/gpu >= 9" in message
    _nothing_created(harness)


def test_the_gpu_room_reading_sees_the_sims_fake_gpus(harness: LWSHarness) -> None:
    nodes = observe.raw(client.CoreV1Api(harness.api).list_node(_preload_content=False))["items"]
    fake = sorted(n["metadata"]["name"] for n in nodes
                  if (n["metadata"].get("labels") or {}).get(vllm.SIMULATED_GPU_LABEL) == "true")
    assert fake, "the default sim layout has GPU nodes"
    gpu_serving.preflight(harness.api, vllm.EmulatedVLLMServer.of(vllm.VLLMConfig()),
                          vllm.EmulatedVLLMServer.of(vllm.VLLMConfig()).lws("vllm", replicas=1, size=2),
                          vllm.VLLMConfig())  # fits: no failure
    with pytest.raises(pytest.fail.Exception, match="GPU-SMOKE needs real GPU nodes"):
        gpu_serving.preflight(harness.api, vllm.VLLMServer.of(vllm.VLLMConfig()),
                              vllm.VLLMServer.of(vllm.VLLMConfig()).lws("vllm", replicas=1, size=2),
                              vllm.VLLMConfig())


def _deploy(harness: LWSHarness, server: servers.ServingServer, manifest: dict[str, Any]) -> Any:
    """The server's ConfigMaps, the LWS `manifest` (named vllm) and its leader Service; the readiness check."""
    for obj in server.objects():
        harness.core.create_namespaced_config_map(harness.namespace, obj)  # type: ignore[arg-type]
    harness.create(manifest)
    service = servers.leader_service("vllm", server.port)
    harness.core.create_namespaced_service(harness.namespace, service)  # type: ignore[arg-type]
    return gpu_serving.ready_check(harness, server, "vllm-leader", "vllm")


def test_the_readiness_wait_quotes_the_leaders_progress_until_its_group_is_complete(
        sim: sim_e2e.Sim, harness: LWSHarness) -> None:
    """Workers held Pending (a nodeSelector no node has): the leader waits for its group, /health is 503, and
    the wait's reason, which its progress lines show, quotes the leader log's rendezvous line."""
    server = vllm.EmulatedVLLMServer.of(vllm.VLLMConfig())
    manifest = workloads.edit_templates(
        server.lws("vllm", replicas=1, size=2),
        lambda t: t["spec"].__setitem__("nodeSelector", {workloads.PARKED_LABEL: "true"}), leader=False)
    with reconciler_run.RunningReconciler(sim.kubeconfig):
        check = _deploy(harness, server, manifest)

        def quoted() -> str:
            try:
                check()
            except core.NotYet as exc:
                if "leader log: " in str(exc) and "leader of a group of 2" in str(exc):
                    return str(exc)
                raise
            raise AssertionError("ready with its only worker Pending")

        reason = core.wait_until(quoted, what="the readiness reason to quote the leader's log",
                                 timeout=sim.t.lws_available, poll=sim.t.poll_interval)
    assert reason.startswith("leader log: lwsconf-emulator: leader of a group of 2, pod vllm-0") and \
        "| /health: HTTP 503" in reason, reason


def test_the_readiness_wait_is_model_ready_and_quotes_the_model_loading(sim: sim_e2e.Sim, harness: LWSHarness) -> None:
    """A server whose group has formed but whose model is still loading: the wait's reason quotes the leader's
    loading progress, and it is bounded by ModelReady (here 3 s, with LwsAvailable left at 60 s), whose name
    its failure gives. Before issue 32 this wait was bounded by LwsAvailable."""
    server = dataclasses.replace(vllm.EmulatedVLLMServer.of(vllm.VLLMConfig()), load_seconds=600)
    with reconciler_run.RunningReconciler(sim.kubeconfig):
        check = _deploy(harness, server, server.lws("vllm", replicas=1, size=2))

        def loading() -> str:
            try:
                check()
            except core.NotYet as exc:
                if "Loading safetensors checkpoint shards" in str(exc):
                    return str(exc)
                raise
            raise AssertionError("ready while its model loads for 600 s")

        reason = core.wait_until(loading, what="the readiness reason to quote the model loading",
                                 timeout=sim.t.lws_available, poll=sim.t.poll_interval)
        assert "| /health: HTTP 503" in reason, reason
        short = LWSHarness(harness.api, harness.namespace, dataclasses.replace(sim.t, model_ready=3.0))
        with pytest.raises(AssertionError) as timed_out:
            gpu_serving.model_must_serve(short, server, "vllm-leader", "vllm")
    message = str(timed_out.value)
    assert "(timeout model_ready)" in message and "limit 3s" in message, message[:2000]
    assert "Loading safetensors checkpoint shards" in message, "the failure shows the leader's log tail"
