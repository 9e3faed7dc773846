"""The LeaderWorkerSet CRD (manifests/crd/leaderworkersets.yaml) on the real sim API server.

The reference implementation has no admission webhook, so the CRD itself must refuse what upstream's
webhook refuses (contract section 5.1, V1-V24), accept what upstream's tests accept, and default what the
webhook defaults (section 1.3). One table row per rule; see lwsconf/reconciler/README.md ("Validation and
defaulting without a webhook") for where each rule lives and what a CRD cannot do.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_sim_api
from tests.reconciler.lws_api import DELETE, LwsAPI, describe, edit, get_path, load_crd, lws

_names = itertools.count()

ROLLING = "spec.rolloutStrategy.rollingUpdateConfiguration"
SGP = "spec.leaderWorkerTemplate.subGroupPolicy"
SIZE = "spec.leaderWorkerTemplate.size"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LwsAPI]:
    """One sim API server with the CRD installed, shared by this module (every case uses its own name)."""
    sim, loop = start_sim_api(Path(tmp_path_factory.mktemp("lws-crd")))
    wrapped = LwsAPI(sim)
    reply = wrapped.install_crd()
    assert reply.status_code == 201, describe(reply)
    yield wrapped
    sim.api.close()
    loop.run(sim.server.stop())
    loop.stop()


def fresh_name() -> str:
    return f"lws-{next(_names)}"


@dataclass(frozen=True)
class Reject:
    """A write the CRD must refuse with 422, naming `field` in a cause and `names` in the message."""

    rule: str
    why: str
    edits: dict[str, Any]
    field: str
    names: str = ""
    initial: dict[str, Any] | None = None  # set: create with these edits first, then update with `edits`

    @property
    def id(self) -> str:
        return f"{self.rule}-{self.why}"


REJECTED = [
    Reject("V1", "starts-with-digit", {"metadata.name": "2cube"}, "metadata.name", "metadata.name"),
    Reject("V1", "dot-in-name", {"metadata.name": "lws.sample"}, "metadata.name", "metadata.name"),
    Reject("V1", "longer-than-63", {"metadata.name": "a" * 64}, "metadata.name", "metadata.name"),
    Reject("V1", "generate-name-with-digit", {"metadata.name": DELETE, "metadata.generateName": "9lws-"},
           "metadata.generateName", "metadata.generateName"),
    Reject("V2", "replicas-negative", {"spec.replicas": -1}, "spec.replicas"),
    Reject("V2", "update-replicas-negative", {"spec.replicas": -1}, "spec.replicas", initial={}),
    Reject("V3", "replicas-above-1e6", {"spec.replicas": 1000001}, "spec.replicas"),
    Reject("V3", "update-replicas-above-1e6", {"spec.replicas": 1000001}, "spec.replicas", initial={}),
    Reject("V4", "size-zero", {SIZE: 0}, SIZE),
    Reject("V4", "size-negative", {SIZE: -1}, SIZE),
    Reject("V5", "product-above-int32", {"spec.replicas": 100000, SIZE: 1000000}, "spec",
           "spec.replicas * spec.leaderWorkerTemplate.size"),
    Reject("V5", "update-size-overflows", {SIZE: 100000000}, "spec",
           "spec.replicas * spec.leaderWorkerTemplate.size", initial={"spec.replicas": 100000}),
    Reject("V6", "restart-policy-unknown", {"spec.leaderWorkerTemplate.restartPolicy": "Always"},
           "spec.leaderWorkerTemplate.restartPolicy"),
    Reject("V7", "startup-policy-unknown", {"spec.startupPolicy": "LeaderRunning"}, "spec.startupPolicy"),
    Reject("V7", "update-startup-policy-empty", {"spec.startupPolicy": ""}, "spec.startupPolicy", initial={}),
    Reject("V8", "rollout-type-unknown", {"spec.rolloutStrategy.type": "Recreate"}, "spec.rolloutStrategy.type"),
    Reject("V9", "max-unavailable-negative", {f"{ROLLING}.maxUnavailable": -1}, f"{ROLLING}.maxUnavailable"),
    Reject("V9", "max-surge-negative", {f"{ROLLING}.maxSurge": -1}, f"{ROLLING}.maxSurge"),
    Reject("V10", "max-unavailable-not-percent", {f"{ROLLING}.maxUnavailable": "abc"}, f"{ROLLING}.maxUnavailable"),
    Reject("V10", "max-surge-digits-without-percent", {f"{ROLLING}.maxSurge": "10"}, f"{ROLLING}.maxSurge"),
    Reject("V11", "max-unavailable-200-percent", {f"{ROLLING}.maxUnavailable": "200%"}, f"{ROLLING}.maxUnavailable"),
    Reject("V11", "max-surge-101-percent", {f"{ROLLING}.maxSurge": "101%"}, f"{ROLLING}.maxSurge"),
    Reject("V12", "both-zero", {"spec.replicas": 3, f"{ROLLING}.maxUnavailable": 0, f"{ROLLING}.maxSurge": 0},
           f"{ROLLING}.maxUnavailable"),
    Reject("V12", "25-percent-of-2-rounds-to-zero",
           {"spec.replicas": 2, f"{ROLLING}.maxUnavailable": "25%", f"{ROLLING}.maxSurge": 0},
           f"{ROLLING}.maxUnavailable"),
    Reject("V12", "zero-percent-surge", {f"{ROLLING}.maxUnavailable": 0, f"{ROLLING}.maxSurge": "0%"},
           f"{ROLLING}.maxUnavailable"),
    Reject("V12", "update-replicas-from-0", {"spec.replicas": 2}, f"{ROLLING}.maxUnavailable",
           initial={"spec.replicas": 0, f"{ROLLING}.maxUnavailable": "25%", f"{ROLLING}.maxSurge": 0}),
    Reject("V13", "partition-negative", {f"{ROLLING}.partition": -1}, f"{ROLLING}.partition"),
    Reject("V13", "update-partition-negative", {f"{ROLLING}.partition": -1}, f"{ROLLING}.partition", initial={}),
    Reject("V14", "sub-group-size-negative", {f"{SGP}.subGroupSize": -1}, f"{SGP}.subGroupSize"),
    Reject("V14", "sub-group-size-zero", {SIZE: 4, f"{SGP}.subGroupSize": 0}, f"{SGP}.subGroupSize"),
    Reject("V15", "sub-group-size-above-size", {SIZE: 2, f"{SGP}.subGroupSize": 3}, f"{SGP}.subGroupSize"),
    Reject("V16", "neither-size-nor-size-minus-1-divisible", {SIZE: 8, f"{SGP}.subGroupSize": 3},
           f"{SGP}.subGroupSize"),
    Reject("V17", "leader-excluded-needs-size-minus-1-divisible",
           {SIZE: 4, f"{SGP}.subGroupSize": 2, f"{SGP}.subGroupPolicyType": "LeaderExcluded"},
           f"{SGP}.subGroupSize"),
    Reject("V18", "sub-group-policy-without-size", {f"{SGP}.subGroupPolicyType": "LeaderWorker"},
           f"{SGP}.subGroupSize"),
    Reject("V20", "update-sub-group-size", {f"{SGP}.subGroupSize": 1}, f"{SGP}.subGroupSize",
           initial={SIZE: 4, f"{SGP}.subGroupSize": 2}),
    Reject("V21", "update-adds-sub-group-policy", {f"{SGP}.subGroupSize": 2}, SGP, initial={SIZE: 4}),
    Reject("V22", "update-removes-sub-group-policy", {SGP: DELETE}, SGP,
           initial={SIZE: 4, f"{SGP}.subGroupSize": 2}),
    Reject("V23", "subdomain-policy-unknown", {"spec.networkConfig.subdomainPolicy": "PerPod"},
           "spec.networkConfig.subdomainPolicy"),
    Reject("V24", "no-worker-template", {"spec.leaderWorkerTemplate.workerTemplate": DELETE},
           "spec.leaderWorkerTemplate.workerTemplate"),
    Reject("V24", "no-leader-worker-template", {"spec.leaderWorkerTemplate": DELETE}, "spec.leaderWorkerTemplate"),
    Reject("V24", "no-spec", {"spec": DELETE}, "spec"),
]


@pytest.mark.parametrize("case", REJECTED, ids=[c.id for c in REJECTED])
def test_crd_refuses_what_the_upstream_webhook_refuses(api: LwsAPI, case: Reject) -> None:
    name = fresh_name()
    if case.initial is None:
        reply = api.create(edit(lws(name), case.edits))
    else:
        created = api.create(edit(lws(name), case.initial))
        assert created.status_code == 201, describe(created)
        reply = api.update(name, case.edits)
    assert reply.status_code == 422, describe(reply)
    status = reply.json()
    assert status["reason"] == "Invalid", status
    causes = status["details"]["causes"]
    assert any(c.get("field") == case.field for c in causes), f"no cause on {case.field}: {causes}"
    assert (case.names or case.field) in status["message"], status["message"]


@dataclass(frozen=True)
class Accept:
    """A write upstream's tests accept (contract 5.1 "Explicitly accepted"); `expect` is read back after it."""

    why: str
    edits: dict[str, Any]
    initial: dict[str, Any] | None = None
    expect: dict[str, Any] = field(default_factory=dict)


