"""Real multi-node vLLM on an LWS, and the same manifest running the emulator: the GPU acceptance run's pure core.

Why it is here and pure: the GPU smoke test (`conformance/test_vllm_smoke.py`) only runs where real GPUs are,
so whatever it computes (settings, the manifest, preflight problems, where it could run, what the logs and the
device plugin say after it ran, the acceptance summary) must be testable without them. Nothing here does I/O;
`fixtures/serving.py` reads the cluster and `conformance/gpu_serving.py` deploys.

The workload is the shape of upstream's example (kubernetes-sigs/lws docs/examples/vllm/GPU/lws.yaml, and vLLM's
own docs/deployment/frameworks/lws.md): group restart as a unit, GPU limits, a memory-backed /dev/shm,
`role: leader` on the leader template, a Service selecting leaders. The engine's rendezvous is one of two
backends (`--vllm-backend`):

* `mp` (the default): vLLM's own multi-node backend. Every pod runs `vllm serve` with
  `--distributed-executor-backend mp --nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)
  --master-addr $(LWS_LEADER_ADDRESS)`, workers with `--headless`. Why the default, from what we read:
  vLLM's docs/serving/parallelism_scaling.md (at commit 096bd6a, read 2026-12-07) documents this shape under
  "Running vLLM with MultiProcessing" beside Ray; vLLM's PR #39400 ("[Doc] Switch K8S examples to default MP
  mode", merged, reviewed June 2026) made it the default of its LWS page; kubernetes-sigs/lws#835 records
  that the stock vLLM image has shipped without Ray since v0.19.0, so the Ray shape fails on the pinned image
  unless Ray is added; and the CPU experiment (docs/vllm-cpu.md) served across two processes only this way.
  `vllm serve` on workers too: `python -m vllm.entrypoints.openai.api_server` as a follower fails
  ("collective_rpc should not be called on follower node", docs/vllm-cpu.md).
* `ray`: upstream's example as it still stands: the leader runs vLLM's
  `examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE)` and then the
  OpenAI server with `--distributed-executor-backend ray`; workers run
  `... worker --ray_address=$(LWS_LEADER_ADDRESS)`.
  Needs an image that carries Ray (`--vllm-image`).

Departures, each for a reason: a small model on 1 GPU per pod (fits 2 pods x 1 GPU), `--max-model-len 2048`
(a small KV cache); no `--enforce-eager`: with pipeline parallelism it crashed the first request on CPU
(docs/vllm-cpu.md, `assert self.intermediate_tensors is not None`) and no source we found justifies it on GPU,
so preflight refuses it with PP > 1; an HTTP readiness probe on /health instead of upstream's tcpSocket (the port
opens before the model is servable); a toleration for the nvidia.com/gpu taint GPU node pools carry; required
pod anti-affinity between the LWS's pods on kubernetes.io/hostname, so a group really spans `size` nodes (nothing
else stops the scheduler from packing a group of 1-GPU pods onto one 8-GPU node; the term selects the whole LWS
rather than one group because a group's own key is known only per pod, which needs `matchLabelKeys`, not served
by every cluster we run on: each pod of the LWS gets a node of its own, and the GPU room check counts nodes);
and the Service as its own object rather than upstream's newer `networkConfig.leaderServicePort` (not in the v1
API every implementation we test serves).

The image is pinned by tag to the newest vLLM release on PyPI (`VLLM_VERSION`, `pip index versions vllm` on
2026-12-07; upstream's example still pins v0.8.5 from spring 2025); the run records the digest the cluster pulled.

`EmulatedVLLMServer` builds the very same LWS with only the image, commands and probe swapped for the serving
emulator's (GPU limits, /dev/shm, tolerations, anti-affinity, labels, restart policy kept) and a slow start, so
the acceptance run's deploy/readiness/placement/rank/device/diagnostics code runs on the sim's fake GPUs: as the
`[emulator]` case in every CI run, and for `--serving-server=vllm --vllm-stand-in=emulator` in place of vLLM.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lwsconf import lwsapi, workloads
from lwsconf.serving.servers import LEADER_ROLE_LABEL, Answer, EmulatorServer, Obj, openai_text
from lwsconf.timeouts import TimeoutName

GPU = "nvidia.com/gpu"
SIMULATED_GPU_LABEL = "lwsconf.dev/simulated-gpu"
PORT = 8080
SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"
VLLM_VERSION = "0.34.0"
"""The newest vLLM release on PyPI when last checked (`pip index versions vllm`, 2026-12-07)."""
DEFAULT_IMAGE = f"vllm/vllm-openai:v{VLLM_VERSION}"
"""vLLM's own image of the same release, by tag (never `latest`)."""
MP, RAY = "mp", "ray"
BACKENDS = (MP, RAY)
DEFAULT_BACKEND = MP
"""vLLM's multi-node backend: see the module docstring for the sources that chose it."""
STAND_INS = ("emulator",)
STAND_IN_LOAD_SECONDS = 5.0
"""How long the emulator "loads its model" in the GPU manifest: long enough that the readiness wait sees a
server that is up but not ready (several progress lines), short enough for every CI run."""
HOSTNAME = "kubernetes.io/hostname"
DEFAULT_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
"""Ungated, ~1 GB of weights, 14 attention heads (TP 1, 2 or 7) and 24 layers (PP 2, 3, 4...): fits 2 x 1 GPU."""
HF_SECRET = "hf-token"
TP_ENV, PP_ENV = "LWSCONF_TENSOR_PARALLEL", "LWSCONF_PIPELINE_PARALLEL"
"""Where the emulated variant states its parallelism (the emulator lays out its ranks by them), so preflight
reads one shape."""
LOAD_ENV = "LWSCONF_LOAD_SECONDS"
DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
"""What NVIDIA's device plugin answers Allocate with (its default env-var strategy): the GPUs a container got."""
FAKE_DEVICES_ENV = "MOCK_" + DEVICES_ENV
"""What lwsconf's fake device plugin answers Allocate with on simulated-GPU nodes (lwsconf/deviceplugin/plugin.py:
default prefix MOCK_, so no real NVIDIA runtime hook ever fires)."""


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
    backend: str = DEFAULT_BACKEND
    stand_in: str = ""
    """"emulator": the emulator in this manifest instead of vLLM (on fake GPUs too); "" for real vLLM."""


