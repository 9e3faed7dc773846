"""Pod addresses on `--cluster=local`: Services list our pods and kube-apiserver reaches them, loopback only.

The real kube-apiserver refuses loopback endpoint addresses, so on a `LocalCluster` the API shows each
pod under its 198.18 address (`podnet`) and kube-apiserver's `cluster` egress goes through our CONNECT
proxy (`localcluster.egress`), which dials the loopback address behind it. Checked end to end with the
official client: the Service's EndpointSlice (made by the real kube-controller-manager) lists the pod's
198.18 address, `services/<svc>:<port>/proxy/` and `pods/<pod>:<port>/proxy/` answer from the probe, whose
own POD_IP (downward API) is the loopback address behind it, and the egress proxy refused nothing.
Skips when the release is not built (LWSCONF_REQUIRE_GO=1 fails instead).
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from kubernetes import client, config

from lwsconf import workloads
from lwsconf.controlplane import versions
from lwsconf.localcluster.cluster import LocalCluster
from lwsconf.sim.nodes.network import podnet
from lwsconf.waits import proxy
from lwsconf.waits.core import NotYet, wait_until
from tests.controlplane.test_local import _binaries_or_skip

READY = 90.0
"""Seconds the probe pod may take to be Ready and listed (real scheduler and endpoint controllers, a loaded machine)."""


def _service_account(core: Any) -> bool:
    if not core.list_namespaced_service_account("default", field_selector="metadata.name=default").items:
        raise NotYet("no ServiceAccount default/default yet")  # kube-controller-manager makes it after start
    return True


@pytest.mark.slow
@pytest.mark.parametrize("release", versions.under_test(), ids=lambda r: r.kubernetes)
def test_services_list_pods_by_their_api_address_and_the_proxy_reaches_them(release: versions.Release) -> None:
    _binaries_or_skip(release)
    with LocalCluster(release) as cluster:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))  # type: ignore[no-untyped-call]
        core: Any = client.CoreV1Api(api)  # Any: the generated models' Optional fields are all set here
        discovery: Any = client.DiscoveryV1Api(api)
        core.create_namespaced_config_map("default", workloads.probe_configmap())
        wait_until(lambda: _service_account(core), what="ServiceAccount default/default", timeout=READY, poll=0.2)
        template = workloads.probe_pod_template(labels={"app": "addr"})
        core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                               "metadata": {"name": "addr", "labels": {"app": "addr"}},
                                               "spec": template["spec"]})
        core.create_namespaced_service("default", {"metadata": {"name": "addr"}, "spec": {
            "selector": {"app": "addr"}, "ports": [{"name": "http", "port": workloads.PROBE_PORT}]}})

        def listed() -> list[dict[str, Any]]:
            slices = discovery.list_namespaced_endpoint_slice(
                "default", label_selector="kubernetes.io/service-name=addr").items
            endpoints = [{"addresses": e.addresses, "ready": e.conditions.ready, "pod": e.target_ref.name}
                         for s in slices for e in s.endpoints or ()]
            if not endpoints or not all(e["ready"] for e in endpoints):
                raise NotYet(f"endpoints {endpoints}")
            return endpoints

        endpoints = wait_until(listed, what="Service default/addr to list its ready pod", timeout=READY, poll=0.5)
        pod_ip = core.read_namespaced_pod("addr", "default").status.pod_ip
        assert endpoints == [{"addresses": [pod_ip], "ready": True, "pod": "addr"}]
        assert ipaddress.IPv4Address(pod_ip) in podnet.CLUSTER_RANGE, pod_ip

        def answers(reply: proxy.Reply) -> dict[str, Any]:
            body = reply.json()  # AssertionError (not yet) until kube-apiserver's proxy gets through
            return body

        via_service = wait_until(
            lambda: answers(proxy.service_get(api, "default", "addr", workloads.PROBE_PORT, "/")),
            what="services/addr:8080/proxy/ to answer", timeout=READY, poll=0.5)
        assert via_service["pod"] == "addr"
        loopback = podnet.PodAddressMap.for_network(str(ipaddress.IPv4Network(f"{via_service['ip']}/16",
                                                                              strict=False)))
        assert via_service["ip"].startswith("127.") and loopback.to_cluster(via_service["ip"]) == pod_ip
        path = f"/api/v1/namespaces/default/pods/addr:{workloads.PROBE_PORT}/proxy/readyz"
        direct = proxy._get(api, path, None, 10)  # no port-forward fallback: the proxy itself answers
        assert direct.status == 200 and direct.body == {"ready": True}, direct
        assert cluster.egress is not None and cluster.egress.tunnels >= 2
        assert cluster.egress_refused() == []
        api.close()
