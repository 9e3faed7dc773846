"""ValidatingAdmissionPolicy and its binding on the sim API server: served, validated, enforced on writes.

Expected texts and codes are kube-apiserver's (`policy/validating/dispatcher.go`, `validator.go`): a Deny
answers `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy 'P' with binding 'B' denied request:
<message>` with the validation's reason (Invalid 422 by default) and one cause holding the message.
"""

from __future__ import annotations

import pytest

from tests.conftest import SimAPI
from tests.sim.apiserver.policies.policy_helpers import (
    ADMISSION,
    BINDINGS,
    POLICIES,
    Policies,
    binding,
    check,
    configmap,
    describe,
    policy,
    rule,
)

HAS_OWNER = check("has(object.data) && 'owner' in object.data", "data.owner is required")


@pytest.fixture
def pol(sim_api: SimAPI) -> Policies:
    return Policies(sim_api)


# ---- the API objects ----


def test_both_types_are_discovered_as_cluster_scoped_with_policy_status(pol: Policies) -> None:
    listed = {r["name"]: r for r in pol.sim.request("GET", ADMISSION).json()["resources"]}
    assert listed["validatingadmissionpolicies"]["namespaced"] is False, listed
    assert listed["validatingadmissionpolicybindings"]["kind"] == "ValidatingAdmissionPolicyBinding", listed
    assert "validatingadmissionpolicies/status" in listed, sorted(listed)


def test_policy_is_defaulted_and_given_a_status(pol: Policies) -> None:
    pol.install(policy("defaults", HAS_OWNER))
    stored = pol.sim.request("GET", f"{POLICIES}/defaults").json()
    spec = stored["spec"]
    assert spec["failurePolicy"] == "Fail", spec
    assert {k: spec["matchConstraints"][k] for k in ("matchPolicy", "namespaceSelector", "objectSelector")} == {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}, spec
    assert spec["matchConstraints"]["resourceRules"][0]["scope"] == "*", spec
    assert stored["status"] == {"observedGeneration": 1, "typeChecking": {}}, stored


@pytest.mark.parametrize("validation, field, words", [
    (check("object.data.x +"), "spec.validations[0].expression",
     "compilation failed: ERROR: <input>:1:16: Syntax error"),
    (check("object.data"), "spec.validations[0].expression", "must evaluate to bool but got dyn"),
    (check("'a' + 1 == 'b'"), "spec.validations[0].expression", "found no matching overload for '_+_'"),
    (check("authorizer.group('').check('get')"), "spec.validations[0].expression", "undeclared reference"),
    (check("params.x == 1"), "spec.validations[0].expression", "undeclared reference to 'params"),
    (check("true", messageExpression="1 + 1"), "spec.validations[0].messageExpression",
     "must evaluate to string but got int"),
    (check("true", reason="Conflict"), "spec.validations[0].reason", 'Unsupported value: "Conflict"'),
], ids=["syntax", "dyn-result", "type-error", "authorizer", "params-without-paramKind", "message-expression",
        "reason"])
def test_policy_that_does_not_compile_is_refused(pol: Policies, validation: dict[str, str], field: str,
                                                 words: str) -> None:
    reply = pol.post(POLICIES, policy("broken", validation))
    assert reply.status_code == 422, describe(reply)
    causes = {c["field"]: c["message"] for c in reply.json()["details"]["causes"]}
    assert words in causes.get(field, ""), causes


def test_policy_without_rules_or_validations_is_refused(pol: Policies) -> None:
    body = policy("empty")
    body["spec"]["matchConstraints"] = {}
    reply = pol.post(POLICIES, body)
    assert reply.status_code == 422, describe(reply)
    fields = {c["field"] for c in reply.json()["details"]["causes"]}
    assert {"spec.matchConstraints.resourceRules", "spec.validations"} <= fields, reply.json()


