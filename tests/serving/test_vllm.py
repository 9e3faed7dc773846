"""The GPU acceptance run's pure core (`lwsconf/serving/vllm.py`): settings, manifests, preflight, GPU room,
placement, ranks, device allocation, summary.

Why: the real run needs GPU nodes, which neither CI nor a laptop has; everything it decides before and
after talking to vLLM is checked here, and the emulated variant must differ from real vLLM only in image,
commands, env, probe and its own ConfigMap mount. Each reading of evidence (spread, ranks, allocation) is
shown failing on the wrong evidence a broken cluster or engine would leave.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from lwsconf import lwsapi, workloads
from lwsconf.deviceplugin import plugin as fake_plugin
from lwsconf.serving import servers, vllm

REPO = Path(__file__).resolve().parents[2]

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
    assert CFG.image == "vllm/vllm-openai:v0.34.0" == f"vllm/vllm-openai:v{vllm.VLLM_VERSION}"
    assert (CFG.size, CFG.replicas, CFG.gpus_per_pod, CFG.tensor_parallel, CFG.pipeline_parallel) == (2, 1, 1, 1, 2)
    assert CFG.model == "Qwen/Qwen2.5-0.5B-Instruct"
    assert (CFG.backend, CFG.stand_in) == ("mp", "")


def test_every_vllm_version_the_suite_and_docs_name_is_the_pinned_one() -> None:
    """The pin is written once; docs and docstrings that name a vLLM image or release must agree with it (the
    review found vllm.py and the docs disagreeing). The CPU profile's image is vLLM's CPU build of its own release
    (`lwsconf/vllmcpu/image.py`), named by another repository, so it does not match here."""
    named: dict[str, set[str]] = {}
    for path in [*REPO.glob("docs/*.md"), *REPO.glob("conformance/*.py"), REPO / "conformance" / "README.md",
                 *REPO.glob("lwsconf/serving/*.py"), REPO / "README.md"]:
        for version in re.findall(r"vllm/vllm-openai:v(\d+\.\d+\.\d+)|\bvLLM v(\d+\.\d+\.\d+)", path.read_text()):
            named.setdefault(next(v for v in version if v), set()).add(str(path.relative_to(REPO)))
    assert set(named) <= {vllm.VLLM_VERSION}, named


def test_options_win_over_variables_which_win_over_defaults_and_tp_pp_follow_the_shape() -> None:
    env = {"LWSCONF_VLLM_MODEL": "facebook/opt-125m", "LWSCONF_VLLM_GROUP_SIZE": "4",
           "LWSCONF_VLLM_GPUS_PER_POD": "2", "LWSCONF_VLLM_IMAGE": "from-env"}
    cfg = vllm.parse_config({"vllm_image": "vllm/vllm-openai:v0.32.0", "vllm_model": None}, env)
    assert (cfg.model, cfg.image, cfg.size, cfg.gpus_per_pod, cfg.tensor_parallel, cfg.pipeline_parallel,
            cfg.hf_token) == ("facebook/opt-125m", "vllm/vllm-openai:v0.32.0", 4, 2, 2, 4, False)
    assert vllm.parse_config({}, {"HF_TOKEN": "x"}).hf_token


def test_backend_and_stand_in_are_settings_with_named_choices() -> None:
    cfg = vllm.parse_config({"vllm_backend": "ray"}, {"LWSCONF_VLLM_STAND_IN": "emulator"})
    assert (cfg.backend, cfg.stand_in) == ("ray", "emulator")
    assert vllm.parse_config({"vllm_stand_in": "none"}, {"LWSCONF_VLLM_STAND_IN": "emulator"}).stand_in == ""
    with pytest.raises(vllm.SettingError, match=r"LWSCONF_VLLM_BACKEND='torchrun' \(or --vllm-backend\): "
                                                r"expected one of mp, ray"):
        vllm.parse_config({}, {"LWSCONF_VLLM_BACKEND": "torchrun"})
    with pytest.raises(vllm.SettingError, match="--vllm-stand-in"):
        vllm.parse_config({"vllm_stand_in": "tgi"}, {})


def test_a_bad_count_names_the_variable_and_the_option() -> None:
    with pytest.raises(vllm.SettingError,
                       match=r"LWSCONF_VLLM_REPLICAS='two' \(or --vllm-replicas\): expected a positive integer"):
        vllm.parse_config({}, {"LWSCONF_VLLM_REPLICAS": "two"})
    with pytest.raises(vllm.SettingError, match="--vllm-tensor-parallel"):
        vllm.parse_config({"vllm_tensor_parallel": "0"}, {})


# --- the workload ----------------------------------------------------------------------------------

def test_vllm_server_runs_vllms_multi_node_backend_from_the_lws_environment_by_default() -> None:
    lws = vllm.VLLMServer.of(CFG).lws("vllm", replicas=1, size=2)
    leader, worker = leader_of(lws), worker_of(lws)
    shared = ["vllm", "serve", CFG.model, "--tensor-parallel-size", "1", "--pipeline-parallel-size", "2",
              "--distributed-executor-backend", "mp", "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank",
              "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)", "--max-model-len", "2048"]
    assert leader["command"] == [*shared, "--port", "8080"] and leader["image"] == CFG.image
    assert worker["command"] == [*shared, "--headless"]
    assert not any("--enforce-eager" in " ".join(c["command"]) for c in (leader, worker))
    assert vllm.preflight_problems(lws) == []


def test_preflight_names_every_way_the_multi_node_backend_would_never_form() -> None:
    lws = vllm.VLLMServer.of(CFG).lws("vllm", replicas=1, size=2)
    leader, worker = leader_of(lws), worker_of(lws)
    worker["command"] = [a.replace("$(LWS_WORKER_INDEX)", "1").replace("$(LWS_LEADER_ADDRESS)", "vllm-0")
                         for a in worker["command"] if a != "--headless"]
    leader["command"] = [*[a.replace("$(LWS_GROUP_SIZE)", "3") for a in leader["command"]], "--headless",
                         "--enforce-eager"]
    assert vllm.preflight_problems(lws) == [
        "leader: --nnodes 3 != group size 2 (use --nnodes $(LWS_GROUP_SIZE))",
        "leader: unexpected --headless (followers run headless, the leader serves the API)",
        "worker: --node-rank 1 (use --node-rank $(LWS_WORKER_INDEX): each pod its own rank)",
        "worker: --master-addr vllm-0 (use --master-addr $(LWS_LEADER_ADDRESS))",
        "worker: missing --headless (followers run headless, the leader serves the API)",
        "--enforce-eager with pipeline parallel 2: the first request crashed a stage this way (docs/vllm-cpu.md); "
        "leave it out"]


def test_vllm_server_builds_upstreams_ray_example_shape_on_request_and_passes_preflight() -> None:
    server = vllm.VLLMServer.of(vllm.VLLMConfig(backend="ray"))
    lws = server.lws("vllm", replicas=1, size=2)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    leader, worker = leader_of(lws), worker_of(lws)
    assert leader["command"][:2] == ["sh", "-c"] and leader["image"] == CFG.image
    assert f"bash {vllm.SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE); " in leader["command"][-1]
    assert f"--model {CFG.model}" in leader["command"][-1] and "--port 8080" in leader["command"][-1]
    assert "--distributed-executor-backend ray" in leader["command"][-1]
    assert "--enforce-eager" not in leader["command"][-1]
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
        assert spec["affinity"] == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {lwsapi.NAME: "vllm"}}, "topologyKey": "kubernetes.io/hostname"}]}}
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
    assert (env["LWSCONF_MODEL"], env[vllm.TP_ENV], env[vllm.PP_ENV], env[vllm.LOAD_ENV]) == (
        CFG.model, "1", "2", f"{vllm.STAND_IN_LOAD_SECONDS:g}"), "the model's shape, and a slow start"
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
    cfg = vllm.VLLMConfig(gpus_per_pod=8, tensor_parallel=8, pipeline_parallel=2, backend="ray")
    lws = vllm.VLLMServer.of(cfg).lws("vllm", replicas=1, size=2)
    leader = leader_of(lws)
    assert "--pipeline-parallel-size 2" in leader["command"][-1]
    leader["command"][-1] = leader["command"][-1].replace("--pipeline-parallel-size", "--pipeline_parallel_size")
    assert vllm.preflight_problems(lws) == []
    assert vllm.preflight_problems(vllm.VLLMServer.of(vllm.VLLMConfig(gpus_per_pod=8, tensor_parallel=8,
                                                                      pipeline_parallel=2)).lws(
        "vllm", replicas=1, size=2)) == [], "the same layout over the multi-node backend"


@pytest.mark.parametrize("server", [vllm.VLLMServer.of(vllm.VLLMConfig(tensor_parallel=2, pipeline_parallel=2)),
                                    vllm.EmulatedVLLMServer.of(vllm.VLLMConfig(tensor_parallel=2,
                                                                               pipeline_parallel=2))],
                         ids=["vllm", "emulator"])
def test_preflight_refuses_tp_times_pp_that_does_not_match_the_group(server: Any) -> None:
    problems = vllm.preflight_problems(server.lws("vllm", replicas=1, size=2))
    assert problems == ["TP x PP = 2 x 2 = 4 but the group has 2 pods x 1 GPUs = 2; vLLM would wait for a "
                        "placement group that never fits"]


def test_preflight_names_each_way_the_group_could_never_form() -> None:
    bad = vllm.VLLMServer.of(vllm.VLLMConfig(backend="ray")).lws("vllm", replicas=1, size=2)
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
    assert reason is not None and reason.startswith("not enough GPU nodes: 2 pods") and "1 GPU node(s)" in reason


def test_gpus_in_use_are_subtracted_and_finished_pods_are_not() -> None:
    inv = vllm.gpu_inventory([node("a", 2), node("b", 1)], [pod("a", 1), pod("b", 1), pod("b", 1, "Succeeded")], 1)
    assert inv.real == {"a": 1, "b": 0} and inv.slots == 1
    reason = vllm.skip_reason(inv, CFG)
    assert reason is not None and "not enough GPU nodes" in reason and "1 real GPU node(s) have 1 free" in reason
    assert "--vllm-replicas" in reason


def test_room_counts_one_pod_per_node_not_free_gpus() -> None:
    """The manifest keeps the LWS's pods on distinct nodes, so one 8-GPU node holds one pod, not eight."""
    one_big = vllm.gpu_inventory([node("a", 8)], [], 1)
    assert one_big.slots == 1 and vllm.skip_reason(one_big, CFG) is not None
    assert vllm.skip_reason(vllm.gpu_inventory([node("a", 8), node("b", 1)], [], 1), CFG) is None
    assert vllm.gpu_inventory([node("a", 8), node("b", 8)], [pod("b", 7)], 2).slots == 1


