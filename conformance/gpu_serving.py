"""The GPU acceptance run's I/O: preflight against the cluster, deploy, readiness with start-up progress, timing.

Why apart from the test module: the same steps run for real vLLM on GPU nodes and for the emulator in the
same manifest on the sim's fake GPUs, and tests/ drive `deploy` directly to show a wrong manifest fails
with its reasons before anything is created. The pure parts are in `lwsconf/serving/vllm.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from conformance.harness import NAME, LWSHarness
from lwsconf.serving import servers, vllm
from lwsconf.waits import core, observe, proxy

Obj = dict[str, Any]
PROMPT = "The capital of France is"
COMPLETION_TOKENS = 8
GENERATION_TOKENS = 64


def preflight(api: client.ApiClient, server: servers.ServingServer, manifest: Obj, cfg: vllm.VLLMConfig) -> None:
    """Fail, listing every reason, when the manifest could never serve here: its own shape (Ray size, TP x PP,
    /dev/shm) and the free GPUs of the nodes it may use (simulated ones only for the emulator)."""
    problems = vllm.preflight_problems(manifest)
    core_api = client.CoreV1Api(api)
    nodes = observe.raw(core_api.list_node(_preload_content=False))["items"]
    pods = observe.raw(core_api.list_pod_for_all_namespaces(_preload_content=False))["items"]
    room = vllm.skip_reason(vllm.gpu_inventory(nodes, pods, cfg.gpus_per_pod,
                                               allow_simulated=server.name == "emulator"), cfg)
    if room:
        problems.append(room)
    if problems:
        pytest.fail(f"{server.name} settings cannot work here (nothing was created):\n- " + "\n- ".join(problems),
                    pytrace=False)


def deploy(lws: LWSHarness, server: servers.ServingServer, cfg: vllm.VLLMConfig, name: str) -> tuple[Obj, str]:
    """Preflight, then the server's objects, the LWS and its leader-only Service; (the LWS, the Service name)."""
    manifest = server.lws(name, replicas=cfg.replicas, size=cfg.size)
    preflight(lws.api, server, manifest, cfg)
    # The client sends a dict body as it is; its stubs only know the generated model classes.
    for obj in server.objects():
        kind = obj["kind"]
        if kind == "ConfigMap":
            lws.core.create_namespaced_config_map(lws.namespace, obj)  # type: ignore[arg-type]
        elif kind == "Secret":
            lws.core.create_namespaced_secret(lws.namespace, obj)  # type: ignore[arg-type]
        else:
            raise ValueError(f"{server.name}: no way to create a {kind} here")
    lws.create(manifest)
    service = servers.leader_service(name, server.port)
    lws.core.create_namespaced_service(lws.namespace, service)  # type: ignore[arg-type]
    return manifest, service["metadata"]["name"]


def leader_log(api: client.ApiClient, namespace: str, name: str, lines: int = 100) -> str:
    """The first group's leader log tail ('' before it has one): where start-up progress shows."""
    try:
        text = client.CoreV1Api(api).read_namespaced_pod_log(f"{name}-0", namespace, tail_lines=lines)
    except client.ApiException:
        return ""
    return str(text or "")


def log_tails(api: client.ApiClient, namespace: str, name: str, lines: int = 30) -> str:
    """The last lines of every pod's container (and of its previous run when it restarted)."""
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
    return "\n".join(out) or "(no pods)"


def ready_check(lws: LWSHarness, server: servers.ServingServer, service: str, name: str) -> Callable[[], list[str]]:
    """Ready = /health 200 and /v1/models listing the model (the port opens before the model is servable).
    Until then the reason starts with the leader log's latest progress line (download, loading, Ray), which
    the wait's progress lines show."""
    def check() -> list[str]:
        health = lws.service_get(service, server.port, "/health")
        if health.status == 200:
            models = lws.service_get(service, server.port, "/v1/models")
            ids = [m.get("id") for m in (models.body.get("data") or [])] if isinstance(models.body, dict) else []
            if server.model in ids:
                return ids
            state = f"/v1/models: HTTP {models.status}, lists {ids}, not {server.model}"
        else:
            state = f"/health: HTTP {health.status} {str(health.body)[:80]}"
        line = vllm.progress_line(leader_log(lws.api, lws.namespace, name))
        raise core.NotYet(f"leader log: {line[:100]} | {state}" if line else state)
    return check


def model_must_serve(lws: LWSHarness, server: servers.ServingServer, service: str, name: str) -> list[str]:
    """Wait until the server answers /health and lists its model through `service` (`ready_check`); the model
    ids. Real vLLM is bounded by the named timeout model_ready (downloading and loading a model takes minutes)
    and polled every 5 s at most, the emulator by lws_available, every 1 s at most. A timeout shows the
    namespace's state and each pod's log tail."""
    vllm_server = server.name == "vllm"
    ids: list[str] = core.wait_until(
        ready_check(lws, server, service, name),
        what=f"{server.name} to serve {server.model} through Service {service}",
        timeout=lws.t.model_ready if vllm_server else lws.t.lws_available,
        poll=max(lws.t.poll_interval, 5.0 if vllm_server else 1.0),
        describe=lambda: f"{lws.describe(name)}\n{log_tails(lws.api, lws.namespace, name)}")
    return ids


@dataclass(frozen=True)
class Timed:
    reply: proxy.Reply
    seconds: float


def complete(lws: LWSHarness, server: servers.ServingServer, service: str, max_tokens: int, timeout: float) -> Timed:
    started = time.monotonic()
    reply = proxy.service_post(lws.api, lws.namespace, service, server.port, "/v1/completions",
                               servers.completion_request(server.model, PROMPT, max_tokens), timeout=timeout)
    return Timed(reply, time.monotonic() - started)
