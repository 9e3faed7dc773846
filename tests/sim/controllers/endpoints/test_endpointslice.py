"""The EndpointSlice controller against the real in-process API server.

Each test starts an API server with the endpoint controllers (`endpoints_sim`), creates Services and
pods, plays kubelet by patching pod status, and polls the EndpointSlices with a bounded timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web

from lwsconf.kubeclient import client as kc
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.endpoints import endpointslice
from lwsconf.sim.controllers.endpoints import service_endpoints as se
from tests.sim.controllers import endpoints_sim as es
from tests.sim.controllers.endpoints_sim import NS

Obj = dict[str, Any]
WEB = {"app": "web"}
HTTP = [{"name": "http", "port": 80, "targetPort": 8080}]


def test_clusterip_service_gets_a_slice_listing_only_its_selected_pods_with_an_ip() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            svc = await es.make_service(c, "web", WEB, ports=HTTP, labels={"team": "a"})
            a = await es.running_pod(c, "a", WEB, ip="127.77.1.2")
            await es.running_pod(c, "b", WEB, ip="127.77.1.3", ready=False)
            await es.running_pod(c, "c", {"app": "other"}, ip="127.77.1.4")
            await es.make_pod(c, "no-ip", WEB)
            slices = await es.eventually(lambda: es.slices_of(c, "web"),
                                         lambda s: set(es.endpoint_summary(s)) == {"a", "b"}, "pods a and b listed")
            assert len(slices) == 1
            slice_ = slices[0]
            meta = slice_["metadata"]
            assert meta["name"].startswith("web-") and len(meta["name"]) == len("web-") + 5, meta["name"]
            assert meta["generateName"] == "web-"
            assert meta["labels"] == {"kubernetes.io/service-name": "web", "team": "a",
                                      "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
            assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                                "uid": svc["metadata"]["uid"], "controller": True,
                                                "blockOwnerDeletion": True}]
            assert slice_["addressType"] == "IPv4"
            assert slice_["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            by_pod = {e["targetRef"]["name"]: e for e in slice_["endpoints"]}
            assert by_pod["a"] == {"addresses": ["127.77.1.2"],
                                   "conditions": {"ready": True, "serving": True, "terminating": False},
                                   "targetRef": {"kind": "Pod", "namespace": NS, "name": "a",
                                                 "uid": a["metadata"]["uid"]}}
            assert by_pod["b"]["conditions"] == {"ready": False, "serving": False, "terminating": False}
    es.run(scenario)


def listed(pod: str) -> Callable[[list[Obj]], bool]:
    return lambda slices: pod in es.endpoint_summary(slices)


def a_ready_is(ready: bool) -> Callable[[list[Obj]], bool]:
    return lambda slices: es.endpoint_summary(slices)["a"]["ready"] is ready


def test_readiness_flips_reach_the_slice_held_back_only_by_the_adaptive_pause(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each flip of a pod's readiness reaches the slice, and no change waits longer than the pause the last sync
    earned (`pause_after`: spacing times its duration; upstream's batch period defaults to 0). A fixed batch
    period, or a pause not taken from the sync's duration, fails here whatever the machine's speed: the test
    compares the controller's own figures, never a wall-clock bound (how fast a flip arrives is measured by
    `python -m bench.endpoints`)."""
    pauses: list[float] = []
    real_pause_after = se.pause_after

    def recorded_pause_after(duration: float, spacing: float) -> float:
        pauses.append(real_pause_after(duration, spacing))
        return pauses[-1]

    monkeypatch.setattr(se, "pause_after", recorded_pause_after)

    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            delays: list[float] = []
            queue_add_after = sim.slices.queue.add_after

            def recorded_add_after(key: se.ServiceKey, delay: float) -> None:
                delays.append(delay)
                queue_add_after(key, delay)

            monkeypatch.setattr(sim.slices.queue, "add_after", recorded_add_after)
            await es.make_service(c, "web", WEB, ports=HTTP)
            await es.running_pod(c, "a", WEB, ip="127.77.1.2", ready=False)
            await es.eventually(lambda: es.slices_of(c, "web"), lambda s: "a" in es.endpoint_summary(s), "a listed")
            for flip in range(6):
                ready = flip % 2 == 0
                await es.set_status(c, "a", ip="127.77.1.2", ready=ready)
                await es.eventually(lambda: es.slices_of(c, "web"), a_ready_is(ready), f"a ready={ready}",
                                    interval=0.002)
            assert pauses, "no sync of the Service went through pause_after"
            over = [d for d in delays if d > max(pauses)]
            assert over == [], f"changes held back longer than any earned pause {max(pauses):.4f} s: {over}"
    es.run(scenario)


