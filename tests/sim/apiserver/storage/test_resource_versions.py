"""resourceVersions and preconditions as kube-apiserver 1.37.2's storage words and serves them: DELETE
preconditions, a PUT with another uid, a garbage resourceVersion, list pages at resourceVersion=0 (found by the
differential corpus, `lwsconf fidelity`, topics versions and selectors)."""

from __future__ import annotations

from typing import Any

from tests.conftest import SimAPI

CMS = "/api/v1/namespaces/default/configmaps"


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