ACCEPTED = [
    Accept("update-size", {SIZE: 3}, initial={}, expect={SIZE: 3}),
    Accept("update-replicas", {"spec.replicas": 5}, initial={}, expect={"spec.replicas": 5}),
    Accept("update-worker-template",
           {"spec.leaderWorkerTemplate.workerTemplate.spec.containers": [{"name": "main", "image": "w:2"}]},
           initial={}, expect={"spec.leaderWorkerTemplate.workerTemplate.spec.containers": [
               {"name": "main", "image": "w:2"}]}),
    Accept("update-adds-leader-template",
           {"spec.leaderWorkerTemplate.leaderTemplate": {"spec": {"containers": [{"name": "lead", "image": "l:1"}]}}},
           initial={}),
    Accept("shared-to-unique", {"spec.networkConfig.subdomainPolicy": "UniquePerReplica"}, initial={},
           expect={"spec.networkConfig.subdomainPolicy": "UniquePerReplica"}),
    Accept("unique-to-shared", {"spec.networkConfig.subdomainPolicy": "Shared"},
           initial={"spec.networkConfig.subdomainPolicy": "UniquePerReplica"},
           expect={"spec.networkConfig.subdomainPolicy": "Shared"}),
    Accept("subdomain-policy-set-to-null-is-shared", {"spec.networkConfig.subdomainPolicy": None},
           initial={"spec.networkConfig.subdomainPolicy": "UniquePerReplica"},
           expect={"spec.networkConfig.subdomainPolicy": "Shared"}),
    Accept("network-config-set-to-null-is-shared", {"spec.networkConfig": None},
           initial={"spec.networkConfig.subdomainPolicy": "UniquePerReplica"},
           expect={"spec.networkConfig": {"subdomainPolicy": "Shared"}}),
    Accept("restart-policy-none", {"spec.leaderWorkerTemplate.restartPolicy": "None"},
           expect={"spec.leaderWorkerTemplate.restartPolicy": "None"}),
    # Upstream stores None; a CRD cannot rewrite values, so the CRD alone keeps Default: the
    # MutatingAdmissionPolicy rewrites it (test_mutating_policy_manifest.py), the reconciler without one.
    Accept("restart-policy-default-is-kept", {"spec.leaderWorkerTemplate.restartPolicy": "Default"},
           expect={"spec.leaderWorkerTemplate.restartPolicy": "Default"}),
    Accept("restart-policy-after-start", {"spec.leaderWorkerTemplate.restartPolicy": "RecreateGroupAfterStart"}),
    Accept("max-unavailable-above-replicas", {"spec.replicas": 3, f"{ROLLING}.maxUnavailable": 10}),
    Accept("max-surge-above-replicas", {"spec.replicas": 3, f"{ROLLING}.maxSurge": 10}),
    Accept("max-unavailable-0-with-max-surge-1", {f"{ROLLING}.maxUnavailable": 0, f"{ROLLING}.maxSurge": 1}),
    Accept("replicas-0-with-percentages",
           {"spec.replicas": 0, f"{ROLLING}.maxUnavailable": "25%", f"{ROLLING}.maxSurge": "25%"}),
    Accept("replicas-0-with-both-zero", {"spec.replicas": 0, f"{ROLLING}.maxUnavailable": 0,
                                         f"{ROLLING}.maxSurge": 0}),
    Accept("percentages-up-to-100", {"spec.replicas": 4, f"{ROLLING}.maxUnavailable": "100%",
                                     f"{ROLLING}.maxSurge": "0%"}),
    Accept("25-percent-of-4-is-one", {"spec.replicas": 4, f"{ROLLING}.maxUnavailable": "25%",
                                      f"{ROLLING}.maxSurge": 0}),
    Accept("surge-percent-rounds-up", {"spec.replicas": 2, f"{ROLLING}.maxUnavailable": 0,
                                       f"{ROLLING}.maxSurge": "1%"}),
    Accept("partition-above-replicas", {"spec.replicas": 3, f"{ROLLING}.partition": 5}),
    Accept("partition-equal-replicas", {"spec.replicas": 3, f"{ROLLING}.partition": 3}),
    Accept("update-partition-to-2", {f"{ROLLING}.partition": 2}, initial={"spec.replicas": 3}),
    Accept("update-partition-above-replicas", {f"{ROLLING}.partition": 10}, initial={"spec.replicas": 3}),
    Accept("update-partition-to-0", {f"{ROLLING}.partition": 0},
           initial={"spec.replicas": 3, f"{ROLLING}.partition": 3}),
    Accept("update-sub-group-policy-type", {f"{SGP}.subGroupPolicyType": "LeaderExcluded"},
           initial={SIZE: 5, f"{SGP}.subGroupSize": 2}),
    Accept("sub-group-size-divides-size-minus-1", {SIZE: 5, f"{SGP}.subGroupSize": 2}),
    Accept("update-startup-policy", {"spec.startupPolicy": "LeaderReady"}, initial={},
           expect={"spec.startupPolicy": "LeaderReady"}),
    Accept("update-keeps-sub-group-policy", {SIZE: 6}, initial={SIZE: 4, f"{SGP}.subGroupSize": 2}),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.why for c in ACCEPTED])
