"""Answers of the differential corpus's controllers, deletion, versions, selectors, subresources, watch,
webhooks and policies topics (`lwsconf fidelity`, against kube-apiserver 1.37.2) that the sim gave
differently; each test names the corpus interaction and where kube-apiserver's behaviour comes from."""

from __future__ import annotations

from typing import Any

from tests.conftest import SimAPI

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


def test_a_bare_node_reads_back_with_go_zero_values(sim_api: SimAPI) -> None:
    """controllers/ctl-endpointslices/node: NodeSpec, NodeDaemonEndpoints and NodeSystemInfo are structs
    and their strings and Port have no omitempty, so kube-apiserver answers them as zero values."""
    node = sim_api.request("POST", "/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                                          "metadata": {"name": "n"}}).json()
    assert node["spec"] == {}
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "" and len(node["status"]["nodeInfo"]) == 10


CMS = "/api/v1/namespaces/default/configmaps"


def test_finalizer_names_and_no_new_finalizers_while_terminating(sim_api: SimAPI) -> None:
    """deletion/delete-finalizers/create-bad-finalizer and add-finalizer-while-terminating:
    pkg/apis/core/validation `validateKubeFinalizerName` (built-in kinds) and apimachinery
    `ValidateNoNewFinalizers`, worded as kube-apiserver 1.37.2 answered."""
    bad = sim_api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "bad", "finalizers": ["no-domain"]}})
    assert bad.status_code == 422
    assert bad.json()["message"] == ('ConfigMap "bad" is invalid: metadata.finalizers[0]: Invalid value: "no-domain": '
                                     "name is neither a standard finalizer name nor is it fully qualified")
    held = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    assert sim_api.request("POST", CMS, json=held).status_code == 201
    assert sim_api.request("DELETE", f"{CMS}/held").status_code == 200
    added = sim_api.request("PATCH", f"{CMS}/held", headers={"Content-Type": "application/merge-patch+json"},
                            data='{"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}')
    assert added.status_code == 422
    assert added.json()["details"]["causes"] == [{
        "field": "metadata.finalizers", "reason": "FieldValueForbidden",
        "message": 'Forbidden: no new finalizers can be added if the object is being deleted, '
                   'found new finalizers []string{"example.com/new"}'}]
    assert sim_api.request("PATCH", f"{CMS}/held", headers={"Content-Type": "application/merge-patch+json"},
                           data='{"metadata": {"finalizers": null}}').status_code == 200


def test_deletecollection_items_carry_no_type_meta(sim_api: SimAPI) -> None:
    """deletion/delete-collection/deletecollection-selected: the answer is a typed list, whose items are
    encoded without apiVersion and kind, as in a LIST."""
    assert sim_api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "a", "labels": {"batch": "1"}}}).status_code == 201
    answer = sim_api.request("DELETE", CMS, params={"labelSelector": "batch=1"}).json()
    assert answer["kind"] == "ConfigMapList"
    assert [(i["metadata"]["name"], "kind" in i, "apiVersion" in i) for i in answer["items"]] == [("a", False, False)]
