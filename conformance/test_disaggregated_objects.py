"""DisaggregatedSet objects (LWS-DISAGGREGATED; docs/disaggregatedset-contract.md sections 2, 3, 4.1-4.3, 5).

What a serving platform reads off a prefill/decode set: one LWS per role, named and labelled so that its pods
and Services can be found by role and revision, owned by the set (so deleting the set deletes them), carrying
the role's own labels and annotations (Kueue reads its queue label off the LWS: upstream E9), scaled in place
without a rollout, with a headless Service per role that selects that role's pods only. Upstream's cases are
named per test (contract section 6).
"""

from __future__ import annotations

import re

import pytest

from conformance.disaggregated import DSHarness, Obj, manifest, revision_of, role, role_of
from conformance.harness import LWSHarness, is_rejected
from lwsconf import disaggapi
from lwsconf.conformance import conformance
from lwsconf.features import Feature

HASH = re.compile(r"^[0-9a-f]{8}$")


def _name_pattern(ds_name: str, revision: str, role_name: str) -> re.Pattern[str]:
    """`<D>-<h>-<r>` (v0.9.0) or `<D>-<s>-<h>-<r>` (v0.10.0+, slice 0); the slice segment is
    DisaggregatedSetSlices' to check (contract 2.1)."""
    return re.compile(rf"^{re.escape(ds_name)}-(0-)?{re.escape(revision)}-{re.escape(role_name)}$")


@conformance(short_name="DisaggregatedSetMakesOneLWSPerRole", features={Feature.DISAGGREGATED_OBJECT_MODEL},
             description="A DisaggregatedSet makes one LWS per role, named after the set, revision and role, "
                         "labelled name/role/revision/app, controlled by the set, with the role's replicas, template "
                         "and metadata; its pods carry the labels too (2.1-2.2, 3; upstream E3, E8, E9).")
def test_a_set_makes_one_lws_per_role(ds: DSHarness, lws: LWSHarness) -> None:
    prefill = role("prefill", 2, size=2, metadata={
        "labels": {"team": "serving", "kueue.x-k8s.io/queue-name": "gpu-queue"},
        "annotations": {"example.com/note": "prefill pool"}})
    created = ds.create(manifest("pd", [prefill, role("decode", 1)]))
    found = ds.settled("pd", {"prefill": 2, "decode": 1})
    assert len(found) == 2, f"want one LWS per role, got {sorted(found)}"
    (revision,) = {revision_of(o) for o in found.values()}
    assert HASH.match(revision), f"the revision label {revision!r} is not 8 lowercase hex characters (2.5)"
    for name, obj in found.items():
        r = role_of(obj)
        assert _name_pattern("pd", revision, r).match(name), f"LWS {name} is not named <D>-[<s>-]<h>-<r>"
        labels = obj["metadata"]["labels"]
        assert labels[disaggapi.NAME] == "pd" and labels[disaggapi.ROLE] == r, f"{name} labels {labels}"
        assert re.match(rf"^pd-(0-)?{r}$", labels.get("app", "")), f"{name}: app label {labels.get('app')!r}"
        owners = [o for o in obj["metadata"].get("ownerReferences") or [] if o.get("controller")]
        assert [(o["kind"], o["name"], o["uid"]) for o in owners] == [
            (disaggapi.KIND, "pd", created["metadata"]["uid"])], f"{name} controller reference: {owners}"
        template = obj["spec"]["leaderWorkerTemplate"]
        want_size = 2 if r == "prefill" else 1
        assert template["size"] == want_size, f"{name}: size {template['size']}, the role says {want_size}"
        worker_labels = template["workerTemplate"]["metadata"]["labels"]
        assert worker_labels.get("tag") == "v1", f"{name}: the role's own template label is gone: {worker_labels}"
        for key in (disaggapi.NAME, disaggapi.ROLE, disaggapi.REVISION):
            assert worker_labels.get(key) == labels[key], f"{name}: worker template label {key}: {worker_labels}"
        if r == "prefill":
            assert labels.get("team") == "serving" and labels.get("kueue.x-k8s.io/queue-name") == "gpu-queue", \
                f"the role's metadata labels are not on {name}: {labels} (E9)"
            assert (obj["metadata"].get("annotations") or {}).get("example.com/note") == "prefill pool", \
                f"the role's metadata annotations are not on {name} (E8)"
        pods = lws.pods(name)
        assert len(pods) == want_size * obj["spec"]["replicas"], f"{name} pods: {sorted(pods)}"
        for pod, body in pods.items():
            pod_labels = body["metadata"]["labels"]
            assert (pod_labels.get(disaggapi.NAME), pod_labels.get(disaggapi.ROLE), pod_labels.get(
                disaggapi.REVISION)) == ("pd", r, revision), f"pod {pod} labels {pod_labels}"


@conformance(short_name="DisaggregatedSetScalesWithoutRollout", features={Feature.DISAGGREGATED_SCALING},
             description="Changing roles' replicas patches the current LWS in place: no new revision, no new LWS, "
                         "the groups already there untouched, up 1 -> 3 and back down (4.3; upstream E6).")
