"""The local cluster end to end: real control plane, simulated nodes, our CRD and a sample LWS.

What `lwsconf local up` promises, checked with the official Python client only (no kubectl): every
simulated node is listed and Ready, `manifests/crd/` applies (the CRD, the ValidatingAdmissionPolicy and
the MutatingAdmissionPolicy, which the real kube-apiserver serves by default in both pinned releases),
and a sample LeaderWorkerSet reaches Available with the reference reconciler: the real
kube-controller-manager makes the StatefulSets' pods, the real kube-scheduler binds them, our node
agents run them. Skips when the release is not built (LWSCONF_REQUIRE_GO=1 fails instead).
"""

from __future__ import annotations

import ipaddress
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from lwsconf.controlplane import versions
from lwsconf.localcluster.cluster import LocalCluster
from lwsconf.reconciler.run import RunningReconciler
from lwsconf.waits.core import NotYet, wait_until
from lwsconf.waits.lws import lws_kind_must_accept_writes

from .test_local import _binaries_or_skip

REPO = Path(__file__).resolve().parents[2]
LWS_AVAILABLE = 180.0
"""Seconds the sample LWS may take to be Available (6 pods through two real controllers, a loaded machine)."""
GROUP, VERSION, PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"


def sample_lws(name: str) -> dict[str, Any]:
    """Two groups of three, the shape of upstream's config/samples (an emulated container image)."""
    container = {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LeaderWorkerSet", "metadata": {"name": name},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {
                "size": 3, "workerTemplate": {"spec": {"containers": [container]}}}}}


def apply_manifests(api: client.ApiClient) -> list[str]:
    """Create every object of manifests/crd/ (as `kubectl apply -f manifests/crd/` would on a new cluster)."""
    ext, adm = client.ApiextensionsV1Api(api), client.AdmissionregistrationV1Api(api)
    create = {"CustomResourceDefinition": ext.create_custom_resource_definition,
              "ValidatingAdmissionPolicy": adm.create_validating_admission_policy,
              "ValidatingAdmissionPolicyBinding": adm.create_validating_admission_policy_binding,
              "MutatingAdmissionPolicy": adm.create_mutating_admission_policy,
              "MutatingAdmissionPolicyBinding": adm.create_mutating_admission_policy_binding}
    made = []
    for path in sorted((REPO / "manifests" / "crd").glob("*.yaml")):
        for body in yaml.safe_load_all(path.read_text()):
            create[body["kind"]](body)
            made.append(f"{body['kind']}/{body['metadata']['name']}")
    return made


@pytest.mark.slow
@pytest.mark.parametrize("release", versions.under_test(), ids=lambda r: r.kubernetes)
def test_local_cluster_nodes_ready_and_sample_lws_available(release: versions.Release) -> None:
    _binaries_or_skip(release)
    with LocalCluster(release) as cluster:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        nodes = {n.metadata.name: n for n in core.list_node().items}
        assert sorted(nodes) == sorted(cluster.node_names) and len(nodes) == 6
        for node in nodes.values():
            ready = [c.status for c in node.status.conditions if c.type == "Ready"]
            assert ready == ["True"], (node.metadata.name, node.status.conditions)
        assert client.VersionApi(api).get_code().git_version == f"v{release.kubernetes}"
        _kubernetes_service_reaches_the_api_server(cluster, core, release)
        made = apply_manifests(api)
        assert "MutatingAdmissionPolicy/leaderworkerset-unique-leader-subdomain" in made, made
        custom = client.CustomObjectsApi(api)

        lws_kind_must_accept_writes(api, timeout=60, poll=0.5)
        with RunningReconciler(cluster.kubeconfig):
            custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, sample_lws("sample"))

            def available() -> bool:
                lws = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "sample")
                conditions = {c["type"]: c["status"] for c in (lws.get("status") or {}).get("conditions") or ()}
                if conditions.get("Available") != "True":
                    raise NotYet(f"conditions {conditions}, readyReplicas {lws.get('status', {}).get('readyReplicas')}")
                return True

            def describe() -> str:
                pods = core.list_namespaced_pod("default").items
                return "\n".join(f"{p.metadata.name} node={p.spec.node_name} phase={p.status.phase}" for p in pods)

            wait_until(available, what="LWS default/sample to be Available", timeout=LWS_AVAILABLE, poll=1.0,
                       describe=describe)
            pods = core.list_namespaced_pod("default", label_selector="leaderworkerset.sigs.k8s.io/name=sample").items
            assert len(pods) == 6
            assert all(p.spec.node_name in nodes and p.status.phase == "Running" for p in pods)
        api.close()
    assert cluster.fleet is None and cluster.controlplane is not None and cluster.controlplane.components
    assert all(c.exited() is not None for c in cluster.controlplane.components)


def _kubernetes_service_reaches_the_api_server(cluster: LocalCluster, core: client.CoreV1Api,
                                               release: versions.Release) -> None:
    """What an in-pod client does: https://<kubernetes ClusterIP>:443, verifying the serving certificate
    (its SANs carry the ClusterIP); our kube-proxy forwards to the API server on 127.0.0.1."""
    ip = core.read_namespaced_service("kubernetes", "default").spec.cluster_ip
    assert ipaddress.ip_address(ip).is_loopback, ip
    assert cluster.controlplane is not None
    context = cluster.controlplane.ssl_context()

    def version() -> str:
        try:
            with urllib.request.urlopen(f"https://{ip}:443/version", timeout=5, context=context) as reply:  # noqa: S310
                return str(json.loads(reply.read())["gitVersion"])
        except OSError as exc:
            raise NotYet(f"{ip}:443: {exc}") from None

    assert wait_until(version, what=f"the kubernetes Service {ip}:443 to answer", timeout=30, poll=0.5) == \
        f"v{release.kubernetes}"