@pytest.mark.parametrize("actions, words", [
    # kube-apiserver 1.37.2 says only "Required value" (lwsconf fidelity policies/policy-validating/binding-no-actions)
    ((), "spec.validationActions: Required value"), (("Deny", "Warn"), "must not contain both Deny and Warn"),
    (("Block",), 'Unsupported value: "Block"'),
])
def test_binding_with_bad_actions_is_refused(pol: Policies, actions: tuple[str, ...], words: str) -> None:
    body = binding("b", "p", *actions)
    body["spec"]["validationActions"] = list(actions)
    reply = pol.post(BINDINGS, body)
    assert reply.status_code == 422 and words in reply.json()["message"], describe(reply)


def test_requests_on_the_policy_types_themselves_are_exempt(pol: Policies) -> None:
    everything = rule("*", operations=("*",), groups=("*",), versions=("*",))
    pol.install(policy("deny-all", check("false", "nothing passes"), rules=[everything]))
    reply = pol.post(POLICIES, policy("second", HAS_OWNER))
    assert reply.status_code == 201, describe(reply)
    assert pol.create_cm(configmap("c")).status_code == 422


# ---- enforcement on a built-in kind ----


def test_deny_binding_rejects_a_configmap_with_the_kubernetes_status(pol: Policies) -> None:
    pol.install(policy("need-owner", HAS_OWNER))
    reply = pol.create_cm(configmap("no-owner"))
    assert reply.status_code == 422, describe(reply)
    cause = "ValidatingAdmissionPolicy 'need-owner' with binding 'need-owner' denied request: data.owner is required"
    assert reply.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Invalid", "code": 422,
        "message": f'configmaps "no-owner" is forbidden: {cause}',
        "details": {"name": "no-owner", "kind": "configmaps", "causes": [{"message": cause}]}}, reply.json()
    assert pol.create_cm(configmap("owned", {"owner": "me"})).status_code == 201
    assert pol.sim.request("GET", "/api/v1/namespaces/default/configmaps/no-owner").status_code == 404


def test_reason_chooses_the_status_code(pol: Policies) -> None:
    pol.install(policy("forbid", check("false", "no", reason="Forbidden")))
    reply = pol.create_cm(configmap("c"))
    assert (reply.status_code, reply.json()["reason"]) == (403, "Forbidden"), describe(reply)


def test_warn_binding_admits_with_a_warning_header_and_audit_is_silent(pol: Policies) -> None:
    pol.install(policy("need-owner", HAS_OWNER), binding("warn-only", "need-owner", "Warn"),
                binding("audit-only", "need-owner", "Audit"))
    reply = pol.create_cm(configmap("c"))
    assert reply.status_code == 201, describe(reply)
    assert reply.headers.get("Warning") == ('299 - "Validation failed for ValidatingAdmissionPolicy \'need-owner\' '
                                            'with binding \'warn-only\': data.owner is required"'), reply.headers


def test_policy_without_binding_and_binding_without_policy_do_nothing(pol: Policies) -> None:
    assert pol.post(POLICIES, policy("unbound", HAS_OWNER)).status_code == 201
    assert pol.post(BINDINGS, binding("dangling", "no-such-policy")).status_code == 201
    assert pol.create_cm(configmap("c")).status_code == 201


def test_message_expression_wins_over_message_unless_it_is_empty(pol: Policies) -> None:
    pol.install(policy("msgs",
                       check("object.metadata.name != 'a'", "static a",
                             messageExpression="'name ' + object.metadata.name + ' is taken'"),
                       check("object.metadata.name != 'b'", "static b", messageExpression="'  '"),
                       check("object.metadata.name != 'c'")))
    assert pol.denial(pol.create_cm(configmap("a"))).endswith("denied request: name a is taken")
    assert pol.denial(pol.create_cm(configmap("b"))).endswith("denied request: static b")
    assert pol.denial(pol.create_cm(configmap("c"))).endswith(
        "denied request: failed expression: object.metadata.name != 'c'")


