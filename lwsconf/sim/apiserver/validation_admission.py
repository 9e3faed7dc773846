"""Defaults and validation of ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding objects.

Defaults follow kubernetes/kubernetes `pkg/apis/admissionregistration/v1/defaults.go`
(`failurePolicy: Fail`; in every MatchResources `matchPolicy: Equivalent` and empty namespace/object
selectors; every rule's `scope: "*"`). Validation follows `validateValidatingAdmissionPolicySpec` and
`validateValidatingAdmissionPolicyBindingSpec` in `pkg/apis/admissionregistration/validation/
validation.go`: required fields, enums, rule shapes, label selectors, CEL identifiers of variables, and
every expression compiling (`admission_policy.compile_policy`), so a policy whose CEL does not compile
is refused with 422 as on a real server. Not checked: the wildcard/subresource combinations of
`resources`, the 64-item and length limits, and `auditAnnotations` keys. No I/O here.
"""

from __future__ import annotations

import re
from typing import Any

from lwsconf.sim.apiserver import admission_policy, errors
from lwsconf.sim.apiserver import validation_fields as f
from lwsconf.sim.apiserver import validation_meta as meta
from lwsconf.sim.apiserver import validation_names as names

FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
VALIDATION_ACTIONS = ("Audit", "Deny", "Warn")
NOT_FOUND_ACTIONS = ("Allow", "Deny")
_CEL_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"})


# ---- defaults ----


def _default_match_resources(value: Any) -> None:
    if not isinstance(value, dict):
        return
    value.setdefault("matchPolicy", "Equivalent")
    value.setdefault("namespaceSelector", {})
    value.setdefault("objectSelector", {})
    for field in ("resourceRules", "excludeResourceRules"):
        for _, rule in f.dicts(value.get(field)):
            rule.setdefault("scope", "*")


