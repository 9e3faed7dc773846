"""The legacy Endpoints controller against the real API server, plus the pure packing and slicing rules."""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.endpoints import endpoints as endpoints_mod
from lwsconf.sim.controllers.endpoints import endpointslice
from lwsconf.sim.controllers.endpoints import service_endpoints as se
from tests.sim.controllers import endpoints_sim as es
from tests.sim.controllers.endpoints_sim import NS

Obj = dict[str, Any]
WEB = {"app": "web"}
HTTP = [{"name": "http", "port": 80, "targetPort": 8080}]


def ips(subset: Obj, field: str) -> list[str]:
    return [a["ip"] for a in subset.get(field) or []]


def test_endpoints_split_ready_and_not_ready_addresses_and_follow_readiness() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=HTTP, labels={"team": "a"})
            a = await es.running_pod(c, "a", WEB, ip="127.77.1.2")
            await es.running_pod(c, "b", WEB, ip="127.77.1.3", ready=False)
            ep = await es.eventually(lambda: es.endpoints_of(c, "web"),
                                     lambda e: e is not None and len(e.get("subsets") or []) == 1
                                     and ips(e["subsets"][0], "notReadyAddresses") == ["127.77.1.3"],
                                     "a ready, b not ready")
            assert ep is not None
            assert ep["metadata"]["labels"] == {"team": "a"}
            assert ep["subsets"] == [{
                "addresses": [{"ip": "127.77.1.2", "targetRef": {"kind": "Pod", "namespace": NS, "name": "a",
                                                                  "uid": a["metadata"]["uid"]}}],
                "notReadyAddresses": [ep["subsets"][0]["notReadyAddresses"][0]],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]
            await es.set_status(c, "b", ip="127.77.1.3", ready=True)
            await es.eventually(lambda: es.endpoints_of(c, "web"),
                                lambda e: e is not None and [ips(s, "addresses") for s in e["subsets"]]
                                == [["127.77.1.2", "127.77.1.3"]], "both ready")
    es.run(scenario)


def test_endpoints_drop_terminating_pods_unless_not_ready_addresses_are_published() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=HTTP)
            await es.make_service(c, "lws", WEB, headless=True, publish_not_ready=True)
            await es.make_pod(c, "a", WEB)
            await es.bind(c, "a", "node-1")
            await es.set_status(c, "a", ip="127.77.1.2", ready=True)
            await es.eventually(lambda: es.endpoints_of(c, "web"), lambda e: bool(e and e.get("subsets")), "a in web")
            await c.delete(kc.PODS, "a", namespace=NS)  # graceful: stays with a deletionTimestamp
            await es.eventually(lambda: es.endpoints_of(c, "web"), lambda e: e is not None and not e.get("subsets"),
                                "terminating a dropped from web")
            lws = await es.eventually(lambda: es.endpoints_of(c, "lws"),
                                      lambda e: bool(e and e.get("subsets")), "lws's Endpoints")
            assert lws is not None and lws["subsets"] == [{"addresses": [{
                "ip": "127.77.1.2", "nodeName": "node-1",
                "targetRef": lws["subsets"][0]["addresses"][0]["targetRef"]}]}], "publishNotReadyAddresses keeps it"
            assert lws["metadata"]["labels"] == {"service.kubernetes.io/headless": ""}
    es.run(scenario)


def test_endpoints_are_deleted_with_their_service_and_left_alone_without_selector() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=HTTP)
            await es.make_service(c, "external", None, ports=HTTP)
            manual = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "external", "namespace": NS},
                      "subsets": [{"addresses": [{"ip": "127.77.9.9"}], "ports": [{"port": 8080}]}]}
            await c.create(se.ENDPOINTS, manual)
            await es.eventually(lambda: es.endpoints_of(c, "web"), lambda e: e is not None, "web's Endpoints")
            await c.delete(kc.SERVICES, "web", namespace=NS)
            await es.eventually(lambda: es.endpoints_of(c, "web"), lambda e: e is None, "web's Endpoints gone")
            await es.stays(lambda: es.endpoints_of(c, "external"),
                           lambda e: e is not None and ips(e["subsets"][0], "addresses") == ["127.77.9.9"],
                           "the hand-made Endpoints untouched")
    es.run(scenario)


