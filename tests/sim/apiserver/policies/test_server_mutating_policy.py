"""MutatingAdmissionPolicy and its binding on the sim API server: served, defaulted, validated, enforced.

Expected behaviour is kube-apiserver's (`policy/mutating/dispatcher.go`, `patch/json_patch.go`,
`policy/generic/policy_dispatcher.go`): JSONPatch mutations apply in order on CREATE/UPDATE after
defaulting and before validation; errors deny with HTTP 403, `policy 'P' with binding 'B' denied
request: <error>`, under `failurePolicy: Fail` and are ignored under `Ignore`.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SimAPI
from tests.sim.apiserver.policies.policy_helpers import (
    ADMISSION,
    Policies,
    check,
    configmap,
    describe,
    policy,
    rule,
)

MAPS = f"{ADMISSION}/mutatingadmissionpolicies"
MAP_BINDINGS = f"{ADMISSION}/mutatingadmissionpolicybindings"
CMS = "/api/v1/namespaces/default/configmaps"
SET_OWNER = '[JSONPatch{op: "add", path: "/data/owner", value: "mutated"}]'


def mutating(name: str, *expressions: str, rules: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    """A policy on `rules` (default CREATE/UPDATE of ConfigMaps) with one JSONPatch mutation per expression."""
    constraints = {"resourceRules": rules or [rule()], **spec.pop("match", {})}
    mutations = [{"patchType": "JSONPatch", "jsonPatch": {"expression": e}} for e in expressions]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": constraints, "mutations": mutations, "reinvocationPolicy": "Never", **spec}}


def mbinding(name: str, policy_name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": {"policyName": policy_name, **spec}}


class Mutating(Policies):
    def install_mutating(self, policy_: dict[str, Any], *bindings: dict[str, Any]) -> None:
        name = policy_["metadata"]["name"]
        for path, body in [(MAPS, policy_), *((MAP_BINDINGS, b) for b in bindings or (mbinding(name, name),))]:
            reply = self.sim.request("POST", path, json=body)
            assert reply.status_code == 201, describe(reply)

    def created(self, body: dict[str, Any], **params: str) -> dict[str, Any]:
        reply = self.create_cm(body, **params)
        assert reply.status_code == 201, describe(reply)
        created: dict[str, Any] = reply.json()
        return created


@pytest.fixture
def pol(sim_api: SimAPI) -> Mutating:
    return Mutating(sim_api)


# ---- the API objects ----


def test_both_types_are_discovered_as_cluster_scoped_without_status(pol: Mutating) -> None:
    listed = {r["name"]: r for r in pol.sim.request("GET", ADMISSION).json()["resources"]}
    assert listed["mutatingadmissionpolicies"]["namespaced"] is False, listed
    assert listed["mutatingadmissionpolicybindings"]["kind"] == "MutatingAdmissionPolicyBinding", listed
    assert "mutatingadmissionpolicies/status" not in listed, sorted(listed)


def test_policy_and_binding_are_defaulted(pol: Mutating) -> None:
    body = mbinding("defaults", "defaults", matchResources={"resourceRules": [rule()]})
    pol.install_mutating(mutating("defaults", SET_OWNER), body)
    spec = pol.sim.request("GET", f"{MAPS}/defaults").json()["spec"]
    assert spec["failurePolicy"] == "Fail", spec
    assert {k: spec["matchConstraints"][k] for k in ("matchPolicy", "namespaceSelector", "objectSelector")} == {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}, spec
    bound = pol.sim.request("GET", f"{MAP_BINDINGS}/defaults").json()["spec"]["matchResources"]
    assert bound["resourceRules"][0]["scope"] == "*" and bound["matchPolicy"] == "Equivalent", bound


def test_kubectl_table_counts_mutations(pol: Mutating) -> None:
    pol.install_mutating(mutating("two", SET_OWNER, SET_OWNER))
    table = pol.sim.request("GET", MAPS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Mutations", "ParamKind", "Age"], table
    assert table["rows"][0]["cells"][:3] == ["two", 2, "<unset>"], table


@pytest.mark.parametrize("edit, field, words", [
    (lambda s: s["mutations"][0]["jsonPatch"].update(expression="[JSONPatch{op: "),
     "spec.mutations[0].jsonPatch.expression",
     "compilation failed: ERROR: <input>:1:15: Syntax error"),  # trimmed, as kube-apiserver 1.37.2
    (lambda s: s["mutations"][0]["jsonPatch"].update(expression="object.data"),
     "spec.mutations[0].jsonPatch.expression",
     "must evaluate to list(JSONPatch) but got dyn"),
    (lambda s: s["mutations"][0]["jsonPatch"].update(expression="[1]"), "spec.mutations[0].jsonPatch.expression",
     "must evaluate to list(JSONPatch) but got list<int>"),
    (lambda s: s["mutations"][0]["jsonPatch"].update(expression='[JSONPatch{op: "add", pth: "/x"}]'),
     "spec.mutations[0].jsonPatch.expression", "undefined field 'pth'"),
    (lambda s: s["mutations"][0].update(patchType="ApplyConfiguration", jsonPatch=None,
                                        applyConfiguration={"expression": "Object{}"}),
     "spec.mutations[0].patchType", "the lwsconf sim supports only JSONPatch mutations"),
    (lambda s: s.update(mutations=[]), "spec.mutations", "mutations must contain at least one item"),
    (lambda s: s.pop("reinvocationPolicy"), "spec.reinvocationPolicy", "Required value"),
    (lambda s: s.update(reinvocationPolicy="Always"), "spec.reinvocationPolicy", 'Unsupported value: "Always"'),
    (lambda s: s["matchConstraints"]["resourceRules"][0].update(operations=["DELETE"]),
     "spec.matchConstraints.resourceRules.operations", 'Unsupported value: "DELETE"'),
    (lambda s: s.update(matchConditions=[{"name": "c", "expression": "object.data"}]),
     "spec.matchConditions[0].expression", "must evaluate to bool"),
], ids=["syntax", "dyn-result", "list-of-int", "unknown-field", "apply-configuration", "no-mutations",
        "no-reinvocation-policy", "bad-reinvocation-policy", "delete", "condition-type"])
def test_policy_that_cannot_run_is_refused(pol: Mutating, edit: Any, field: str, words: str) -> None:
    body = mutating("broken", SET_OWNER)
    edit(body["spec"])
    reply = pol.post(MAPS, body)
    assert reply.status_code == 422, describe(reply)
    causes = {c["field"]: c["message"] for c in reply.json()["details"]["causes"]}
    assert words in causes.get(field, ""), causes


def test_binding_matching_deletes_is_refused(pol: Mutating) -> None:
    reply = pol.post(MAP_BINDINGS, mbinding("b", "p", matchResources={"resourceRules": [rule(operations=("DELETE",))]}))
    assert reply.status_code == 422, describe(reply)
    assert "spec.matchResources.resourceRules.operations" in reply.text, describe(reply)


# ---- enforcement ----


def test_create_is_mutated_and_stored_mutated(pol: Mutating) -> None:
    pol.install_mutating(mutating("owner", SET_OWNER))
    assert pol.created(configmap("cm", {"a": "1"}))["data"] == {"a": "1", "owner": "mutated"}
    stored = pol.sim.request("GET", f"{CMS}/cm").json()
    assert stored["data"]["owner"] == "mutated", stored


def test_policy_without_binding_does_nothing(pol: Mutating) -> None:
    assert pol.post(MAPS, mutating("unbound", SET_OWNER)).status_code == 201
    assert pol.created(configmap("cm", {"a": "1"}))["data"] == {"a": "1"}


def test_mutations_run_in_order_each_seeing_the_previous_result(pol: Mutating) -> None:
    first = '[JSONPatch{op: "add", path: "/data/n", value: "1"}]'
    second = '[JSONPatch{op: "replace", path: "/data/n", value: object.data.n + "2"}]'
    pol.install_mutating(mutating("b-order", second))
    pol.install_mutating(mutating("a-order", first, second))
    assert pol.created(configmap("cm"))["data"] == {"n": "122"}


def test_match_conditions_object_selector_and_variables_narrow_and_feed(pol: Mutating) -> None:
    body = mutating("narrow", '[JSONPatch{op: "add", path: "/data/owner", value: variables.owner}]',
                    match={"objectSelector": {"matchLabels": {"mutate": "yes"}}},
                    matchConditions=[{"name": "has-team", "expression": "'team' in object.data"}],
                    variables=[{"name": "owner", "expression": "object.data.team + '-owner'"}])
    pol.install_mutating(body)
    assert pol.created(configmap("labelled", {"team": "t"}, {"mutate": "yes"}))["data"]["owner"] == "t-owner"
    assert "owner" not in pol.created(configmap("no-team", {}, {"mutate": "yes"}))["data"]
    assert "owner" not in pol.created(configmap("no-label", {"team": "t"}))["data"]


def test_update_sees_the_old_object(pol: Mutating) -> None:
    expression = ('oldObject == null ? [] : '
                  '[JSONPatch{op: "add", path: "/data/previous", value: oldObject.data.v}]')
    pol.install_mutating(mutating("previous", expression))
    assert "previous" not in pol.created(configmap("cm", {"v": "1"}))["data"]
    reply = pol.put_cm(configmap("cm", {"v": "2"}))
    assert reply.status_code == 200, describe(reply)
    assert reply.json()["data"] == {"v": "2", "previous": "1"}, reply.json()


def test_escape_key_and_structured_values(pol: Mutating) -> None:
    expression = ('[JSONPatch{op: "add", path: "/metadata/labels", value: {}}, '
                  'JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), '
                  'value: "a"}]')
    pol.install_mutating(mutating("labels", expression))
    assert pol.created(configmap("cm"))["metadata"]["labels"] == {"example.com/team": "a"}


def test_failing_test_operation_leaves_the_object_unchanged(pol: Mutating) -> None:
    expression = ('[JSONPatch{op: "test", path: "/data/a", value: "other"}, '
                  'JSONPatch{op: "add", path: "/data/owner", value: "x"}]')
    pol.install_mutating(mutating("guarded", expression))
    assert pol.created(configmap("cm", {"a": "1"}))["data"] == {"a": "1"}


@pytest.mark.parametrize("expression, words", [
    ('[JSONPatch{op: "add", path: "/data/x", value: object.data.missing}]',
     "resulted in error: no such key: missing"),
    ('[JSONPatch{op: "remove", path: "/data/missing"}]', "JSON Patch: "),
], ids=["evaluation-error", "patch-does-not-apply"])
def test_errors_deny_under_fail_and_are_ignored_under_ignore(pol: Mutating, expression: str, words: str) -> None:
    pol.install_mutating(mutating("strict", expression))
    reply = pol.create_cm(configmap("denied", {"a": "1"}))
    assert reply.status_code == 403, describe(reply)
    status = reply.json()
    assert status["message"].startswith("policy 'strict' with binding 'strict' denied request: "), status
    assert words in status["message"] and status["reason"] == "Invalid", status
    assert status["details"]["causes"] == [{"message": status["message"]}], status
    lenient = mutating("lenient", expression, failurePolicy="Ignore")
    lenient["spec"]["matchConstraints"]["objectSelector"] = {"matchLabels": {"lenient": "yes"}}
    pol.sim.request("DELETE", f"{MAP_BINDINGS}/strict")
    pol.install_mutating(lenient)
    assert pol.created(configmap("admitted", {"a": "1"}, {"lenient": "yes"}))["data"] == {"a": "1"}


def test_unserved_param_kind_is_a_configuration_error(pol: Mutating) -> None:
    body = mutating("params", SET_OWNER, paramKind={"apiVersion": "example.com/v1", "kind": "Nope"})
    pol.install_mutating(body, mbinding("params", "params", paramRef={"name": "p", "parameterNotFoundAction": "Allow"}))
    reply = pol.create_cm(configmap("cm"))
    assert reply.status_code == 403 and reply.json()["reason"] == "Forbidden", describe(reply)
    assert "failed to configure policy: failed to find resource referenced by paramKind" in reply.text, describe(reply)


def test_params_reach_the_mutation(pol: Mutating) -> None:
    assert pol.create_cm(configmap("settings", {"owner": "from-params"})).status_code == 201
    body = mutating("params", '[JSONPatch{op: "add", path: "/data/owner", value: params.data.owner}]',
                    paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                    match={"objectSelector": {"matchLabels": {"mutate": "yes"}}})
    pol.install_mutating(body, mbinding("params", "params", paramRef={
        "name": "settings", "namespace": "default", "parameterNotFoundAction": "Deny"}))
    assert pol.created(configmap("cm", {}, {"mutate": "yes"}))["data"] == {"owner": "from-params"}


# ---- place in the admission chain ----


def test_mutation_runs_before_validation(pol: Mutating) -> None:
    fix = '[JSONPatch{op: "replace", path: "/metadata/labels/tier", value: "valid"}]'
    break_it = '[JSONPatch{op: "add", path: "/data/not a key", value: "x"}]'
    pol.install_mutating(mutating("fix", fix, match={"objectSelector": {"matchLabels": {"fix": "yes"}}}))
    pol.install_mutating(mutating("break", break_it, match={"objectSelector": {"matchLabels": {"break": "yes"}}}))
    fixed = pol.created(configmap("fixed", {}, {"fix": "yes", "tier": "not valid!"}))
    assert fixed["metadata"]["labels"]["tier"] == "valid", fixed
    broken = pol.create_cm(configmap("broken", {}, {"break": "yes"}))
    assert broken.status_code == 422 and broken.json()["reason"] == "Invalid", describe(broken)
    assert "data[not a key]" in broken.text, describe(broken)


def test_validating_policies_see_the_mutated_object(pol: Mutating) -> None:
    pol.install(policy("owner-required", check("'owner' in object.data", "data.owner is required")))
    assert pol.create_cm(configmap("plain")).status_code == 422
    pol.install_mutating(mutating("owner", SET_OWNER))
    assert pol.created(configmap("mutated"))["data"]["owner"] == "mutated"


def test_patched_pods_are_defaulted_again(pol: Mutating) -> None:
    expression = '[JSONPatch{op: "add", path: "/spec/containers/-", value: {"name": "side", "image": "busybox"}}]'
    pol.install_mutating(mutating("sidecar", expression, rules=[rule("pods", operations=("CREATE",))]))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    reply = pol.post("/api/v1/namespaces/default/pods", pod)
    assert reply.status_code == 201, describe(reply)
    side = reply.json()["spec"]["containers"][1]
    assert side["name"] == "side" and side["terminationMessagePolicy"] == "File", side


@pytest.mark.parametrize("reinvocation, copied", [("IfNeeded", {"copy": "set-later"}), ("Never", {})])
def test_if_needed_policies_see_later_mutations(pol: Mutating, reinvocation: str, copied: dict[str, str]) -> None:
    copy = "'later' in object.data ? [JSONPatch{op: \"add\", path: \"/data/copy\", value: object.data.later}] : []"
    pol.install_mutating(mutating("a-copy", copy, reinvocationPolicy=reinvocation))
    pol.install_mutating(mutating("b-set", '[JSONPatch{op: "add", path: "/data/later", value: "set-later"}]'))
    assert pol.created(configmap("cm"))["data"] == {"later": "set-later", **copied}


def test_policy_on_an_equivalent_resource_mutates_the_request_in_its_own_form(pol: Mutating) -> None:
    note = '[JSONPatch{op: "add", path: "/note", value: "seen as " + object.apiVersion}]'
    pol.install_mutating(mutating("note", note, rules=[rule("events", groups=("events.k8s.io",),
                                                              operations=("CREATE",))]))
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "R", "message": "sent",
             "type": "Normal", "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}
    reply = pol.post("/api/v1/namespaces/default/events", event)
    assert reply.status_code == 201, describe(reply)
    assert reply.json()["message"] == "seen as events.k8s.io/v1", reply.json()  # core `message` is `note` there