def test_crd_accepts_what_upstream_accepts(api: LwsAPI, case: Accept) -> None:
    name = fresh_name()
    if case.initial is None:
        reply = api.create(edit(lws(name), case.edits))
        assert reply.status_code == 201, describe(reply)
    else:
        created = api.create(edit(lws(name), case.initial))
        assert created.status_code == 201, describe(created)
        reply = api.update(name, case.edits)
        assert reply.status_code == 200, describe(reply)
    stored = api.get(name)
    for path, want in case.expect.items():
        assert get_path(stored, path) == want, f"{path}: {stored['spec']}"


FULL_DEFAULTS = {
    "replicas": 1,
    "startupPolicy": "LeaderCreated",
    "rolloutStrategy": {"type": "RollingUpdate",
                        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 0}},
    "networkConfig": {"subdomainPolicy": "Shared"},
}


def test_minimal_lws_reads_back_with_every_webhook_default(api: LwsAPI) -> None:
    name = fresh_name()
    assert api.create(lws(name)).status_code == 201
    spec = api.get(name)["spec"]
    assert {k: spec[k] for k in FULL_DEFAULTS} == FULL_DEFAULTS, spec
    template = spec["leaderWorkerTemplate"]
    assert (template["size"], template["restartPolicy"]) == (1, "RecreateGroupOnPodRestart"), template
    assert "subGroupPolicy" not in template and "leaderTemplate" not in template, template


