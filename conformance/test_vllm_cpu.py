"""VLLM-CPU: real vLLM, without a GPU, across an LWS group (profile VLLM-CPU, never claimed by default).

What LWS is for, with the real engine: one vLLM server split by pipeline parallelism over a group of 2 pods
(vLLM's multi-node backend, rendezvous only through LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX), a
tiny model each pod makes on the spot (`lwsconf/vllmcpu/tinymodel.py`), served through a leader-only Service
(`lwsconf/vllmcpu/manifest.py` builds what is deployed). Three checks:

- the group serves completions, both ranks took part (each pod logs its rank of a world of 2), and a greedy
  completion is the very text one process of the same model gives, also when 8 requests come 4 at a time (whose
  requests per second are recorded);
- killing the worker's engine process (not deleting the pod) brings the whole group back (RecreateGroupOnPodRestart)
  and it serves again; the time to recover is recorded;
- a rolling update ends with every answer naming the new revision.

Where it runs: any cluster that can run vLLM's CPU image (`vllmcpu.image.IMAGE`); on the sim only when that image
is mapped onto the local runtime (`make vllm-cpu-runtime`, LWSCONF_SIM_IMAGE_RUNTIMES), else SKIPPED saying so.
vLLM loads slowly (minutes on 2 cores): run it with the timeouts `make conformance-vllm-cpu` passes (ModelReady,
GroupRecreated, RolloutComplete). Figures (time to ready, recovery, tokens/s, requests/s) go into the test's properties.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client
from kubernetes.stream import stream

from conformance.harness import NAME, LWSHarness
from lwsconf import lwsapi
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.vllmcpu import manifest
from lwsconf.waits import observe, proxy

PROMPT = "LeaderWorkerSet runs"
TOKENS = 32
SIZE = 2
LOAD_REQUESTS = 8
LOAD_CONCURRENCY = 4
"""The throughput figure: 8 greedy requests, 4 at a time, through the leader Service (vLLM batches them)."""
_RANK_LINE = re.compile(r"\bworld_size=(?P<world>\d+) rank=(?P<rank>\d+)\b")
"""vLLM's parallel_state line as each worker joins the process group (vLLM 0.32, CPU build)."""
pytestmark = pytest.mark.usefixtures("vllm_cpu_runs_here")
"""On the sim, SKIPPED unless vLLM's CPU image is mapped onto the local runtime (`fixtures/serving.py`)."""
KILL_ENGINE = ("import os, signal\n"
               "for p in os.listdir('/proc'):\n"
               "    if p.isdigit():\n"
               "        try:\n            cmd = open(f'/proc/{p}/cmdline', 'rb').read()\n"
               "        except OSError:\n            continue\n"
               "        if cmd.startswith(b'VLLM::Worker'):\n"
               "            os.kill(int(p), signal.SIGKILL); print('killed', p, cmd.split(b'\\0')[0].decode())\n")
"""Run in the worker's container: SIGKILL vLLM's engine process (named VLLM::Worker_PP<n> by vLLM)."""


def _tiny_model_script(lws: LWSHarness) -> None:
    """The ConfigMap holding tinymodel.py, which every pod's init container runs."""
    lws.core.create_namespaced_config_map(lws.namespace, manifest.tiny_model_configmap())  # type: ignore[arg-type]


def _deploy(lws: LWSHarness, name: str, *, size: int, revision: str) -> str:
    """The LWS and its leader Service; the Service's name."""
    lws.create(manifest.lws(name, size=size, revision=revision))
    service = manifest.leader_service(name)
    lws.core.create_namespaced_service(lws.namespace, service)  # type: ignore[arg-type]
    return str(service["metadata"]["name"])