def test_deleting_a_bound_pod_marks_it_terminating_then_removes_it() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=HTTP)
            for name, ip in (("a", "127.77.1.2"), ("b", "127.77.1.3")):
                await es.make_pod(c, name, WEB)
                await es.bind(c, name, "node-1")
                await es.set_status(c, name, ip=ip, ready=True)
            await es.eventually(lambda: es.slices_of(c, "web"),
                                lambda s: es.endpoint_summary(s).get("a", {}).get("nodeName") == "node-1"
                                and "b" in es.endpoint_summary(s), "a and b listed with their node")
            await c.delete(kc.PODS, "a", namespace=NS)  # graceful: the pod is on a node
            terminating = {"ready": False, "serving": True, "terminating": True}
            await es.eventually(lambda: es.slices_of(c, "web"),
                                lambda s: {k: es.endpoint_summary(s)["a"][k] for k in terminating} == terminating,
                                "a listed as terminating (serving, not ready)")
            await es.delete_now(c, "a")
            await es.eventually(lambda: es.slices_of(c, "web"), lambda s: set(es.endpoint_summary(s)) == {"b"},
                                "only b left once a is gone")
    es.run(scenario)


def test_headless_service_lists_hostnames_of_pods_in_its_subdomain() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "lws", {"lws": "x"}, headless=True, publish_not_ready=True)
            await es.running_pod(c, "x-0", {"lws": "x"}, ip="127.77.1.2", hostname="x-0", subdomain="lws")
            await es.running_pod(c, "x-0-1", {"lws": "x"}, ip="127.77.1.3", hostname="x-0-1", subdomain="other")
            slices = await es.eventually(lambda: es.slices_of(c, "lws"),
                                         lambda s: set(es.endpoint_summary(s)) == {"x-0", "x-0-1"}, "both pods")
            summary = es.endpoint_summary(slices)
            assert summary["x-0"]["hostname"] == "x-0"
            assert summary["x-0-1"]["hostname"] is None, "its subdomain is another service"
            assert slices[0]["ports"] == []
            assert slices[0]["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    es.run(scenario)


def test_publish_not_ready_addresses_marks_unready_pods_ready() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "lws", {"lws": "x"}, headless=True, publish_not_ready=True)
            await es.running_pod(c, "leader", {"lws": "x"}, ip="127.77.1.2", ready=False)
            slices = await es.eventually(lambda: es.slices_of(c, "lws"),
                                         lambda s: "leader" in es.endpoint_summary(s), "leader listed")
            summary = es.endpoint_summary(slices)["leader"]
            assert (summary["ready"], summary["serving"], summary["terminating"]) == (True, False, False)
    es.run(scenario)


def test_named_target_port_is_resolved_per_pod_and_groups_slices_by_port() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=[{"name": "http", "port": 80, "targetPort": "web"}])
            await es.running_pod(c, "a", WEB, ip="127.77.1.2", ports=[es.container_port("web", 8080)])
            await es.running_pod(c, "b", WEB, ip="127.77.1.3", ports=[es.container_port("web", 9090)])
            await es.running_pod(c, "c", WEB, ip="127.77.1.4", ports=[es.container_port("metrics", 9100)])
            slices = await es.eventually(lambda: es.slices_of(c, "web"),
                                         lambda s: set(es.endpoint_summary(s)) == {"a", "b", "c"}, "all pods")
            summary = es.endpoint_summary(slices)
            assert summary["a"]["ports"] == [("http", 8080)]
            assert summary["b"]["ports"] == [("http", 9090)]
            assert summary["c"]["ports"] == [], "c has no port named 'web': its slice leaves the port out"
            assert len(slices) == 3, [s["ports"] for s in slices]
    es.run(scenario)


def test_endpoints_spill_into_further_slices_beyond_the_per_slice_maximum() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers(max_endpoints_per_slice=2) as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=HTTP)
            for i in range(5):
                await es.running_pod(c, f"p{i}", WEB, ip=f"127.77.1.{i + 2}")
            slices = await es.eventually(lambda: es.slices_of(c, "web"),
                                         lambda s: len(es.endpoint_summary(s)) == 5, "all 5 pods listed")
            assert sorted(len(s["endpoints"]) for s in slices) == [1, 2, 2]
    es.run(scenario)


