"""The pod address map of `--cluster=local` (`podnet`): 127.X.a.b <-> 198.18.a.b, reversible, per cluster."""

from __future__ import annotations

import ipaddress

import pytest

from lwsconf.sim.nodes.kubelet import state, status
from lwsconf.sim.nodes.network import dns, ipam, podnet


def test_pod_and_node_addresses_map_one_to_one_and_back() -> None:
    addresses = podnet.PodAddressMap.for_network("127.42.0.0/16")
    assert addresses.to_cluster("127.42.3.17") == "198.18.3.17"
    assert addresses.to_cluster("127.42.0.1") == "198.18.0.1"
    assert addresses.to_cluster("127.42.127.254") == "198.18.127.254"
    for a in range(0, 128, 7):
        for b in (0, 1, 2, 128, 254, 255):
            ip = f"127.42.{a}.{b}"
            mapped = addresses.to_cluster(ip)
            assert ipaddress.IPv4Address(mapped) in podnet.CLUSTER_RANGE
            assert addresses.is_cluster_address(mapped) and addresses.to_loopback(mapped) == ip


def test_clusterips_other_clusters_and_the_api_server_pass_unchanged() -> None:
    """Only the cluster's lower half maps: ClusterIPs (127.X.128.0/17) stay loopback, as does 127.0.0.1."""
    addresses = podnet.PodAddressMap.for_network(ipam.PodNetwork.parse("127.42.0.0/16").cidr)
    for ip in ("127.42.128.5", "127.0.0.1", "127.43.1.2", "10.0.0.1", "not-an-ip", ""):
        assert addresses.to_cluster(ip) == ip
    for ip in ("198.18.128.1", "198.19.1.2", "127.42.1.2", "8.8.8.8"):
        assert not addresses.is_cluster_address(ip) and addresses.to_loopback(ip) == ip


def test_the_same_api_address_means_each_clusters_own_pod() -> None:
    one, two = (podnet.PodAddressMap.for_network(f"127.{x}.0.0/16") for x in (42, 43))
    assert one.to_loopback("198.18.1.2") == "127.42.1.2" and two.to_loopback("198.18.1.2") == "127.43.1.2"


def test_the_sim_keeps_loopback_pod_ips() -> None:
    assert not podnet.IDENTITY.mapped
    assert podnet.IDENTITY.to_cluster("127.42.1.2") == "127.42.1.2"
    assert not podnet.IDENTITY.is_cluster_address("198.18.1.2")


@pytest.mark.parametrize("network", ["10.0.0.0/16", "127.42.0.0/17", "127.0.0.0/8"])
def test_only_a_loopback_slash_16_has_a_map(network: str) -> None:
    with pytest.raises(ValueError, match="127.X.0.0/16"):
        podnet.PodAddressMap.for_network(network)


def test_status_shows_the_api_address_and_adopting_reads_the_loopback_one_back() -> None:
    """What the agent writes and what a restarted agent reads: the pod keeps its loopback address."""
    addresses = podnet.PodAddressMap.for_network("127.42.0.0/16")
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"containers": []}}
    st = state.PodState(uid="u", host_ip="127.42.0.2", admitted=True, pod_ip="127.42.2.9")
    written = status.pod_status(pod, st, now="2026-01-01T00:00:00Z", addresses=addresses)
    assert written["podIP"] == "198.18.2.9" and written["podIPs"] == [{"ip": "198.18.2.9"}]
    assert status.pod_status(pod, st, now="2026-01-01T00:00:00Z")["podIP"] == "127.42.2.9"  # the sim

    reserved: list[tuple[str, str]] = []

    def reserve(uid: str, ip: str) -> bool:
        reserved.append((uid, ip))
        return True

    again = state.PodState(uid="u", host_ip="127.42.0.2")
    state.adopt(again, {**written, "startTime": "2026-01-01T00:00:00Z"}, reserve, addresses.to_loopback)
    assert again.pod_ip == "127.42.2.9" and reserved == [("u", "127.42.2.9")]


def test_hosts_file_records_use_the_loopback_address_behind_a_pod_ip() -> None:
    addresses = podnet.PodAddressMap.for_network("127.42.0.0/16")
    svc = {"metadata": {"name": "lws", "namespace": "ns"},
           "spec": {"clusterIP": "None", "selector": {"app": "x"}, "publishNotReadyAddresses": True}}
    pod = {"metadata": {"name": "lws-0", "namespace": "ns", "labels": {"app": "x"}},
           "spec": {"hostname": "lws-0", "subdomain": "lws"}, "status": {"phase": "Running", "podIP": "198.18.2.9"}}
    records = dns.compute_records([svc], [pod], addresses)
    assert {r.ip for r in records} == {"127.42.2.9"} and len(records) == 2
    assert {r.ip for r in dns.compute_records([svc], [pod])} == {"198.18.2.9"}  # the identity leaves it
