"""GPU smoke: a real multi-node vLLM server on LeaderWorkerSet answers a completion through its leader Service.

Not conformance (profile GPU-SMOKE, never claimed by default, as Kubernetes keeps GPUs out of its own
conformance program). It deploys a small-model variant of upstream's example
(docs/examples/vllm/GPU/lws.yaml, anchors.md section 7): the leader starts a Ray head and waits for
`$(LWS_GROUP_SIZE)` nodes, then serves the OpenAI API on 8080; workers join `$(LWS_LEADER_ADDRESS)`;
a Service selects leaders only. It runs only where real GPUs are: nodes with allocatable
nvidia.com/gpu >= GPUs per pod that do not carry lwsconf.dev/simulated-gpu=true (the simulator's and
the kind fake device plugin's GPUs cannot run CUDA); anywhere else it is SKIPPED with what is missing.

Before deploying it checks the failure modes anchors.md 7.3 lists: enough free GPUs for size x
replicas pods, group size == Ray cluster size == TP x PP / GPUs per pod, a memory-backed /dev/shm on
every pod. Readiness is /health 200 AND /v1/models listing the model (the HTTP port can open before
the model is servable), then one deterministic completion (temperature 0, max_tokens 8). Failures
carry leader and worker log tails.

Settings (environment; `--vllm-*` options win when the plugin defines them):
LWSCONF_VLLM_MODEL (Qwen/Qwen2.5-0.5B-Instruct), LWSCONF_VLLM_IMAGE (vllm/vllm-openai:v0.8.5, upstream's
example), LWSCONF_VLLM_GROUP_SIZE (2), LWSCONF_VLLM_REPLICAS (1), LWSCONF_VLLM_GPUS_PER_POD (1),
LWSCONF_VLLM_TENSOR_PARALLEL (GPUs per pod), LWSCONF_VLLM_PIPELINE_PARALLEL (group size); HF_TOKEN,
only when set, goes into a Secret the pods read. TP must divide the model's attention heads (14 for the
default model: TP 1, 2 or 7). A group may share one node when it has the GPUs: Ray still spans pods.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from conformance.harness import NAME, LWSHarness
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import core, observe, proxy

GPU = "nvidia.com/gpu"
SIMULATED_GPU_LABEL = "lwsconf.dev/simulated-gpu"
PORT = 8080
SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"
Obj = dict[str, Any]


@dataclass(frozen=True)
class VLLMConfig:
    model: str = "Qwen/Qwen2.5-0.5B-Instruct"
    image: str = "vllm/vllm-openai:v0.8.5"
    size: int = 2
    replicas: int = 1
    gpus_per_pod: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 2
    hf_token: bool = False


def _setting(config: pytest.Config | None, option: str, env: str, default: str) -> str:
    value = config.getoption(option, default=None) if config is not None else None
    return str(value) if value not in (None, "") else os.environ.get(env) or default


def vllm_config(config: pytest.Config | None = None) -> VLLMConfig:
    """The smoke test's settings; a non-integer count fails the test naming the variable."""
    ints: dict[str, int] = {}
    for field, env, default in (("size", "GROUP_SIZE", "2"), ("replicas", "REPLICAS", "1"),
                                ("gpus_per_pod", "GPUS_PER_POD", "1")):
        var = f"LWSCONF_VLLM_{env}"
        ints[field] = _positive(var, _setting(config, f"vllm_{field}", var, default))
    tp = _positive("LWSCONF_VLLM_TENSOR_PARALLEL",
                   os.environ.get("LWSCONF_VLLM_TENSOR_PARALLEL") or str(ints["gpus_per_pod"]))
    pp = _positive("LWSCONF_VLLM_PIPELINE_PARALLEL", os.environ.get("LWSCONF_VLLM_PIPELINE_PARALLEL") or str(ints["size"]))
    return VLLMConfig(model=_setting(config, "vllm_model", "LWSCONF_VLLM_MODEL", VLLMConfig.model),
                      image=_setting(config, "vllm_image", "LWSCONF_VLLM_IMAGE", VLLMConfig.image),
                      tensor_parallel=tp, pipeline_parallel=pp, hf_token=bool(os.environ.get("HF_TOKEN")), **ints)


