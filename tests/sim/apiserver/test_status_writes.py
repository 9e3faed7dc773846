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
