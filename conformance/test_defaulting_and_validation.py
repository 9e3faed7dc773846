"""Defaulting and validation (docs/lws-contract.md sections 1.3 and 5.1).

A created LWS reads back with every default, whoever fills them in (schema or webhook). Every rule
V1-V24 is one row of a table: the request must be refused with a 4xx naming the object (400, 403 or
422 - never matched on message text), and every case the contract lists as accepted must be
accepted. Workloads here are parked (their pods never schedule) and use `startupPolicy: LeaderReady`,
so even a wrongly accepted huge spec creates only a few Pending pods; it is deleted at once.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client

from conformance.harness import LWSHarness, is_rejected
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature

DROP = object()
Change = tuple[tuple[str, ...], Any]
LWT = ("spec", "leaderWorkerTemplate")
RUC = ("spec", "rolloutStrategy", "rollingUpdateConfiguration")
SGP = (*LWT, "subGroupPolicy")
SUBGROUP_TOPOLOGY = ("metadata", "annotations", lwsapi.SUBGROUP_EXCLUSIVE_TOPOLOGY)


def build(name: str, changes: tuple[Change, ...] = ()) -> dict[str, Any]:
    manifest = workloads.parked(workloads.probe_lws(name, replicas=2, size=2, startup_policy="LeaderReady"))
    for path, value in changes:
        node = manifest
        for key in path[:-1]:
            node = node.setdefault(key, {})
        if value is DROP:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(value)
    return manifest


@dataclass(frozen=True)
class Case:
    id: str
    create: tuple[Change, ...] = ()
    update: dict[str, Any] | None = None
    """A merge patch sent after a successful create; None: the create itself is the request under test."""
    read_back: tuple[Change, ...] = field(default=())
    """For accepted cases: fields whose stored value is checked."""


REJECTED = [
    Case("V1-name-starts-with-digit", ((("metadata", "name"), "2cube"),)),
    Case("V1-name-uppercase", ((("metadata", "name"), "Cube"),)),
    Case("V1-name-with-dot", ((("metadata", "name"), "cu.be"),)),
    Case("V2-negative-replicas", ((("spec", "replicas"), -1),)),
    Case("V3-replicas-above-1000000", ((("spec", "replicas"), 1000001),)),
    Case("V4-size-0", (((*LWT, "size"), 0),)),
    Case("V4-size-negative", (((*LWT, "size"), -1),)),
    Case("V5-replicas-times-size-above-maxint32", ((("spec", "replicas"), 3), ((*LWT, "size"), 1_000_000_000))),
    Case("V6-unknown-restart-policy", (((*LWT, "restartPolicy"), "Always"),)),
    Case("V7-unknown-startup-policy", ((("spec", "startupPolicy"), "Sometimes"),)),
    Case("V7-empty-startup-policy", ((("spec", "startupPolicy"), ""),)),
    Case("V8-unknown-rollout-type", ((("spec", "rolloutStrategy"), {"type": "Recreate"}),)),
    Case("V9-negative-max-unavailable", (((*RUC, "maxUnavailable"), -1),)),
    Case("V9-negative-max-surge", (((*RUC, "maxSurge"), -1),)),
    Case("V10-max-unavailable-not-a-percent", (((*RUC, "maxUnavailable"), "abc%"),)),
    Case("V10-max-surge-string-without-percent", (((*RUC, "maxSurge"), "50"),)),
    Case("V11-max-unavailable-above-100-percent", (((*RUC, "maxUnavailable"), "200%"),)),
    Case("V11-max-surge-above-100-percent", (((*RUC, "maxSurge"), "200%"),)),
    Case("V12-both-zero", (((*RUC, "maxUnavailable"), 0), ((*RUC, "maxSurge"), 0))),
    Case("V12-percent-rounds-to-zero", (((*RUC, "maxUnavailable"), "25%"), ((*RUC, "maxSurge"), 0))),
    Case("V13-negative-partition", (((*RUC, "partition"), -1),)),
    Case("V14-subgroup-size-0", ((SGP, {"subGroupSize": 0}),)),
    Case("V14-subgroup-size-negative", ((SGP, {"subGroupSize": -1}),)),
    Case("V15-subgroup-larger-than-size", ((SGP, {"subGroupSize": 3}),)),
    Case("V16-size-not-divisible", (((*LWT, "size"), 5), (SGP, {"subGroupSize": 3}))),
    Case("V17-leader-excluded-size-minus-1-not-divisible",
         (((*LWT, "size"), 4), (SGP, {"subGroupSize": 2, "subGroupPolicyType": "LeaderExcluded"}))),
    Case("V18-subgroup-policy-without-size", ((SGP, {}),)),
    Case("V19-subgroup-topology-without-subgroups", ((SUBGROUP_TOPOLOGY, "topology.kubernetes.io/zone"),)),
    Case("V23-unknown-subdomain-policy", ((("spec", "networkConfig"), {"subdomainPolicy": "Unique"}),)),
    Case("V24-no-worker-template", (((*LWT, "workerTemplate"), DROP),)),
    Case("V24-no-leader-worker-template", ((LWT, DROP),)),
    Case("V2-update-negative-replicas", update={"spec": {"replicas": -1}}),
    Case("V3-update-replicas-above-1000000", update={"spec": {"replicas": 1000001}}),
    Case("V5-update-size-overflows", ((("spec", "replicas"), 3), ((*LWT, "size"), 1)),
         update={"spec": {"leaderWorkerTemplate": {"size": 1_000_000_000}}}),
    Case("V7-update-unknown-startup-policy", update={"spec": {"startupPolicy": "Sometimes"}}),
    Case("V13-update-negative-partition", update={"spec": {"rolloutStrategy": {
        "rollingUpdateConfiguration": {"partition": -1}}}}),
    Case("V20-update-subgroup-size", (((*LWT, "size"), 4), (SGP, {"subGroupSize": 2})),
         update={"spec": {"leaderWorkerTemplate": {"subGroupPolicy": {"subGroupSize": 4}}}}),
    Case("V21-update-adds-subgroup-policy", update={"spec": {"leaderWorkerTemplate": {
        "subGroupPolicy": {"subGroupSize": 1}}}}),
    Case("V22-update-removes-subgroup-policy", ((SGP, {"subGroupSize": 2}),),
         update={"spec": {"leaderWorkerTemplate": {"subGroupPolicy": None}}}),
]

ACCEPTED = [
    Case("restart-policy-none", (((*LWT, "restartPolicy"), "None"),), read_back=(((*LWT, "restartPolicy"), "None"),)),
    Case("restart-policy-default-stored-as-none", (((*LWT, "restartPolicy"), "Default"),),
         read_back=(((*LWT, "restartPolicy"), "None"),)),
    Case("max-unavailable-above-replicas", (((*RUC, "maxUnavailable"), 10),)),
    Case("max-surge-above-replicas", (((*RUC, "maxSurge"), 10),)),
    Case("max-unavailable-0-with-max-surge-1", (((*RUC, "maxUnavailable"), 0), ((*RUC, "maxSurge"), 1))),
    Case("zero-replicas-with-percentages", ((("spec", "replicas"), 0), ((*RUC, "maxUnavailable"), "25%"),
                                            ((*RUC, "maxSurge"), "25%"))),
    Case("partition-above-replicas", (((*RUC, "partition"), 5),)),
    Case("partition-equal-to-replicas", (((*RUC, "partition"), 2),)),
    Case("partition-zero", (((*RUC, "partition"), 0),), read_back=(((*RUC, "partition"), 0),)),
    Case("update-size", update={"spec": {"leaderWorkerTemplate": {"size": 3}}},
         read_back=(((*LWT, "size"), 3),)),
    Case("update-replicas", update={"spec": {"replicas": 3}}, read_back=((("spec", "replicas"), 3),)),
    Case("update-worker-template", update={"spec": {"leaderWorkerTemplate": {"workerTemplate": {
        "metadata": {"labels": {"example.com/changed": "yes"}}}}}}),
    Case("update-subdomain-shared-to-unique",
         update={"spec": {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}}},
         read_back=((("spec", "networkConfig", "subdomainPolicy"), "UniquePerReplica"),)),
    Case("update-subdomain-unique-to-shared", ((("spec", "networkConfig"), {"subdomainPolicy": "UniquePerReplica"}),),
         update={"spec": {"networkConfig": {"subdomainPolicy": "Shared"}}},
         read_back=((("spec", "networkConfig", "subdomainPolicy"), "Shared"),)),
    Case("update-subdomain-to-null-is-shared", ((("spec", "networkConfig"), {"subdomainPolicy": "UniquePerReplica"}),),
         update={"spec": {"networkConfig": {"subdomainPolicy": None}}},
         read_back=((("spec", "networkConfig", "subdomainPolicy"), "Shared"),)),
    Case("update-partition-to-0", (((*RUC, "partition"), 2),), update={"spec": {"rolloutStrategy": {
        "rollingUpdateConfiguration": {"partition": 0}}}}),
    Case("update-partition-above-replicas", update={"spec": {"rolloutStrategy": {
        "rollingUpdateConfiguration": {"partition": 10}}}}),
    Case("update-subgroup-policy-type", (((*LWT, "size"), 3), (SGP, {"subGroupSize": 2})),
         update={"spec": {"leaderWorkerTemplate": {"subGroupPolicy": {"subGroupPolicyType": "LeaderExcluded"}}}},
         read_back=(((*SGP, "subGroupPolicyType"), "LeaderExcluded"),)),
    Case("update-startup-policy", update={"spec": {"startupPolicy": "LeaderCreated"}},
         read_back=((("spec", "startupPolicy"), "LeaderCreated"),)),
]


def _name(case: Case) -> str:
    return "v-" + "".join(ch for ch in case.id.lower() if ch.isalnum() or ch == "-")[:40].strip("-")


def _refused(lws: LWSHarness, request: Callable[[], Any], name: str, what: str) -> None:
    try:
        request()
    except client.ApiException as exc:
        assert is_rejected(exc), f"{what}: refused, but with HTTP {exc.status} (want 400/403/422): {exc.body}"
        return
    lws.delete(name, propagation="Background")
    raise AssertionError(f"{what}: the API server accepted it; the contract rejects it")


@conformance(short_name="InvalidSpecsAreRejected", features={Feature.VALIDATION},
             description="Every rule V1-V24 of section 5.1 refuses the create or update with a 4xx.")
@pytest.mark.parametrize("case", REJECTED, ids=[c.id for c in REJECTED])
def test_invalid_specs_are_rejected(lws: LWSHarness, case: Case) -> None:
    manifest = build(_name(case), case.create)
    name = manifest["metadata"]["name"]
    if case.update is None:
        _refused(lws, lambda: lws.create(manifest), name, f"creating {case.id}")
        return
    lws.create(manifest)
    _refused(lws, lambda: lws.patch(name, case.update or {}), name, f"updating {case.id}")


@conformance(short_name="ValidSpecsAreAccepted", features={Feature.VALIDATION},
             description="The specs and updates section 5.1 lists as accepted are accepted and stored as sent.")
@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_valid_specs_are_accepted(lws: LWSHarness, case: Case) -> None:
    name = _name(case)
    lws.create(build(name, case.create))
    if case.update is not None:
        lws.patch(name, case.update)

    def read_back() -> None:
        # Eventually: an implementation without a mutating webhook may normalize the stored spec
        # (restartPolicy Default -> None) in its first reconcile instead of at admission.
        stored = lws.get(name)
        for path, want in case.read_back:
            node: Any = stored
            for key in path:
                node = (node or {}).get(key)
            assert node == want, f"{case.id}: stored {'.'.join(path)} = {node!r}, want {want!r}"

    lws.wait(read_back, what=f"{case.id} to read back as expected", within="create", name=name)


def _int_or_str(value: Any) -> str:
    return str(value)


@conformance(short_name="DefaultsFilledOnCreate", features={Feature.DEFAULTING},
             description="A minimal LWS reads back with replicas, size, policies, rollout strategy and networkConfig "
                         "defaulted (1.3).")
def test_defaults_filled_on_create(lws: LWSHarness) -> None:
    full = workloads.parked(workloads.probe_lws("defaults", separate_leader=False))
    worker_template = full["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    minimal = {"apiVersion": workloads.API_VERSION, "kind": "LeaderWorkerSet", "metadata": {"name": "defaults"},
               "spec": {"leaderWorkerTemplate": {"workerTemplate": worker_template}}}
    lws.create(minimal)
    spec = lws.get("defaults")["spec"]
    lwt = spec["leaderWorkerTemplate"]
    assert (spec.get("replicas"), lwt.get("size")) == (1, 1), f"replicas {spec.get('replicas')}, size {lwt.get('size')}"
    assert lwt.get("restartPolicy") == "RecreateGroupOnPodRestart", f"restartPolicy {lwt.get('restartPolicy')}"
    assert spec.get("startupPolicy") == "LeaderCreated", f"startupPolicy {spec.get('startupPolicy')}"
    rollout = spec.get("rolloutStrategy") or {}
    conf = rollout.get("rollingUpdateConfiguration") or {}
    assert rollout.get("type") == "RollingUpdate", f"rolloutStrategy {rollout}"
    assert {k: _int_or_str(v) for k, v in conf.items()} == {"partition": "0", "maxUnavailable": "1", "maxSurge": "0"}
    assert (spec.get("networkConfig") or {}).get("subdomainPolicy") == "Shared", \
        f"networkConfig {spec.get('networkConfig')}"
    assert "subGroupPolicy" not in lwt and "leaderTemplate" not in lwt


@conformance(short_name="ExplicitValuesKept", features={Feature.DEFAULTING},
             description="Explicit policy, strategy and subgroup values are stored as sent; subGroupPolicyType "
                         "defaults to LeaderWorker (1.3).")
def test_explicit_values_kept(lws: LWSHarness) -> None:
    conf = {"partition": 2, "maxUnavailable": 2, "maxSurge": 1}
    lws.create(build("explicit", (((*RUC,), conf), (("spec", "networkConfig"), {"subdomainPolicy": "UniquePerReplica"}),
                                  ((*LWT, "restartPolicy"), "None"), (SGP, {"subGroupSize": 2}))))
    spec = lws.get("explicit")["spec"]
    assert spec["rolloutStrategy"]["rollingUpdateConfiguration"] == conf
    assert spec["rolloutStrategy"]["type"] == "RollingUpdate"
    assert spec["networkConfig"]["subdomainPolicy"] == "UniquePerReplica"
    assert spec["startupPolicy"] == "LeaderReady" and spec["leaderWorkerTemplate"]["restartPolicy"] == "None"
    assert spec["leaderWorkerTemplate"]["subGroupPolicy"] == {"subGroupSize": 2, "subGroupPolicyType": "LeaderWorker"}


@conformance(short_name="EmptyStringsDefaulted", features={Feature.DEFAULTING},
             description="Explicit empty restartPolicy and rolloutStrategy.type are stored defaulted, on create and "
                         "update (1.3 step 2; upstream's webhook integration test 'restartPolicy \"\"').")
def test_empty_strings_defaulted(lws: LWSHarness) -> None:
    """Go clients built on upstream's types send `rolloutStrategy: {type: ""}` when they leave it unset (trap
    T15), so an implementation that refused empty strings would refuse them; the stored value is checked at
    once, as the contract has it defaulted at admission (a later rewrite would let a reader see "")."""
    lws.create(build("empty", (((*LWT, "restartPolicy"), ""), (("spec", "rolloutStrategy"), {"type": ""}))))
    spec = lws.get("empty")["spec"]
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart", spec["leaderWorkerTemplate"]
    assert spec["rolloutStrategy"]["type"] == "RollingUpdate", spec["rolloutStrategy"]
    conf = {k: _int_or_str(v) for k, v in spec["rolloutStrategy"].get("rollingUpdateConfiguration", {}).items()}
    assert conf == {"partition": "0", "maxUnavailable": "1", "maxSurge": "0"}, spec["rolloutStrategy"]
    lws.patch("empty", {"spec": {"leaderWorkerTemplate": {"restartPolicy": ""}}})
    restart = lws.get("empty")["spec"]["leaderWorkerTemplate"]["restartPolicy"]
    assert restart == "RecreateGroupOnPodRestart", f"restartPolicy after an update to \"\": {restart!r}"
