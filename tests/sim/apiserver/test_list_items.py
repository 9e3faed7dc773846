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
