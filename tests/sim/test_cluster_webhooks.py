"""A pod mutating webhook on a whole simulated cluster: the StatefulSet controller's pods go through it.

What upstream LWS's pod webhook (`/mutate--v1-pod`, CREATE of pods) needs of the sim: pods created by a
controller (not by the test) are sent to the webhook, its JSON patch is in the stored pod before the
scheduler and the kubelet see it, and the pods run. The webhook is a real HTTPS server on loopback
(`webhook_server`), limited to this test's namespace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client, config

from lwsconf.sim import cluster as simc
from lwsconf.sim.nodes import layout
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, observe
from tests.sim.apiserver.policies.webhook_server import WebhookServer, json_patch

NS = "hooked"


def _mutate_pod(path: str, review: dict[str, Any]) -> dict[str, Any] | None:
    labels = review["request"]["object"]["metadata"].get("labels") or {}
    if path != "/mutate--v1-pod" or "webhook.example.com/seen" in labels:
        return None
    return json_patch({"op": "add", "path": "/metadata/labels/webhook.example.com~1seen", "value": "yes"})


def test_statefulset_pods_are_mutated_by_a_pod_webhook_and_run(tmp_path: Path) -> None:
    t = Timeouts()
    node = layout.NodeSpec("cpu-0", capacity={"cpu": "8", "memory": "16Gi", "pods": "110"})
    server = WebhookServer(tmp_path, handler=_mutate_pod)
    try:
        with simc.RunningSimCluster(nodes=[node]) as running:
            api = config.new_client_from_config(config_file=str(running.kubeconfig))
            core_v1, apps = client.CoreV1Api(api), client.AppsV1Api(api)
            core_v1.create_namespace({"metadata": {"name": NS}})
            client.AdmissionregistrationV1Api(api).create_mutating_webhook_configuration({
                "metadata": {"name": "lws-like-pod-webhook"},
                "webhooks": [{"name": "mpod.kb.io", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                              "clientConfig": {"url": server.url("/mutate--v1-pod"), "caBundle": server.ca_bundle},
                              "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                              "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                         "resources": ["pods"]}]}]})
            labels = {"app": "web"}
            apps.create_namespaced_stateful_set(NS, {
                "metadata": {"name": "web"},
                "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels},
                                      "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}})

            def running_and_labelled() -> list[str]:
                pods = observe.raw(core_v1.list_namespaced_pod(NS, _preload_content=False))["items"]
                seen = {p["metadata"]["name"]: (p["metadata"].get("labels", {}).get("webhook.example.com/seen"),
                                                p.get("status", {}).get("phase")) for p in pods}
                if len(seen) != 2 or any(v != ("yes", "Running") for v in seen.values()):
                    raise core.NotYet(f"pods (label, phase): {seen}")
                return sorted(seen)
            names = core.wait_until(running_and_labelled, what="both StatefulSet pods mutated and Running",
                                    timeout=t.pods_running)
            api.close()
    finally:
        server.close()
    assert names == ["web-0", "web-1"]
    created = [r["request"]["name"] for p, r in server.reviews if r["request"]["operation"] == "CREATE"]
    assert sorted(created) == ["web-0", "web-1"], created
