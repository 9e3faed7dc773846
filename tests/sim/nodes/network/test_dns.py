"""Cluster DNS records, the per-pod hosts files that publish them, and the one DNS all nodes share.

Sources: the Kubernetes DNS specification (https://github.com/kubernetes/dns/blob/master/docs/specification.md,
sections 2.3.1 ClusterIP A records, 2.4.1 headless A records and hostname records),
https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/ (search path
`<ns>.svc.cluster.local svc.cluster.local cluster.local`; a pod's hostname/subdomain A record needs a
headless Service named like the subdomain in its namespace), kubelet_pods.go
managedHostsFileContent (the hosts file header, localhost lines, `<ip>\\t<host>.<domain>\\t<host>`,
HostAliases), and the EndpointSlice controller (not-ready pods only with publishNotReadyAddresses).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.nodes.kubelet import processes
from lwsconf.sim.nodes.network import dns

Obj = dict[str, Any]


def service(name: str, ns: str = "team", *, cluster_ip: str = "None", selector: dict[str, str] | None = None,
            publish_not_ready: bool = False) -> Obj:
    spec: Obj = {"clusterIP": cluster_ip, "ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod(name: str, ip: str, ns: str = "team", *, labels: dict[str, str] | None = None, ready: bool = True,
        hostname: str = "", subdomain: str = "", phase: str = "Running") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "python:3.11"}]}
    if hostname:
        spec["hostname"] = hostname
    if subdomain:
        spec["subdomain"] = subdomain
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": spec,
            "status": {"phase": phase, "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def cluster(*objects: Obj) -> dns.ClusterDNS:
    table = dns.ClusterDNS()
    for obj in objects:
        (table.on_pod if "containers" in obj["spec"] else table.on_service)("ADDED", obj)
    return table


def test_cluster_ip_service_resolves_under_every_search_path_name() -> None:
    table = cluster(service("api", cluster_ip="127.96.0.5"))
    for name in ("api.team.svc.cluster.local", "api.team.svc", "api.team"):
        assert table.lookup(name, "elsewhere") == ["127.96.0.5"], name
    assert table.lookup("api", "team") == ["127.96.0.5"]       # same namespace: the bare name
    assert table.lookup("api", "elsewhere") == []               # other namespaces need <svc>.<ns>


def test_headless_service_resolves_to_ready_selected_pods_only() -> None:
    table = cluster(service("db", selector={"app": "db"}),
                    pod("db-0", "127.9.1.2", labels={"app": "db"}),
                    pod("db-1", "127.9.1.3", labels={"app": "db"}, ready=False),
                    pod("db-2", "127.9.1.4", labels={"app": "db"}, phase="Succeeded"),
                    pod("web-0", "127.9.1.5", labels={"app": "web"}),
                    pod("db-x", "127.9.1.6", ns="other", labels={"app": "db"}))
    assert table.lookup("db.team.svc.cluster.local") == ["127.9.1.2"]


def test_pod_hostname_record_needs_a_matching_headless_service() -> None:
    leader = pod("lws-0", "127.9.1.2", labels={"lws": "x"}, hostname="lws-0", subdomain="lws", ready=False)
    stray = pod("other-0", "127.9.1.3", labels={"lws": "x"}, hostname="other-0", subdomain="nosuch")
    unnamed = pod("anon", "127.9.1.4", labels={"lws": "x"}, subdomain="lws")   # no spec.hostname
    table = cluster(service("lws", selector={"lws": "x"}, publish_not_ready=True), leader, stray, unnamed)
    # Published although not ready, as LWS needs: its Service publishes not-ready addresses.
    assert table.lookup("lws-0.lws.team") == ["127.9.1.2"]
    assert table.lookup("lws-0.lws.team.svc.cluster.local") == ["127.9.1.2"]
    assert table.lookup("lws-0.lws", "team") == ["127.9.1.2"]
    assert table.lookup("other-0.nosuch.team") == []
    assert table.lookup("anon.lws.team") == []
    assert table.lookup("lws.team") == ["127.9.1.2", "127.9.1.3", "127.9.1.4"]


def test_not_ready_pod_gets_no_hostname_record_without_publish_not_ready() -> None:
    table = cluster(service("lws", selector={"lws": "x"}),
                    pod("lws-0", "127.9.1.2", labels={"lws": "x"}, hostname="lws-0", subdomain="lws", ready=False))
    assert table.lookup("lws-0.lws.team") == []


def test_deleting_objects_removes_their_records() -> None:
    svc = service("api", cluster_ip="127.96.0.5")
    table = cluster(svc)
    table.on_service("DELETED", svc, svc)
    assert table.lookup("api.team") == []


def test_hosts_file_starts_with_the_kubelet_managed_content(tmp_path: Path) -> None:
    me = pod("lws-0", "127.9.1.2", hostname="lws-0", subdomain="lws")
    me["spec"]["hostAliases"] = [{"ip": "127.0.0.9", "hostnames": ["alias-a", "alias-b"]}]
    table = cluster(service("api", cluster_ip="127.96.0.5"))
    table.open_hosts_file(tmp_path / "hosts", me, "127.9.1.2")
    text = (tmp_path / "hosts").read_text()
    assert text.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert "127.9.1.2\tlws-0.lws.team.svc.cluster.local\tlws-0\n" in text
    assert "# Entries added by HostAliases.\n127.0.0.9\talias-a\talias-b\n" in text
    assert "127.96.0.5\tapi.team.svc.cluster.local\tapi.team.svc\tapi.team\tapi\n" in text


def test_hosts_file_without_subdomain_lists_the_bare_hostname(tmp_path: Path) -> None:
    table = dns.ClusterDNS()
    table.open_hosts_file(tmp_path / "hosts", pod("web-0", "127.9.1.2"), "127.9.1.2")
    assert "127.9.1.2\tweb-0\n" in (tmp_path / "hosts").read_text()


def test_long_pod_names_are_truncated_like_the_kubelet_does() -> None:
    name = "a" * 62 + "-b"
    assert dns.pod_hostname(pod(name, "127.9.1.2")) == ("a" * 62, "")


def test_hosts_file_is_rewritten_in_place_when_records_change(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    table = dns.ClusterDNS()
    hosts = table.open_hosts_file(path, pod("web-0", "127.9.1.2"), "127.9.1.2")
    inode = path.stat().st_ino
    table.on_service("ADDED", service("api", cluster_ip="127.96.0.5"))   # no loop running: written at once
    assert "api.team" in path.read_text()
    assert path.stat().st_ino == inode
    writes = hosts.writes
    table.on_pod("ADDED", pod("unrelated", "127.9.1.9"))                 # no record change, no write
    assert hosts.writes == writes
    hosts.close()
    table.on_service("ADDED", service("late", cluster_ip="127.96.0.6"))
    assert "late" not in path.read_text()


def test_events_in_one_loop_turn_are_coalesced_into_one_write(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = dns.ClusterDNS(flush_delay=0.01)
        hosts = table.open_hosts_file(tmp_path / "hosts", pod("web-0", "127.9.1.2"), "127.9.1.2")
        for i in range(50):
            table.on_service("ADDED", service(f"svc-{i}", cluster_ip=f"127.96.0.{i + 10}"))
        assert hosts.writes == 1                       # only the initial write so far
        deadline = time.monotonic() + 2
        while "svc-49" not in (tmp_path / "hosts").read_text() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert hosts.writes == 2, (tmp_path / "hosts").read_text()
    asyncio.run(asyncio.wait_for(scenario(), 5))


@contextlib.asynccontextmanager
async def api_server() -> AsyncIterator[kc.Client]:
    server = app.APIServer()
    await server.start()
    client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="dns-test")
    try:
        yield client
    finally:
        await client.close()
        await server.stop()


def test_cluster_dns_follows_real_informers(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with api_server() as client:
            pods, services = informer_mod.Informer(client, kc.PODS), informer_mod.Informer(client, kc.SERVICES)
            table = dns.ClusterDNS(flush_delay=0.01)
            table.attach(pods, services)
            pods.start()
            services.start()
            await pods.wait_synced(5)
            await services.wait_synced(5)
            hosts_path = tmp_path / "hosts"
            table.open_hosts_file(hosts_path, pod("me", "127.9.1.9", ns="default"), "127.9.1.9")
            await client.create(kc.SERVICES, {"metadata": {"name": "lws"}, "spec": {
                "clusterIP": "None", "selector": {"app": "lws"}, "publishNotReadyAddresses": True,
                "ports": [{"port": 80}]}}, namespace="default")
            await client.create(kc.PODS, {"metadata": {"name": "lws-0", "labels": {"app": "lws"}}, "spec": {
                "hostname": "lws-0", "subdomain": "lws", "containers": [{"name": "c", "image": "python:3.11"}]}},
                namespace="default")
            await client.patch(kc.PODS, "lws-0", {"status": {"podIP": "127.9.1.2", "podIPs": [{"ip": "127.9.1.2"}]}},
                               namespace="default", subresource="status")
            deadline = time.monotonic() + 5
            while "lws-0.lws.default" not in hosts_path.read_text() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert "127.9.1.2\tlws-0.lws.default.svc.cluster.local" in hosts_path.read_text(), (
                f"records: {table.records()}\nhosts file:\n{hosts_path.read_text()}")
            pods.stop()
            services.stop()
            await pods.join()
            await services.join()
    asyncio.run(asyncio.wait_for(scenario(), 20))


def test_hosts_file_survives_its_directory_vanishing(tmp_path: Path) -> None:
    path = tmp_path / "gone" / "hosts"
    table = dns.ClusterDNS()
    table.open_hosts_file(path, pod("web-0", "127.9.1.2"), "127.9.1.2")
    os.remove(path)
    os.rmdir(path.parent)
    path.parent.write_text("not a directory")          # the next write fails: logged, not raised
    table.on_service("ADDED", service("api", cluster_ip="127.96.0.5"))
    assert table.flush() == 0


def test_a_flush_after_events_that_change_no_record_touches_no_file(tmp_path: Path) -> None:
    table = dns.ClusterDNS()
    first = table.open_hosts_file(tmp_path / "a", pod("web-0", "127.9.1.2"), "127.9.1.2")
    table.on_service("ADDED", service("api", cluster_ip="127.96.0.5"))
    second = table.open_hosts_file(tmp_path / "b", pod("web-1", "127.9.1.3", ns="other"), "127.9.1.3")
    (tmp_path / "b").write_text("changed behind our back\n")
    table.on_pod("ADDED", pod("unrelated", "127.9.1.9"))          # records as when "b" was opened
    assert (first.writes, second.writes) == (2, 1)
    table.on_service("ADDED", service("db", cluster_ip="127.96.0.6"))
    assert (first.writes, second.writes) == (3, 2)
    assert "\tapi.team\n" in (tmp_path / "b").read_text() and "\tapi\n" not in (tmp_path / "b").read_text()


def pod_and_service_watches(server: app.APIServer) -> int:
    return sum(len(t.watchers) for t in server.ctx.db.tables() if t.key in (("", "pods"), ("", "services")))


def test_shared_cluster_dns_watches_only_once_asked_and_stops_with_its_run(tmp_path: Path) -> None:
    async def scenario() -> None:
        server = app.APIServer()
        await server.start()
        client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="coredns/cluster-dns")
        try:
            await client.create(kc.SERVICES, {"metadata": {"name": "api"}, "spec": {
                "clusterIP": "127.96.0.7", "ports": [{"port": 80}]}}, namespace="default")
            shared, stop = dns.SharedClusterDNS(flush_delay=0.01), asyncio.Event()
            task = asyncio.create_task(shared.run(client, stop))
            await asyncio.sleep(0)
            assert shared.pods is None and pod_and_service_watches(server) == 0, "no watch before a launcher asks"
            await asyncio.gather(shared.wait_synced(5), shared.wait_synced(5))   # two nodes' launchers
            assert [s["metadata"]["name"] for s in shared.services_of("team")] == ["api"]   # default/ too
            hosts = [shared.table.open_hosts_file(tmp_path / n, pod(n, "127.9.1.2"), "127.9.1.2")
                     for n in ("on-node-a", "on-node-b")]
            assert all("127.96.0.7\tapi.default.svc.cluster.local" in h.path.read_text() for h in hosts)
            stop.set()
            await task
            assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("informer") and not t.done()]
        finally:
            await client.close()
            await server.stop()
    asyncio.run(asyncio.wait_for(scenario(), 20))


class _NoRuntime:
    async def close(self) -> None:
        return None


def test_a_launcher_outside_a_fleet_runs_a_dns_of_its_own_and_stops_it_on_close(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with api_server() as client:
            launcher = processes.ProcessLauncher(client, _NoRuntime(), tmp_path,  # type: ignore[arg-type]
                                                 node_name="alone", host_ip="127.9.0.1")
            await launcher._ensure_dns()
            assert launcher.cluster_dns.pods is not None and launcher.cluster_dns.pods.has_synced
            await launcher.close()
            assert not [t for t in asyncio.all_tasks() if t.get_name().startswith(("informer", "cluster-dns"))
                        and not t.done()]
    asyncio.run(asyncio.wait_for(scenario(), 20))
