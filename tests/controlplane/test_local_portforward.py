"""Reading a pod's probe on the local cluster, the way conformance tests do (`waits.proxy.pod_get`).

The real kube-apiserver refuses `pods/NAME:PORT/proxy` to our loopback pod IPs (400 "address not
allowed"); `pod_get` then port-forwards with the official Python client (WebSocket channels), which the
API server hands to the node agent's kubelet API. Checked: the proxy really refuses, and the fallback
gets the probe's JSON, query string included. Skips when the release is not built.
"""

from __future__ import annotations

import pytest
from kubernetes import client, config

from lwsconf import workloads
from lwsconf.controlplane import versions
from lwsconf.localcluster.cluster import LocalCluster
from lwsconf.waits import proxy
from lwsconf.waits.core import NotYet, wait_until

from .test_local import _binaries_or_skip

POD_READY = 60.0
"""Seconds the probe pod may take to be Ready (scheduled by the real scheduler, started by our agent)."""


@pytest.mark.slow
@pytest.mark.parametrize("release", versions.RELEASES, ids=lambda r: r.kubernetes)
def test_pod_get_port_forwards_where_the_proxy_refuses_loopback(release: versions.Release) -> None:
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
        refused = proxy._get(api, path, None, 10)
        assert refused.status == 400 and refused.body["message"] == proxy.ADDRESS_NOT_ALLOWED, refused
        answer = proxy.pod_get(api, "default", "p", workloads.PROBE_PORT, "/")
        assert answer.ok, answer
        body = answer.json()
        assert body["pod"] == "p" and body["ip"] == core.read_namespaced_pod("p", "default").status.pod_ip
        assert body["ip"].startswith("127.")
        assert proxy.pod_get(api, "default", "p", workloads.PROBE_PORT, "/readyz").json() == {"ready": True}
        api.close()