def test_service_selecting_nothing_keeps_a_placeholder_slice_that_is_reused_later() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=HTTP)
            placeholder = await es.eventually(lambda: es.slices_of(c, "web"), lambda s: len(s) == 1,
                                              "one placeholder slice")
            # both nil in kube-controller-manager 1.37.2's placeholder, so null on the wire
            # (lwsconf fidelity controllers/ctl-endpointslices/slice-after-delete)
            assert placeholder[0]["endpoints"] is None and placeholder[0]["ports"] is None
            assert placeholder[0]["metadata"]["generation"] == 1, "EndpointSlice strategy: generation 1 on create"
            await es.running_pod(c, "a", WEB, ip="127.77.1.2")
            slices = await es.eventually(lambda: es.slices_of(c, "web"), lambda s: "a" in es.endpoint_summary(s),
                                         "a listed")
            assert [s["metadata"]["name"] for s in slices] == [placeholder[0]["metadata"]["name"]]
            assert slices[0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    es.run(scenario)


def test_service_without_selector_gets_no_slices_and_its_own_are_left_alone() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers() as sim:
            c = sim.client
            await es.make_service(c, "external", None, ports=HTTP)
            own = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "external-1", "namespace": NS,
                                "labels": {"kubernetes.io/service-name": "external"}},
                   "addressType": "IPv4", "endpoints": [{"addresses": ["127.77.9.9"]}]}
            await c.create(se.ENDPOINTSLICES, own)
            await es.make_service(c, "web", WEB, ports=HTTP)  # a sync that does happen, as a yardstick
            await es.eventually(lambda: es.slices_of(c, "web"), lambda s: len(s) == 1, "web's placeholder")
            await es.stays(lambda: es.slices_of(c, "external"),
                           lambda s: [x["metadata"]["name"] for x in s] == ["external-1"], "only the user's slice")
    es.run(scenario)


def test_deleting_the_service_lets_the_garbage_collector_remove_its_slices() -> None:
    async def scenario() -> None:
        async with es.sim_with_endpoint_controllers(with_gc=True) as sim:
            c = sim.client
            await es.make_service(c, "web", WEB, ports=HTTP)
            await es.running_pod(c, "a", WEB, ip="127.77.1.2")
            await es.eventually(lambda: es.slices_of(c, "web"), lambda s: "a" in es.endpoint_summary(s), "a listed")
            await c.delete(kc.SERVICES, "web", namespace=NS)
            await es.eventually(lambda: es.slices_of(c, "web"), lambda s: s == [], "no slices left")
    es.run(scenario)


# --- traffic through the API server's service proxy ------------------------------------------------

async def start_pod_server(ip: str, name: str) -> web.AppRunner:
    async def whoami(request: web.Request) -> web.Response:
        return web.json_response({"pod": name, "path": request.path})

    application = web.Application()
    application.router.add_get("/whoami", whoami)
    runner = web.AppRunner(application)
    await runner.setup()
    await web.TCPSite(runner, ip, 0).start()
    return runner


def bound_port(runner: web.AppRunner) -> int:
    return int(runner.addresses[0][1])


@pytest.mark.parametrize("port", ["80", "http"])
def test_service_proxy_reaches_only_ready_endpoints(port: str) -> None:
    async def scenario() -> None:
        runners = [await start_pod_server("127.77.3.2", "a"), await start_pod_server("127.77.3.3", "b")]
        try:
            async with es.sim_with_endpoint_controllers() as sim:
                c = sim.client
                await es.make_service(c, "web", WEB, ports=[{"name": "http", "port": 80, "targetPort": "http"}])
                for runner, name, ready in ((runners[0], "a", True), (runners[1], "b", False)):
                    await es.running_pod(c, name, WEB, ip=runner.addresses[0][0], ready=ready,
                                         ports=[es.container_port("http", bound_port(runner))])
                await es.eventually(lambda: es.slices_of(c, "web"),
                                    lambda s: set(es.endpoint_summary(s)) == {"a", "b"}, "a and b listed")
                path = f"/api/v1/namespaces/{NS}/services/web:{port}/proxy/whoami"
                answers = [await c.request("GET", path) for _ in range(4)]
                assert answers == [{"pod": "a", "path": "/whoami"}] * 4, "b is not ready and must get no traffic"
        finally:
            for runner in runners:
                await runner.cleanup()
    es.run(scenario)


def test_controller_run_again_after_returning_picks_up_changes_made_meanwhile() -> None:
    """SimCluster's supervisor calls the same `run` again after a crash; the queue must not stay shut."""
    async def scenario() -> None:
        server = app.APIServer()
        await server.start()
        client = kc.Client(server.url, server.token, ca_pem=server.ca_pem)
        controller = endpointslice.EndpointSliceController(client)
        try:
            for attempt, pod in enumerate(("a", "b")):
                stop = asyncio.Event()
                task = asyncio.create_task(controller.run(stop))
                if attempt == 0:
                    await es.make_service(client, "web", WEB, ports=HTTP)
                await es.running_pod(client, pod, WEB, ip=f"127.77.1.{attempt + 2}")
                await es.eventually(lambda: es.slices_of(client, "web"),
                                    listed(pod), f"{pod} listed by run #{attempt + 1}")
                stop.set()
                await asyncio.wait_for(task, 10)
        finally:
            await client.close()
            await server.stop()
    es.run(scenario)