def test_a_serving_scenarios_room_counts_its_groups_and_the_rollouts_surge_and_says_what_there_is() -> None:
    inv = vllm.gpu_inventory([node(f"n{i}", 8) for i in range(4)], [], 1)
    assert vllm.room_problem(inv, gpus_per_pod=1, replicas=2, size=2) is None
    reason = vllm.room_problem(inv, gpus_per_pod=1, replicas=3, size=2, surge=1, hint="add GPU nodes")
    assert reason == ("not enough GPU nodes: 8 pods (3 group(s) x size 2 + 1 surge group(s)) of 1 nvidia.com/gpu "
                      "each, one pod per node (required anti-affinity on kubernetes.io/hostname), but 4 real GPU "
                      "node(s) have 1 free (free GPUs per node: {'n0': 8, 'n1': 8, 'n2': 8, 'n3': 8}); add GPU nodes")
    rollout = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1}}
    assert vllm.surge_groups(rollout, 3) == 1 and vllm.surge_groups(None, 3) == 0
    assert vllm.surge_groups({"rollingUpdateConfiguration": {"maxSurge": "50%"}}, 3) == 2


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
    summary = vllm.Acceptance("vllm", CFG.image, "docker.io/vllm@sha256:ab", {"n1": 1, "n2": 1}, 300.0, 0.25, 8,
                              64, 0.5)
    props = dict(summary.properties())
    assert props["imageID"] == "docker.io/vllm@sha256:ab" and props["gpusPerNode"] == "n1=1,n2=1"
    assert props["tokensPerSecond"] == "128.0" and props["timeToFirstReadySeconds"] == "300.0"
    assert "128.0 tokens/s" in summary.summary()
    assert dict(vllm.Acceptance("e", "i", None, {}, 1, 1, 1, 0, 0).properties())["imageID"] == "not reported"