@pytest.mark.parametrize("rollout, want", [
    ({}, FULL_DEFAULTS["rolloutStrategy"]),
    ({"type": "RollingUpdate"}, FULL_DEFAULTS["rolloutStrategy"]),
    ({"rollingUpdateConfiguration": {"maxSurge": 2}},
     {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 2, "partition": 0}}),
    ({"type": "RollingUpdate", "rollingUpdateConfiguration": {"partition": 2, "maxUnavailable": 2, "maxSurge": 1}},
     {"type": "RollingUpdate", "rollingUpdateConfiguration": {"partition": 2, "maxUnavailable": 2, "maxSurge": 1}}),
], ids=["empty", "type-only", "partial-configuration", "explicit-values-kept"])
def test_partial_rollout_strategy_is_completed(api: LwsAPI, rollout: dict[str, Any], want: dict[str, Any]) -> None:
    name = fresh_name()
    reply = api.create(edit(lws(name), {"spec.replicas": 3, "spec.rolloutStrategy": rollout}))
    assert reply.status_code == 201, describe(reply)
    assert api.get(name)["spec"]["rolloutStrategy"] == want


def test_sub_group_policy_type_defaults_to_leader_worker(api: LwsAPI) -> None:
    name = fresh_name()
    assert api.create(edit(lws(name), {SIZE: 4, f"{SGP}.subGroupSize": 2})).status_code == 201
    assert api.get(name)["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] == {
        "subGroupPolicyType": "LeaderWorker", "subGroupSize": 2}


