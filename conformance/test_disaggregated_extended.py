"""DisaggregatedSet's extended features (LWS-DISAGGREGATED; docs/disaggregatedset-contract.md 4.4-4.6, 4.8, 5).

Slices (whole copies of the role topology, KEP-846), placement policies (KEP-848), external scaling through a
DisaggregatedSetRoleScaler (KEP-849) and status (main): upstream added them after v0.9.0, so each is a feature
of its own that an implementation claims; the suite withdraws the ones the served schema cannot carry
(`lwsconf.disaggserved`). Upstream's cases are named per test (contract section 6).
"""

from __future__ import annotations

import copy
import re

import pytest
from kubernetes import client

from conformance.disaggregated import DSHarness, Obj, manifest, revision_of, role, role_of
from conformance.harness import LWSHarness, is_rejected
from lwsconf import disaggapi, lwsapi
from lwsconf.conformance import conformance
from lwsconf.features import Feature

EXCLUSIVE_TOPOLOGY, SUBGROUP_EXCLUSIVE_TOPOLOGY = lwsapi.EXCLUSIVE_TOPOLOGY, lwsapi.SUBGROUP_EXCLUSIVE_TOPOLOGY
HOSTNAME = "kubernetes.io/hostname"


def _slice_of(lws: Obj) -> str:
    return str(lws["metadata"]["labels"].get(disaggapi.SLICE))


@conformance(short_name="DisaggregatedSetSlicesCopyTheRoles", features={Feature.DISAGGREGATED_SLICES},
             description="spec.slices K makes K copies of every role's LWS, named <D>-<s>-<h>-<r> and labelled slice "
                         "<s>, each at the role's replicas; lowering K deletes the top slices and raising it adds "
                         "slices on the same revision, the other slices untouched (4.4, 2.1).")
def test_slices_copy_every_role_and_change_without_a_rollout(ds: DSHarness) -> None:
    ds.create(manifest("pd", [role("prefill", 1), role("decode", 1)], slices=2))
    found = ds.settled("pd", {"prefill": 1, "decode": 1}, slices=2)
    (revision,) = {revision_of(o) for o in found.values()}
    want = {f"pd-{s}-{revision}-{r}" for s in (0, 1) for r in ("prefill", "decode")}
    assert set(found) == want, f"LWS {sorted(found)}, want {sorted(want)}"
    for name, obj in found.items():
        s = name.split("-")[1]
        assert _slice_of(obj) == s, f"{name}: slice label {_slice_of(obj)!r}"
        assert obj["metadata"]["labels"].get("app") == f"pd-{s}-{role_of(obj)}", f"{name}: app label"
    slice0 = {name: o["metadata"]["uid"] for name, o in found.items() if _slice_of(o) == "0"}

    ds.patch("pd", {"spec": {"slices": 1}}, step="slices 2 -> 1")
    after = ds.settled("pd", {"prefill": 1, "decode": 1}, slices=1)
    assert {n: o["metadata"]["uid"] for n, o in after.items()} == slice0, \
        f"lowering slices touched slice 0: before {slice0}, after {sorted(after)}"

    ds.patch("pd", {"spec": {"slices": 3}}, step="slices 1 -> 3")
    grown = ds.settled("pd", {"prefill": 1, "decode": 1}, slices=3)
    assert {revision_of(o) for o in grown.values()} == {revision}, "raising slices started a rollout"
    assert {n: o["metadata"]["uid"] for n, o in grown.items() if _slice_of(o) == "0"} == slice0, \
        "raising slices replaced slice 0's LWS"
    assert sorted(_slice_of(o) for o in grown.values()) == ["0", "0", "1", "1", "2", "2"]


def _terms(obj: Obj, template: str) -> tuple[list[Obj], list[Obj]]:
    affinity = obj["spec"]["leaderWorkerTemplate"][template]["spec"].get("affinity") or {}
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    return ((affinity.get("podAffinity") or {}).get(required) or [],
            (affinity.get("podAntiAffinity") or {}).get(required) or [])