def test_old_object_is_null_on_create_and_the_stored_object_on_update(pol: Policies) -> None:
    immutable = check("oldObject == null || object.data.tier == oldObject.data.tier", "data.tier is immutable")
    pol.install(policy("tier", immutable, check("oldObject != null || object.data.tier != 'gold'", "no new gold")))
    assert pol.denial(pol.create_cm(configmap("g", {"tier": "gold"}))).endswith("no new gold")
    assert pol.create_cm(configmap("s", {"tier": "silver"})).status_code == 201
    reply = pol.put_cm(configmap("s", {"tier": "gold"}))
    assert pol.denial(reply).endswith("data.tier is immutable"), describe(reply)
    assert pol.put_cm(configmap("s", {"tier": "silver", "more": "x"})).status_code == 200


def test_request_describes_the_operation(pol: Policies) -> None:
    expected = ("request.operation == 'CREATE' && request.namespace == 'default' && request.name == 'r' && "
                "request.kind.kind == 'ConfigMap' && request.resource.resource == 'configmaps' && "
                "request.userInfo.username == 'system:admin' && request.dryRun == true")
    pol.install(policy("req", check(expected, "request is not as expected")))
    assert pol.create_cm(configmap("r"), dryRun="All").status_code == 201
    assert pol.create_cm(configmap("r")).status_code == 422


def test_variables_feed_validations_and_their_errors_reach_readers(pol: Policies) -> None:
    pol.install(policy("vars", check("variables.tier in ['gold', 'silver']", "bad tier"),
                       variables=[{"name": "tier", "expression": "object.data.tier"}]))
    assert pol.create_cm(configmap("ok", {"tier": "gold"})).status_code == 201
    assert pol.denial(pol.create_cm(configmap("bad", {"tier": "lead"}))).endswith("bad tier")
    reply = pol.create_cm(configmap("none", {"other": "x"}))
    assert pol.denial(reply).endswith(
        "denied request: expression 'variables.tier in ['gold', 'silver']' resulted in error: "
        'composited variable "tier" fails to evaluate: no such key: tier'), describe(reply)


@pytest.mark.parametrize("failure_policy, code", [("Fail", 422), ("Ignore", 201)])
def test_evaluation_errors_follow_the_failure_policy(pol: Policies, failure_policy: str, code: int) -> None:
    pol.install(policy("strict", check("object.data.required == 'yes'"), failurePolicy=failure_policy))
    reply = pol.create_cm(configmap("c"))
    assert reply.status_code == code, describe(reply)
    if code == 422:
        assert pol.denial(reply).endswith(
            "denied request: expression 'object.data.required == 'yes'' resulted in error: no such key: required")


def test_match_conditions_narrow_the_policy(pol: Policies) -> None:
    pol.install(policy("only-managed", HAS_OWNER, matchConditions=[
        {"name": "managed", "expression": "has(object.metadata.labels) && 'managed' in object.metadata.labels"}]))
    assert pol.create_cm(configmap("free")).status_code == 201
    assert pol.create_cm(configmap("managed", labels={"managed": "yes"})).status_code == 422


def test_delete_sees_the_old_object_and_a_null_object(pol: Policies) -> None:
    keep = check("object == null && !('keep' in oldObject.metadata.labels)", "this ConfigMap is kept")
    pol.install(policy("keep", keep, rules=[rule(operations=("DELETE",))]))
    for name, labels in (("kept", {"keep": "yes"}), ("gone", {"other": "x"})):
        assert pol.create_cm(configmap(name, labels=labels)).status_code == 201
    path = "/api/v1/namespaces/default/configmaps"
    assert pol.denial(pol.sim.request("DELETE", f"{path}/kept")).endswith("this ConfigMap is kept")
    assert pol.sim.request("DELETE", f"{path}/gone").status_code == 200
    assert pol.sim.request("DELETE", path).status_code == 422  # deletecollection checks each item
    assert pol.sim.request("GET", f"{path}/kept").status_code == 200
