"""The GPU acceptance run's pure core (`lwsconf/serving/vllm.py`): settings, manifests, preflight, GPU room, summary.

Why: the real run needs GPU nodes, which neither CI nor a laptop has; everything it decides before and
after talking to vLLM is checked here, and the emulated variant must differ from real vLLM only in image,
commands, env, probe and its own ConfigMap mount.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lwsconf import workloads
from lwsconf.serving import servers, vllm

CFG = vllm.VLLMConfig()
Obj = dict[str, Any]


def node(name: str, gpus: int, *, simulated: bool = False, ready: bool = True, cordoned: bool = False) -> Obj:
    return {"metadata": {"name": name, "labels": {vllm.SIMULATED_GPU_LABEL: "true"} if simulated else {}},
            "spec": {"unschedulable": True} if cordoned else {},
            "status": {"allocatable": {vllm.GPU: str(gpus)},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(on: str, gpus: int, phase: str = "Running") -> Obj:
    return {"spec": {"nodeName": on, "containers": [{"resources": {"limits": {vllm.GPU: str(gpus)}}}]},
            "status": {"phase": phase}}


def leader_of(lws: Obj) -> Obj:
    container: Obj = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    return container


def worker_of(lws: Obj) -> Obj:
    container: Obj = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    return container


# --- defaults and settings -------------------------------------------------------------------------

def test_defaults_pin_the_current_vllm_release_by_tag_and_a_model_for_two_pods_of_one_gpu() -> None:
    assert CFG.image == "vllm/vllm-openai:v0.33.0" and ":latest" not in CFG.image
    assert (CFG.size, CFG.replicas, CFG.gpus_per_pod, CFG.tensor_parallel, CFG.pipeline_parallel) == (2, 1, 1, 1, 2)
    assert CFG.model == "Qwen/Qwen2.5-0.5B-Instruct"


def test_options_win_over_variables_which_win_over_defaults_and_tp_pp_follow_the_shape() -> None:
    env = {"LWSCONF_VLLM_MODEL": "facebook/opt-125m", "LWSCONF_VLLM_GROUP_SIZE": "4",
           "LWSCONF_VLLM_GPUS_PER_POD": "2", "LWSCONF_VLLM_IMAGE": "from-env"}
    cfg = vllm.parse_config({"vllm_image": "vllm/vllm-openai:v0.32.0", "vllm_model": None}, env)
    assert (cfg.model, cfg.image, cfg.size, cfg.gpus_per_pod, cfg.tensor_parallel, cfg.pipeline_parallel,
            cfg.hf_token) == ("facebook/opt-125m", "vllm/vllm-openai:v0.32.0", 4, 2, 2, 4, False)
    assert vllm.parse_config({}, {"HF_TOKEN": "x"}).hf_token


def test_a_bad_count_names_the_variable_and_the_option() -> None:
    with pytest.raises(vllm.SettingError,
                       match=r"LWSCONF_VLLM_REPLICAS='two' \(or --vllm-replicas\): expected a positive integer"):
        vllm.parse_config({}, {"LWSCONF_VLLM_REPLICAS": "two"})
    with pytest.raises(vllm.SettingError, match="--vllm-tensor-parallel"):
        vllm.parse_config({"vllm_tensor_parallel": "0"}, {})


# --- the workload ----------------------------------------------------------------------------------

def test_vllm_server_builds_upstreams_example_shape_and_passes_preflight() -> None:
    server = vllm.VLLMServer.of(CFG)
    lws = server.lws("vllm", replicas=1, size=2)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    leader, worker = leader_of(lws), worker_of(lws)
    assert leader["command"][:2] == ["sh", "-c"] and leader["image"] == CFG.image
    assert f"bash {vllm.SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE); " in leader["command"][-1]
    assert f"--model {CFG.model}" in leader["command"][-1] and "--port 8080" in leader["command"][-1]
    assert worker["command"][-1] == f"bash {vllm.SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"
    assert lwt["size"] == 2 and lwt["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert lwt["leaderTemplate"]["metadata"]["labels"] == {"role": "leader"}
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8080}
    assert "readinessProbe" not in worker
    for template in (lwt["leaderTemplate"], lwt["workerTemplate"]):
        spec = template["spec"]
        assert spec["containers"][0]["resources"]["limits"] == {vllm.GPU: "1"}
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}} in spec["volumes"]
        assert {"key": vllm.GPU, "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert vllm.preflight_problems(lws) == []
    assert "env" not in worker and server.objects() == [], "no HF token unless HF_TOKEN is set"
    assert servers.leader_service("vllm", server.port)["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": "vllm", "role": "leader"}


def test_hf_token_goes_into_a_secret_the_pods_read_by_reference() -> None:
    server = vllm.VLLMServer.of(CFG, "hf_secret_value")
    lws = server.lws("vllm", replicas=1, size=2)
    assert worker_of(lws)["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}]
    assert "hf_secret_value" not in str(lws) and "hf_secret_value" not in repr(server)
    assert server.objects()[0]["stringData"] == {"token": "hf_secret_value"}


def test_the_emulated_variant_differs_only_in_image_commands_env_probe_and_its_program_mount() -> None:
    real = vllm.VLLMServer.of(CFG).lws("vllm", replicas=1, size=2, grace_seconds=30)
    emulated = vllm.EmulatedVLLMServer.of(CFG).lws("vllm", replicas=1, size=2, grace_seconds=30)

    def strip(lws: Obj) -> Obj:
        out = copy.deepcopy(lws)
        for role in ("leaderTemplate", "workerTemplate"):
            spec = out["spec"]["leaderWorkerTemplate"][role]["spec"]
            spec["volumes"] = [v for v in spec["volumes"] if v["name"] == "dshm"]
            for c in spec["containers"]:
                for key in ("image", "command", "env", "readinessProbe", "ports"):
                    c.pop(key, None)
                c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] == "dshm"]
        return out

    assert strip(real) == strip(emulated)
    leader = leader_of(emulated)
    assert leader["image"] == workloads.EMULATOR_IMAGE and leader["command"][0] == "python"
    env = {e["name"]: e.get("value") for e in leader["env"]}
    assert (env["LWSCONF_MODEL"], env[vllm.TP_ENV], env[vllm.PP_ENV]) == (CFG.model, "1", "2")
    assert vllm.preflight_problems(emulated) == []
    assert vllm.EmulatedVLLMServer.of(CFG).objects() == [workloads.emulator_configmap()]


def test_answers_are_read_from_openai_bodies_and_only_the_emulator_names_pods() -> None:
    body = {"choices": [{"text": " Paris"}], "usage": {"completion_tokens": 2},
            "lwsconf": {"pod": "vllm-0", "revision": "abc", "group_size": 2}}
    assert vllm.VLLMServer.of(CFG).answer(body) == servers.Answer(None, None, None, " Paris")
    assert vllm.EmulatedVLLMServer.of(CFG).answer(body) == servers.Answer("vllm-0", "abc", 2, " Paris")
    assert vllm.VLLMServer.of(CFG).answer({"kind": "Status"}) is None
    assert vllm.completion_tokens(body) == 2 and vllm.completion_tokens("oops") == 0


# --- preflight -------------------------------------------------------------------------------------

def test_preflight_accepts_upstreams_405b_layout_with_underscore_flags() -> None:
    cfg = vllm.VLLMConfig(gpus_per_pod=8, tensor_parallel=8, pipeline_parallel=2)
    lws = vllm.VLLMServer.of(cfg).lws("vllm", replicas=1, size=2)
    leader = leader_of(lws)
    leader["command"][-1] = leader["command"][-1].replace("--pipeline-parallel-size", "--pipeline_parallel_size")
    assert vllm.preflight_problems(lws) == []


@pytest.mark.parametrize("server", [vllm.VLLMServer.of(vllm.VLLMConfig(tensor_parallel=2, pipeline_parallel=2)),
                                    vllm.EmulatedVLLMServer.of(vllm.VLLMConfig(tensor_parallel=2,
                                                                               pipeline_parallel=2))],
                         ids=["vllm", "emulator"])
def test_preflight_refuses_tp_times_pp_that_does_not_match_the_group(server: Any) -> None:
    problems = vllm.preflight_problems(server.lws("vllm", replicas=1, size=2))
    assert problems == ["TP x PP = 2 x 2 = 4 but the group has 2 pods x 1 GPUs = 2; vLLM would wait for a "
                        "placement group that never fits"]


def test_preflight_names_each_way_the_group_could_never_form() -> None:
    bad = vllm.VLLMServer.of(CFG).lws("vllm", replicas=1, size=2)
    lwt = bad["spec"]["leaderWorkerTemplate"]
    leader_of(bad)["command"][-1] = leader_of(bad)["command"][-1].replace("$(LWS_GROUP_SIZE)", "3")
    lwt["workerTemplate"]["spec"]["volumes"] = []
    worker_of(bad)["resources"]["limits"][vllm.GPU] = "2"
    problems = " | ".join(vllm.preflight_problems(bad))
    assert "Ray cluster size 3 != group size 2" in problems
    assert "worker pods have no memory-backed /dev/shm" in problems
    assert "leader and worker request different GPU counts" in problems


def test_preflight_refuses_a_dev_shm_on_disk() -> None:
    lws = vllm.EmulatedVLLMServer.of(CFG).lws("vllm", replicas=1, size=2)
    for role in ("leaderTemplate", "workerTemplate"):
        spec = lws["spec"]["leaderWorkerTemplate"][role]["spec"]
        spec["volumes"][0]["emptyDir"] = {}
    assert vllm.preflight_problems(lws) == [
        "leader pods have no memory-backed /dev/shm (NCCL needs more than the 64 MB default)",
        "worker pods have no memory-backed /dev/shm (NCCL needs more than the 64 MB default)"]


# --- where it can run ------------------------------------------------------------------------------

def test_simulated_unready_and_cordoned_gpu_nodes_do_not_count_for_vllm() -> None:
    inv = vllm.gpu_inventory([node("sim", 8, simulated=True), node("down", 8, ready=False),
                              node("cordoned", 8, cordoned=True), node("cpu", 0)], [], 1)
    assert inv.real == {} and inv.simulated == ("sim",) and inv.slots == 0
    reason = vllm.skip_reason(inv, CFG)
    assert reason is not None and "GPU-SMOKE needs real GPU nodes" in reason
    assert "1 node(s) carry lwsconf.dev/simulated-gpu=true" in reason


def test_the_emulator_may_use_simulated_gpus() -> None:
    inv = vllm.gpu_inventory([node("sim", 8, simulated=True)], [pod("sim", 7)], 1, allow_simulated=True)
    assert inv.real == {"sim": 1} and inv.slots == 1
    reason = vllm.skip_reason(inv, CFG)
    assert reason is not None and reason.startswith("not enough free GPUs: 2 pods") and "room for 1" in reason


def test_gpus_in_use_are_subtracted_and_finished_pods_are_not() -> None:
    inv = vllm.gpu_inventory([node("a", 2), node("b", 1)], [pod("a", 1), pod("b", 1), pod("b", 1, "Succeeded")], 1)
    assert inv.real == {"a": 1, "b": 0} and inv.slots == 1
    reason = vllm.skip_reason(inv, CFG)
    assert reason is not None and "not enough free GPUs" in reason and "room for 1" in reason
    assert "--vllm-replicas" in reason
    assert vllm.skip_reason(vllm.gpu_inventory([node("a", 2)], [], 1), CFG) is None


# --- during the wait and after ---------------------------------------------------------------------

def test_progress_line_is_the_newest_download_or_loading_state() -> None:
    log = ("INFO starting\nmodel.safetensors:  10%|#         | 100M/988M\rmodel.safetensors:  55%|#####     "
           "| 540M/988M\nsome unrelated line\n")
    assert vllm.progress_line(log) == "model.safetensors:  55%|#####     | 540M/988M"
    assert vllm.progress_line("Wait for all ray workers to be active. 1/2 is active\nray: x\n") == \
        "Wait for all ray workers to be active. 1/2 is active"
    assert vllm.progress_line("INFO leader of a group of 2: rendezvous on *:29500\n"
                              + '127.0.0.1 "GET /health HTTP/1.1" 503 -\n' * 5) == \
        "INFO leader of a group of 2: rendezvous on *:29500", "probe access lines are not progress"
    assert vllm.progress_line('INFO: 10.0.0.1:5 - "GET /health HTTP/1.1" 200 OK\n') == \
        'INFO: 10.0.0.1:5 - "GET /health HTTP/1.1" 200 OK', "an access line is still better than nothing"
    assert vllm.progress_line("just one line\n") == "just one line"
    assert vllm.progress_line("") is None


def test_acceptance_summary_reports_digest_gpus_per_node_and_tokens_per_second() -> None:
    pods = [{"spec": {"nodeName": "n1", "containers": [{"resources": {"limits": {vllm.GPU: "1"}}}]},
             "status": {"containerStatuses": [{"image": CFG.image, "imageID": "docker.io/vllm@sha256:ab"}]}},
            {"spec": {"nodeName": "n2", "containers": [{"resources": {"limits": {vllm.GPU: "1"}}}]},
             "status": {"containerStatuses": [{"image": CFG.image, "imageID": ""}]}}]
    assert vllm.image_ids(pods) == {CFG.image: "docker.io/vllm@sha256:ab"}
    assert vllm.gpus_per_node(pods) == {"n1": 1, "n2": 1}
    summary = vllm.Acceptance("vllm", CFG.image, "docker.io/vllm@sha256:ab", {"n1": 1, "n2": 1}, 300.0, 0.25, 8,
                              64, 0.5)
    props = dict(summary.properties())
    assert props["imageID"] == "docker.io/vllm@sha256:ab" and props["gpusPerNode"] == "n1=1,n2=1"
    assert props["tokensPerSecond"] == "128.0" and props["timeToFirstReadySeconds"] == "300.0"
    assert "128.0 tokens/s" in summary.summary()
    assert dict(vllm.Acceptance("e", "i", None, {}, 1, 1, 1, 0, 0).properties())["imageID"] == "not reported"
