"""What the reference DisaggregatedSet controller makes (docs/disaggregatedset-contract.md 2.1-2.5, 3, 4.5, 4.6)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lwsconf import disaggapi, lwsapi
from lwsconf.reconciler.disaggregated import objects


def _role(name: str, image: str = "img:1", replicas: int | None = 2, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"leaderWorkerTemplate": {"size": 2, "workerTemplate": {
        "metadata": {"labels": {"app": "mine", "team": "a"}},
        "spec": {"containers": [{"name": "c", "image": image}]}}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"name": name, "spec": spec, **extra}


DS = {"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.KIND,
      "metadata": {"name": "ds", "namespace": "ns", "uid": "u-1"},
      "spec": {"roles": [_role("prefill"), _role("decode")]}}


def test_only_role_names_their_order_and_templates_change_the_revision() -> None:
    """Contract 2.5 and trap DT4: replicas, rollout strategy, metadata and scaling do not roll."""
    base = objects.revision([_role("prefill"), _role("decode")])
    assert len(base) == 8 and all(c in "0123456789abcdef" for c in base)
    same = [_role("prefill", replicas=5, metadata={"labels": {"x": "y"}}, scaling={"mode": "External"}),
            _role("decode", replicas=1)]
    same[0]["spec"]["rolloutStrategy"] = {"type": "RollingUpdate"}
    assert objects.revision(same) == base
    assert objects.revision([_role("prefill", image="img:2"), _role("decode")]) != base
    assert objects.revision([_role("decode"), _role("prefill")]) != base, "reordering rolls"
    assert objects.revision([_role("prefill"), _role("decoder")]) != base, "renaming rolls"


def test_names() -> None:
    assert objects.lws_name("ds", 0, "abcd1234", "prefill") == "ds-0-abcd1234-prefill"
    assert objects.service_name("ds-0-abcd1234-prefill") == "ds-0-abcd1234-prefill-prv"
    assert objects.scaler_name("ds", "decode") == "ds-decode"


def test_the_lws_carries_the_role_and_our_labels_over_the_users() -> None:
    role = _role("prefill", metadata={"labels": {"kueue.x-k8s.io/queue-name": "q", "app": "theirs"},
                                      "annotations": {"note": "kept"}})
    role["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = {"spec": {"containers": []}}
    lws = objects.build_lws(DS, role, 1, "abcd1234", 3)
    assert (lws["apiVersion"], lws["kind"]) == (lwsapi.API_VERSION, lwsapi.KIND)
    meta = lws["metadata"]
    assert (meta["name"], meta["namespace"]) == ("ds-1-abcd1234-prefill", "ns")
    ours = {disaggapi.NAME: "ds", disaggapi.ROLE: "prefill", disaggapi.SLICE: "1", disaggapi.REVISION: "abcd1234",
            "app": "ds-1-prefill"}
    assert meta["labels"] == {"kueue.x-k8s.io/queue-name": "q", **ours}, "role metadata labels kept (E9), app ours"
    assert meta["annotations"] == {"note": "kept"}
    assert meta["ownerReferences"] == [{"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.KIND, "name": "ds",
                                        "uid": "u-1", "controller": True}]
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["workerTemplate"]["metadata"]["labels"] == {"team": "a", **ours}, "trap DT12: app overwritten"
    assert template["leaderTemplate"]["metadata"]["labels"] == ours
    assert lws["spec"]["replicas"] == 3 and template["size"] == 2
    assert "affinity" not in template["workerTemplate"]["spec"], "no placement policy, no terms"


def test_building_never_changes_the_stored_role() -> None:
    ds = copy.deepcopy(DS)
    ds["spec"]["placementPolicy"] = {"type": "ExclusiveSlice", "topology": "zone"}
    role = _role("prefill")
    before = copy.deepcopy(role)
    objects.build_lws(ds, role, 0, "abcd1234", 2)
    assert role == before


def _req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


@pytest.mark.parametrize(("policy", "slice_index", "together", "apart"), [
    (None, 0, [], []),
    ({"type": "None", "topology": "zone"}, 0, [], []),
    ({"type": "ExclusiveSlice"}, 0, [], []),  # no topology key: nothing (the webhook refuses it, D-V23)
    ({"type": "ExclusiveSlice", "topology": "zone"}, 1,
     [[_req(disaggapi.NAME, "In", "ds"), _req(disaggapi.SLICE, "In", "1")]],
     [[_req(disaggapi.NAME, "In", "ds"), _req(disaggapi.SLICE, "NotIn", "1")]]),
    ({"type": "ExclusiveSlice", "topology": "zone"}, 0,
     [[_req(disaggapi.NAME, "In", "ds"), _req(disaggapi.SLICE, "In", "0")]],
     [[_req(disaggapi.NAME, "In", "ds"), _req(disaggapi.SLICE, "Exists"), _req(disaggapi.SLICE, "NotIn", "0")]]),
    ({"type": "ExclusiveTopology", "topology": "zone"}, 2,
     [[_req(disaggapi.NAME, "In", "ds"), _req(disaggapi.SLICE, "In", "2")]],
     [[_req(disaggapi.NAME, "In", "ds"), _req(disaggapi.SLICE, "NotIn", "2")],
      [_req(disaggapi.NAME, "Exists"), _req(disaggapi.NAME, "NotIn", "ds"), _req(disaggapi.SLICE, "Exists")]]),
])
def test_placement_terms(policy: dict[str, str] | None, slice_index: int, together: list[Any],
                         apart: list[Any]) -> None:
    """Contract 4.5's table: co-locate a slice, spread this set's slices, and (ExclusiveTopology) keep others out."""
    got_together, got_apart = objects.placement_terms(policy, "ds", slice_index)
    assert [t["labelSelector"]["matchExpressions"] for t in got_together] == together
    assert [t["labelSelector"]["matchExpressions"] for t in got_apart] == apart
    assert all(t["topologyKey"] == "zone" for t in got_together + got_apart)


def test_placement_terms_go_after_the_users_own() -> None:
    ds = copy.deepcopy(DS)
    ds["spec"]["placementPolicy"] = {"type": "ExclusiveTopology", "topology": "rack"}
    role = _role("decode")
    mine = {"labelSelector": {"matchLabels": {"x": "y"}}, "topologyKey": "host"}
    role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [mine]}}
    spec = objects.build_lws(ds, role, 0, "abcd1234", 1)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    apart = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert apart[0] == mine and len(apart) == 3
    assert len(spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]) == 1


def test_the_role_service_is_headless_portless_and_selects_one_lws() -> None:
    svc = objects.build_service(DS, "decode", 0, "abcd1234")
    assert svc["metadata"]["name"] == "ds-0-abcd1234-decode-prv"
    assert svc["spec"] == {"clusterIP": "None", "selector": {
        disaggapi.NAME: "ds", disaggapi.ROLE: "decode", disaggapi.REVISION: "abcd1234", disaggapi.SLICE: "0"}}
    assert svc["metadata"]["labels"] == svc["spec"]["selector"]
    assert "blockOwnerDeletion" not in svc["metadata"]["ownerReferences"][0]


def test_the_scaler_blocks_foreground_deletion_and_selects_leaders() -> None:
    scaler = objects.build_scaler(DS, "decode", 3)
    assert scaler["metadata"]["name"] == "ds-decode" and scaler["spec"] == {"replicas": 3}
    assert scaler["metadata"]["labels"] == {disaggapi.NAME: "ds", disaggapi.ROLE: "decode"}
    assert scaler["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
    assert objects.scaler_selector("ds", "decode") == (f"{disaggapi.NAME}=ds,{disaggapi.ROLE}=decode,"
                                                       f"{lwsapi.WORKER_INDEX}=0")


def test_a_scaler_is_seeded_with_the_roles_size() -> None:
    assert objects.seed_replicas([]) == 1, "no LWS yet: 1, never 0 (an HPA at 0 stops scaling)"
    assert objects.seed_replicas([{"spec": {"replicas": 2}}, {"spec": {"replicas": 3}}, {"spec": {}}]) == 6


def test_a_roles_target() -> None:
    assert objects.target(_role("p", replicas=4), None) == 4
    assert objects.target(_role("p", replicas=None), None) == 1
    external = _role("p", replicas=9, scaling={"mode": "External"})
    assert objects.target(external, None) is None, "no usable scaler: the role holds its size"
    assert objects.target(external, {"spec": {"replicas": 2}}) == 2, "the role's own replicas are ignored"
