"""List items of built-in kinds carry no apiVersion/kind; custom resources' items keep theirs.

kube-apiserver encodes a typed list (e.g. ConfigMapList) with TypeMeta on the list only: its items are
typed Go structs whose TypeMeta the codec leaves empty, so `GET /api/v1/namespaces/ns/configmaps`
returns items without "apiVersion" and "kind". Custom resources are served as unstructured objects and
keep both. Found by the differential corpus (`lwsconf fidelity`, crud/*/list) against kube-apiserver 1.37.2.
"""

from __future__ import annotations

from tests.conftest import SimAPI


def test_builtin_list_items_have_no_type_meta(sim_api: SimAPI) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    assert sim_api.request("POST", "/api/v1/namespaces/default/configmaps", json=body).status_code == 201
    listed = sim_api.request("GET", "/api/v1/namespaces/default/configmaps").json()
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "ConfigMapList")
    item = next(i for i in listed["items"] if i["metadata"]["name"] == "a")
    assert "apiVersion" not in item and "kind" not in item and item["data"] == {"k": "v"}
    got = sim_api.request("GET", "/api/v1/namespaces/default/configmaps/a").json()
    assert (got["apiVersion"], got["kind"]) == ("v1", "ConfigMap"), "a single object keeps its TypeMeta"


def test_custom_resource_lists_keep_type_meta_and_an_empty_continue(sim_api: SimAPI) -> None:
    """kube-apiserver serves custom resources unstructured: items keep apiVersion/kind, and the list's
    metadata always has `continue` ("" on the last page). Found by `lwsconf fidelity` crd/*/list-*."""
    from tests.sim.apiserver.schema.test_server_crds import GROUP, PLURAL, VERSION, widget, widget_crd

    assert sim_api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           json=widget_crd()).status_code == 201
    path = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
    assert sim_api.request("GET", path).json()["metadata"]["continue"] == ""
    assert sim_api.request("POST", path, json=widget("w1")).status_code == 201
    listed = sim_api.request("GET", path).json()
    assert listed["metadata"]["continue"] == "" and listed["items"][0]["kind"] == "Widget"


def test_a_generated_namespace_name_is_its_name_label(sim_api: SimAPI) -> None:
    """The namespace strategy labels a namespace `kubernetes.io/metadata.name=<name>` after the name is
    generated. Found by `lwsconf fidelity` crud/crud-cluster-scoped/namespace-create-generate."""
    created = sim_api.request("POST", "/api/v1/namespaces", json={
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "gen-"}}).json()
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": created["metadata"]["name"]}


CMS = "/api/v1/namespaces/default/configmaps"


def test_deletecollection_items_carry_no_type_meta(sim_api: SimAPI) -> None:
    """deletion/delete-collection/deletecollection-selected: the answer is a typed list, whose items are
    encoded without apiVersion and kind, as in a LIST."""
    assert sim_api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "a", "labels": {"batch": "1"}}}).status_code == 201
    answer = sim_api.request("DELETE", CMS, params={"labelSelector": "batch=1"}).json()
    assert answer["kind"] == "ConfigMapList"
    assert [(i["metadata"]["name"], "kind" in i, "apiVersion" in i) for i in answer["items"]] == [("a", False, False)]