def _complete(lws: LWSHarness, service: str, revision: str) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    reply = proxy.service_post(lws.api, lws.namespace, service, manifest.PORT, "/v1/completions",
                               manifest.completion_request(revision, PROMPT, TOKENS),
                               timeout=max(lws.t.request_timeout, 120.0))
    seconds = time.monotonic() - started
    assert reply.ok, f"completion through {service}: HTTP {reply.status} {str(reply.body)[:500]}"
    return reply.json(), seconds


def _text(answer: dict[str, Any]) -> str:
    return str(answer["choices"][0]["text"])


def _throughput(lws: LWSHarness, service: str, revision: str, expected: str) -> float:
    """Requests per second of LOAD_REQUESTS greedy completions sent LOAD_CONCURRENCY at a time; every answer must be
    `expected` (greedy decoding: batching the requests together must not change any text)."""
    started = time.monotonic()
    with ThreadPoolExecutor(LOAD_CONCURRENCY) as pool:
        answers = list(pool.map(lambda _: _complete(lws, service, revision)[0], range(LOAD_REQUESTS)))
    seconds = time.monotonic() - started
    texts = [_text(a) for a in answers]
    assert texts == [expected] * LOAD_REQUESTS, f"concurrent greedy answers differ from the single one: {texts}"
    return LOAD_REQUESTS / seconds


def _ranks(lws: LWSHarness, name: str) -> dict[str, set[tuple[int, int]]]:
    """Pod -> the (rank, world size) pairs its log states."""
    found: dict[str, set[tuple[int, int]]] = {}
    for pod in observe.pods(lws.api, lws.namespace, f"{NAME}={name}"):
        pod_name = pod["metadata"]["name"]
        text = lws.core.read_namespaced_pod_log(pod_name, lws.namespace, container=pod["spec"]["containers"][0]["name"])
        found[pod_name] = {(int(m["rank"]), int(m["world"])) for m in _RANK_LINE.finditer(text)}
    return found


def _serving(lws: LWSHarness, name: str, *, size: int) -> None:
    """The group Ready (vLLM answers /health), then its leader Service's endpoints listing the leader: a request
    sent between the two is refused with 'no endpoints available' (the EndpointSlice follows readiness)."""
    lws.groups_must_be_ready(name, replicas=1, size=size, within="model_ready")
    lws.service_endpoints_must_be(f"{name}-leader", {f"{name}-0"}, name=name)


@conformance(short_name="VLLMCPUGroupServesAsOneProcess", features={Feature.VLLM_CPU_MULTI_NODE}, slow=True,
             serial=True,
             description="vLLM split by pipeline parallelism over an LWS group of 2 pods becomes Ready, both pods "
                         "log their rank of a world of 2, and a greedy completion through the leader Service is the "
                         "text one vLLM process of the same model gives.")
def test_vllm_cpu_group_serves_as_one_process(lws: LWSHarness, record_property: Any) -> None:
    started = time.monotonic()
    _tiny_model_script(lws)
    group_svc = _deploy(lws, "pp", size=SIZE, revision="rev-1")
    solo_svc = _deploy(lws, "solo", size=1, revision="rev-1")
    _serving(lws, "pp", size=SIZE)
    ready_seconds = time.monotonic() - started
    _serving(lws, "solo", size=1)

    def both_ranks_logged() -> dict[str, set[tuple[int, int]]]:
        ranks = _ranks(lws, "pp")
        assert len(ranks) == SIZE and all(ranks.values()), f"ranks logged so far: {ranks}"
        return ranks

    ranks = lws.wait(both_ranks_logged, what="both pods of the group to log their rank",
                     within="max_time_to_consistency", name="pp")
    assert sorted(p for held in ranks.values() for p in held) == [(0, SIZE), (1, SIZE)], ranks
    assert ranks == {"pp-0": {(0, SIZE)}, "pp-0-1": {(1, SIZE)}}, f"the leader holds rank 0, the worker rank 1: {ranks}"
    grouped, seconds = _complete(lws, group_svc, "rev-1")
    alone, _ = _complete(lws, solo_svc, "rev-1")
    assert _text(grouped) == _text(alone) and _text(grouped), (
        f"the group's greedy completion differs from one process's: {_text(grouped)!r} vs {_text(alone)!r}")
    tokens = int(grouped["usage"]["completion_tokens"])
    requests_per_second = _throughput(lws, group_svc, "rev-1", _text(grouped))
    record_property("vllm_cpu_ready_seconds", round(ready_seconds, 1))
    record_property("vllm_cpu_tokens_per_second", round(tokens / seconds, 1))
    record_property("vllm_cpu_requests_per_second", round(requests_per_second, 2))
    record_property("vllm_cpu_ranks", {p: sorted(r) for p, r in ranks.items()})


