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
    assert node["spec"] == {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}  # nodetaint
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


def test_deletecollection_answers_the_objects_as_listed_before_their_deletion(sim_api: SimAPI) -> None:
    """apiserver registry Store.DeleteCollection returns the list it deleted from, not each Delete's answer:
    every item keeps the resourceVersion it had (found by comparing resourceVersions by order, issue 33)."""
    created = sim_api.request("POST", CMS, json={"metadata": {"name": "a", "labels": {"batch": "1"}}}).json()
    answer = sim_api.request("DELETE", CMS, params={"labelSelector": "batch=1"}).json()
    assert [i["metadata"]["resourceVersion"] for i in answer["items"]] == [created["metadata"]["resourceVersion"]]


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
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


def test_scale_writes_check_the_name_and_word_a_negative_count_as_kube_apiserver(sim_api: SimAPI) -> None:
    """subresources/scale-subresource/scale-name-mismatch and patch-scale-negative: the UPDATE handler's
    checkName (400), and ValidateScale's ValidateNonnegativeField wording."""
    assert sim_api.request("POST", DEPLOYMENTS, json=_deployment()).status_code == 201
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "other"}, "spec": {"replicas": 1}}
    mismatch = sim_api.request("PUT", f"{DEPLOYMENTS}/web/scale", json=scale)
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == "the name of the object (other) does not match the name on the URL (web)"
    negative = sim_api.request("PATCH", f"{DEPLOYMENTS}/web/scale", headers=MERGE, data='{"spec": {"replicas": -2}}')
    assert negative.status_code == 422
    assert negative.json()["message"] == ('Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -2: '
                                          "must be greater than or equal to 0")


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


def test_delete_preconditions_and_update_uid_are_worded_as_kube_apiserver(sim_api: SimAPI) -> None:
    """versions/rv-concurrency/*: rest.BeforeDelete's Conflicts name the Kind; a PUT with another uid is
    etcd3's StorageError inside the Conflict; a garbage resourceVersion is named with strconv's words."""
    made = sim_api.request("POST", CMS, json=_cm("cm")).json()
    uid, rv = made["metadata"]["uid"], made["metadata"]["resourceVersion"]
    stale = sim_api.request("DELETE", f"{CMS}/cm", json={"preconditions": {"resourceVersion": "1"}}).json()
    assert stale["details"] == {"name": "cm", "kind": "ConfigMap"}
    assert stale["message"] == (f'Operation cannot be fulfilled on ConfigMap "cm": the ResourceVersion in the '
                                f"precondition (1) does not match the ResourceVersion in record ({rv}). The object "
                                "might have been modified")
    zero = "00000000-0000-0000-0000-000000000000"
    wrong = sim_api.request("DELETE", f"{CMS}/cm", json={"preconditions": {"uid": zero}}).json()
    assert wrong["message"] == (f'Operation cannot be fulfilled on ConfigMap "cm": the UID in the precondition '
                                f"({zero}) does not match the UID in record ({uid}). The object might have been "
                                "deleted and then recreated")
    put = sim_api.request("PUT", f"{CMS}/cm", json={**_cm("cm"), "metadata": {"name": "cm", "uid": zero}}).json()
    assert put["message"] == ('Operation cannot be fulfilled on configmaps "cm": '
                              "StorageError: invalid object, Code: 4, "
                              "Key: /registry/configmaps/default/cm, ResourceVersion: 0, AdditionalErrorMsg: "
                              f"Precondition failed: UID in precondition: {zero}, UID in object meta: {uid}")
    garbage = sim_api.request("GET", CMS, params={"resourceVersion": "abc"})
    assert garbage.status_code == 400
    assert garbage.json()["message"] == ('invalid resource version: resourceVersion: Invalid value: "abc": '
                                         'strconv.ParseUint: parsing "abc": invalid syntax')


def test_list_pages_rv0_whole_and_counts_remaining_items_only_unfiltered(sim_api: SimAPI) -> None:
    """versions/rv-lists/list-limit-with-rv0 and selectors/selectors-labels/limit-2-selected: the watch cache
    serves resourceVersion=0 whole; remainingItemCount only without selectors."""
    for name in ("a", "b", "c"):
        assert sim_api.request("POST", CMS, json=_cm(name, env="prod")).status_code == 201
    whole = sim_api.request("GET", CMS, params={"limit": "1", "resourceVersion": "0"}).json()
    assert len(whole["items"]) == 3 and "continue" not in whole["metadata"]
    page = sim_api.request("GET", CMS, params={"limit": "1"}).json()["metadata"]
    assert page["continue"] and page["remainingItemCount"] == 2
    selected = sim_api.request("GET", CMS, params={"limit": "1", "labelSelector": "env=prod"}).json()["metadata"]
    assert selected["continue"] and "remainingItemCount" not in selected


def test_watch_list_needs_not_older_than_and_bookmarks(sim_api: SimAPI) -> None:
    """watch/watch-errors/send-initial-without-match: ValidateListOptions' 422 for sendInitialEvents."""
    reply = sim_api.request("GET", CMS, params={"watch": "true", "timeoutSeconds": "1", "sendInitialEvents": "true",
                                                "allowWatchBookmarks": "true"})
    assert reply.status_code == 422
    assert reply.json()["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                                       "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")


def test_watch_list_without_bookmarks_is_accepted(sim_api: SimAPI) -> None:
    """watch/watch-errors/send-initial-without-bookmarks: kube-apiserver 1.37.2 answers 200."""
    reply = sim_api.request("GET", CMS, params={"watch": "true", "timeoutSeconds": "1", "sendInitialEvents": "true",
                                                "resourceVersionMatch": "NotOlderThan"})
    assert reply.status_code == 200
    assert "BOOKMARK" not in reply.text, "no initial-events-end BOOKMARK without allowWatchBookmarks"
