"""What the sim kube-proxy forwards: which Services, ports and endpoints, which endpoint next, who owns an address."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.kubeproxy import forward as fwd
from lwsconf.sim.controllers.kubeproxy import kubeproxy

Obj = dict[str, Any]


def service(name: str = "web", **spec: Any) -> Obj:
    base: Obj = {"clusterIP": "127.42.128.5", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}
    return {"metadata": {"name": name, "namespace": "team"}, "spec": {**base, **spec}}


def slice_(endpoints: list[Obj], *, port_name: str = "http", port: int = 8080, protocol: str = "TCP",
           address_type: str = "IPv4", service: str = "web") -> Obj:
    return {"metadata": {"name": f"{service}-x", "namespace": "team",
                         "labels": {kubeproxy.LABEL_SERVICE_NAME: service}},
            "addressType": address_type, "ports": [{"name": port_name, "port": port, "protocol": protocol}],
            "endpoints": endpoints}


def ep(ip: str, **conditions: bool) -> Obj:
    return {"addresses": [ip], "conditions": conditions}


def test_ready_endpoints_are_used_and_an_unset_ready_counts_as_ready() -> None:
    slices = [slice_([ep("127.42.1.3", ready=True), {"addresses": ["127.42.1.2"]},
                      ep("127.42.1.4", ready=False, serving=False), ep("127.42.1.5", ready=False, serving=True)])]
    assert kubeproxy.usable_endpoints(slices, "http") == (("127.42.1.2", 8080), ("127.42.1.3", 8080))


def test_serving_terminating_endpoints_are_the_fallback_when_none_is_ready() -> None:
    draining = ep("127.42.1.2", ready=False, serving=True, terminating=True)
    stopped = ep("127.42.1.3", ready=False, serving=False, terminating=True)
    assert kubeproxy.usable_endpoints([slice_([draining, stopped])], "http") == (("127.42.1.2", 8080),)
    assert kubeproxy.usable_endpoints([slice_([draining, ep("127.42.1.9", ready=True)])], "http") == (
        ("127.42.1.9", 8080),)


def test_endpoints_join_service_ports_by_name_and_protocol_and_count_once_across_slices() -> None:
    slices = [slice_([ep("127.42.1.2", ready=True)], port=9000), slice_([ep("127.42.1.2", ready=True)], port=9000),
              slice_([ep("127.42.1.3", ready=True)], port_name="metrics"),
              slice_([ep("127.42.1.4", ready=True)], protocol="UDP"),
              slice_([ep("127.42.1.5", ready=True)], address_type="IPv6")]
    assert kubeproxy.usable_endpoints(slices, "http") == (("127.42.1.2", 9000),)


def test_backends_are_sorted_by_address_not_as_text() -> None:
    slices = [slice_([ep("127.42.1.10", ready=True), ep("127.42.1.9", ready=True)])]
    assert kubeproxy.usable_endpoints(slices, "http") == (("127.42.1.9", 8080), ("127.42.1.10", 8080))


@pytest.mark.parametrize("spec", [
    {"clusterIP": "None"}, {"clusterIP": ""}, {"type": "ExternalName", "externalName": "db.example", "clusterIP": ""},
    {"clusterIP": "10.96.0.5"}, {"ports": [{"name": "http", "port": 80, "protocol": "UDP"}]},
], ids=["headless", "no-ip", "external-name", "not-loopback", "udp"])
def test_services_without_a_loopback_clusterip_or_a_tcp_port_get_no_listener(spec: Obj) -> None:
    assert kubeproxy.desired(service(**spec), [slice_([ep("127.42.1.2", ready=True)])]) == {}


def test_each_tcp_port_with_usable_endpoints_gets_a_listener_naming_the_service_port() -> None:
    svc = service(ports=[{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "admin", "port": 81},
                         {"name": "dns", "port": 53, "protocol": "UDP"}],
                  sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}})
    rules = kubeproxy.desired(svc, [slice_([ep("127.42.1.2", ready=True)]),
                                    slice_([ep("127.42.1.2", ready=True)], port_name="dns", protocol="UDP")])
    assert rules == {("127.42.128.5", 80): fwd.PortRule("team/web:http", (("127.42.1.2", 8080),), 60.0)}


def test_unnamed_ports_match_unnamed_slice_ports_and_affinity_defaults_to_three_hours() -> None:
    svc = service(ports=[{"port": 80}], sessionAffinity="ClientIP")
    rules = kubeproxy.desired(svc, [slice_([ep("127.42.1.2", ready=True)], port_name="")])
    assert rules == {("127.42.128.5", 80): fwd.PortRule("team/web:80", (("127.42.1.2", 8080),), 10800.0)}


def test_the_balancer_rotates_and_restarts_its_rotation_when_the_endpoints_change() -> None:
    a, b, c = ("127.42.1.2", 1), ("127.42.1.3", 1), ("127.42.1.4", 1)
    balancer = fwd.Balancer(fwd.PortRule("ns/s:p", (a, b)))
    assert [balancer.next("127.0.0.1") for _ in range(3)] == [a, b, a]
    balancer.update(fwd.PortRule("ns/s:p", (a, b, c)))
    assert [balancer.next("127.0.0.1") for _ in range(4)] == [a, b, c, a]


def test_client_ip_affinity_sticks_until_it_times_out_or_its_endpoint_leaves() -> None:
    a, b = ("127.42.1.2", 1), ("127.42.1.3", 1)
    balancer = fwd.Balancer(fwd.PortRule("ns/s:p", (a, b), affinity_timeout=10.0))
    assert balancer.next("127.0.0.1", now=0.0) == a
    assert balancer.next("127.0.0.2", now=0.0) == b  # another client: the next endpoint
    assert [balancer.next("127.0.0.1", now=t) for t in (5.0, 14.0)] == [a, a]  # each use renews the affinity
    assert balancer.next("127.0.0.1", now=30.0) == a  # expired: round-robin picks again (a's turn)
    assert balancer.next("127.0.0.1", now=31.0, reset_affinity=True) == b  # a dial failed: move on
    balancer.update(fwd.PortRule("ns/s:p", (a,), affinity_timeout=10.0))
    assert balancer.next("127.0.0.1", now=32.0) == a  # b left: its clients are placed anew


class _Services:
    """Stands in for the Service informer's cache."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get((namespace or "", name))