# --- what the group got: nodes, ranks, devices -----------------------------------------------------

def placed(name: str, group: str, on: str) -> Obj:
    return {"metadata": {"name": name, "labels": {lwsapi.GROUP_INDEX: group}}, "spec": {"nodeName": on}}


def test_a_group_must_span_one_node_per_pod() -> None:
    assert vllm.spread_problems([placed("v-0", "0", "a"), placed("v-0-1", "0", "b"), placed("v-1", "1", "a"),
                                 placed("v-1-1", "1", "c")], 2) == []
    assert vllm.spread_problems([placed("v-0", "0", "a"), placed("v-0-1", "0", "a")], 2) == [
        "group 0 spans 1 node(s), not 2: v-0 on a, v-0-1 on a"]
    assert vllm.spread_problems([placed("v-0", "0", "a")], 2) == ["group 0 spans 1 node(s), not 2: v-0 on a"]


LINE = "INFO 12-07 06:00:01 [parallel_state.py:1717] rank {r} in world size {w} is assigned as DP rank 0, " \
       "PP rank {p}, PCP rank 0, TP rank {t}, EP rank 0, EPLB rank N/A\n"


def test_ranks_come_from_each_pods_log_and_ray_lines_count_for_the_worker_they_name() -> None:
    mp = {"v-0": "noise\n" + LINE.format(r=0, w=2, p=0, t=0), "v-0-1": LINE.format(r=1, w=2, p=1, t=0)}
    ranks = vllm.ranks_in_logs(mp, {})
    assert ranks == vllm.Ranks({"v-0": (0,), "v-0-1": (1,)}, (2,))
    assert vllm.rank_problems(ranks, world=2, pods=["v-0", "v-0-1"]) == []
    ray = {"v-0": LINE.format(r=0, w=2, p=0, t=0) + "(RayWorkerWrapper pid=169, ip=10.0.0.7) "
           + LINE.format(r=1, w=2, p=1, t=0), "v-0-1": "ray worker started\n"}
    assert vllm.ranks_in_logs(ray, {"10.0.0.7": "v-0-1"}).by_pod == {"v-0": (0,), "v-0-1": (1,)}
    emulated = "lwsconf-emulator: INFO [parallel_state.py] rank 3 in world size 4 is assigned as DP rank 0, " \
               "PP rank 1, TP rank 1, EP rank 0\n"
    assert vllm.ranks_in_logs({"p": emulated}, {}).by_pod == {"p": (3,)}