SETTINGS: tuple[tuple[str, str, str, str], ...] = (  # field, option (dest), environment variable, default
    ("model", "vllm_model", "LWSCONF_VLLM_MODEL", DEFAULT_MODEL),
    ("image", "vllm_image", "LWSCONF_VLLM_IMAGE", DEFAULT_IMAGE),
    ("size", "vllm_group_size", "LWSCONF_VLLM_GROUP_SIZE", "2 pods"),
    ("replicas", "vllm_replicas", "LWSCONF_VLLM_REPLICAS", "1 group"),
    ("gpus_per_pod", "vllm_gpus_per_pod", "LWSCONF_VLLM_GPUS_PER_POD", "1"),
    ("tensor_parallel", "vllm_tensor_parallel", "LWSCONF_VLLM_TENSOR_PARALLEL", "the GPUs per pod"),
    ("pipeline_parallel", "vllm_pipeline_parallel", "LWSCONF_VLLM_PIPELINE_PARALLEL", "the group size"),
    ("backend", "vllm_backend", "LWSCONF_VLLM_BACKEND", f"{DEFAULT_BACKEND} (vLLM's own multi-node backend; or ray)"),
    ("stand_in", "vllm_stand_in", "LWSCONF_VLLM_STAND_IN",
     "none (real vLLM); emulator: the serving emulator in vLLM's manifest, GPU checks and all, on any GPUs"),
)
CHOICES = {"backend": BACKENDS, "stand_in": ("", *STAND_INS)}
INT_FIELDS = ("size", "replicas", "gpus_per_pod", "tensor_parallel", "pipeline_parallel")


def flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def parse_config(options: Mapping[str, object], env: Mapping[str, str]) -> VLLMConfig:
    """The settings: an option wins over its variable, which wins over the default. TP defaults to the GPUs
    per pod and PP to the group size (one pipeline stage per pod, as upstream's example splits 8 x 2).

    Raises:
        SettingError: a count that is not a positive integer, or a backend or stand-in not among the choices,
            naming the variable and the option.
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
    for name, option, var, _ in SETTINGS:
        if name not in CHOICES or name not in raw:
            continue
        if raw[name].strip() == "none":
            raw[name] = ""
        if raw[name].strip() not in CHOICES[name]:
            allowed = ", ".join(c or "(empty: none)" for c in CHOICES[name])
            raise SettingError(f"{var}={raw[name]!r} (or {flag(option)}): expected one of {allowed}")
    size, gpus = ints.get("size", VLLMConfig.size), ints.get("gpus_per_pod", VLLMConfig.gpus_per_pod)
    return VLLMConfig(model=raw.get("model", VLLMConfig.model), image=raw.get("image", VLLMConfig.image),
                      size=size, replicas=ints.get("replicas", VLLMConfig.replicas), gpus_per_pod=gpus,
                      tensor_parallel=ints.get("tensor_parallel", gpus),
                      pipeline_parallel=ints.get("pipeline_parallel", size), hf_token=bool(env.get("HF_TOKEN")),
                      backend=raw.get("backend", DEFAULT_BACKEND).strip(),
                      stand_in=raw.get("stand_in", "").strip())


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


def serve_args(cfg: VLLMConfig) -> list[str]:
    """What every rank of the mp backend is told: the model, TP x PP, and where the group meets, from the LWS
    environment only (the kubelet expands `$(VAR)` from the env the implementation injects)."""
    return ["vllm", "serve", cfg.model, "--tensor-parallel-size", str(cfg.tensor_parallel),
            "--pipeline-parallel-size", str(cfg.pipeline_parallel), "--distributed-executor-backend", MP,
            "--nnodes", f"$({lwsapi.ENV_GROUP_SIZE})", "--node-rank", f"$({lwsapi.ENV_WORKER_INDEX})",
            "--master-addr", f"$({lwsapi.ENV_LEADER_ADDRESS})", "--max-model-len", str(cfg.max_model_len)]


def ray_serve_command(cfg: VLLMConfig, port: int = PORT) -> str:
    return (f"python3 -m vllm.entrypoints.openai.api_server --port {port} --model {cfg.model} "
            f"--tensor-parallel-size {cfg.tensor_parallel} --pipeline-parallel-size {cfg.pipeline_parallel} "
            f"--distributed-executor-backend {RAY} --max-model-len {cfg.max_model_len}")


def vllm_runtime(cfg: VLLMConfig, port: int = PORT) -> Runtime:
    """vLLM's commands for `cfg.backend`; readiness /health with upstream's delays (loading a model takes
    minutes). mp: the leader serves HTTP on `port`, workers are `--headless` ranks. ray: upstream's script."""
    readiness = {"httpGet": {"path": "/health", "port": port}, "initialDelaySeconds": 15, "periodSeconds": 10}
    if cfg.backend == RAY:
        leader = ["sh", "-c", f"bash {SCRIPT} leader --ray_cluster_size=$({lwsapi.ENV_GROUP_SIZE}); "
                              f"{ray_serve_command(cfg, port)}"]
        worker = ["sh", "-c", f"bash {SCRIPT} worker --ray_address=$({lwsapi.ENV_LEADER_ADDRESS})"]
    else:
        leader, worker = [*serve_args(cfg), "--port", str(port)], [*serve_args(cfg), "--headless"]
    return Runtime(image=cfg.image, leader_command=leader, worker_command=worker, readiness=readiness,
                   leader_ports=[{"name": "http", "containerPort": port}], hf_token=cfg.hf_token)


