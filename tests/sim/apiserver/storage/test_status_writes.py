"""What a write through `/status` keeps, kind by kind, as kube-apiserver 1.37.2's status strategies decide
(pkg/registry/*/strategy.go `PrepareForUpdate` and `GetResetFields`): most built-in kinds keep the metadata sent
and reset only the spec (a Deployment its labels too, a Pod its ownerReferences), the newer ones and custom
resources keep only the status. Found by the held-out fidelity corpus: kube-controller-manager writes a
Deployment's revision annotation with UpdateStatus."""

from __future__ import annotations

from typing import Any

from tests.conftest import SimAPI

NS = "/api/v1/namespaces/default"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"


def created(sim_api: SimAPI, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = sim_api.request("POST", path, json=body)
    assert reply.status_code == 201, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def put_status(sim_api: SimAPI, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = sim_api.request("PUT", f"{path}/status", json=body, headers={"User-Agent": "writer/1.0"})
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def test_a_deployments_status_write_keeps_annotations_and_owns_them_but_not_its_labels(sim_api: SimAPI) -> None:
    pod = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "img:1"}]}}
    body = created(sim_api, DEPLOYMENTS, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "d", "labels": {"team": "a"}}, "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": pod}})
    body["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    body["metadata"]["labels"] = {"team": "b"}
    body["spec"]["replicas"] = 5
    body["status"] = {"observedGeneration": 1}
    written = put_status(sim_api, f"{DEPLOYMENTS}/d", body)
    assert written["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert written["metadata"]["labels"] == {"team": "a"} and written["spec"]["replicas"] == 1
    assert written["status"] == {"observedGeneration": 1}
    [entry] = [m for m in written["metadata"]["managedFields"] if m["manager"] == "writer"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"]["f:metadata"] == {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}}


def test_a_pods_status_write_keeps_labels_but_not_owner_references(sim_api: SimAPI) -> None:
    body = created(sim_api, f"{NS}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                           "spec": {"containers": [{"name": "c", "image": "img:1"}]}})
    body["metadata"]["labels"] = {"seen": "yes"}
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x",
                                            "uid": "0a1b2c3d-1111-2222-3333-444455556666"}]
    written = put_status(sim_api, f"{NS}/pods/p", body)
    assert written["metadata"]["labels"] == {"seen": "yes"}
    assert "ownerReferences" not in written["metadata"]


def test_a_validating_admission_policys_status_write_keeps_no_metadata(sim_api: SimAPI) -> None:
    body = created(sim_api, POLICIES, {"apiVersion": "admissionregistration.k8s.io/v1",
                                       "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "v"},
                                       "spec": {"validations": [{"expression": "true"}], "matchConstraints": {
                                           "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                              "operations": ["CREATE"],
                                                              "resources": ["configmaps"]}]}}})
    body["metadata"]["labels"] = {"seen": "yes"}
    written = put_status(sim_api, f"{POLICIES}/v", body)
    assert "labels" not in written["metadata"]


def test_pod_conditions_written_without_probe_time_read_back_null(sim_api: SimAPI) -> None:
    """subresources/status-subresource/pod-status-ready: PodCondition.lastProbeTime is a metav1.Time
    value, serialised as null when a client leaves it out."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert sim_api.request("POST", "/api/v1/namespaces/default/pods", json=pod).status_code == 201
    patched = sim_api.request("PATCH", "/api/v1/namespaces/default/pods/p/status",
                              data='{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}',
                              headers={"Content-Type": "application/strategic-merge-patch+json"}).json()
    ready = next(c for c in patched["status"]["conditions"] if c["type"] == "Ready")
    assert "lastProbeTime" in ready and ready["lastProbeTime"] is None


PODS = "/api/v1/namespaces/default/pods"
SMP = {"Content-Type": "application/strategic-merge-patch+json"}
POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_pod_status_pod_ip_alone_gets_pod_ips_and_conditions_a_null_transition_time(sim_api: SimAPI) -> None:
    """subresources/status-subresource/pod-status-ready: pkg/apis/core/v1/conversion.go fills `podIPs`
    from `podIP`, and PodCondition.lastTransitionTime, a metav1.Time value, reads back null when unset."""
    assert sim_api.request("POST", PODS, json=POD).status_code == 201
    patched = sim_api.request("PATCH", f"{PODS}/p/status", headers=SMP, data=(
        '{"status": {"podIP": "10.1.2.3", "conditions": [{"type": "Ready", "status": "True"}]}}')).json()
    assert patched["status"]["podIPs"] == [{"ip": "10.1.2.3"}]
    ready = next(c for c in patched["status"]["conditions"] if c["type"] == "Ready")
    assert "lastTransitionTime" in ready and ready["lastTransitionTime"] is None
    changed = sim_api.request("PATCH", f"{PODS}/p/status", headers=SMP,
                              data='{"status": {"podIP": "10.1.2.4"}}').json()
    assert changed["status"]["podIPs"] == [{"ip": "10.1.2.4"}], "podIP is authoritative when the two differ"


MERGE = {"Content-Type": "application/merge-patch+json"}


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_status_writes_are_validated_as_the_deployment_strategy_does(sim_api: SimAPI) -> None:
    """subresources/status-subresource/invalid-status: pkg/apis/apps/validation ValidateDeploymentStatus,
    causes in kube-apiserver 1.37.2's order."""
    assert sim_api.request("POST", DEPLOYMENTS, json=_deployment()).status_code == 201
    reply = sim_api.request("PATCH", f"{DEPLOYMENTS}/web/status", headers=MERGE,
                            data='{"status": {"replicas": -1, "updatedReplicas": 0, "readyReplicas": 0}}')
    assert reply.status_code == 422
    assert [(c["field"], c["message"]) for c in reply.json()["details"]["causes"]] == [
        ("status.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("status.updatedReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
        ("status.readyReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
        ("status.availableReplicas", "Invalid value: 0: cannot be greater than status.replicas")]
    ok = sim_api.request("PATCH", f"{DEPLOYMENTS}/web/status", headers=MERGE, data='{"status": {"replicas": 3}}')
    assert ok.status_code == 200