def test_scale_subresource_writes_spec_replicas_and_serves_the_hpa_selector(api: LwsAPI) -> None:
    name = fresh_name()
    assert api.create(edit(lws(name), {"spec.replicas": 2})).status_code == 201
    selector = f"leaderworkerset.sigs.k8s.io/name={name},leaderworkerset.sigs.k8s.io/worker-index=0"
    status = api.merge_patch(name, {"status": {"replicas": 2, "hpaPodSelector": selector}}, sub="status")
    assert status.status_code == 200, describe(status)
    scale = api.sim.request("GET", api.path(name, sub="scale")).json()
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 2, "selector": selector}, scale
    scaled = api.merge_patch(name, {"spec": {"replicas": 3}}, sub="scale")
    assert scaled.status_code == 200 and scaled.json()["spec"]["replicas"] == 3, describe(scaled)
    stored = api.get(name)
    assert stored["spec"]["replicas"] == 3 and stored["metadata"]["generation"] == 2, stored


def test_scale_subresource_keeps_the_schema_bounds(api: LwsAPI) -> None:
    name = fresh_name()
    assert api.create(lws(name)).status_code == 201
    reply = api.merge_patch(name, {"spec": {"replicas": 1000001}}, sub="scale")
    assert reply.status_code == 422 and "spec.replicas" in reply.text, describe(reply)
    assert api.get(name)["spec"]["replicas"] == 1


def test_scale_subresource_is_checked_by_the_cel_rules_too(api: LwsAPI) -> None:
    # Stricter than upstream, whose webhook never sees /scale (trap T25); README: chosen behaviour.
    name = fresh_name()
    body = edit(lws(name), {"spec.replicas": 0, f"{ROLLING}.maxUnavailable": "25%", f"{ROLLING}.maxSurge": 0})
    assert api.create(body).status_code == 201
    reply = api.merge_patch(name, {"spec": {"replicas": 2}}, sub="scale")
    assert reply.status_code == 422 and f"{ROLLING}.maxUnavailable" in reply.json()["message"], describe(reply)
    assert api.get(name)["spec"]["replicas"] == 0


