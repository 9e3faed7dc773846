"""The GPU acceptance run's I/O: preflight against the cluster, deploy, readiness with start-up progress
(ModelReady), where the group landed, which ranks joined, what the device plugins allocated, timing.

Why apart from the test module: the same steps run for real vLLM on GPU nodes and for the emulator in the
same manifest on the sim's fake GPUs (the `[emulator]` case, and `--vllm-stand-in=emulator` in vLLM's place),
the LWS-SERVING scenarios (`conformance/serving.py`) use the readiness and placement checks too, and tests/
drive `deploy` directly to show a wrong manifest fails with its reasons before anything is created. The pure
parts are in `lwsconf/serving/vllm.py`. Everything goes through the Kubernetes API: logs, and exec for the
environment a device plugin's Allocate gave a container.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.stream import stream

from conformance.harness import NAME, LWSHarness
from fixtures.serving import gpu_room
from lwsconf import lwsapi
from lwsconf.serving import servers, vllm
from lwsconf.waits import core, observe, proxy

Obj = dict[str, Any]
PROMPT = "The capital of France is"
COMPLETION_TOKENS = 8
GENERATION_TOKENS = 64


def preflight(api: client.ApiClient, server: servers.ServingServer, manifest: Obj, cfg: vllm.VLLMConfig) -> None:
    """Fail, listing every reason, when the manifest could never serve here: its own shape (Ray size, the
    multi-node backend's flags, TP x PP, /dev/shm, --enforce-eager with PP) and the nodes with free GPUs it may
    use, one pod per node (simulated ones only for the emulator)."""
    problems = vllm.preflight_problems(manifest)
    room = vllm.skip_reason(gpu_room(api, cfg.gpus_per_pod, allow_simulated=server.simulated_gpus), cfg)
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
    """ModelReady: wait until the server answers /health and lists its model through `service`
    (`ready_check`); the model ids. Bounded by the server's named timeout (`ready_within`: model_ready for
    vLLM and the emulator standing in with its slow start, since downloading and loading a model takes
    minutes; lws_available for the quick emulator), polled every 5 s at most for real vLLM, 1 s otherwise. A
    timeout names the timeout and shows the namespace's state and each pod's log tail."""
    ids: list[str] = core.wait_until(
        ready_check(lws, server, service, name),
        what=f"{server.label} to serve {server.model} through Service {service} (timeout {server.ready_within})",
        timeout=getattr(lws.t, server.ready_within),
        poll=max(lws.t.poll_interval, 5.0 if server.name == "vllm" else 1.0),
        describe=lambda: f"{lws.describe(name)}\n{log_tails(lws.api, lws.namespace, name)}")
    return ids


def groups_must_span_nodes(lws: LWSHarness, name: str, size: int) -> dict[str, str]:
    """Every group of LWS `name` sits on `size` distinct nodes (what "multi-node" means); pod -> node."""
    pods = list(lws.pods(name).values())
    problems = vllm.spread_problems(pods, size)
    assert not problems, ("a group is not spread over its own nodes (the manifest's anti-affinity, or the "
                          "scheduler, let pods of one group share a node):\n- " + "\n- ".join(problems))
    return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in pods}


def _full_logs(api: client.ApiClient, namespace: str, pods: list[Obj]) -> dict[str, str]:
    out = {}
    for pod in pods:
        try:
            out[pod["metadata"]["name"]] = str(client.CoreV1Api(api).read_namespaced_pod_log(
                pod["metadata"]["name"], namespace) or "")
        except client.ApiException as exc:
            out[pod["metadata"]["name"]] = f"(no log: HTTP {exc.status} {exc.reason})"
    return out


def ranks_must_have_joined(lws: LWSHarness, name: str, manifest: Obj) -> vllm.Ranks:
    """Every rank of every group joined (the ranks by pod of all groups returned): each group's pods' logs
    (and, for Ray, the lines the leader's log forwards from a worker's address) show one `rank R in world size
    W is assigned as ...` line per rank of TP x PP, every pod holding some. Called once the server is
    ready: the lines come before the model loads, so a ready server has written them and only their way through
    the kubelet's log to the API is left; polled for that, bounded by max_time_to_consistency."""
    tp, pp = vllm.parallelism(manifest)

    def every_rank_joined() -> dict[str, vllm.Ranks]:
        found, problems = {}, []
        by_group: dict[str, list[Obj]] = {}
        for pod in lws.pods(name).values():
            group = (pod["metadata"].get("labels") or {}).get(lwsapi.GROUP_INDEX, "?")
            by_group.setdefault(group, []).append(pod)
        for group, pods in sorted(by_group.items()):
            ips = {str((p.get("status") or {}).get("podIP")): p["metadata"]["name"] for p in pods}
            ranks = vllm.ranks_in_logs(_full_logs(lws.api, lws.namespace, pods), ips)
            problems += [f"group {group}: {p}" for p in
                         vllm.rank_problems(ranks, world=tp * pp, pods=sorted(p["metadata"]["name"] for p in pods))]
            found[group] = ranks
        if problems or not found:
            raise core.NotYet("; ".join(problems) or "no pods")
        return found

    found = lws.wait(every_rank_joined, what=f"every rank of TP {tp} x PP {pp} to log that it joined",
                     within="max_time_to_consistency", name=name)
    return vllm.Ranks({p: r for g in found.values() for p, r in g.by_pod.items()},
                      tuple(sorted({w for g in found.values() for w in g.worlds})))