# --- pure rules ---------------------------------------------------------------------------------

def address(ip: str, uid: str) -> Obj:
    return {"ip": ip, "targetRef": {"kind": "Pod", "namespace": NS, "name": uid, "uid": uid}}


def test_repack_groups_addresses_by_the_exact_ports_they_offer() -> None:
    p1, p2 = {"name": "a", "port": 1, "protocol": "TCP"}, {"name": "b", "port": 2, "protocol": "TCP"}
    a, b = address("127.0.0.2", "ua"), address("127.0.0.3", "ub")
    subsets = endpoints_mod.repack([(a, True, p1), (a, True, p2), (b, False, p1)])
    assert subsets == sorted([{"addresses": [a], "notReadyAddresses": [b], "ports": [p1]},
                              {"addresses": [a], "ports": [p2]}], key=endpoints_mod._canonical)


def test_repack_counts_an_address_not_ready_if_any_entry_says_so_and_keeps_portless_ones() -> None:
    a = address("127.0.0.2", "ua")
    assert endpoints_mod.repack([(a, True, None), (a, False, None)]) == [{"notReadyAddresses": [a]}]


def service(name: str = "web", uid: str = "svc-uid", **spec: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": NS, "uid": uid, "labels": {}},
            "spec": {"selector": WEB, "clusterIP": "127.96.0.10", "ports": HTTP, **spec}}


def pod(name: str, ip: str) -> Obj:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": WEB},
            "spec": {"containers": [{"name": "app"}]},
            "status": {"phase": "Running", "podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}}


def existing(svc: Obj, name: str, endpoints: list[Obj]) -> Obj:
    slice_ = endpointslice.new_slice(svc, [{"name": "http", "port": 8080, "protocol": "TCP"}])
    slice_["metadata"].update(name=name, resourceVersion="7")
    slice_["endpoints"] = endpoints
    return slice_


def test_plan_keeps_endpoints_in_their_slice_and_fills_the_fullest_fitting_one() -> None:
    svc = service()
    pods = [pod(f"p{i}", f"127.0.0.{i + 2}") for i in range(4)]
    eps = [endpointslice.pod_to_endpoint(p, svc) for p in pods]
    slices = [existing(svc, "web-aaaaa", eps[:2]), existing(svc, "web-bbbbb", eps[2:3])]
    result = endpointslice.plan(svc, pods, slices, max_endpoints=3)
    assert not result.create and not result.delete
    assert [(s["metadata"]["name"], len(s["endpoints"])) for s in result.update] == [("web-aaaaa", 3)]
    assert result.update[0]["metadata"]["resourceVersion"] == "7", "updates carry the cached resourceVersion"


def test_plan_deletes_slices_of_another_service_with_the_same_name() -> None:
    svc = service()
    stale = existing(service(uid="old-uid"), "web-zzzzz", [])
    result = endpointslice.plan(svc, [pod("p0", "127.0.0.2")], [stale])
    assert result.delete == [stale] and len(result.create) == 1
    assert result.create[0]["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"


def test_the_pause_after_a_sync_is_spacing_times_its_duration_capped_by_max_pause() -> None:
    """A slow sync on a loaded machine must not hold a Service's endpoints back for long: a 3 s sync once kept a
    deleted leader's address in the leader Service for 12 s (4 x 3 s); now at most MAX_PAUSE."""
    assert se.pause_after(0.01, 4.0) == pytest.approx(0.04)
    assert se.pause_after(0.2, 4.0) == pytest.approx(0.8)
    assert se.pause_after(3.0, 4.0) == se.MAX_PAUSE == 1.0
    assert se.pause_after(0.5, 0.0) == 0.0
