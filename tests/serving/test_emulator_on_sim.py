"""The serving emulator as an LWS workload on the embedded sim with the reference reconciler (issue 16, section 2).

Why: tests/serving/test_emulator.py proves the emulator's processes on 127.0.0.1; this proves the
manifest `workloads.emulator_lws` builds gives them what they need on a cluster. The implementation
injects LWS_LEADER_ADDRESS/LWS_GROUP_SIZE/LWS_WORKER_INDEX, workers reach their leader by its DNS name,
the revision arrives through the downward API, and the leader's readiness waits for its whole group.
Everything is read through the API server's pod proxy, as conformance tests read workloads.

Fixtures as in tests/reconciler/test_e2e.py: one sim cluster per module (per xdist worker), one
namespace and one reference reconciler per test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from fixtures.implementations import bundled
from lwsconf import workloads
from lwsconf.reconciler import run
from lwsconf.waits import core, lws, proxy
from tests import sim_e2e

Obj = dict[str, Any]
NAME, REPLICAS, SIZE = "serve", 2, 3


@pytest.fixture(scope="module")
def sim() -> Iterator[sim_e2e.Sim]:
    with sim_e2e.running_cluster() as running:
        bundled.install_crd(running.api, running.t)
        yield running


@pytest.fixture
def ns(sim: sim_e2e.Sim, request: pytest.FixtureRequest) -> Iterator[str]:
    with sim_e2e.fresh_namespace(sim, request.node.name, wait_for_pods_gone=True, probe_configmap=False) as name:
        yield name


@pytest.fixture
def reconciler(sim: sim_e2e.Sim, ns: str) -> Iterator[run.RunningReconciler]:
    with run.RunningReconciler(sim.kubeconfig) as running:
        yield running


def pod_post(api: client.ApiClient, namespace: str, pod: str, port: int, path: str, body: Obj,
             timeout: float) -> proxy.Reply:
    """POST a JSON body through `pods/<pod>:<port>/proxy` (`waits.proxy` only GETs); the answer as a Reply."""
    method, url, headers, data, _ = api.param_serialize(
        "POST", f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/{path.lstrip('/')}",
        header_params={"Accept": "application/json", "Content-Type": "application/json"}, body=body,
        auth_settings=["BearerToken"])
    try:
        response = api.call_api(method, url, header_params=headers, body=data, _request_timeout=timeout)
    except client.ApiException as exc:
        return proxy.Reply(exc.status or 0, exc.body)
    raw = response.read()  # type: ignore[no-untyped-call]
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:
        return proxy.Reply(response.status, json.loads(text))
    except ValueError:
        return proxy.Reply(response.status, text)


def test_two_groups_of_three_rendezvous_and_their_leaders_serve_naming_pod_and_revision(
        sim: sim_e2e.Sim, ns: str, reconciler: run.RunningReconciler) -> None:
    t = sim.t
    # The client sends a dict body as it is; its stubs only know the generated model classes.
    client.CoreV1Api(sim.api).create_namespaced_config_map(ns, workloads.emulator_configmap())  # type: ignore[arg-type]
    client.CustomObjectsApi(sim.api).create_namespaced_custom_object(
        workloads.GROUP, workloads.VERSION, ns, workloads.PLURAL,
        workloads.emulator_lws(NAME, replicas=REPLICAS, size=SIZE))

    # Every pod Ready, which for a leader means its /health is 200: its group is complete.
    groups = lws.groups_must_be_ready(sim.api, ns, NAME, replicas=REPLICAS, size=SIZE, t=t)

    for index, group in groups.items():
        leader = group.pods[0]["metadata"]["name"]
        assert leader == f"{NAME}-{index}"
        view = proxy.pod_get(sim.api, ns, leader, workloads.EMULATOR_PORT, "/group", timeout=t.request_timeout).json()
        assert (view["role"], view["pod"], view["complete"], view["group_size"], view["joined"]) == \
               ("leader", leader, True, SIZE, SIZE - 1), view
        members = {m["index"]: m for m in view["members"]}
        assert {i: m["pod"] for i, m in members.items()} == \
               {i: p["metadata"]["name"] for i, p in group.pods.items()}, (index, view["members"])
        # Workers joined from their own pod IPs (the emulator binds POD_IP from the downward API).
        assert {i: members[i]["address"] for i in range(1, SIZE)} == \
               {i: group.pods[i]["status"]["podIP"] for i in range(1, SIZE)}, (index, view["members"])

        revision = group.pods[0]["metadata"]["labels"][lws.REVISION]
        assert revision and group.revisions() == {revision}, group.revisions()

        def complete(pod: str = leader) -> Obj:
            return pod_post(sim.api, ns, pod, workloads.EMULATOR_PORT, "/v1/completions",
                            {"prompt": "hello", "max_tokens": 4}, t.request_timeout).json()

        answer = core.wait_until(
            complete, what=f"leader {leader} to answer /v1/completions through the pod proxy",
            timeout=t.max_time_to_consistency,
            poll=t.poll_interval)
        assert answer["lwsconf"] == {"pod": leader, "revision": revision, "group_size": SIZE}, answer
        assert answer["object"] == "text_completion" and answer["usage"]["completion_tokens"] == 4, answer