ENV_PROGRAM = ("import json, os; print(json.dumps({k: v for k, v in os.environ.items() "
               "if k.endswith('VISIBLE_DEVICES')}))")
"""Run in each container (python3 is in vLLM's image and the emulator's): the device-list variables only, so no
secret in the environment ever reaches a message."""


def container_env(api: client.ApiClient, namespace: str, pod: str) -> dict[str, str]:
    """The *_VISIBLE_DEVICES variables `pod`'s container sees, by exec through the API server. A client of
    its own: `stream` swaps the transport of the client it is given while it runs."""
    with client.ApiClient(api.configuration) as own:
        out = stream(client.CoreV1Api(own).connect_get_namespaced_pod_exec, pod, namespace,
                     command=["python3", "-c", ENV_PROGRAM], stderr=True, stdin=False, stdout=True, tty=False)
    try:
        env = json.loads(str(out).strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError(f"reading {pod}'s environment by exec answered {str(out)[:300]!r}") from None
    return {str(k): str(v) for k, v in env.items()}


def devices_must_be_allocated(lws: LWSHarness, server: servers.ServingServer, name: str) -> vllm.Allocation:
    """Every pod of LWS `name` got `gpus_per_pod` devices of its own from its node's device plugin, as the env
    Allocate injects shows inside the container (not what the pods asked for: a request the node never
    served, or one device handed to two pods, fails here)."""
    nodes = observe.raw(lws.core.list_node(_preload_content=False))["items"]
    simulated = {n["metadata"]["name"] for n in nodes
                 if (n["metadata"].get("labels") or {}).get(vllm.SIMULATED_GPU_LABEL) == "true"}
    pods = list(lws.pods(name).values())
    envs = {p["metadata"]["name"]: container_env(lws.api, lws.namespace, p["metadata"]["name"]) for p in pods}
    got = vllm.allocation(pods, envs, simulated, server.gpus_per_pod)
    assert not got.problems, "the device plugins' allocation is not what the pods need:\n- " + "\n- ".join(
        got.problems)
    return got


@dataclass(frozen=True)
class Timed:
    reply: proxy.Reply
    seconds: float


def complete(lws: LWSHarness, server: servers.ServingServer, service: str, max_tokens: int, timeout: float) -> Timed:
    started = time.monotonic()
    reply = proxy.service_post(lws.api, lws.namespace, service, server.port, "/v1/completions",
                               servers.completion_request(server.model, PROMPT, max_tokens), timeout=timeout)
    return Timed(reply, time.monotonic() - started)
