"""What a DELETE answers, as kube-apiserver's generic registry does (Store.Delete / finalizeDelete):

* an object removed at once: a Success Status naming it (name, group, kind = the resource's plural, uid),
  except for the kinds whose storage sets ReturnDeletedObject (pods, services, namespaces), which
  answer the deleted object;
* an object only marked for deletion (finalizers pending): the object with its deletionTimestamp.

Found by the differential corpus (`lwsconf fidelity`, crud/*/delete) against kube-apiserver 1.37.2.
"""

from __future__ import annotations

from tests.conftest import SimAPI

CMS = "/api/v1/namespaces/default/configmaps"


def test_immediate_delete_answers_a_success_status(sim_api: SimAPI) -> None:
    created = sim_api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap",
                                                 "metadata": {"name": "a"}}).json()
    reply = sim_api.request("DELETE", f"{CMS}/a")
    assert reply.status_code == 200
    assert reply.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                            "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]}}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
               "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    assert sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=dep).status_code == 201
    details = sim_api.request("DELETE", "/apis/apps/v1/namespaces/default/deployments/d").json()["details"]
    assert (details["group"], details["kind"], details["name"]) == ("apps", "deployments", "d")


def test_services_and_marked_objects_answer_the_object(sim_api: SimAPI) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}}
    assert sim_api.request("POST", "/api/v1/namespaces/default/services", json=svc).status_code == 201
    assert sim_api.request("DELETE", "/api/v1/namespaces/default/services/s").json()["kind"] == "Service"
    held = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "h", "finalizers": ["example.com/x"]}}
    assert sim_api.request("POST", CMS, json=held).status_code == 201
    got = sim_api.request("DELETE", f"{CMS}/h").json()
    assert got["kind"] == "ConfigMap" and got["metadata"]["deletionTimestamp"]