def _positive(name: str, raw: str) -> int:
    if not raw.strip().isdigit() or int(raw) < 1:
        pytest.fail(f"{name}={raw!r}: expected a positive integer", pytrace=False)
    return int(raw)


# --- the workload ----------------------------------------------------------------------------------

def _container(name: str, cfg: VLLMConfig, command: str) -> Obj:
    c: Obj = {"name": name, "image": cfg.image, "command": ["sh", "-c", command],
              "resources": {"limits": {GPU: str(cfg.gpus_per_pod)}, "requests": {"cpu": "1", "memory": "4Gi"}},
              "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}
    if cfg.hf_token:
        c["env"] = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}]
    return c


def _pod_spec(container: Obj) -> Obj:
    return {"containers": [container], "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]}


def vllm_manifests(name: str, cfg: VLLMConfig) -> tuple[Obj, Obj]:
    """The LWS and its leader-only Service: upstream's example with a small model and small resources."""
    serve = (f"python3 -m vllm.entrypoints.openai.api_server --port {PORT} --model {cfg.model} "
             f"--tensor-parallel-size {cfg.tensor_parallel} --pipeline-parallel-size {cfg.pipeline_parallel} "
             "--distributed-executor-backend ray --max-model-len 2048 --enforce-eager")
    leader = _container("vllm-leader", cfg, f"bash {SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE); {serve}")
    leader["ports"] = [{"containerPort": PORT}]
    leader["readinessProbe"] = {"httpGet": {"path": "/health", "port": PORT}, "initialDelaySeconds": 15,
                                "periodSeconds": 10}
    worker = _container("vllm-worker", cfg, f"bash {SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)")
    lws = {"apiVersion": workloads.API_VERSION, "kind": "LeaderWorkerSet", "metadata": {"name": name},
           "spec": {"replicas": cfg.replicas, "leaderWorkerTemplate": {
               "size": cfg.size, "restartPolicy": "RecreateGroupOnPodRestart",
               "leaderTemplate": {"metadata": {"labels": {"role": "leader"}}, "spec": _pod_spec(leader)},
               "workerTemplate": {"spec": _pod_spec(worker)}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-leader"},
               "spec": {"selector": {NAME: name, "role": "leader"},
                        "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]}}
    return lws, service


def _flag(command: str, *names: str) -> str | None:
    for flag in names:
        match = re.search(rf"{flag}[ =]([^\s;&|]+)", command)
        if match:
            return match.group(1)
    return None


def preflight_problems(lws: Obj) -> list[str]:
    """What in a vLLM LWS would make the group wait forever or crash (anchors.md 7.3); [] when sound."""
    lwt = lws["spec"]["leaderWorkerTemplate"]
    size, problems = int(lwt.get("size", 1)), []
    templates = {"leader": lwt.get("leaderTemplate") or lwt["workerTemplate"], "worker": lwt["workerTemplate"]}
    gpus = {role: int(((t["spec"]["containers"][0].get("resources") or {}).get("limits") or {}).get(GPU, 0))
            for role, t in templates.items()}
    command = " ".join(templates["leader"]["spec"]["containers"][0].get("command") or [])
    ray = _flag(command, "--ray_cluster_size")
    if ray not in ("$(LWS_GROUP_SIZE)", str(size)):
        problems.append(f"Ray cluster size {ray} != group size {size} (use --ray_cluster_size=$(LWS_GROUP_SIZE))")
    tp = int(_flag(command, "--tensor-parallel-size", "--tensor_parallel_size") or 1)
    pp = int(_flag(command, "--pipeline-parallel-size", "--pipeline_parallel_size") or 1)
    if len(set(gpus.values())) != 1:
        problems.append(f"leader and worker request different GPU counts: {gpus}")
    elif tp * pp != size * gpus["leader"]:
        problems.append(f"TP x PP = {tp} x {pp} = {tp * pp} but the group has {size} pods x {gpus['leader']} GPUs "
                        f"= {size * gpus['leader']}; vLLM would wait for a placement group that never fits")
    for role, t in templates.items():
        shm = {m["name"] for c in t["spec"]["containers"] for m in c.get("volumeMounts") or []
               if m.get("mountPath") == "/dev/shm"}
        if not any(v["name"] in shm and (v.get("emptyDir") or {}).get("medium") == "Memory"
                   for v in t["spec"].get("volumes") or []):
            problems.append(f"{role} pods have no memory-backed /dev/shm (NCCL needs more than the 64 MB default)")
    return problems


# --- where it can run ------------------------------------------------------------------------------

@dataclass(frozen=True)
class GpuInventory:
    real: dict[str, int]
    """Node name -> free nvidia.com/gpu, for schedulable Ready nodes with allocatable >= GPUs per pod."""
    simulated: tuple[str, ...]
    slots: int
    """How many pods of `gpus_per_pod` GPUs the real nodes' free GPUs hold."""


def _gpu_request(pod: Obj) -> int:
    return sum(int(((c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits") or {})
                   .get(GPU, 0)) for c in pod["spec"].get("containers") or [])


def _schedulable(node: Obj) -> bool:
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in (node.get("status") or {}).get("conditions") or [])
    return ready and not (node.get("spec") or {}).get("unschedulable")


def gpu_inventory(nodes: list[Obj], pods: list[Obj], gpus_per_pod: int) -> GpuInventory:
    """Free real GPUs per node: allocatable minus what non-terminal pods on it request."""
    used: dict[str, int] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            node = pod["spec"].get("nodeName") or ""
            used[node] = used.get(node, 0) + _gpu_request(pod)
    real, simulated = {}, []
    for node in nodes:
        meta, allocatable = node["metadata"], int(((node.get("status") or {}).get("allocatable") or {}).get(GPU, 0))
        if (meta.get("labels") or {}).get(SIMULATED_GPU_LABEL) == "true":
            simulated.append(meta["name"])
        elif allocatable >= gpus_per_pod and _schedulable(node):
            real[meta["name"]] = allocatable - used.get(meta["name"], 0)
    return GpuInventory(real, tuple(sorted(simulated)), sum(max(0, f) // gpus_per_pod for f in real.values()))


def skip_reason(inv: GpuInventory, cfg: VLLMConfig) -> str | None:
    need = cfg.size * cfg.replicas
    if not inv.real:
        sim = (f"; {len(inv.simulated)} node(s) carry {SIMULATED_GPU_LABEL}=true, whose fake GPUs cannot run vLLM"
               if inv.simulated else "")
        return (f"GPU-SMOKE needs real GPU nodes: none is Ready and schedulable with allocatable {GPU} >= "
                f"{cfg.gpus_per_pod}{sim}")
    if inv.slots < need:
        return (f"GPU-SMOKE needs {need} pods ({cfg.replicas} group(s) x size {cfg.size}) of {cfg.gpus_per_pod} "
                f"{GPU} each, but the real GPU nodes have room for {inv.slots} (free GPUs: {inv.real}); lower "
                "LWSCONF_VLLM_REPLICAS / LWSCONF_VLLM_GROUP_SIZE or free GPUs")
    return None


@pytest.fixture(scope="session")
def vllm_gpus(request: pytest.FixtureRequest, api_client: client.ApiClient) -> VLLMConfig:
    """The settings, after skipping unless real GPU nodes have room. Session-scoped and requested first, so
    the check runs before the implementation is installed and before any namespace is made."""
    cfg = vllm_config(request.config)
    core_api = client.CoreV1Api(api_client)
    nodes = observe.raw(core_api.list_node(_preload_content=False))["items"]
    pods = observe.raw(core_api.list_pod_for_all_namespaces(_preload_content=False))["items"]
    reason = skip_reason(gpu_inventory(nodes, pods, cfg.gpus_per_pod), cfg)
    if reason:
        pytest.skip(reason)
    return cfg


# --- talking to it ---------------------------------------------------------------------------------

def service_post(api: client.ApiClient, namespace: str, service: str, path: str, body: Obj,
                 timeout: float) -> proxy.Reply:
    """POST JSON through `services/<svc>:<port>/proxy` (proxy.py has GET only)."""
    url_path = f"/api/v1/namespaces/{namespace}/services/{service}:{PORT}/proxy/{path.lstrip('/')}"
    method, url, headers, data, _ = api.param_serialize(
        "POST", url_path, body=body, header_params={"Content-Type": "application/json", "Accept": "application/json"},
        auth_settings=["BearerToken"])
    try:
        response = api.call_api(method, url, header_params=headers, body=data, _request_timeout=timeout)
        text = response.read().decode("utf-8", "replace")  # type: ignore[no-untyped-call]
    except Exception as exc:  # noqa: BLE001 - an unreachable backend is an observation, not a crash
        return proxy.Reply(0, f"request failed: {type(exc).__name__}: {exc}")
    try:
        return proxy.Reply(response.status, json.loads(text))
    except ValueError:
        return proxy.Reply(response.status, text)


def log_tails(api: client.ApiClient, namespace: str, name: str, lines: int = 30) -> str:
    """The last lines of every vLLM pod's container (and of its previous run when it restarted)."""
    out = []
    for pod in sorted(observe.pods(api, namespace, f"{NAME}={name}"), key=lambda p: p["metadata"]["name"]):
        pod_name = pod["metadata"]["name"]
        restarted = any(s.get("restartCount") for s in (pod.get("status") or {}).get("containerStatuses") or [])
        for previous in (True, False) if restarted else (False,):
            try:
                text = client.CoreV1Api(api).read_namespaced_pod_log(pod_name, namespace, tail_lines=lines,
                                                                     previous=previous)
            except client.ApiException as exc:
                text = f"(no log: HTTP {exc.status} {exc.reason})"
            out.append(f"--- {pod_name}{' (previous run)' if previous else ''} ---\n{text}")
    return "\n".join(out) or "(no vLLM pods)"


def _ready_check(lws: LWSHarness, service: str, model: str) -> Any:
    def check() -> list[str]:
        health = lws.service_get(service, PORT, "/health")
        if health.status != 200:
            raise core.NotYet(f"/health: HTTP {health.status} {str(health.body)[:200]}")
        models = lws.service_get(service, PORT, "/v1/models")
        ids = [m.get("id") for m in (models.body.get("data") or [])] if isinstance(models.body, dict) else []
        if model not in ids:
            raise core.NotYet(f"/v1/models: HTTP {models.status}, lists {ids}, not {model}")
        return ids
    return check


@conformance(short_name="VLLMMultiNodeServesCompletions", features={Feature.VLLM_MULTI_NODE}, slow=True, serial=True,
             description="A multi-node vLLM server (Ray across the LWS group) on real GPU nodes becomes healthy, "
                         "lists its model and answers a deterministic completion through a leader-only Service.")
def test_vllm_multi_node_serves_completions(vllm_gpus: VLLMConfig, lws: LWSHarness) -> None:
    cfg, name = vllm_gpus, "vllm"
    manifest, service = vllm_manifests(name, cfg)
    problems = preflight_problems(manifest)
    if problems:
        pytest.fail("vLLM settings cannot work:\n- " + "\n- ".join(problems), pytrace=False)
    if cfg.hf_token:
        lws.core.create_namespaced_secret(lws.namespace, {"metadata": {"name": "hf-token"},
                                                          "stringData": {"token": os.environ["HF_TOKEN"]}})
    lws.create(manifest)
    lws.core.create_namespaced_service(lws.namespace, service)
    svc = service["metadata"]["name"]
    core.wait_until(_ready_check(lws, svc, cfg.model), what=f"vLLM to serve {cfg.model} through Service {svc}",
                    timeout=lws.t.model_ready, poll=max(lws.t.poll_interval, 5.0),
                    describe=lambda: f"{lws.describe(name)}\n{log_tails(lws.api, lws.namespace, name)}")
    reply = service_post(lws.api, lws.namespace, svc, "/v1/completions",
                         {"model": cfg.model, "prompt": "The capital of France is", "max_tokens": 8,
                          "temperature": 0}, timeout=max(lws.t.request_timeout, 120.0))
    choices = reply.body.get("choices") if isinstance(reply.body, dict) else None
    assert reply.ok and choices and isinstance(choices[0].get("text"), str) and choices[0]["text"].strip(), (
        f"completion failed: HTTP {reply.status} {str(reply.body)[:500]}\n{log_tails(lws.api, lws.namespace, name)}")
    tokens = (reply.body.get("usage") or {}).get("completion_tokens", 0)
    assert 0 < tokens <= 8, f"max_tokens 8 not honoured: usage {reply.body.get('usage')}"