def emulator_runtime(cfg: VLLMConfig, *, drain_seconds: int, load_seconds: float = STAND_IN_LOAD_SECONDS) -> Runtime:
    """The emulator's image, command, env, mount and probe (from `workloads.emulator_container`), serving
    `cfg.model`, stating TP/PP in env (so the same preflight reads the same numbers, and the emulator logs its
    ranks by them) and taking `load_seconds` to load its model once the group has formed."""
    leader = workloads.emulator_container("leader", leader=True, drain_seconds=drain_seconds)
    worker = workloads.emulator_container("worker", leader=False, drain_seconds=drain_seconds)
    env = [*leader["env"], {"name": "LWSCONF_MODEL", "value": cfg.model},
           {"name": TP_ENV, "value": str(cfg.tensor_parallel)}, {"name": PP_ENV, "value": str(cfg.pipeline_parallel)},
           {"name": LOAD_ENV, "value": f"{load_seconds:g}"}]
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


def spread(name: str) -> Obj:
    """Required anti-affinity between the pods of LWS `name` on kubernetes.io/hostname: one per node, so every
    group spans as many nodes as it has pods (see the module docstring for why the whole LWS, not one group)."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {lwsapi.NAME: name}}, "topologyKey": HOSTNAME}]}}


def _pod_spec(container: Obj, rt: Runtime, grace_seconds: int, name: str) -> Obj:
    return {"containers": [container], "terminationGracePeriodSeconds": grace_seconds, "affinity": spread(name),
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
                        *copy.deepcopy(rt.volumes)]}


def gpu_lws(name: str, cfg: VLLMConfig, rt: Runtime, *, replicas: int | None = None, size: int | None = None,
            rollout: Obj | None = None, prestop_seconds: int = 0, grace_seconds: int = 30,
            env: dict[str, str] | None = None) -> Obj:
    """Upstream's example shape around `rt`: group restart as a unit, GPU limits, /dev/shm, `role: leader`,
    and its pods kept on distinct nodes (`spread`)."""
    extra = [{"name": k, "value": v} for k, v in (env or {}).items()]
    leader = _container("vllm-leader", cfg, rt, rt.leader_command, extra, prestop_seconds)
    leader["ports"] = copy.deepcopy(rt.leader_ports)
    leader["readinessProbe"] = copy.deepcopy(rt.readiness)
    worker = _container("vllm-worker", cfg, rt, rt.worker_command, extra, 0)  # preStop: leaders only, as emulator_lws
    spec: Obj = {"replicas": cfg.replicas if replicas is None else replicas, "leaderWorkerTemplate": {
        "size": cfg.size if size is None else size, "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": {"metadata": {"labels": {LEADER_ROLE_LABEL: "leader"}},
                           "spec": _pod_spec(leader, rt, grace_seconds, name)},
        "workerTemplate": {"spec": _pod_spec(worker, rt, grace_seconds, name)}}}
    if rollout is not None:
        spec["rolloutStrategy"] = rollout
    return {"apiVersion": workloads.API_VERSION, "kind": "LeaderWorkerSet", "metadata": {"name": name}, "spec": spec}


def shaped(cfg: VLLMConfig, *, replicas: int, size: int) -> VLLMConfig:
    """`cfg` for `replicas` groups of `size` pods: a scenario's own group size gets one pipeline stage per pod
    (unless TP alone spans the group), so TP x PP stays the group's GPUs."""
    out = replace(cfg, size=size, replicas=replicas)
    if size != cfg.size:
        out = replace(out, pipeline_parallel=max(1, size * cfg.gpus_per_pod // cfg.tensor_parallel))
    return out


@dataclass(frozen=True)
class VLLMServer:
    """Real vLLM (a `ServingServer`): answers do not say which pod served them."""

    config: VLLMConfig = VLLMConfig()
    model: str = DEFAULT_MODEL
    name: str = "vllm"
    port: int = PORT
    identifies_pods: bool = False
    ready_within: TimeoutName = "model_ready"
    simulated_gpus: bool = False
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
        cfg = shaped(self.config, replicas=replicas, size=size)
        return gpu_lws(name, cfg, vllm_runtime(cfg, self.port), rollout=rollout, prestop_seconds=prestop_seconds,
                       grace_seconds=grace_seconds, env=env)

    @property
    def gpus_per_pod(self) -> int:
        return self.config.gpus_per_pod

    @property
    def label(self) -> str:
        return self.name

    def answer(self, body: Any) -> Answer | None:
        text = openai_text(body)
        return None if text is None else Answer(pod=None, revision=None, group_size=None, text=text)


@dataclass(frozen=True)
class EmulatedVLLMServer:
    """The acceptance run's manifest with the emulator inside (a `ServingServer`): runs on fake GPUs, starts
    slowly (`load_seconds`) and is waited for as vLLM is (ModelReady)."""

    config: VLLMConfig = VLLMConfig()
    model: str = DEFAULT_MODEL
    name: str = "emulator"
    port: int = workloads.EMULATOR_PORT
    identifies_pods: bool = True
    ready_within: TimeoutName = "model_ready"
    simulated_gpus: bool = True
    load_seconds: float = STAND_IN_LOAD_SECONDS
    stands_in: bool = False
    """Deployed in place of real vLLM (`--vllm-stand-in=emulator`), not as the `[emulator]` case."""

    @classmethod
    def of(cls, cfg: VLLMConfig, *, stands_in: bool = False) -> EmulatedVLLMServer:
        return cls(config=replace(cfg, hf_token=False), model=cfg.model, stands_in=stands_in)

    @property
    def gpus_per_pod(self) -> int:
        return self.config.gpus_per_pod

    @property
    def label(self) -> str:
        """How the report names what answered: never "vllm" for the emulator."""
        return "emulator standing in for vllm" if self.stands_in else self.name

    def objects(self) -> list[Obj]:
        return [workloads.emulator_configmap()]

    def lws(self, name: str, *, replicas: int, size: int, rollout: Obj | None = None,
            prestop_seconds: int = 0, grace_seconds: int = 30, env: dict[str, str] | None = None) -> Obj:
        drain = grace_seconds - prestop_seconds - 1
        if drain < 1:
            raise ValueError(f"grace_seconds={grace_seconds} with prestop_seconds={prestop_seconds}: give the "
                             "drain at least 1 s before SIGKILL (grace_seconds >= prestop_seconds + 2)")
        cfg = shaped(self.config, replicas=replicas, size=size)
        return gpu_lws(name, cfg, emulator_runtime(cfg, drain_seconds=drain, load_seconds=self.load_seconds),
                       rollout=rollout,
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


def _command(container: Obj) -> str:
    return " ".join([*(container.get("command") or []), *(container.get("args") or [])])


def _templates(lws: Obj) -> dict[str, Obj]:
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return {"leader": lwt.get("leaderTemplate") or lwt["workerTemplate"], "worker": lwt["workerTemplate"]}


def parallelism(lws: Obj) -> tuple[int, int]:
    """(TP, PP) the leader is started with (its flags, else the emulated variant's env), 1 where unstated."""
    leader = _templates(lws)["leader"]["spec"]["containers"][0]
    command = _command(leader)
    tp = _int(_flag(command, "--tensor-parallel-size", "--tensor_parallel_size") or _env_value(leader, TP_ENV), 1)
    pp = _int(_flag(command, "--pipeline-parallel-size", "--pipeline_parallel_size") or _env_value(leader, PP_ENV), 1)
    return tp, pp


def _mp_problems(commands: dict[str, str], size: int) -> list[str]:
    """vLLM's multi-node backend: every rank must be told the group size, its own node rank and the leader's
    address by the LWS environment, and only followers run headless."""
    problems = []
    group, index, leader = (f"$({lwsapi.ENV_GROUP_SIZE})", f"$({lwsapi.ENV_WORKER_INDEX})",
                            f"$({lwsapi.ENV_LEADER_ADDRESS})")
    for role, command in commands.items():
        nnodes, rank, addr = (_flag(command, "--nnodes"), _flag(command, "--node-rank"),
                              _flag(command, "--master-addr"))
        if nnodes not in (group, str(size)):
            problems.append(f"{role}: --nnodes {nnodes} != group size {size} (use --nnodes {group})")
        if rank != index and not (role == "leader" and rank == "0"):
            problems.append(f"{role}: --node-rank {rank} (use --node-rank {index}: each pod its own rank)")
        if addr != leader:
            problems.append(f"{role}: --master-addr {addr} (use --master-addr {leader})")
        if ("--headless" in command.split()) != (role == "worker"):
            problems.append(f"{role}: {'missing' if role == 'worker' else 'unexpected'} --headless (followers "
                            "run headless, the leader serves the API)")
    return problems


def preflight_problems(lws: Obj) -> list[str]:
    """What in a vLLM-shaped LWS would make the group wait forever or crash (docs/vllm-cpu.md); [] when sound.

    Ray cluster size (when the leader starts Ray) must be the group size; the multi-node backend's flags must
    come from the LWS environment (`_mp_problems`); TP x PP must be the group's GPUs (else the engine waits for
    ranks that never come); leader and workers must ask for the same GPUs; every pod needs a memory-backed
    /dev/shm (NCCL outgrows the 64 MB default); no `--enforce-eager` with pipeline parallelism (it crashed the
    first request on CPU, docs/vllm-cpu.md, and nothing we read justifies it).
    """
    templates = _templates(lws)
    size, problems = int(lws["spec"]["leaderWorkerTemplate"].get("size", 1)), []
    gpus = {role: int(((t["spec"]["containers"][0].get("resources") or {}).get("limits") or {}).get(GPU, 0))
            for role, t in templates.items()}
    commands = {role: _command(t["spec"]["containers"][0]) for role, t in templates.items()}
    command = commands["leader"]
    if "ray_cluster_size" in command:
        ray = _flag(command, "--ray_cluster_size")
        if ray not in (f"$({lwsapi.ENV_GROUP_SIZE})", str(size)):
            problems.append(f"Ray cluster size {ray} != group size {size} "
                            f"(use --ray_cluster_size=$({lwsapi.ENV_GROUP_SIZE}))")
    if "--nnodes" in command:
        problems += _mp_problems(commands, size)
    tp, pp = parallelism(lws)
    if len(set(gpus.values())) != 1:
        problems.append(f"leader and worker request different GPU counts: {gpus}")
    elif tp * pp != size * gpus["leader"]:
        problems.append(f"TP x PP = {tp} x {pp} = {tp * pp} but the group has {size} pods x {gpus['leader']} GPUs "
                        f"= {size * gpus['leader']}; vLLM would wait for a placement group that never fits")
    if pp > 1 and any("--enforce-eager" in c.split() for c in commands.values()):
        problems.append(f"--enforce-eager with pipeline parallel {pp}: the first request crashed a stage this way "
                        "(docs/vllm-cpu.md); leave it out")
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
    """How many pods of `gpus_per_pod` GPUs the counted nodes hold, one per node (the LWS's pods keep apart,
    `spread`): the nodes with at least that many free GPUs."""
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
    return GpuInventory(real, tuple(sorted(simulated)), sum(1 for f in real.values() if f >= gpus_per_pod),
                        allow_simulated)


def room_problem(inv: GpuInventory, *, gpus_per_pod: int, replicas: int, size: int, surge: int = 0,
                 hint: str = "") -> str | None:
    """Why `replicas` groups of `size` pods (plus `surge` groups a rolling update adds) cannot all be placed,
    one pod per node, on nodes with `gpus_per_pod` free GPUs; None when they can. The message names what is
    needed and what the cluster has, then `hint` (what the user can change)."""
    pods = (replicas + surge) * size
    kind = "GPU" if inv.simulated_counted else "real GPU"
    if not inv.real:
        sim = (f"; {len(inv.simulated)} node(s) carry {SIMULATED_GPU_LABEL}=true, whose fake GPUs cannot run vLLM"
               if inv.simulated and not inv.simulated_counted else "")
        return (f"GPU-SMOKE needs {kind} nodes: none is Ready and schedulable with allocatable {GPU} >= "
                f"{gpus_per_pod}{sim}")
    if inv.slots < pods:
        shape = f"{replicas} group(s) x size {size}" + (f" + {surge} surge group(s)" if surge else "")
        return (f"not enough GPU nodes: {pods} pods ({shape}) of {gpus_per_pod} {GPU} each, one pod per node "
                f"(required anti-affinity on {HOSTNAME}), but {inv.slots} {kind} node(s) have {gpus_per_pod} free "
                f"(free GPUs per node: {inv.real})" + (f"; {hint}" if hint else ""))
    return None


def skip_reason(inv: GpuInventory, cfg: VLLMConfig) -> str | None:
    """Why the smoke run cannot deploy here (no GPU node, or too few with free GPUs), None when it fits."""
    return room_problem(inv, gpus_per_pod=cfg.gpus_per_pod, replicas=cfg.replicas, size=cfg.size,
                        hint="lower --vllm-replicas / --vllm-group-size (LWSCONF_VLLM_REPLICAS / "
                             "LWSCONF_VLLM_GROUP_SIZE) or free GPUs")


def surge_groups(rollout: Obj | None, replicas: int) -> int:
    """The extra groups a rolling update of `rollout` may create at once (maxSurge, an int or a percentage of
    `replicas` rounded up, as LWS reads it); 0 without one."""
    raw = ((rollout or {}).get("rollingUpdateConfiguration") or {}).get("maxSurge", 0)
    if isinstance(raw, str) and raw.endswith("%"):
        return -(-replicas * int(raw[:-1]) // 100)
    return int(raw)


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


def spread_problems(pods: list[Obj], size: int) -> list[str]:
    """Groups whose pods do not sit on `size` distinct nodes (a "multi-node" group on one node proves nothing);
    [] when every group spans `size` nodes. Pods are grouped by their group-index label."""
    groups: dict[str, dict[str, str]] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        groups.setdefault(labels.get(lwsapi.GROUP_INDEX, "?"), {})[pod["metadata"]["name"]] = \
            pod["spec"].get("nodeName") or "(unscheduled)"
    problems = []
    for group, where in sorted(groups.items()):
        if len(where) != size or len(set(where.values())) != size:
            problems.append(f"group {group} spans {len(set(where.values()))} node(s), not {size}: "
                            + ", ".join(f"{pod} on {node}" for pod, node in sorted(where.items())))
    return problems


_RANK = re.compile(r"(?:ip=(?P<ip>[0-9a-fA-F.:]+)\).*?)?\brank (?P<rank>\d+) in world size (?P<world>\d+) is "
                   r"assigned as .*?\bPP rank (?P<pp>\d+).*?\bTP rank (?P<tp>\d+)")


@dataclass(frozen=True)
class Ranks:
    """What the group's logs say about its distributed ranks (vLLM's parallel_state line, one per rank)."""

    by_pod: dict[str, tuple[int, ...]]
    """Pod -> the ranks it holds: lines in its own log, or (Ray) forwarded to the leader's log with its IP."""
    worlds: tuple[int, ...]
    """Every world size the lines state."""


def ranks_in_logs(logs: dict[str, str], ips: dict[str, str]) -> Ranks:
    """Parse `rank R in world size W is assigned as ... PP rank P, TP rank T` in each pod's log (`logs`: pod ->
    text). A line that names `ip=X)` (Ray forwards its workers' lines to the driver this way) counts for the
    pod at X (`ips`: address -> pod). A rank logged twice (a restarted container) counts once."""
    by_pod: dict[str, set[int]] = {pod: set() for pod in logs}
    worlds: set[int] = set()
    for pod, text in logs.items():
        for match in _RANK.finditer(text):
            owner = ips.get(match.group("ip") or "", pod)
            by_pod.setdefault(owner, set()).add(int(match.group("rank")))
            worlds.add(int(match.group("world")))
    return Ranks({p: tuple(sorted(r)) for p, r in sorted(by_pod.items())}, tuple(sorted(worlds)))


def rank_problems(ranks: Ranks, *, world: int, pods: list[str]) -> list[str]:
    """Why the logs do not show every rank of a world of `world` joined, each of `pods` holding some, all in
    one world of that size; [] when they do."""
    problems = []
    if ranks.worlds != (world,):
        problems.append(f"the logs state world size(s) {list(ranks.worlds) or 'none'}, expected {world} (TP x PP)")
    seen = {r for held in ranks.by_pod.values() for r in held}
    missing = sorted(set(range(world)) - seen)
    if missing:
        problems.append(f"ranks {missing} of {world} never logged that they joined")
    idle = [p for p in pods if not ranks.by_pod.get(p)]
    if idle:
        problems.append(f"pods {idle} hold no rank: they did not take part")
    return problems


@dataclass(frozen=True)
class Allocation:
    """The GPUs the nodes' device plugins gave the group's containers, read from the env Allocate injects."""

    by_pod: dict[str, tuple[str, tuple[str, ...]]]
    """Pod -> (node, device ids)."""
    problems: tuple[str, ...]

    @property
    def gpus_per_node(self) -> dict[str, int]:
        """Node -> distinct devices the group got there (what it holds, not what it asked for)."""
        out: dict[str, set[str]] = {}
        for node, ids in self.by_pod.values():
            out.setdefault(node, set()).update(ids)
        return {node: len(ids) for node, ids in sorted(out.items())}


_NOT_A_LIST = ("", "all", "none", "void")
"""NVIDIA_VISIBLE_DEVICES values that are the image's or runtime's defaults, never a device plugin's answer."""


def allocation(pods: list[Obj], envs: dict[str, dict[str, str]], simulated_nodes: set[str],
               gpus_per_pod: int) -> Allocation:
    """What each pod's container was allocated (`envs`: pod -> its environment as the container sees it): the
    device ids in NVIDIA_VISIBLE_DEVICES (MOCK_NVIDIA_VISIBLE_DEVICES on simulated-GPU nodes, lwsconf's fake
    plugin). Problems: no such variable, a value that is not a device list (`all`, the CUDA images' default,
    means no plugin answered), a count other than `gpus_per_pod`, one device given to two pods of a node."""
    by_pod: dict[str, tuple[str, tuple[str, ...]]] = {}
    problems: list[str] = []
    holder: dict[tuple[str, str], str] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName") or "(unscheduled)"
        var = FAKE_DEVICES_ENV if node in simulated_nodes else DEVICES_ENV
        value = envs.get(name, {}).get(var)
        if value is None:
            problems.append(f"{name} on {node}: no {var} in its container's environment: no device plugin "
                            f"allocated it a GPU (variables: {sorted(envs.get(name, {}))[:20]})")
            continue
        ids = tuple(i.strip() for i in value.split(",") if i.strip())
        if value.strip().lower() in _NOT_A_LIST or any(i.startswith("/") for i in ids):
            problems.append(f"{name} on {node}: {var}={value!r} is not a list of devices a plugin allocated")
            continue
        if len(set(ids)) != gpus_per_pod:
            problems.append(f"{name} on {node}: {var} names {len(set(ids))} device(s) {list(ids)}, it asked for "
                            f"{gpus_per_pod}")
        for device in ids:
            other = holder.setdefault((node, device), name)
            if other != name:
                problems.append(f"device {device} on {node} was given to both {other} and {name}")
        by_pod[name] = (node, ids)
    return Allocation(by_pod, tuple(problems))


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

