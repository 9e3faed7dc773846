"""GPU acceptance: a multi-node vLLM server on LeaderWorkerSet answers through its leader Service, and the same
test with the emulator in the same manifest, so its code runs on every cluster.

`[vllm]` (profile GPU-SMOKE, never claimed by default, as Kubernetes keeps GPUs out of its own conformance
program) deploys upstream's example shape (docs/examples/vllm/GPU/lws.yaml) with the pinned vLLM release
(`vllm.DEFAULT_IMAGE`), over vLLM's own multi-node backend by default (`--vllm-backend=ray` for the Ray shape),
and a small model (`lwsconf/serving/vllm.py` says what and why). It runs only where real GPUs have room: one
node per pod with free nvidia.com/gpu, not labelled lwsconf.dev/simulated-gpu=true; anywhere else it is
SKIPPED with what is missing (`fixtures/serving.py`). With `--vllm-stand-in=emulator` it runs the emulator in
vLLM's manifest instead, on any GPUs: the GPU path's code then runs on the sim, and the report names the
emulator as what answered.

`[emulator]` (LWSServingRendezvous + LWSLeaderOnlyService, so LWS-SERVING, claimed by default) builds the
very same LWS with only the image, commands and probe swapped for the serving emulator's: GPU limits,
memory-backed /dev/shm, tolerations, anti-affinity, `role: leader` and group restart stay, the emulator
starts slowly as a model server does, and simulated-GPU nodes are allowed. Preflight, deploy, the ModelReady
wait with start-up progress, the checks after it (every group on `size` distinct nodes, every rank of TP x PP
logged as joined, the GPUs each container got from its node's device plugin), log tails on failure, the
completion and the acceptance summary are the same code for all.

Settings: `--vllm-model/--vllm-image/--vllm-group-size/--vllm-replicas/--vllm-gpus-per-pod/
--vllm-tensor-parallel/--vllm-pipeline-parallel`, else the LWSCONF_VLLM_* variables; HF_TOKEN, only when
set, goes into a Secret the vLLM pods read. The report records the acceptance summary as the test's
properties in junit.xml and as the artifact `acceptance.json` linked from report.html: server, image and
the digest the kubelet reported (imageID), GPUs per node (as the device plugins allocated them), the nodes
and ranks of the group, time to first ready, completion latency, tokens/s of a short generation.
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
        server: servers.ServingServer = request.getfixturevalue("vllm_server")
        return server
    return vllm.EmulatedVLLMServer.of(vllm_settings(request.config))


@pytest.mark.parametrize("smoke_server", SERVERS, indirect=True)
@conformance(short_name="VLLMMultiNodeServesCompletions", features={Feature.VLLM_MULTI_NODE}, slow=True,
             serial=True,
             description="A multi-node server in upstream's vLLM example shape (vLLM across the LWS group on GPU "
                         "nodes; [emulator]: the emulator in the same manifest) becomes healthy, lists its model, "
                         "spans one node per pod with every rank joined and the GPUs its node's device plugin "
                         "allocated, and answers a deterministic completion through a leader-only Service.")
def test_vllm_multi_node_serves_completions(smoke_server: servers.ServingServer, lws: LWSHarness,
                                            request: pytest.FixtureRequest) -> None:
    server, name = smoke_server, "vllm"
    cfg = vllm_settings(request.config)
    created = time.monotonic()
    manifest, svc = gpu_serving.deploy(lws, server, cfg, name)

    gpu_serving.model_must_serve(lws, server, svc, name)
    first_ready = time.monotonic() - created
    placed = gpu_serving.groups_must_span_nodes(lws, name, cfg.size)
    ranks = gpu_serving.ranks_must_have_joined(lws, name, manifest)
    devices = gpu_serving.devices_must_be_allocated(lws, server, name)
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
    summary = vllm.Acceptance(server=server.label, image=image, image_id=vllm.image_ids(pods).get(image),
                              gpus_per_node=devices.gpus_per_node, first_ready_seconds=first_ready,
                              completion_seconds=done.seconds, completion_tokens=tokens,
                              generation_tokens=gen_tokens, generation_seconds=generated.seconds)
    # The test's own junit properties (what pytest's record_property writes, without its xunit2 warning:
    # lwsconf's junit annotation keeps them), plus a file the report links.
    props = [*summary.properties(), ("podNodes", ",".join(f"{p}={n}" for p, n in sorted(placed.items()))),
             ("ranksByPod", ";".join(f"{p}={'/'.join(map(str, r))}" for p, r in ranks.by_pod.items()))]
    request.node.user_properties.extend(props)
    if lws.artifacts is not None:
        lws.artifacts.mkdir(parents=True, exist_ok=True)
        (lws.artifacts / "acceptance.json").write_text(json.dumps(dict(props), indent=2) + "\n")
    print(f"acceptance: {summary.summary()}")  # noqa: T201 - shown with -s and in the captured output