def test_discovery_shows_names_and_subresources(api: LwsAPI) -> None:
    listing = api.sim.request("GET", "/apis/leaderworkerset.x-k8s.io/v1").json()
    by_name = {r["name"]: r for r in listing["resources"]}
    lws_resource = by_name["leaderworkersets"]
    assert (lws_resource["kind"], lws_resource["singularName"], lws_resource["namespaced"]) == (
        "LeaderWorkerSet", "leaderworkerset", True)
    # No categories, as upstream's CRD: `kubectl get all` does not list LWS (checked against upstream v0.9.0).
    assert lws_resource["shortNames"] == ["lws"] and not lws_resource.get("categories"), lws_resource
    assert {"leaderworkersets/status", "leaderworkersets/scale"} <= set(by_name), sorted(by_name)


def test_table_output_has_the_printer_columns_in_order(api: LwsAPI) -> None:
    name = fresh_name()
    assert api.create(edit(lws(name), {"spec.replicas": 4})).status_code == 201
    reply = api.sim.request("GET", api.path(name),
                            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = reply.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Ready", "Desired", "Up-to-date", "Age"]
    cells = table["rows"][0]["cells"]
    assert (cells[0], cells[2]) == (name, 4), cells


def test_duplicate_or_unnamed_containers_are_refused(api: LwsAPI) -> None:
    containers = "spec.leaderWorkerTemplate.workerTemplate.spec.containers"
    duplicate = api.create(edit(lws(fresh_name()), {containers: [{"name": "a"}, {"name": "a"}]}))
    assert duplicate.status_code == 422 and f"{containers}[1]" in duplicate.text, describe(duplicate)
    unnamed = api.create(edit(lws(fresh_name()), {containers: [{"image": "x"}]}))
    assert unnamed.status_code == 422 and f"{containers}[0].name" in unnamed.text, describe(unnamed)
    missing = api.create(edit(lws(fresh_name()), {containers: DELETE}))
    assert missing.status_code == 422 and containers in missing.text, describe(missing)


def test_unknown_fields_outside_templates_fail_strict_validation(api: LwsAPI) -> None:
    reply = api.create(edit(lws(fresh_name()), {"spec.replicaz": 3}), fieldValidation="Strict")
    assert reply.status_code == 400 and 'unknown field "spec.replicaz"' in reply.json()["message"], describe(reply)


def test_pod_spec_fields_inside_templates_are_kept_as_sent(api: LwsAPI) -> None:
    # The compact template schema preserves the PodSpec (README: "Pod templates"): nothing is pruned.
    name = fresh_name()
    pod_spec = {"containers": [{"name": "main", "image": "w:1", "resources": {"requests": {"cpu": 125}},
                                "ports": [{"containerPort": 8080}]}],
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "15Gi"}}],
                "nodeSelectr": {"typo": "kept"}}
    reply = api.create(edit(lws(name), {"spec.leaderWorkerTemplate.workerTemplate.spec": pod_spec}))
    assert reply.status_code == 201, describe(reply)
    assert api.get(name)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"] == pod_spec


def test_every_rule_message_names_its_field() -> None:
    def rules(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            yield from node.get("x-kubernetes-validations") or []
            for value in node.values():
                yield from rules(value)
        elif isinstance(node, list):
            for value in node:
                yield from rules(value)

    found = list(rules(load_crd()["spec"]["versions"][0]["schema"]))
    assert len(found) >= 20, f"expected the V1-V22 rules, found {len(found)}"
    for rule in found:
        assert rule["message"].startswith(("spec.", "metadata.")) and "\n" not in rule["message"], rule