def _expr(key: str, operator: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def _want_terms(kind: str, ds: str, s: str) -> tuple[list[Obj], list[Obj]]:
    """The contract's table in 4.5, written out."""
    together = [{"labelSelector": {"matchExpressions": [_expr(disaggapi.NAME, "In", ds),
                                                        _expr(disaggapi.SLICE, "In", s)]}, "topologyKey": HOSTNAME}]
    spread = [_expr(disaggapi.NAME, "In", ds), *([_expr(disaggapi.SLICE, "Exists")] if s == "0" else []),
              _expr(disaggapi.SLICE, "NotIn", s)]
    apart = [{"labelSelector": {"matchExpressions": spread}, "topologyKey": HOSTNAME}]
    if kind == disaggapi.PLACEMENT_EXCLUSIVE_TOPOLOGY:
        apart.append({"labelSelector": {"matchExpressions": [
            _expr(disaggapi.NAME, "Exists"), _expr(disaggapi.NAME, "NotIn", ds), _expr(disaggapi.SLICE, "Exists")]},
            "topologyKey": HOSTNAME})
    return together, apart


@conformance(short_name="DisaggregatedSetPlacementTerms", features={Feature.DISAGGREGATED_PLACEMENT},
             description="ExclusiveSlice and ExclusiveTopology add the contract's required pod affinity and "
                         "anti-affinity terms on the topology key to every LWS template, after the user's own terms "
                         "(4.5; upstream E10).")
@pytest.mark.parametrize("kind", [disaggapi.PLACEMENT_EXCLUSIVE_SLICE, disaggapi.PLACEMENT_EXCLUSIVE_TOPOLOGY])
def test_placement_policies_put_their_terms_on_the_lws(ds: DSHarness, kind: str) -> None:
    prefill = role("prefill", 1)
    user_term = {"labelSelector": {"matchLabels": {"tier": "cache"}}, "topologyKey": "topology.kubernetes.io/zone"}
    prefill["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"] = {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": user_term}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [copy.deepcopy(user_term)]}}
    ds.create(manifest("pd", [prefill, role("decode", 1)], slices=2,
                       placementPolicy={"type": kind, "topology": HOSTNAME}))

    def four_lws() -> list[Obj]:
        found = ds.lws_objects("pd")
        assert len(found) == 4, f"LWS {[o['metadata']['name'] for o in found]}"
        return found
    for obj in ds.wait(four_lws, what="one LWS per slice and role", name="pd", within="create"):
        together, apart = _want_terms(kind, "pd", _slice_of(obj))
        seen_together, seen_apart = _terms(obj, "workerTemplate")
        user_first = [user_term] if role_of(obj) == "prefill" else []
        name = obj["metadata"]["name"]
        assert seen_together == together, f"{name} podAffinity required terms {seen_together}, want {together}"
        assert seen_apart == user_first + apart, f"{name} podAntiAffinity required terms {seen_apart}, want " \
                                                 f"the user's then {apart}"


def _annotated(where: str, key: str) -> list[Obj]:
    """Two roles, the first carrying the LWS annotation `key` in its metadata or its worker template."""
    prefill = role("prefill", 1)
    if where == "role":
        prefill["metadata"] = {"annotations": {key: HOSTNAME}}
    else:
        prefill["spec"]["leaderWorkerTemplate"]["workerTemplate"].setdefault("metadata", {})["annotations"] = {
            key: HOSTNAME}
    return [prefill, role("decode", 1)]


PLACED = {"type": disaggapi.PLACEMENT_EXCLUSIVE_SLICE, "topology": HOSTNAME}


@conformance(short_name="DisaggregatedSetPlacementValidation", features={Feature.DISAGGREGATED_PLACEMENT},
             description="A placement policy other than None needs a topology, and refuses LWS exclusive-topology "
                         "annotations on a role, on create and on update; either alone is admitted (5: D-V23, D-V24; "
                         "upstream I1-I7).")
def test_placement_refuses_lws_exclusive_annotations(ds: DSHarness) -> None:
    refusals = {
        "no topology": ds.refusal(manifest("a", [role("prefill", 1), role("decode", 1)],
                                           placementPolicy={"type": disaggapi.PLACEMENT_EXCLUSIVE_SLICE})),
        "role metadata annotation (I3)": ds.refusal(manifest("b", _annotated("role", EXCLUSIVE_TOPOLOGY),
                                                             placementPolicy=PLACED)),
        "worker template annotation (I4)": ds.refusal(manifest("c", _annotated("template", EXCLUSIVE_TOPOLOGY),
                                                               placementPolicy=PLACED)),
        "subgroup annotation (I5)": ds.refusal(manifest("d", _annotated("template", SUBGROUP_EXCLUSIVE_TOPOLOGY),
                                                        placementPolicy=PLACED)),
    }
    wrong = {case: f"HTTP {exc.status}" for case, exc in refusals.items() if not is_rejected(exc)}
    assert not wrong, f"want validation refusals (400/422): {wrong}"

    ds.create(manifest("policy", [role("prefill", 1), role("decode", 1)], placementPolicy=PLACED))  # I1
    ds.create(manifest("annotation", _annotated("role", EXCLUSIVE_TOPOLOGY)))  # I2
    with pytest.raises(client.ApiException) as adding_annotation:  # I6
        ds.set_roles("policy", _annotated("role", EXCLUSIVE_TOPOLOGY), step="add the annotation beside the policy")
    with pytest.raises(client.ApiException) as adding_policy:  # I7
        ds.patch("annotation", {"spec": {"placementPolicy": PLACED}}, step="add a policy beside the annotation")
    for case, raised in (("I6", adding_annotation.value), ("I7", adding_policy.value)):
        assert is_rejected(raised), f"{case}: want a validation refusal, got HTTP {raised.status}: {raised.body}"


@conformance(short_name="DisaggregatedSetExternalScaling", features={Feature.DISAGGREGATED_EXTERNAL_SCALING},
             description="An External role gets the DisaggregatedSetRoleScaler <D>-<r>, owned by the set, whose /scale "
                         "answers before any write (seeded at 1), and a /scale write sets the role's LWS replicas; the "
                         "role's own replicas are ignored; deleting the set deletes the scaler (4.6, 2.4, 2.6; "
                         "upstream H1-H3).")
def test_an_external_role_is_scaled_through_its_scaler(ds: DSHarness) -> None:
    created = ds.create(manifest("pd", [role("prefill", 2), role("decode", None, scaling=disaggapi.SCALING_EXTERNAL)]))

    def scaler_made() -> Obj:
        found = ds.scaler("pd-decode")
        assert found is not None, "no scaler pd-decode yet"
        return found
    scaler = ds.wait(scaler_made, what="the scaler pd-decode to be made", name="pd", within="create")
    owners = [(o["kind"], o["uid"], o.get("controller")) for o in scaler["metadata"].get("ownerReferences") or []]
    assert owners == [(disaggapi.KIND, created["metadata"]["uid"], True)], f"scaler owners {owners}"
    scale = ds.scaler_scale("pd-decode")  # H1: before anything wrote the scaler
    assert scale["spec"].get("replicas") == 1, f"a new scaler's /scale spec.replicas: {scale['spec']} (seeded 1)"
    ds.settled("pd", {"prefill": 2, "decode": 1})

    ds.scale_scaler("pd-decode", 3)  # H2
    ds.settled("pd", {"prefill": 2, "decode": 3})

    def scaler_status() -> None:
        got = ds.scaler_scale("pd-decode")
        assert got["status"].get("replicas") == 3, f"scale status {got['status']}"
        selector = got["status"].get("selector") or ""
        want = {f"{disaggapi.NAME}=pd", f"{disaggapi.ROLE}=decode", f"{lwsapi.WORKER_INDEX}=0"}
        assert set(selector.split(",")) == want, f"scale status selector {selector!r}, want {sorted(want)}"
    ds.wait(scaler_status, what="the scaler's status to count 3 groups and select their leaders", name="pd")

    ds.delete("pd")  # H3: the scaler goes with its set (garbage collection through its owner reference)

    def scaler_gone() -> None:
        assert ds.scaler("pd-decode") is None, "the scaler pd-decode is still there"
    ds.wait(scaler_gone, what="the scaler to be deleted with its set", name="pd", within="delete")


def _conditions(obj: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


@conformance(short_name="DisaggregatedSetStatus", features={Feature.DISAGGREGATED_STATUS},
             description="status.roleStatuses sums each role's LWS, Available=True (AllRolesReady) once every role is "
                         "ready on the current revision, Progressing=True (RolloutInProgress) through a rollout, "
                         "observedGeneration current (4.8, 1.4).")
def test_status_follows_a_set_through_a_rollout(ds: DSHarness, lws: LWSHarness) -> None:
    ds.create(manifest("pd", [role("prefill", 2), role("decode", 1)]))
    ds.settled("pd", {"prefill": 2, "decode": 1})

    def available() -> Obj:
        obj = ds.get("pd")
        conds = _conditions(obj)
        assert conds.get(disaggapi.AVAILABLE, {}).get("status") == "True", f"conditions {list(conds.values())}"
        assert (obj.get("status") or {}).get("observedGeneration") == obj["metadata"]["generation"], \
            f"status.observedGeneration {obj.get('status', {}).get('observedGeneration')}"
        return obj
    obj = ds.wait(available, what="the set to be Available", name="pd")
    conds = _conditions(obj)
    assert conds[disaggapi.AVAILABLE]["reason"] == disaggapi.REASON_ALL_READY, conds
    assert conds.get(disaggapi.PROGRESSING, {}).get("status") in (None, "False"), f"Progressing {conds}"
    roles = {r["name"]: r for r in obj["status"].get("roleStatuses") or []}
    for name, count in (("prefill", 2), ("decode", 1)):
        got = {k: roles.get(name, {}).get(k, 0) for k in ("replicas", "readyReplicas", "updatedReplicas")}
        assert got == dict.fromkeys(got, count), f"roleStatuses[{name}] {got}, want all {count}"

    ds.set_roles("pd", [role("prefill", 2, tag="v2"), role("decode", 1, tag="v2")], step="new template (tag v2)")

    def progressing() -> None:
        conds = _conditions(ds.get("pd"))
        assert conds.get(disaggapi.PROGRESSING, {}).get("status") == "True", f"conditions {list(conds.values())}"
        assert conds[disaggapi.PROGRESSING]["reason"] == disaggapi.REASON_IN_PROGRESS, conds
        assert conds.get(disaggapi.AVAILABLE, {}).get("status") == "False", f"Available {conds}"
    ds.wait(progressing, what="Progressing=True while the set rolls", name="pd", within="create")
    ds.settled("pd", {"prefill": 2, "decode": 1})
    again = ds.wait(available, what="the set to be Available again after the rollout", name="pd")
    assert re.match(r"^[0-9a-f]{8}$", revision_of(ds.lws_objects("pd")[0]))
    assert _conditions(again)[disaggapi.PROGRESSING]["status"] == "False"
