"""A webhook behind a Service reaches its endpoint through the sim's kube-proxy, as on a real cluster.

kube-apiserver dials a `service` client config at the Service's ClusterIP (`proxy.ResolveCluster`), and
kube-proxy forwards to a ready endpoint. Here the endpoint is an HTTPS webhook server on a pod IP of the
cluster's network (a selectorless Service with a hand-written EndpointSlice, as for a manager running
outside the cluster), its certificate naming only `<svc>.<ns>.svc`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lwsconf.kubeclient import client as kc
from tests.sim.apiserver.policies.webhook_server import WebhookServer, json_patch
from tests.sim.controllers.kubeproxy import kubeproxy_sim as kps

MWCS = kc.GVR("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", namespaced=False)


def test_service_reference_reaches_the_endpoint_through_kube_proxy(tmp_path: Path) -> None:
    async def scenario() -> dict[str, str]:
        async with kps.proxied_cluster() as env:
            pod_ip = env.pod_ip(0)
            server = WebhookServer(tmp_path, pod_ip, kps.TARGET, names=("webhook-service.default.svc",))
            server.handler = lambda path, review: json_patch({"op": "add", "path": "/data/served-by", "value": path})
            try:
                ip = (await kps.make_service(env.client, "webhook-service", port=443))["spec"]["clusterIP"]
                await kps.write_slice(env.client, "webhook-service", [kps.endpoint(pod_ip)])
                await kps.until(lambda: _listening(ip), "the kube-proxy to listen on the ClusterIP")
                service = {"name": "webhook-service", "namespace": "default", "path": "/mutate--v1-configmap"}
                config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                          "metadata": {"name": "through-proxy"},
                          "webhooks": [{"name": "mconfigmap.example.com", "sideEffects": "None",
                                        "admissionReviewVersions": ["v1"],
                                        "clientConfig": {"service": service, "caBundle": server.ca_bundle},
                                        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                   "resources": ["configmaps"]}]}]}
                await env.client.create(MWCS, config)
                created = await env.client.create(kc.CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                                  "metadata": {"name": "c", "namespace": "default"},
                                                                  "data": {"a": "1"}})
                return dict(created["data"])
            finally:
                server.close()
    data = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert data == {"a": "1", "served-by": "/mutate--v1-configmap"}, data


async def _listening(ip: str) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(ip, 443), 2)
    except OSError:
        return False
    writer.close()
    return True