def test_scaling_a_set_changes_its_lws_in_place(ds: DSHarness, lws: LWSHarness) -> None:
    roles = [role("prefill", 1), role("decode", 1)]
    ds.create(manifest("pd", roles))
    before = ds.settled("pd", {"prefill": 1, "decode": 1})
    uids = {name: o["metadata"]["uid"] for name, o in before.items()}
    first_groups = {name: {p["metadata"]["uid"] for p in lws.pods(name).values()} for name in before}
    for count in (3, 1):
        ds.set_roles("pd", [role("prefill", count), role("decode", count)], step=f"scaled both roles to {count}")
        after = ds.settled("pd", {"prefill": count, "decode": count})
        assert {n: o["metadata"]["uid"] for n, o in after.items()} == uids, \
            f"scaling replaced or renamed the LWS: before {sorted(uids)}, after {sorted(after)}"
    for name, pod_uids in first_groups.items():
        now = {p["metadata"]["uid"] for p in lws.pods(name).values()}
        assert now == pod_uids, f"LWS {name}'s group 0 was recreated by scaling (4.3): {pod_uids} -> {now}"


@conformance(short_name="DisaggregatedSetRoleServices", features={Feature.DISAGGREGATED_SERVICES},
             description="Each role gets a headless, portless Service `<LWS>-prv` labelled and selecting the set, "
                         "role and revision, whose endpoints are exactly that role's ready pods (2.3; upstream E7).")
def test_each_role_gets_a_headless_service_of_its_own_pods(ds: DSHarness, lws: LWSHarness) -> None:
    ds.create(manifest("pd", [role("prefill", 2, size=2), role("decode", 1, size=2)]))
    found = ds.settled("pd", {"prefill": 2, "decode": 1})

    def one_service_per_lws() -> dict[str, Obj]:
        services = ds.services("pd")
        want = {f"{name}{disaggapi.SERVICE_SUFFIX}" for name in found}
        assert set(services) == want, f"Services {sorted(services)}, want {sorted(want)}"
        return services
    services = ds.wait(one_service_per_lws, what="one Service per role", name="pd", within="service_endpoints")
    for name, obj in found.items():
        svc = services[f"{name}{disaggapi.SERVICE_SUFFIX}"]
        spec = svc["spec"]
        assert spec.get("clusterIP") == "None" and not spec.get("ports"), \
            f"Service {name}-prv is not headless and portless: {spec.get('clusterIP')}, ports {spec.get('ports')}"
        selector = spec.get("selector") or {}
        for key in (disaggapi.NAME, disaggapi.ROLE, disaggapi.REVISION):
            assert selector.get(key) == obj["metadata"]["labels"][key], f"Service {name}-prv selector {selector}"
        lws.service_endpoints_must_be(f"{name}{disaggapi.SERVICE_SUFFIX}", set(lws.pods(name)), name=name)


@conformance(short_name="DisaggregatedSetDeletionDeletesItsObjects", features={Feature.DISAGGREGATED_OBJECT_MODEL},
             description="Deleting a DisaggregatedSet deletes its LWS, their pods and its Services (2.6; upstream "
                         "E11).")
def test_deleting_a_set_deletes_what_it_made(ds: DSHarness, lws: LWSHarness) -> None:
    ds.create(manifest("pd", [role("prefill", 1), role("decode", 1)]))
    ds.settled("pd", {"prefill": 1, "decode": 1})
    ds.delete("pd")

    def everything_gone() -> None:
        left = [o["metadata"]["name"] for o in ds.lws_objects("pd")] + sorted(ds.services("pd"))
        assert not left, f"still there: {left}"
    ds.wait(everything_gone, what="the set's LWS and Services to be deleted", name="pd", within="delete")
    lws.pods_must_be_gone(f"{disaggapi.NAME}=pd")


def _partition(replicas: int) -> Obj:
    return role("decode", replicas, rollout={"maxSurge": 0, "maxUnavailable": 1, "partition": 1})


REFUSED = [
    pytest.param([role("prefill", 1)], id="one-role"),                                                    # D-V3
    pytest.param([role(f"r{i}", 1) for i in range(11)], id="eleven-roles"),                              # D-V4
    pytest.param([role("prefill", 1), role("prefill", 2)], id="duplicate-role-names"),                   # D-V5
    pytest.param([role("Prefill", 1), role("decode", 1)], id="role-name-not-dns"),                       # D-V6
    pytest.param([role("prefill", 0), role("decode", 2)], id="one-role-at-zero"),                         # D-V10
    pytest.param([role("prefill", 1), _partition(1)], id="partition"),                                    # D-V14, E2
]


@conformance(short_name="DisaggregatedSetValidation", features={Feature.DISAGGREGATED_VALIDATION},
             description="Refused: fewer than 2 or more than 10 roles, duplicate or non-DNS role names, some roles "
                         "at 0 replicas while others are not, a rollout partition (5: D-V3-D-V6, D-V10, D-V14; "
                         "upstream E2); nothing is stored.")
@pytest.mark.parametrize("roles", REFUSED)
def test_invalid_sets_are_refused(ds: DSHarness, roles: list[Obj]) -> None:
    refusal = ds.refusal(manifest("bad", roles))
    assert is_rejected(refusal), f"want a validation refusal (400/422), got HTTP {refusal.status}: {refusal.body}"
    assert not ds.lws_objects("bad"), "a refused set left LWS objects behind"


@conformance(short_name="DisaggregatedSetPausedAtZeroIsValid", features={Feature.DISAGGREGATED_VALIDATION},
             description="Every role at 0 replicas is admitted (a paused set, 4.2) and makes its LWS at 0; a "
                         "partition of 0 is admitted too (5).")
def test_a_set_paused_at_zero_is_admitted(ds: DSHarness) -> None:
    ds.create(manifest("paused", [role("prefill", 0), role("decode", 0, rollout={"partition": 0})]))
    ds.settled("paused", {"prefill": 0, "decode": 0})
