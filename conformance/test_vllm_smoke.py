"""GPU acceptance: a multi-node vLLM server on LeaderWorkerSet answers through its leader Service, and the same
test with the emulator in the same manifest, so its code runs on every cluster.

`[vllm]` (profile GPU-SMOKE, never claimed by default, as Kubernetes keeps GPUs out of its own conformance
program) deploys upstream's example shape (docs/examples/vllm/GPU/lws.yaml) with vLLM v0.33.0 and a small
model (`lwsconf/serving/vllm.py` says what and why). It runs only where real GPUs have room: nodes with
allocatable nvidia.com/gpu that do not carry lwsconf.dev/simulated-gpu=true; anywhere else it is SKIPPED
with what is missing (`fixtures/serving.py`).

`[emulator]` (LWSServingRendezvous + LWSLeaderOnlyService, so LWS-SERVING, claimed by default) builds the
very same LWS with only the image, commands and probe swapped for the serving emulator's: GPU limits,
memory-backed /dev/shm, tolerations, `role: leader` and group restart stay, and simulated-GPU nodes are
allowed. Preflight, deploy, the readiness wait with start-up progress, log tails on failure, the completion
and the acceptance summary are the same code for both.

Settings: `--vllm-model/--vllm-image/--vllm-group-size/--vllm-replicas/--vllm-gpus-per-pod/
--vllm-tensor-parallel/--vllm-pipeline-parallel`, else the LWSCONF_VLLM_* variables; HF_TOKEN, only when
set, goes into a Secret the vLLM pods read. The report records the acceptance summary as the test's
properties in junit.xml and as the artifact `acceptance.json` linked from report.html: server, image and
the digest the kubelet reported (imageID), GPUs per node, time to first ready, completion latency, tokens/s
of a short generation.
"""

from __future__ import annotations

import json
import time

import pytest

from conformance import gpu_serving
from conformance.harness import NAME, LWSHarness
from fixtures.serving import vllm_settings
from lwsconf.conformance import case, conformance
from lwsconf.features import Feature
from lwsconf.serving import servers, vllm
from lwsconf.waits import observe

SERVERS = [case("emulator", id="emulator", features={Feature.SERVING_RENDEZVOUS, Feature.LEADER_SERVICE}),
           case("vllm", id="vllm", features={Feature.VLLM_MULTI_NODE})]


@pytest.fixture(scope="session")
def smoke_server(request: pytest.FixtureRequest) -> servers.ServingServer:
    """The case's server. Session-scoped and the test's first argument, so for vLLM the GPU check (and its
    skip) comes before the implementation is installed and before any namespace is made."""
    if request.param == "vllm":
        server: vllm.VLLMServer = request.getfixturevalue("vllm_server")
        return server
    return vllm.EmulatedVLLMServer.of(vllm_settings(request.config))


@pytest.mark.parametrize("smoke_server", SERVERS, indirect=True)
@conformance(short_name="VLLMMultiNodeServesCompletions", features={Feature.VLLM_MULTI_NODE}, slow=True,
             serial=True,
             description="A multi-node server in upstream's vLLM example shape (Ray across the LWS group on GPU "
                         "nodes; [emulator]: the emulator in the same manifest) becomes healthy, lists its model "
                         "and answers a deterministic completion through a leader-only Service.")
def test_vllm_multi_node_serves_completions(smoke_server: servers.ServingServer, lws: LWSHarness,
                                            request: pytest.FixtureRequest) -> None:
    server, name = smoke_server, "vllm"
    cfg = vllm_settings(request.config)
    created = time.monotonic()
    _, svc = gpu_serving.deploy(lws, server, cfg, name)

    gpu_serving.model_must_serve(lws, server, svc, name)
    first_ready = time.monotonic() - created
    request_timeout = max(lws.t.request_timeout, 120.0)

    done = gpu_serving.complete(lws, server, svc, gpu_serving.COMPLETION_TOKENS, request_timeout)
    answer = server.answer(done.reply.body)
    assert done.reply.ok and answer is not None and answer.text.strip(), (
        f"completion failed: HTTP {done.reply.status} {str(done.reply.body)[:500]}\n"
        f"{gpu_serving.log_tails(lws.api, lws.namespace, name)}")
    tokens = vllm.completion_tokens(done.reply.body)
    assert 0 < tokens <= gpu_serving.COMPLETION_TOKENS, f"max_tokens 8 not honoured: {done.reply.body}"
    if server.identifies_pods:  # the emulator says who served: a leader of a complete group
        assert answer.pod in {f"{name}-{i}" for i in range(cfg.replicas)} and answer.group_size == cfg.size, answer

    generated = gpu_serving.complete(lws, server, svc, gpu_serving.GENERATION_TOKENS, request_timeout)
    gen_tokens = vllm.completion_tokens(generated.reply.body)
    assert generated.reply.ok and gen_tokens > 0, f"generation failed: HTTP {generated.reply.status} " \
                                                  f"{str(generated.reply.body)[:500]}"

    pods = observe.pods(lws.api, lws.namespace, f"{NAME}={name}")
    image = pods[0]["spec"]["containers"][0]["image"] if pods else "unknown"
    summary = vllm.Acceptance(server=server.name, image=image, image_id=vllm.image_ids(pods).get(image),
                              gpus_per_node=vllm.gpus_per_node(pods), first_ready_seconds=first_ready,
                              completion_seconds=done.seconds, completion_tokens=tokens,
                              generation_tokens=gen_tokens, generation_seconds=generated.seconds)
    # The test's own junit properties (what pytest's record_property writes, without its xunit2 warning:
    # lwsconf's junit annotation keeps them), plus a file the report links.
    request.node.user_properties.extend(summary.properties())
    if lws.artifacts is not None:
        lws.artifacts.mkdir(parents=True, exist_ok=True)
        (lws.artifacts / "acceptance.json").write_text(json.dumps(dict(summary.properties()), indent=2) + "\n")
    print(f"acceptance: {summary.summary()}")  # noqa: T201 - shown with -s and in the captured output
    assert sum(summary.gpus_per_node.values()) == cfg.size * cfg.replicas * cfg.gpus_per_pod, summary.gpus_per_node
