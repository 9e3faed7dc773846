"""Preflight: the cluster under test serves the Kubernetes APIs every LWS implementation builds on.

LeaderWorkerSet composes StatefulSets, Services and Pods (docs/lws-contract.md section 0), so a backend
that does not serve them cannot host any conformance test. These checks run first and fail with the
missing API named. The LWS capability modules arrive with the conformance-suite issue.
"""

from __future__ import annotations

from kubernetes import client


def test_cluster_serves_workload_apis(api_client: client.ApiClient) -> None:
    groups = {g.name: [v.version for v in g.versions] for g in client.ApisApi(api_client).get_api_versions().groups}
    assert "v1" in groups.get("apps", []), f"apps/v1 is not served; groups seen: {sorted(groups)}"
    assert "v1" in groups.get("discovery.k8s.io", []), "discovery.k8s.io/v1 (EndpointSlices) is not served"
    apps = {r.name for r in client.AppsV1Api(api_client).get_api_resources().resources}
    assert {"statefulsets", "statefulsets/scale", "controllerrevisions"} <= apps, f"apps/v1 resources: {sorted(apps)}"


def test_namespace_fixture_gives_an_active_namespace(api_client: client.ApiClient, namespace: str) -> None:
    ns = client.CoreV1Api(api_client).read_namespace(namespace)
    assert ns.status is not None and ns.status.phase == "Active", f"namespace {namespace}: {ns.status}"
