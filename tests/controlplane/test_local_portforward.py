"""Reading a pod's probe on the local cluster, the way conformance tests do (`waits.proxy.pod_get`).

The API shows our pods under 198.18 addresses (`podnet`), so kube-apiserver's `pods/NAME:PORT/proxy`
answers itself, through its `cluster` egress proxy (`localcluster.egress`) to the pod's loopback address.
`pod_get` falls back to port-forwarding only where kube-apiserver refuses a pod IP (400 "address not
allowed", loopback pod IPs); that path, the official Python client's WebSocket channels handed by the API
server to the node agent's kubelet API, is checked here directly (`portforward.http_get`), query string
included. Skips when the release is not built.
"""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes import client, config

from lwsconf import workloads
from lwsconf.controlplane import versions
from lwsconf.localcluster.cluster import LocalCluster
from lwsconf.waits import portforward, proxy
from lwsconf.waits.core import NotYet, wait_until

from .test_local import _binaries_or_skip

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
POD_READY = 60.0
"""Seconds the probe pod may take to be Ready (scheduled by the real scheduler, started by our agent)."""


@pytest.mark.slow
@pytest.mark.parametrize("release", versions.under_test(), ids=lambda r: r.kubernetes)
def test_pod_get_through_the_proxy_and_port_forward(release: versions.Release) -> None:
    _binaries_or_skip(release)
    with LocalCluster(release) as cluster:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        core.create_namespaced_config_map("default", workloads.probe_configmap())

        def service_account() -> bool:  # kube-controller-manager makes it moments after start; pods need it
            if not core.list_namespaced_service_account("default", field_selector="metadata.name=default").items:
                raise NotYet("no ServiceAccount default/default yet")
            return True

        wait_until(service_account, what="ServiceAccount default/default", timeout=POD_READY, poll=0.2)
        core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                               "spec": workloads.probe_pod_template()["spec"]})

        def ready() -> bool:
            pod = core.read_namespaced_pod("p", "default")
            if not any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ()):
                raise NotYet(f"phase {pod.status.phase}")
            return True

        wait_until(ready, what="pod default/p to be Ready", timeout=POD_READY, poll=0.5)
        path = f"/api/v1/namespaces/default/pods/p:{workloads.PROBE_PORT}/proxy/"
        proxied = proxy._get(api, path, None, 10)
        assert proxied.status == 200, proxied
        forwarded = proxy.Reply(*portforward.http_get(api, "default", "p", workloads.PROBE_PORT, "/", None, 10))
        assert forwarded.json() == proxied.json()
        body = proxied.json()
        pod_ip = str(core.read_namespaced_pod("p", "default").status.pod_ip)
        assert body["pod"] == "p" and body["ip"].startswith("127.") and pod_ip.startswith("198.18."), (body, pod_ip)
        assert body["ip"].split(".")[2:] == pod_ip.split(".")[2:]  # 127.X.a.b behind 198.18.a.b
        assert proxy.pod_get(api, "default", "p", workloads.PROBE_PORT, "/readyz").json() == {"ready": True}
        _check_service_account_volume(api)
        api.close()


def _check_service_account_volume(api: client.ApiClient) -> None:
    """The projected kube-api-access volume kube-apiserver's admission added: a real token bound to the pod
    (TokenRequest by our agent), the namespace, and the cluster CA from kube-root-ca.crt."""
    def read(name: str) -> str:
        reply = proxy.pod_get(api, "default", "p", workloads.PROBE_PORT, "/file",
                              query={"path": f"{SA_DIR}/{name}"})
        assert reply.ok, reply
        return str(reply.json()["content"])

    token = read("token")
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["sub"] == "system:serviceaccount:default:default", claims
    assert claims["kubernetes.io"]["pod"]["name"] == "p", claims
    assert read("namespace") == "default"
    assert read("ca.crt").startswith("-----BEGIN CERTIFICATE-----")