def default_policy(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("failurePolicy", "Fail")
        _default_match_resources(spec.get("matchConstraints"))


def default_binding(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _default_match_resources(spec.get("matchResources"))


# ---- validation ----


def validate_policy(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateValidatingAdmissionPolicy`, CEL compilation included."""
    spec = f.as_dict(obj.get("spec"))
    causes = f.enum("spec.failurePolicy", spec.get("failurePolicy"), FAILURE_POLICIES)
    if spec.get("paramKind") is not None:
        kind = f.as_dict(spec.get("paramKind"))
        for key in ("apiVersion", "kind"):
            if not f.as_str(kind.get(key)):
                causes.append(f.required(f"spec.paramKind.{key}"))
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, dict):
        causes.append(f.required("spec.matchConstraints"))
    else:
        causes += _match_resources(constraints, "spec.matchConstraints")
        if not f.as_list(constraints.get("resourceRules")):
            causes.append(f.required("spec.matchConstraints.resourceRules"))
    causes += _named(spec.get("matchConditions"), "spec.matchConditions", qualified=True)
    causes += _named(spec.get("variables"), "spec.variables", qualified=False)
    if not f.as_list(spec.get("validations")) and not f.as_list(spec.get("auditAnnotations")):
        detail = "validations or auditAnnotations must contain at least one item"
        causes += [f.required("spec.validations", detail), f.required("spec.auditAnnotations", detail)]
    for i, item in f.dicts(spec.get("validations")):
        causes += _validation(item, f.index("spec.validations", i))
    return causes + list(admission_policy.compile_policy(obj).problems)


def _validation(item: dict[str, Any], path: str) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    if not f.as_str(item.get("expression")).strip():
        causes.append(f.required(f.child(path, "expression"), "expression is not specified"))
    message = f.as_str(item.get("message"))
    if message and not message.strip():
        causes.append(f.invalid(f.child(path, "message"), message, "message must be non-empty if specified"))
    elif re.search(r"[\n\r]", message.strip()):
        causes.append(f.invalid(f.child(path, "message"), message, "message must not contain line breaks"))
    expression = f.as_str(item.get("messageExpression"))
    if expression and not expression.strip():
        causes.append(f.invalid(f.child(path, "messageExpression"), expression, "must be non-empty if specified"))
    if item.get("reason") is not None and item.get("reason") not in admission_policy.REASONS:
        causes.append(f.not_supported(f.child(path, "reason"), item.get("reason"), admission_policy.REASONS))
    return causes


def _named(items: Any, path: str, *, qualified: bool) -> list[errors.Cause]:
    """matchConditions (qualified names, unique) or variables (CEL identifiers), each with an expression."""
    causes: list[errors.Cause] = []
    seen: set[str] = set()
    for i, item in f.dicts(items):
        at, name = f.index(path, i), f.as_str(item.get("name"))
        if not f.as_str(item.get("expression")).strip():
            causes.append(f.required(f.child(at, "expression"), "" if qualified else "expression is not specified"))
        if not name.strip():
            causes.append(f.required(f.child(at, "name"), "" if qualified else "name is not specified"))
        elif qualified:
            causes += f.invalid_each(f.child(at, "name"), name, names.qualified_name(name))
            if name in seen:
                causes.append(f.duplicate(f.child(at, "name"), name))
        elif not _CEL_IDENTIFIER.fullmatch(name) or name in _CEL_RESERVED:
            causes.append(f.invalid(f.child(at, "name"), name, "name is not a valid CEL identifier"))
        seen.add(name)
    return causes


def _match_resources(value: dict[str, Any], path: str) -> list[errors.Cause]:
    causes = f.enum(f.child(path, "matchPolicy"), value.get("matchPolicy"), MATCH_POLICIES)
    for selector in ("namespaceSelector", "objectSelector"):
        if value.get(selector) is None:
            causes.append(f.required(f.child(path, selector)))
        else:
            causes += meta.validate_label_selector(value.get(selector), f.child(path, selector))
    for field in ("resourceRules", "excludeResourceRules"):
        for i, rule in f.dicts(value.get(field)):
            causes += _rule(rule, f.index(f.child(path, field), i))
    return causes


def _rule(rule: dict[str, Any], path: str) -> list[errors.Cause]:
    """`validateRuleWithOperations`: operations, groups, versions, resources, scope."""
    causes: list[errors.Cause] = []
    operations = f.as_list(rule.get("operations"))
    if not operations:
        causes.append(f.required(f.child(path, "operations")))
    if len(operations) > 1 and "*" in operations:
        causes.append(f.invalid(f.child(path, "operations"), operations,
                                "if '*' is present, must not specify other operations"))
    for i, op in enumerate(operations):
        if op not in OPERATIONS:
            causes.append(f.not_supported(f.index(f.child(path, "operations"), i), op, OPERATIONS))
    for field, what in (("apiGroups", "API groups"), ("apiVersions", "API versions"), ("resources", "resources")):
        values = f.as_list(rule.get(field))
        if not values:
            causes.append(f.required(f.child(path, field)))
        elif len(values) > 1 and "*" in values:
            causes.append(f.invalid(f.child(path, field), values, f"if '*' is present, must not specify other {what}"))
    if rule.get("scope") is not None and rule.get("scope") not in SCOPES:
        causes.append(f.not_supported(f.child(path, "scope"), rule.get("scope"), SCOPES))
    return causes


def validate_binding(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateValidatingAdmissionPolicyBinding`."""
    spec = f.as_dict(obj.get("spec"))
    policy = f.as_str(spec.get("policyName"))
    causes = ([f.required("spec.policyName")] if not policy
              else f.invalid_each("spec.policyName", policy, names.dns1123_subdomain(policy)))
    if isinstance(spec.get("paramRef"), dict):
        causes += _param_ref(spec["paramRef"], "spec.paramRef")
    if isinstance(spec.get("matchResources"), dict):
        causes += _match_resources(spec["matchResources"], "spec.matchResources")
    actions = f.as_list(spec.get("validationActions"))
    for i, action in enumerate(actions):
        if action not in VALIDATION_ACTIONS:
            causes.append(f.not_supported(f.index("spec.validationActions", i), action, VALIDATION_ACTIONS))
        if action in actions[:i]:
            causes.append(f.duplicate(f.index("spec.validationActions", i), action))
    if "Deny" in actions and "Warn" in actions:
        causes.append(f.invalid("spec.validationActions", actions, "must not contain both Deny and Warn (repeating "
                                "the same validation failure information in the API response and headers serves "
                                "no purpose)"))
    if not actions:
        causes.append(f.required("spec.validationActions", "at least one validation action is required"))
    return causes


def _param_ref(ref: dict[str, Any], path: str) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    has_name, has_selector = bool(f.as_str(ref.get("name"))), ref.get("selector") is not None
    if has_name and has_selector:
        causes.append(f.forbidden(f.child(path, "name"), "name and selector are mutually exclusive"))
    if has_selector:
        causes += meta.validate_label_selector(ref.get("selector"), f.child(path, "selector"))
    if not has_name and not has_selector:
        causes.append(f.required(path, "one of name or selector must be specified"))
    causes += f.enum(f.child(path, "parameterNotFoundAction"), ref.get("parameterNotFoundAction"), NOT_FOUND_ACTIONS)
    return causes
