"""What a DELETE answers, as kube-apiserver's generic registry does (Store.Delete / finalizeDelete):

* an object removed at once: a Success Status naming it (name, group, kind = the resource's plural, uid),
  except for the kinds whose storage sets ReturnDeletedObject (pods, services, namespaces), which
  answer the deleted object;
* an object only marked for deletion (finalizers pending): the object with its deletionTimestamp.

Found by the differential corpus (`lwsconf fidelity`, crud/*/delete) against kube-apiserver 1.37.2.
"""

from __future__ import annotations

from typing import Any

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


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                  "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
PODS = "/api/v1/namespaces/default/pods"


def test_marking_for_deletion_bumps_generation_and_a_removed_pod_is_answered_as_marked(sim_api: SimAPI) -> None:
    """deletion/delete-propagation/delete-orphan, crud/crud-pods/delete, deletion/delete-grace/*: setting
    deletionTimestamp increments a tracked generation (rest.BeforeDelete, markAsDeleting), and a pod
    deleted at once is answered with its deletionTimestamp and deletionGracePeriodSeconds 0."""
    created = sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=DEPLOYMENT).json()
    assert created["metadata"]["generation"] == 1
    marked = sim_api.request("DELETE", "/apis/apps/v1/namespaces/default/deployments/d",
                             json={"propagationPolicy": "Orphan"}).json()
    assert marked["metadata"]["generation"] == 2 and marked["metadata"]["finalizers"] == ["orphan"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert sim_api.request("POST", PODS, json=pod).status_code == 201
    gone = sim_api.request("DELETE", f"{PODS}/p").json()
    assert gone["kind"] == "Pod" and gone["metadata"]["deletionGracePeriodSeconds"] == 0
    assert gone["metadata"]["deletionTimestamp"] and gone["metadata"]["generation"] == 2
    assert sim_api.request("GET", f"{PODS}/p").status_code == 404


POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_shortening_a_graceful_pod_deletion_keeps_the_generation(sim_api: SimAPI) -> None:
    """deletion/delete-grace/shorten-grace and force-now: pkg/registry/rest/delete.go `BeforeDelete`
    bumps generation only when it first sets deletionTimestamp; a shorter grace period later keeps it."""
    bound = {**POD, "spec": {**POD["spec"], "nodeName": "node-a"}}
    assert sim_api.request("POST", PODS, json=bound).status_code == 201
    marked = sim_api.request("DELETE", f"{PODS}/p", json={"gracePeriodSeconds": 60}).json()
    assert marked["metadata"]["generation"] == 2
    shorter = sim_api.request("DELETE", f"{PODS}/p", json={"gracePeriodSeconds": 30}).json()
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 30 and shorter["metadata"]["generation"] == 2
    forced = sim_api.request("DELETE", f"{PODS}/p", json={"gracePeriodSeconds": 0})
    assert forced.json()["metadata"]["generation"] == 2


def test_deletecollection_answers_the_objects_as_listed_before_their_deletion(sim_api: SimAPI) -> None:
    """apiserver registry Store.DeleteCollection returns the list it deleted from, not each Delete's answer:
    every item keeps the resourceVersion it had (found by comparing resourceVersions by order, issue 33)."""
    created = sim_api.request("POST", CMS, json={"metadata": {"name": "a", "labels": {"batch": "1"}}}).json()
    answer = sim_api.request("DELETE", CMS, params={"labelSelector": "batch=1"}).json()
    assert [i["metadata"]["resourceVersion"] for i in answer["items"]] == [created["metadata"]["resourceVersion"]]
