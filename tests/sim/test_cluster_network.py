"""Each SimCluster owns one 127.X.0.0/16: ClusterIPs come from its upper half, so clusters side by side
(parallel test workers, several suites) never hand out the same address and each one's kube-proxy can
bind every Service it has."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.sim import cluster as cluster_mod
from lwsconf.sim.controllers.kubeproxy import kubeproxy
from lwsconf.sim.nodes.network import ipam
from tests.sim.controllers.kubeproxy import kubeproxy_sim as kps

Obj = dict[str, Any]


async def _service_with_backend(sim: cluster_mod.SimCluster, name: str) -> tuple[str, asyncio.Server]:
    """A selectorless Service on port 80 whose one endpoint is a backend on this cluster's first pod IP.

    Returns the Service's ClusterIP and the backend (greets with `name`), which the caller closes.
    """
    assert sim.pod_network is not None
    client = kc.Client(sim.url, sim.token, ca_pem=sim.apiserver.ca_pem, user_agent="test")
    try:
        svc = await kps.make_service(client, "web")
        pod_ip = f"127.{sim.pod_network.second_octet}.1.2"
        await kps.write_slice(client, "web", [kps.endpoint(pod_ip)])
    finally:
        await client.close()
    server = await asyncio.start_server(lambda r, w: _greet(w, name), pod_ip, kps.TARGET, reuse_address=True)
    return str(svc["spec"]["clusterIP"]), server


def _greet(writer: asyncio.StreamWriter, name: str) -> None:
    writer.write(f"{name}\n".encode())
    writer.close()


def test_two_clusters_side_by_side_give_their_first_service_different_clusterips_and_both_answer() -> None:
    async def scenario() -> None:
        only_proxy = [("kube-proxy", lambda c: kubeproxy.KubeProxy(c).run)]
        sims = [cluster_mod.SimCluster(controllers=list(only_proxy), nodes=[]) for _ in range(2)]
        backends: list[asyncio.Server] = []
        for sim in sims:
            await sim.start()
        try:
            ips = []
            for i, sim in enumerate(sims):
                ip, backend = await _service_with_backend(sim, f"cluster-{i}")
                ips.append(ip)
                backends.append(backend)
            for sim, ip in zip(sims, ips, strict=True):
                assert sim.pod_network is not None
                assert ipaddress.ip_address(ip) in sim.pod_network.service_range, (ip, sim.pod_network)
                assert sim.apiserver.ctx.service_range == sim.pod_network.service_range
            assert ips[0] != ips[1] and ips[0].endswith(".128.1") and ips[1].endswith(".128.1"), ips
            for i, ip in enumerate(ips):
                answer = await kps.until(lambda ip=ip: kps.ask(ip, 80, timeout=2), f"cluster {i}'s Service to answer")
                assert answer == [f"cluster-{i}"], answer
        finally:
            for backend in backends:
                backend.close()
            for sim in sims:
                await sim.stop()
        assert all(sim.pod_network is None for sim in sims)  # the reservations were released
    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_cluster_given_a_network_allocates_from_it_and_a_bare_api_server_keeps_127_96() -> None:
    async def scenario() -> tuple[str, str]:
        sim = cluster_mod.SimCluster(controllers=[], nodes=[], pod_network="127.42.0.0/16")
        await sim.start()
        try:
            client = kc.Client(sim.url, sim.token, ca_pem=sim.apiserver.ca_pem, user_agent="test")
            try:
                given = (await kps.make_service(client, "web"))["spec"]["clusterIP"]
            finally:
                await client.close()
        finally:
            await sim.stop()
        assert sim.pod_network == ipam.PodNetwork.parse("127.42.0.0/16")  # not ours to release
        bare = cluster_mod.app.APIServer()
        return str(given), str(bare.ctx.service_range)
    given, bare_range = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert ipaddress.ip_address(given) in ipaddress.ip_network("127.42.128.0/17"), given
    assert bare_range == "127.96.0.0/16"