class _Recorder(fwd.Forwarder):
    """A forwarder that records what it is told instead of binding sockets."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, fwd.Address, str]] = []

    async def serve(self, address: fwd.Address, rule: fwd.PortRule) -> None:
        self.calls.append(("serve", address, rule.name))

    def stop_serving(self, address: fwd.Address) -> None:
        self.calls.append(("stop", address, ""))


def test_a_clusterip_handed_to_a_new_service_is_not_closed_by_a_late_sync_of_the_old_one() -> None:
    async def scenario() -> list[tuple[str, fwd.Address, str]]:
        proxy = kubeproxy.KubeProxy(cast(kc.Client, None))  # never started: no API calls
        services, recorder = _Services(), _Recorder()
        proxy.services, proxy.forwarder = services, recorder  # type: ignore[assignment]
        services.objects[("team", "old")] = service("old")
        proxy._on_slice("ADDED", slice_([ep("127.42.1.2", ready=True)], service="old"), None)
        await proxy.sync(("team", "old"))
        del services.objects[("team", "old")]  # deleted, and its ClusterIP given at once to "new" ...
        services.objects[("team", "new")] = service("new")
        proxy._on_slice("ADDED", slice_([ep("127.42.1.3", ready=True)], service="new"), None)
        await proxy.sync(("team", "new"))  # ... which happens to sync first
        await proxy.sync(("team", "old"))
        return recorder.calls
    address = ("127.42.128.5", 80)
    assert asyncio.run(scenario()) == [("serve", address, "team/old:http"), ("serve", address, "team/new:http")]
