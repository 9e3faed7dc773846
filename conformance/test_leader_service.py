"""Leader-only Service routing (LWS-SERVING profile): what a serving stack puts in front of an LWS.

Users expose inference through a Service selecting the LWS name label plus a label only their leader
template carries (`role: leader`); pods get both labels from the templates (section 3.1). Checked with
real traffic through the API server's services proxy, with N consecutive good answers as Gateway API's
conformance does: only leaders are endpoints and answer, every group's leader answers, and while one
group restarts the others keep answering without a gap longer than max_time_to_consistency.
"""

from __future__ import annotations

import time
from typing import Any

from conformance.harness import NAME, LWSHarness
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import core


def _leader_service(lws: LWSHarness, name: str) -> str:
    svc = f"{name}-leaders"
    body: dict[str, Any] = {"metadata": {"name": svc}, "spec": {
        "selector": {NAME: name, "role": "leader"},
        "ports": [{"name": "http", "port": workloads.PROBE_PORT, "targetPort": workloads.PROBE_PORT}]}}
    lws.core.create_namespaced_service(lws.namespace, body)  # type: ignore[arg-type]  # dicts are accepted
    return svc


def _deploy(lws: LWSHarness, name: str) -> str:
    lws.create(workloads.probe_lws(name, replicas=2, size=2, leader_labels={"role": "leader"}))
    svc = _leader_service(lws, name)
    lws.ready(name, replicas=2, size=2)
    return svc


@conformance(short_name="LeaderServiceEndpointsAreLeaders", features={Feature.LEADER_SERVICE},
             description="A Service selecting {name: N, role: leader} lists exactly the leader pods in its "
                         "EndpointSlices.")
def test_leader_service_endpoints_are_leaders(lws: LWSHarness) -> None:
    svc = _deploy(lws, "eps")
    lws.service_endpoints_must_be(svc, {"eps-0", "eps-1"}, name="eps")


@conformance(short_name="LeaderServiceRoutesToEveryLeader", features={Feature.LEADER_SERVICE},
             description="Requests through the Service are all answered by leaders, and by the leaders of both groups.")
def test_leader_service_routes_to_every_leader(lws: LWSHarness) -> None:
    svc = _deploy(lws, "route")
    leaders = {"route-0", "route-1"}
    lws.service_endpoints_must_be(svc, leaders, name="route")
    seen = lws.service_must_route_only_to(svc, leaders, must_reach=leaders, name="route")
    assert seen == leaders


@conformance(short_name="LeaderServiceServesDuringGroupRestart", slow=True,
             features={Feature.LEADER_SERVICE, Feature.GROUP_RESTART},
             description="While group 0 is recreated after a worker crash, the Service keeps answering from the "
                         "other leader.")
def test_leader_service_serves_during_group_restart(lws: LWSHarness) -> None:
    svc = _deploy(lws, "serve")
    leaders = {"serve-0", "serve-1"}
    lws.service_must_route_only_to(svc, leaders, name="serve")
    old = lws.groups("serve")[0].uids
    lws.probe_json("serve-0-1", "/exit", code="1")
    answers: list[tuple[float, str | None]] = []

    def recreated_while_serving() -> None:
        try:
            pod: str | None = lws.answering_pod(svc)
        except AssertionError:
            pod = None
        answers.append((time.monotonic(), pod))
        if pod is not None and pod not in leaders:
            raise core.Terminal(f"answered by {pod}, which is not a leader")
        group = lws.groups("serve").get(0)
        if group is None or group.uids & old or len(group.pods) != 2 or not group.ready:
            raise core.NotYet("group 0 not recreated and ready yet")
    lws.wait(recreated_while_serving, what="group 0 to be recreated while requests keep flowing",
             within="group_recreated", name="serve")
    lws.groups_must_be_ready("serve", replicas=2, size=2)
    ok = [t for t, pod in answers if pod]
    gaps = [b - a for a, b in zip([answers[0][0], *ok], [*ok, answers[-1][0]], strict=True)]
    assert max(gaps) <= lws.t.max_time_to_consistency, f"no answer for {max(gaps):.1f}s during the restart: {answers}"
    assert any(pod == "serve-1" for _, pod in answers), f"serve-1 never answered during the restart: {answers}"