def test_rank_evidence_fails_for_a_rank_that_never_joined_an_idle_pod_or_another_world() -> None:
    follower_missing = vllm.ranks_in_logs({"v-0": LINE.format(r=0, w=2, p=0, t=0), "v-0-1": "loading\n"}, {})
    assert vllm.rank_problems(follower_missing, world=2, pods=["v-0", "v-0-1"]) == [
        "ranks [1] of 2 never logged that they joined", "pods ['v-0-1'] hold no rank: they did not take part"]
    alone = vllm.ranks_in_logs({"v-0": LINE.format(r=0, w=1, p=0, t=0)}, {})
    assert vllm.rank_problems(alone, world=2, pods=["v-0"])[0] == \
        "the logs state world size(s) [1], expected 2 (TP x PP)"
    assert vllm.rank_problems(vllm.ranks_in_logs({"v-0": ""}, {}), world=2, pods=["v-0"])[0] == \
        "the logs state world size(s) none, expected 2 (TP x PP)"


def test_the_fake_plugins_variable_is_the_one_read_on_simulated_nodes() -> None:
    assert "MOCK_" + fake_plugin.visible_devices_env(fake_plugin.GPU_RESOURCE) == vllm.FAKE_DEVICES_ENV
    assert fake_plugin.visible_devices_env(fake_plugin.GPU_RESOURCE) == vllm.DEVICES_ENV


def test_allocation_reads_what_each_container_was_given_per_node() -> None:
    pods = [placed("v-0", "0", "real"), placed("v-0-1", "0", "sim")]
    got = vllm.allocation(pods, {"v-0": {"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"},
                                 "v-0-1": {"MOCK_NVIDIA_VISIBLE_DEVICES": "GPU-c,GPU-d"}}, {"sim"}, 2)
    assert got.problems == () and got.gpus_per_node == {"real": 2, "sim": 2}


@pytest.mark.parametrize(("envs", "problem"), [
    ({"v-0": {}, "v-0-1": {"NVIDIA_VISIBLE_DEVICES": "GPU-b"}},
     "v-0 on a: no NVIDIA_VISIBLE_DEVICES in its container's environment: no device plugin allocated it a GPU"),
    ({"v-0": {"NVIDIA_VISIBLE_DEVICES": "all"}, "v-0-1": {"NVIDIA_VISIBLE_DEVICES": "GPU-b"}},
     "v-0 on a: NVIDIA_VISIBLE_DEVICES='all' is not a list of devices a plugin allocated"),
    ({"v-0": {"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-c"}, "v-0-1": {"NVIDIA_VISIBLE_DEVICES": "GPU-b"}},
     "v-0 on a: NVIDIA_VISIBLE_DEVICES names 2 device(s) ['GPU-a', 'GPU-c'], it asked for 1"),
    ({"v-0": {"NVIDIA_VISIBLE_DEVICES": "GPU-a"}, "v-0-1": {"NVIDIA_VISIBLE_DEVICES": "GPU-a"}},
     "device GPU-a on a was given to both v-0 and v-0-1"),
], ids=["no-plugin", "image-default", "wrong-count", "shared-device"])
def test_allocation_fails_on_what_a_request_alone_never_shows(envs: dict[str, dict[str, str]], problem: str) -> None:
    """Both pods asked for 1 GPU; only the containers' environment tells what they got."""
    got = vllm.allocation([placed("v-0", "0", "a"), placed("v-0-1", "0", "a")], envs, set(), 1)
    assert any(p.startswith(problem) for p in got.problems), got.problems
