"""Pure tests of policy rule matching (`admission_policy_match`) and the policy/binding table columns.

Resource patterns follow kube-apiserver's `webhook/predicates/rules/rules.go`: `R` is the main resource only,
`R/S` one subresource, `R/*` R and all its subresources (`subMatch := sub == "*" || sub == opSub`, so the main
resource too, although the API docs say "all subresources"), `*/S` subresource S of all resources, `*/*` everything.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest, constraints_match, rule_matches
from lwsconf.sim.apiserver.storage import resources
from lwsconf.sim.apiserver.tables import tables


def req(resource: str = "statefulsets", sub: str = "", *, group: str = "apps", namespace: str = "default",
        operation: str = "UPDATE", name: str = "web") -> PolicyRequest:
    return PolicyRequest(operation, group, "v1", resource, "StatefulSet", sub, name, namespace, {}, None)


def rule(*resources_: str, **extra: Any) -> dict[str, Any]:
    return {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": list(resources_), **extra}


@pytest.mark.parametrize("pattern, sub, matches", [
    ("statefulsets", "", True), ("statefulsets", "scale", False), ("statefulsets/scale", "scale", True),
    ("statefulsets/scale", "status", False), ("statefulsets/*", "status", True), ("statefulsets/*", "", True),
    ("*/scale", "scale", True), ("*", "", True), ("*", "scale", False), ("*/*", "status", True),
    ("*/*", "", True), ("deployments", "", False),
])
def test_resource_patterns(pattern: str, sub: str, matches: bool) -> None:
    assert rule_matches(rule(pattern), req(sub=sub)) is matches


@pytest.mark.parametrize("scope, resource, namespace, matches", [
    ("Namespaced", "statefulsets", "default", True), ("Namespaced", "namespaces", "team", False),
    ("Cluster", "nodes", "", True), ("Cluster", "namespaces", "team", True), ("Cluster", "statefulsets", "ns", False),
    ("*", "statefulsets", "ns", True),
])
def test_scope(scope: str, resource: str, namespace: str, matches: bool) -> None:
    group = "apps" if resource == "statefulsets" else ""
    assert rule_matches(rule(resource, scope=scope), req(resource, group=group, namespace=namespace)) is matches


def test_operations_groups_versions_and_names_must_all_match() -> None:
    base = rule("statefulsets", resourceNames=["web"])
    assert rule_matches(base, req())
    assert not rule_matches({**base, "operations": ["CREATE"]}, req())
    assert not rule_matches({**base, "apiGroups": [""]}, req())
    assert not rule_matches({**base, "apiVersions": ["v2"]}, req())
    assert not rule_matches(base, req(name="db"))


def test_exclusions_win_and_exact_ignores_equivalents() -> None:
    asked = req("deployments")
    equivalent = dataclasses.replace(asked, group="extensions", version="v1beta1", original=asked)
    legacy = {"resourceRules": [{**rule("deployments"), "apiGroups": ["extensions"]}]}
    assert constraints_match(legacy, [asked, equivalent], dict) is equivalent
    assert constraints_match({**legacy, "matchPolicy": "Exact"}, [asked, equivalent], dict) is None
    assert constraints_match({**legacy, "excludeResourceRules": [rule("*")]}, [asked, equivalent], dict) is None
    assert constraints_match({}, [asked], dict, binding=True) is asked


def test_selectors_use_namespace_labels_and_either_object() -> None:
    labelled = dataclasses.replace(req(), obj=None, old={"metadata": {"labels": {"tier": "gold"}}}, operation="DELETE")
    gold = {"matchLabels": {"tier": "gold"}}
    match = {"resourceRules": [rule("*")], "objectSelector": gold}
    assert constraints_match(match, [labelled], dict) is labelled
    assert constraints_match({**match, "objectSelector": {"matchLabels": {"tier": "lead"}}}, [labelled], dict) is None
    by_ns = {"resourceRules": [rule("*")], "namespaceSelector": gold}
    assert constraints_match(by_ns, [labelled], lambda: {"tier": "gold"}) is labelled
    assert constraints_match(by_ns, [labelled], dict) is None
    cluster_scoped = dataclasses.replace(labelled, resource="nodes", group="", namespace="")
    assert constraints_match(by_ns, [cluster_scoped], dict) is cluster_scoped  # never exempted by namespace


def test_table_columns_show_param_kind_and_param_ref() -> None:
    registry = resources.Registry()
    policy_info = registry.lookup("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
    binding_info = registry.lookup("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings")
    assert policy_info is not None and binding_info is not None
    policy = {"metadata": {"name": "p"}, "spec": {"validations": [{}, {}], "paramKind": {"apiVersion": "v1",
                                                                                          "kind": "ConfigMap"}}}
    binding = {"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": {"name": "limits"}}}
    assert tables.to_table(policy_info, [policy], list_meta={})["rows"][0]["cells"][:3] == ["p", 2, "v1/ConfigMap"]
    assert tables.to_table(binding_info, [binding], list_meta={})["rows"][0]["cells"][:3] == ["b", "p", "*/limits"]
