"""Real multi-node vLLM on an LWS, and the same manifest running the emulator: the GPU acceptance run's pure core.

Why it is here and pure: the GPU smoke test (`conformance/test_vllm_smoke.py`) only runs where real GPUs are,
so whatever it computes (settings, the manifest, preflight problems, where it could run, the acceptance
summary) must be testable without them. Nothing here does I/O; `fixtures/serving.py` reads the cluster and
`conformance/gpu_serving.py` deploys.

The workload follows upstream's example (kubernetes-sigs/lws docs/examples/vllm/GPU/lws.yaml on main, read
2026-12-03, and vLLM's own docs/deployment/frameworks/lws.md): the leader runs vLLM's
`examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE)` (a Ray head that
waits for the whole group) and then the OpenAI server; workers run `... worker --ray_address=$(LWS_LEADER_ADDRESS)`;
GPU limits, a memory-backed /dev/shm, `role: leader` on the leader template, a Service selecting leaders.
Departures, each for a reason: a small model on 1 GPU per pod (fits 2 pods x 1 GPU), `--max-model-len 2048
--enforce-eager` (start fast, small KV cache), an HTTP readiness probe on /health instead of upstream's
tcpSocket (the port opens before the model is servable), a toleration for the nvidia.com/gpu taint GPU node
pools carry, and the Service as its own object rather than upstream's newer `networkConfig.leaderServicePort`
(not in the v1 API every implementation we test serves).

The image is pinned by tag to the newest vLLM release (v0.33.0 on PyPI, November 2026; upstream's example
still pins v0.8.5 from spring 2025); the run records the digest the cluster pulled. The multi-node script
kept its path and flags (`--ray_cluster_size`, `--ray_address`) through vLLM's main branch.

`EmulatedVLLMServer` builds the very same LWS with only the image, commands and probe swapped for the
serving emulator's (GPU limits, /dev/shm, tolerations, labels, restart policy kept), so the acceptance run's
deploy/readiness/diagnostics code runs on the sim's fake GPUs in every CI run.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lwsconf import workloads
from lwsconf.serving.servers import LEADER_ROLE_LABEL, Answer, EmulatorServer, Obj, openai_text

GPU = "nvidia.com/gpu"
SIMULATED_GPU_LABEL = "lwsconf.dev/simulated-gpu"
PORT = 8080
SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"
DEFAULT_IMAGE = "vllm/vllm-openai:v0.33.0"
DEFAULT_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
"""Ungated, ~1 GB of weights, 14 attention heads (TP 1, 2 or 7) and 24 layers (PP 2, 3, 4...): fits 2 x 1 GPU."""
HF_SECRET = "hf-token"
TP_ENV, PP_ENV = "LWSCONF_TENSOR_PARALLEL", "LWSCONF_PIPELINE_PARALLEL"
"""Where the emulated variant states its parallelism (the emulator ignores them), so preflight reads one shape."""


class SettingError(ValueError):
    """A vLLM setting that cannot be used; the message names the variable and the option."""


@dataclass(frozen=True)
class VLLMConfig:
    """What the acceptance run deploys; every field has a `--vllm-*` option and a LWSCONF_VLLM_* variable."""

    model: str = DEFAULT_MODEL
    image: str = DEFAULT_IMAGE
    size: int = 2
    replicas: int = 1
    gpus_per_pod: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 2
    hf_token: bool = False
    max_model_len: int = 2048


SETTINGS: tuple[tuple[str, str, str, str], ...] = (  # field, option (dest), environment variable, default
    ("model", "vllm_model", "LWSCONF_VLLM_MODEL", DEFAULT_MODEL),
    ("image", "vllm_image", "LWSCONF_VLLM_IMAGE", DEFAULT_IMAGE),
    ("size", "vllm_group_size", "LWSCONF_VLLM_GROUP_SIZE", "2 pods"),
    ("replicas", "vllm_replicas", "LWSCONF_VLLM_REPLICAS", "1 group"),
    ("gpus_per_pod", "vllm_gpus_per_pod", "LWSCONF_VLLM_GPUS_PER_POD", "1"),
    ("tensor_parallel", "vllm_tensor_parallel", "LWSCONF_VLLM_TENSOR_PARALLEL", "the GPUs per pod"),
    ("pipeline_parallel", "vllm_pipeline_parallel", "LWSCONF_VLLM_PIPELINE_PARALLEL", "the group size"),
)
INT_FIELDS = ("size", "replicas", "gpus_per_pod", "tensor_parallel", "pipeline_parallel")


def flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def parse_config(options: Mapping[str, object], env: Mapping[str, str]) -> VLLMConfig:
    """The settings: an option wins over its variable, which wins over the default. TP defaults to the GPUs
    per pod and PP to the group size (one pipeline stage per pod, as upstream's example splits 8 x 2).

    Raises:
        SettingError: a count that is not a positive integer, naming the variable and the option.
    """
    raw: dict[str, str] = {}
    for name, option, var, _ in SETTINGS:
        value = options.get(option)
        if value not in (None, ""):
            raw[name] = str(value)
        elif env.get(var):
            raw[name] = env[var]
    ints: dict[str, int] = {}
    for name, option, var, _ in SETTINGS:
        if name in INT_FIELDS and name in raw:
            text = raw[name].strip()
            if not text.isdigit() or int(text) < 1:
                raise SettingError(f"{var}={raw[name]!r} (or {flag(option)}): expected a positive integer")
            ints[name] = int(text)
    size, gpus = ints.get("size", VLLMConfig.size), ints.get("gpus_per_pod", VLLMConfig.gpus_per_pod)
    return VLLMConfig(model=raw.get("model", VLLMConfig.model), image=raw.get("image", VLLMConfig.image),
                      size=size, replicas=ints.get("replicas", VLLMConfig.replicas), gpus_per_pod=gpus,
                      tensor_parallel=ints.get("tensor_parallel", gpus),
                      pipeline_parallel=ints.get("pipeline_parallel", size), hf_token=bool(env.get("HF_TOKEN")))


# --- the workload ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Runtime:
    """What differs between real vLLM and the emulator in the same LWS: image, commands, env, probe, mounts."""

    image: str
    leader_command: list[str]
    worker_command: list[str]
    readiness: Obj
    env: list[Obj] = field(default_factory=list)
    volumes: list[Obj] = field(default_factory=list)
    mounts: list[Obj] = field(default_factory=list)
    leader_ports: list[Obj] = field(default_factory=lambda: [{"name": "http", "containerPort": PORT}])
    hf_token: bool = False


def serve_command(cfg: VLLMConfig, port: int = PORT) -> str:
    return (f"python3 -m vllm.entrypoints.openai.api_server --port {port} --model {cfg.model} "
            f"--tensor-parallel-size {cfg.tensor_parallel} --pipeline-parallel-size {cfg.pipeline_parallel} "
            f"--distributed-executor-backend ray --max-model-len {cfg.max_model_len} --enforce-eager")


def vllm_runtime(cfg: VLLMConfig, port: int = PORT) -> Runtime:
    """Upstream's commands; readiness /health with upstream's delays (loading a model takes minutes)."""
    return Runtime(
        image=cfg.image,
        leader_command=["sh", "-c", f"bash {SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE); "
                                    f"{serve_command(cfg, port)}"],
        worker_command=["sh", "-c", f"bash {SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"],
        readiness={"httpGet": {"path": "/health", "port": port}, "initialDelaySeconds": 15, "periodSeconds": 10},
        leader_ports=[{"name": "http", "containerPort": port}], hf_token=cfg.hf_token)


def emulator_runtime(cfg: VLLMConfig, *, drain_seconds: int) -> Runtime:
    """The emulator's image, command, env, mount and probe (from `workloads.emulator_container`), serving
    `cfg.model` and stating TP/PP in env so the same preflight reads the same numbers."""
    leader = workloads.emulator_container("leader", leader=True, drain_seconds=drain_seconds)
    worker = workloads.emulator_container("worker", leader=False, drain_seconds=drain_seconds)
    env = [*leader["env"], {"name": "LWSCONF_MODEL", "value": cfg.model},
           {"name": TP_ENV, "value": str(cfg.tensor_parallel)}, {"name": PP_ENV, "value": str(cfg.pipeline_parallel)}]
    return Runtime(image=leader["image"], leader_command=list(leader["command"]),
                   worker_command=list(worker["command"]), readiness=leader["readinessProbe"], env=env,
                   volumes=[{"name": "lwsconf-emulator", "configMap": {"name": workloads.EMULATOR_CONFIGMAP}}],
                   mounts=list(leader["volumeMounts"]), leader_ports=list(leader["ports"]))


def _container(name: str, cfg: VLLMConfig, rt: Runtime, command: list[str], extra_env: list[Obj],
               prestop_seconds: int) -> Obj:
    c: Obj = {"name": name, "image": rt.image, "command": list(command),
              "resources": {"limits": {GPU: str(cfg.gpus_per_pod)}, "requests": {"cpu": "1", "memory": "4Gi"}},
              "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, *copy.deepcopy(rt.mounts)]}
    env = copy.deepcopy(rt.env) + extra_env
    if rt.hf_token:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_SECRET, "key": "token"}}})
    if env:
        c["env"] = env
    if prestop_seconds > 0:
        c["lifecycle"] = {"preStop": {"sleep": {"seconds": prestop_seconds}}}
    return c


def _pod_spec(container: Obj, rt: Runtime, grace_seconds: int) -> Obj:
    return {"containers": [container], "terminationGracePeriodSeconds": grace_seconds,
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
                        *copy.deepcopy(rt.volumes)]}


def gpu_lws(name: str, cfg: VLLMConfig, rt: Runtime, *, replicas: int | None = None, size: int | None = None,
            rollout: Obj | None = None, prestop_seconds: int = 0, grace_seconds: int = 30,
            env: dict[str, str] | None = None) -> Obj:
    """Upstream's example shape around `rt`: group restart as a unit, GPU limits, /dev/shm, `role: leader`."""
    extra = [{"name": k, "value": v} for k, v in (env or {}).items()]
    leader = _container("vllm-leader", cfg, rt, rt.leader_command, extra, prestop_seconds)
    leader["ports"] = copy.deepcopy(rt.leader_ports)
    leader["readinessProbe"] = copy.deepcopy(rt.readiness)
    worker = _container("vllm-worker", cfg, rt, rt.worker_command, extra, 0)  # preStop: leaders only, as emulator_lws
    spec: Obj = {"replicas": cfg.replicas if replicas is None else replicas, "leaderWorkerTemplate": {
        "size": cfg.size if size is None else size, "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": {"metadata": {"labels": {LEADER_ROLE_LABEL: "leader"}},
                           "spec": _pod_spec(leader, rt, grace_seconds)},
        "workerTemplate": {"spec": _pod_spec(worker, rt, grace_seconds)}}}
    if rollout is not None:
        spec["rolloutStrategy"] = rollout
    return {"apiVersion": workloads.API_VERSION, "kind": "LeaderWorkerSet", "metadata": {"name": name}, "spec": spec}


@dataclass(frozen=True)
class VLLMServer:
    """Real vLLM (a `ServingServer`): answers do not say which pod served them."""

    config: VLLMConfig = VLLMConfig()
    model: str = DEFAULT_MODEL
    name: str = "vllm"
    port: int = PORT
    identifies_pods: bool = False
    hf_token: str | None = field(default=None, repr=False)
    """The token's value, only for the Secret `objects()` returns (pods read it by reference)."""

    @classmethod
    def of(cls, cfg: VLLMConfig, hf_token: str | None = None) -> VLLMServer:
        return cls(config=replace(cfg, hf_token=bool(hf_token)), model=cfg.model, hf_token=hf_token or None)

    def objects(self) -> list[Obj]:
        if not self.hf_token:
            return []
        return [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": HF_SECRET},
                 "stringData": {"token": self.hf_token}}]

    def lws(self, name: str, *, replicas: int, size: int, rollout: Obj | None = None,
            prestop_seconds: int = 0, grace_seconds: int = 30, env: dict[str, str] | None = None) -> Obj:
        cfg = replace(self.config, size=size, replicas=replicas)
        if size != self.config.size:  # one pipeline stage per pod unless TP alone spans the group
            cfg = replace(cfg, pipeline_parallel=max(1, size * cfg.gpus_per_pod // cfg.tensor_parallel))
        return gpu_lws(name, cfg, vllm_runtime(cfg, self.port), rollout=rollout, prestop_seconds=prestop_seconds,
                       grace_seconds=grace_seconds, env=env)

    def answer(self, body: Any) -> Answer | None:
        text = openai_text(body)
        return None if text is None else Answer(pod=None, revision=None, group_size=None, text=text)


@dataclass(frozen=True)
class EmulatedVLLMServer:
    """The acceptance run's manifest with the emulator inside (a `ServingServer`): runs on fake GPUs."""

    config: VLLMConfig = VLLMConfig()
    model: str = DEFAULT_MODEL
    name: str = "emulator"
    port: int = workloads.EMULATOR_PORT
    identifies_pods: bool = True

    @classmethod
    def of(cls, cfg: VLLMConfig) -> EmulatedVLLMServer:
        return cls(config=replace(cfg, hf_token=False), model=cfg.model)

    def objects(self) -> list[Obj]:
        return [workloads.emulator_configmap()]

    def lws(self, name: str, *, replicas: int, size: int, rollout: Obj | None = None,
            prestop_seconds: int = 0, grace_seconds: int = 30, env: dict[str, str] | None = None) -> Obj:
        drain = grace_seconds - prestop_seconds - 1
        if drain < 1:
            raise ValueError(f"grace_seconds={grace_seconds} with prestop_seconds={prestop_seconds}: give the "
                             "drain at least 1 s before SIGKILL (grace_seconds >= prestop_seconds + 2)")
        cfg = replace(self.config, size=size, replicas=replicas)
        return gpu_lws(name, cfg, emulator_runtime(cfg, drain_seconds=drain), rollout=rollout,
                       prestop_seconds=prestop_seconds, grace_seconds=grace_seconds, env=env)

    def answer(self, body: Any) -> Answer | None:
        return EmulatorServer(model=self.model).answer(body)


# --- preflight -------------------------------------------------------------------------------------

def _flag(command: str, *names: str) -> str | None:
    for name in names:
        match = re.search(rf"{name}[ =]([^\s;&|]+)", command)
        if match:
            return match.group(1)
    return None


def _env_value(container: Obj, name: str) -> str | None:
    return next((str(e.get("value")) for e in container.get("env") or [] if e.get("name") == name), None)


def _int(text: str | None, default: int) -> int:
    return int(text) if text and text.isdigit() else default


def preflight_problems(lws: Obj) -> list[str]:
    """What in a vLLM-shaped LWS would make the group wait forever or crash (docs/vllm-cpu.md); [] when sound.

    Ray cluster size (when the leader starts Ray) must be the group size; TP x PP must be the group's GPUs
    (else Ray's placement group never fits and vLLM waits); leader and workers must ask for the same GPUs;
    every pod needs a memory-backed /dev/shm (NCCL outgrows the 64 MB default).
    """
    lwt = lws["spec"]["leaderWorkerTemplate"]
    size, problems = int(lwt.get("size", 1)), []
    templates = {"leader": lwt.get("leaderTemplate") or lwt["workerTemplate"], "worker": lwt["workerTemplate"]}
    gpus = {role: int(((t["spec"]["containers"][0].get("resources") or {}).get("limits") or {}).get(GPU, 0))
            for role, t in templates.items()}
    leader = templates["leader"]["spec"]["containers"][0]
    command = " ".join([*(leader.get("command") or []), *(leader.get("args") or [])])
    if "ray" in command:
        ray = _flag(command, "--ray_cluster_size")
        if ray not in ("$(LWS_GROUP_SIZE)", str(size)):
            problems.append(f"Ray cluster size {ray} != group size {size} "
                            "(use --ray_cluster_size=$(LWS_GROUP_SIZE))")
    tp = _int(_flag(command, "--tensor-parallel-size", "--tensor_parallel_size") or _env_value(leader, TP_ENV), 1)
    pp = _int(_flag(command, "--pipeline-parallel-size", "--pipeline_parallel_size") or _env_value(leader, PP_ENV), 1)
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
    """How many pods of `gpus_per_pod` GPUs the counted nodes' free GPUs hold."""
    simulated_counted: bool = False
    """Whether simulated-GPU nodes are in `real` (the emulator runs on them; vLLM cannot)."""


def _gpu_request(pod: Obj) -> int:
    return sum(int(((c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits") or {})
                   .get(GPU, 0)) for c in pod["spec"].get("containers") or [])


def _schedulable(node: Obj) -> bool:
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in (node.get("status") or {}).get("conditions") or [])
    return ready and not (node.get("spec") or {}).get("unschedulable")


def gpu_inventory(nodes: list[Obj], pods: list[Obj], gpus_per_pod: int, *,
                  allow_simulated: bool = False) -> GpuInventory:
    """Free GPUs per node: allocatable minus what non-terminal pods on it request. Simulated-GPU nodes
    (the sim's, kind's fake device plugin's) count only with `allow_simulated` (the emulated run)."""
    used: dict[str, int] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            node = pod["spec"].get("nodeName") or ""
            used[node] = used.get(node, 0) + _gpu_request(pod)
    real, simulated = {}, []
    for node in nodes:
        meta, allocatable = node["metadata"], int(((node.get("status") or {}).get("allocatable") or {}).get(GPU, 0))
        fake = (meta.get("labels") or {}).get(SIMULATED_GPU_LABEL) == "true"
        if fake:
            simulated.append(meta["name"])
        if (allow_simulated or not fake) and allocatable >= gpus_per_pod and _schedulable(node):
            real[meta["name"]] = allocatable - used.get(meta["name"], 0)
    return GpuInventory(real, tuple(sorted(simulated)), sum(max(0, f) // gpus_per_pod for f in real.values()),
                        allow_simulated)


def skip_reason(inv: GpuInventory, cfg: VLLMConfig) -> str | None:
    """Why the run cannot deploy here (no GPU node, or not enough free GPUs), None when it fits."""
    need = cfg.size * cfg.replicas
    kind = "GPU" if inv.simulated_counted else "real GPU"
    if not inv.real:
        sim = (f"; {len(inv.simulated)} node(s) carry {SIMULATED_GPU_LABEL}=true, whose fake GPUs cannot run vLLM"
               if inv.simulated and not inv.simulated_counted else "")
        return (f"GPU-SMOKE needs {kind} nodes: none is Ready and schedulable with allocatable {GPU} >= "
                f"{cfg.gpus_per_pod}{sim}")
    if inv.slots < need:
        return (f"not enough free GPUs: {need} pods ({cfg.replicas} group(s) x size {cfg.size}) of "
                f"{cfg.gpus_per_pod} {GPU} each, but the {kind} nodes have room for {inv.slots} (free GPUs: "
                f"{inv.real}); lower --vllm-replicas / --vllm-group-size (LWSCONF_VLLM_REPLICAS / "
                "LWSCONF_VLLM_GROUP_SIZE) or free GPUs")
    return None


# --- during the wait and after ---------------------------------------------------------------------

_PROGRESS = re.compile(r"download|fetching|\d+%\||loading|weights|ray workers|rendezvous|joined|waiting|"
                       r"started server|application startup", re.IGNORECASE)


_ACCESS = re.compile(r'"(GET|POST|HEAD|PUT|DELETE) \S+ HTTP/\d')


def progress_line(log: str) -> str | None:
    """The leader log's latest line that says how far start-up is (a download bar, weights loading, Ray
    workers joining), else its last non-empty line; None for an empty log. tqdm's carriage returns are
    split so only the newest state of a bar is shown; HTTP access lines (the readiness probe's own
    requests, logged every period by vLLM and the emulator alike) say nothing about start-up."""
    lines = [part.strip() for line in log.splitlines() for part in line.split("\r") if part.strip()]
    if not lines:
        return None
    told = [ln for ln in lines if not _ACCESS.search(ln)] or lines
    return next((ln for ln in reversed(told) if _PROGRESS.search(ln)), told[-1])


def image_ids(pods: list[Obj]) -> dict[str, str]:
    """Image -> the imageID the kubelet reported (the pulled digest), for every container status that has one."""
    out: dict[str, str] = {}
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if status.get("image") and status.get("imageID"):
                out.setdefault(str(status["image"]), str(status["imageID"]))
    return out


def gpus_per_node(pods: list[Obj]) -> dict[str, int]:
    """Node -> GPUs the given pods hold on it (what the group actually got, not what nodes offer)."""
    out: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName") or "(unscheduled)"
        out[node] = out.get(node, 0) + _gpu_request(pod)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class Acceptance:
    """The acceptance summary a GPU run reports (computed the same way for the emulated run)."""

    server: str
    image: str
    image_id: str | None
    gpus_per_node: dict[str, int]
    first_ready_seconds: float
    completion_seconds: float
    completion_tokens: int
    generation_tokens: int
    generation_seconds: float

    @property
    def tokens_per_second(self) -> float:
        return self.generation_tokens / self.generation_seconds if self.generation_seconds > 0 else 0.0

    def properties(self) -> list[tuple[str, str]]:
        """(name, value) pairs for the test's report properties (junit `<property>`)."""
        return [("server", self.server), ("image", self.image), ("imageID", self.image_id or "not reported"),
                ("gpusPerNode", ",".join(f"{n}={g}" for n, g in self.gpus_per_node.items())),
                ("timeToFirstReadySeconds", f"{self.first_ready_seconds:.1f}"),
                ("completionLatencySeconds", f"{self.completion_seconds:.3f}"),
                ("completionTokens", str(self.completion_tokens)),
                ("generationTokens", str(self.generation_tokens)),
                ("generationSeconds", f"{self.generation_seconds:.3f}"),
                ("tokensPerSecond", f"{self.tokens_per_second:.1f}")]

    def summary(self) -> str:
        return (f"{self.server} {self.image} ({self.image_id or 'no digest reported'}): GPUs per node "
                f"{self.gpus_per_node}; first ready after {self.first_ready_seconds:.1f}s; completion of "
                f"{self.completion_tokens} tokens in {self.completion_seconds:.3f}s; {self.generation_tokens} tokens "
                f"in {self.generation_seconds:.3f}s = {self.tokens_per_second:.1f} tokens/s")


def completion_tokens(body: Any) -> int:
    usage = body.get("usage") if isinstance(body, dict) else None
    value = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return value if isinstance(value, int) else 0

