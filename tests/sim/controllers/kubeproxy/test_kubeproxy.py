"""The sim kube-proxy against the real in-process API server, with real TCP connections.

Each test starts an API server (ClusterIPs from a freshly reserved network) and the kube-proxy alone
(`kubeproxy_sim`), writes Services and EndpointSlices, runs backends on pod IPs, and connects to the
ClusterIP like a pod would. Waits are bounded polls that report what they last saw.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time

import pytest

from lwsconf.kubeclient import client as kc
from tests.sim.controllers import endpoints_sim as es
from tests.sim.controllers.kubeproxy import kubeproxy_sim as kps
from tests.sim.controllers.kubeproxy.kubeproxy_sim import NS


def test_connections_to_a_clusterip_are_spread_round_robin_over_its_ready_endpoints() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            a, b = env.pod_ip(0), env.pod_ip(1)
            await env.backend("a", a)
            await env.backend("b", b)
            svc = await kps.make_service(env.client, "web")
            ip = svc["spec"]["clusterIP"]
            assert ipaddress.ip_address(ip) in env.network.service_range, ip
            await kps.write_slice(env.client, "web", [kps.endpoint(a), kps.endpoint(b)])
            await kps.until(lambda: kps.answerer(ip, 80), "the Service to answer")
            answers = [await kps.answerer(ip, 80) for _ in range(6)]
            assert sorted(answers) == ["a", "a", "a", "b", "b", "b"], answers
            assert all(answers[i] != answers[i + 1] for i in range(5)), answers  # strictly alternating
    es.run(scenario)


def test_an_unready_endpoint_gets_no_connections() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            a, b = env.pod_ip(0), env.pod_ip(1)
            await env.backend("a", a)
            await env.backend("b", b)
            ip = (await kps.make_service(env.client, "web"))["spec"]["clusterIP"]
            await kps.write_slice(env.client, "web", [kps.endpoint(a), kps.endpoint(b, ready=False, serving=False)])
            await kps.until(lambda: kps.answerer(ip, 80), "the Service to answer")
            answers = {await kps.answerer(ip, 80) for _ in range(6)}
            assert answers == {"a"}
            await kps.write_slice(env.client, "web", [kps.endpoint(a, ready=False, serving=False), kps.endpoint(b)])
            await kps.until(lambda: _only(ip, "b"), "only b to answer once a is unready and b ready")
    es.run(scenario)


async def _only(ip: str, name: str) -> bool:
    return {await kps.answerer(ip, 80) for _ in range(4)} == {name}


def test_serving_terminating_endpoints_are_used_only_while_none_is_ready() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            a, b = env.pod_ip(0), env.pod_ip(1)
            await env.backend("a", a)
            await env.backend("b", b)
            ip = (await kps.make_service(env.client, "web"))["spec"]["clusterIP"]
            draining = kps.endpoint(a, ready=False, serving=True, terminating=True)
            await kps.write_slice(env.client, "web", [draining, kps.endpoint(b)])
            await kps.until(lambda: kps.answerer(ip, 80), "the Service to answer")
            assert {await kps.answerer(ip, 80) for _ in range(4)} == {"b"}
            await kps.write_slice(env.client, "web", [draining, kps.endpoint(b, ready=False, serving=False)])
            await kps.until(lambda: _only(ip, "a"), "the draining endpoint to take over once none is ready")
    es.run(scenario)


def test_a_port_without_usable_endpoints_refuses_connections_at_once() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            a = env.pod_ip(0)
            await env.backend("a", a)
            ip = (await kps.make_service(env.client, "web"))["spec"]["clusterIP"]
            await kps.write_slice(env.client, "web", [kps.endpoint(a, ready=False, serving=False)])
            await _stays_refused(ip, 80)
            await kps.write_slice(env.client, "web", [kps.endpoint(a)])
            await kps.until(lambda: kps.answerer(ip, 80), "the Service to answer once a is ready")
            await kps.write_slice(env.client, "web", [])
            await kps.until(lambda: kps.refused(ip, 80), "the Service to refuse again without endpoints")
            # ConnectionRefusedError comes from connect() only: the kernel refused, no listener accepted the call and
            # then gave up on its dials (that would read as an empty answer or a reset). A 0.5 s bound here timed the
            # loop as well (design rule 7).
            with pytest.raises(ConnectionRefusedError):
                await kps.ask(ip, 80)
    es.run(scenario)


async def _stays_refused(ip: str, port: int) -> None:
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        assert await kps.refused(ip, port), f"{ip}:{port} answered although it has no usable endpoint"
        await asyncio.sleep(0.02)


def test_deleting_the_service_closes_its_listener_but_not_connections_already_made() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            ip = await env.serving()
            reader, writer = await asyncio.open_connection(ip, 80)
            assert await reader.readline() == b"a\n"
            await env.client.delete(kc.SERVICES, "web", namespace=NS)
            await kps.until(lambda: kps.refused(ip, 80), "the deleted Service's ClusterIP to refuse")
            assert env.proxy.forwarder.addresses() == set()
            writer.write(b"still here\n")
            writer.write_eof()
            assert (await asyncio.wait_for(reader.read(), 5)).decode().splitlines() == ["still here", "bye"]
            writer.close()
    es.run(scenario)


def test_changing_the_service_port_moves_the_listener() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            ip = await env.serving()
            await env.client.patch(kc.SERVICES, "web", {"spec": {"ports": [
                {"name": "http", "port": 81, "targetPort": kps.TARGET}]}}, namespace=NS)
            assert await kps.until(lambda: kps.answerer(ip, 81), "port 81 to answer") == "a"
            assert await kps.until(lambda: kps.refused(ip, 80), "port 80 to refuse")
            assert env.proxy.forwarder.addresses() == {(ip, 81)}
    es.run(scenario)


def test_a_freed_clusterip_given_to_a_new_service_reaches_the_new_services_endpoints() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            a, b = env.pod_ip(0), env.pod_ip(1)
            await env.backend("a", a)
            await env.backend("b", b)
            ip = (await kps.make_service(env.client, "old"))["spec"]["clusterIP"]
            await kps.write_slice(env.client, "old", [kps.endpoint(a)])
            await kps.until(lambda: kps.answerer(ip, 80), "the old Service to answer")
            await env.client.delete(kc.SERVICES, "old", namespace=NS)
            new = await kps.make_service(env.client, "new")
            assert new["spec"]["clusterIP"] == ip  # the allocator hands out the lowest free address
            await kps.write_slice(env.client, "new", [kps.endpoint(b)])
            await kps.until(lambda: _only(ip, "b"), "the reused ClusterIP to reach the new Service's endpoint")
    es.run(scenario)


def test_a_half_close_reaches_the_endpoint_and_its_reply_still_comes_back() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            ip = await env.serving()
            payload = b"x" * 300_000  # more than one read buffer, both ways
            reply = await kps.ask(ip, 80, payload)
            assert reply == ["a", payload.decode(), "bye"]  # "bye" is written after the backend saw EOF
    es.run(scenario)


def test_client_ip_session_affinity_keeps_a_client_on_one_endpoint() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            a, b = env.pod_ip(0), env.pod_ip(1)
            await env.backend("a", a)
            await env.backend("b", b)
            ip = (await kps.make_service(env.client, "web", sessionAffinity="ClientIP"))["spec"]["clusterIP"]
            await kps.write_slice(env.client, "web", [kps.endpoint(a), kps.endpoint(b)])
            first = await kps.until(lambda: kps.answerer(ip, 80), "the Service to answer")
            assert [await kps.answerer(ip, 80) for _ in range(4)] == [first] * 4
    es.run(scenario)


def test_a_clusterip_held_by_another_process_is_warned_about_and_served_once_free(
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster(bind_retry=0.1) as env:
            a = env.pod_ip(0)
            await env.backend("a", a)
            ip = str(env.network.service_range.network_address + 77)
            squatter = await asyncio.start_server(lambda r, w: w.close(), ip, 80)
            await kps.make_service(env.client, "web", clusterIP=ip)
            await kps.write_slice(env.client, "web", [kps.endpoint(a)])
            await kps.until(lambda: _warned(caplog, ip), "a warning naming the taken address")
            await kps.until(lambda: _at_least(env.proxy.bind_failures, 3), "two more tries to bind")
            assert not env.proxy.forwarder.addresses() and not env.task.done()
            squatter.close()
            answered = await kps.until(lambda: kps.answerer(ip, 80), "the Service to answer once the address is free")
            assert answered == "a"
    with caplog.at_level(logging.WARNING, logger="lwsconf.sim.controllers.kubeproxy.kubeproxy"):
        es.run(scenario)
    assert len([r for r in caplog.records if "cannot listen" in r.getMessage()]) == 1  # warned once, not per retry


async def _at_least(value: int, least: int) -> bool:
    return value >= least


async def _warned(caplog: pytest.LogCaptureFixture, ip: str) -> bool:
    return any(f"cannot listen on {ip}:80" in r.getMessage() for r in caplog.records)


def test_stopping_closes_listeners_and_open_connections_quickly() -> None:
    async def scenario() -> None:
        async with kps.proxied_cluster() as env:
            ip = await env.serving()
            reader, writer = await asyncio.open_connection(ip, 80)
            assert await reader.readline() == b"a\n"
            env.stop.set()
            # "quickly" is the two bounds below: the stop ends within 2 s, and the open connection is reset, not left
            # hanging until its 2 s read gives up (a 1.0 s bound on the total timed the loop too: design rule 7)
            await asyncio.wait_for(env.task, 2)
            with pytest.raises(ConnectionResetError):
                await asyncio.wait_for(reader.read(), 2)
            assert await kps.refused(ip, 80)
            writer.close()
    es.run(scenario)
