"""The VLLM-CPU profile's objects: a LeaderWorkerSet serving a tiny model with vLLM's CPU image, as users deploy it.

One group is one vLLM server split by pipeline parallelism over `size` pods, rendezvousing only through what LWS
injects: `vllm serve --pipeline-parallel-size $(LWS_GROUP_SIZE) --distributed-executor-backend mp --nnodes
$(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX) --master-addr $(LWS_LEADER_ADDRESS)`, the workers `--headless`
(vLLM's multi-node backend; docs/vllm-cpu.md: the Ray shape is refused by vLLM's CPU platform). Every pod makes
the model in an init container from `tinymodel.py` (a ConfigMap), so no registry or download is involved; with
`size: 1` the same manifest is the single-process reference the profile compares the group's completions with.
The leader Service selects the leaders only. `revision` is the served model name, so each answer says which
revision of the LWS produced it (a rolling update changes it). Pure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwsconf import lwsapi
from lwsconf.vllmcpu.image import IMAGE

Obj = dict[str, Any]
PORT = 8080
MODEL_DIR = "/models/tiny"
CONFIGMAP = "vllm-cpu-tiny-model"
SCRIPT = Path(__file__).resolve().parent / "tinymodel.py"
MAX_MODEL_LEN = 256
KV_CACHE_GB = "1"
"""VLLM_CPU_KVCACHE_SPACE: 1 GB of KV cache per engine (vLLM's CPU default is sized for real models)."""


def tiny_model_configmap() -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP},
            "data": {"tinymodel.py": SCRIPT.read_text()}}


def _engine_args(*, size: int, revision: str, leader: bool) -> list[str]:
    args = [MODEL_DIR, "--served-model-name", revision, "--dtype", "float32", "--max-model-len", str(MAX_MODEL_LEN),
            "--max-num-seqs", "4"]
    if size > 1:
        args += ["--pipeline-parallel-size", "$(LWS_GROUP_SIZE)", "--distributed-executor-backend", "mp",
                 "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank", "$(LWS_WORKER_INDEX)",
                 "--master-addr", "$(LWS_LEADER_ADDRESS)"]
    return args + (["--port", str(PORT)] if leader else ["--headless"])


def _pod_spec(*, size: int, revision: str, leader: bool, image: str) -> Obj:
    mounts = [{"name": "models", "mountPath": "/models"}, {"name": "cache", "mountPath": "/root/.cache"},
              {"name": "shm", "mountPath": "/dev/shm"}]
    container: Obj = {"name": "vllm-leader" if leader else "vllm-worker", "image": image,
                      "args": _engine_args(size=size, revision=revision, leader=leader),
                      "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": KV_CACHE_GB},
                              # vLLM otherwise learns its address from a UDP connect to a public one, which fails
                              # in a pod with no route out (lwsconf's real nodes, the sim's netshim): it then
                              # announces 0.0.0.0 to the other ranks and the group hangs at its first broadcast
                              {"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                      "volumeMounts": mounts}
    if leader:
        container["ports"] = [{"containerPort": PORT, "name": "http"}]
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5}
    return {"initContainers": [{"name": "tiny-model", "image": image,
                                "command": ["python3", "/scripts/tinymodel.py", MODEL_DIR],
                                "volumeMounts": [{"name": "scripts", "mountPath": "/scripts"},
                                                 {"name": "models", "mountPath": "/models"}]}],
            "containers": [container],
            "volumes": [{"name": "scripts", "configMap": {"name": CONFIGMAP}}, {"name": "models", "emptyDir": {}},
                        {"name": "cache", "emptyDir": {}}, {"name": "shm", "emptyDir": {"medium": "Memory"}}]}


def lws(name: str, *, size: int, revision: str, replicas: int = 1, image: str = IMAGE) -> Obj:
    """The LeaderWorkerSet; groups restart whole (RecreateGroupOnPodRestart), updates one group at a time."""
    template: Obj = {"size": size, "restartPolicy": "RecreateGroupOnPodRestart",
                     "leaderTemplate": {"metadata": {"labels": {"role": "leader"}},
                                        "spec": _pod_spec(size=size, revision=revision, leader=True, image=image)}}
    # required by the CRD even for size 1, where no worker is ever made
    template["workerTemplate"] = {"spec": _pod_spec(size=size, revision=revision, leader=False, image=image)}
    return {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND, "metadata": {"name": name},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": template}}


def leader_service(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-leader"},
            "spec": {"selector": {lwsapi.NAME: name, "role": "leader"},
                     "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]}}


def completion_request(revision: str, prompt: str, tokens: int) -> Obj:
    """Greedy (temperature 0): the same prompt gives the same text on one process and across a group."""
    return {"model": revision, "prompt": prompt, "max_tokens": tokens, "temperature": 0}