def _kill_engine(lws: LWSHarness, pod: str) -> str:
    with client.ApiClient(lws.api.configuration) as own:  # stream swaps the transport of the client it is given
        out = stream(client.CoreV1Api(own).connect_get_namespaced_pod_exec, pod, lws.namespace,
                     command=["python3", "-c", KILL_ENGINE], stderr=True, stdin=False, stdout=True, tty=False)
    assert "killed" in str(out), f"no vLLM engine process found in {pod}: {str(out)[:300]!r}"
    return str(out).strip()


@conformance(short_name="VLLMCPUGroupRecoversFromAWorkerEngineDeath", features={Feature.VLLM_CPU_MULTI_NODE},
             slow=True, serial=True,
             description="SIGKILL of the worker's vLLM engine process (the pod is not deleted) brings the whole group "
                         "back with new pods (RecreateGroupOnPodRestart), and it serves completions again.")
def test_vllm_cpu_group_recovers_from_a_worker_engine_death(lws: LWSHarness, record_property: Any) -> None:
    _tiny_model_script(lws)
    svc = _deploy(lws, "pp", size=SIZE, revision="rev-1")
    _serving(lws, "pp", size=SIZE)
    before, _ = _complete(lws, svc, "rev-1")
    old_uids = {p["metadata"]["uid"] for p in observe.pods(lws.api, lws.namespace, f"{NAME}=pp")}
    killed_at = time.monotonic()
    lws.step(_kill_engine(lws, "pp-0-1"))
    lws.group_must_be_recreated("pp", 0, old_uids, size=SIZE)
    lws.service_endpoints_must_be(svc, {"pp-0"}, name="pp")
    after, _ = _complete(lws, svc, "rev-1")
    record_property("vllm_cpu_recovery_seconds", round(time.monotonic() - killed_at, 1))
    assert _text(after) == _text(before), "the recreated group answers another text for the same greedy request"


@conformance(short_name="VLLMCPURollingUpdateServesTheNewRevision", features={Feature.VLLM_CPU_MULTI_NODE},
             slow=True, serial=True,
             description="A rolling update of a one-group LWS (a new served model name) ends with the group on the "
                         "new revision and every answer naming the new model.")
def test_vllm_cpu_rolling_update_serves_the_new_revision(lws: LWSHarness) -> None:
    _tiny_model_script(lws)
    svc = _deploy(lws, "pp", size=SIZE, revision="rev-1")
    _serving(lws, "pp", size=SIZE)
    old = {p["metadata"]["labels"][lwsapi.TEMPLATE_REVISION_HASH]
           for p in observe.pods(lws.api, lws.namespace, f"{NAME}=pp")}
    updated = manifest.lws("pp", size=SIZE, revision="rev-2")
    lws.patch("pp", {"spec": {"leaderWorkerTemplate": updated["spec"]["leaderWorkerTemplate"]}},
              step="served model name rev-1 -> rev-2")
    lws.rollout_must_complete("pp", old=old, replicas=1, size=SIZE)
    lws.service_endpoints_must_be(svc, {"pp-0"}, name="pp")
    for _ in range(3):
        answer, _ = _complete(lws, svc, "rev-2")
        assert answer["model"] == "rev-2", f"answered by {answer['model']!r} after the rollout"
