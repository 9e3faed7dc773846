"""Defaults and validation of the admission policy types: Validating- and MutatingAdmissionPolicy and their bindings.

Defaults follow kubernetes/kubernetes `pkg/apis/admissionregistration/v1/defaults.go`
(`failurePolicy: Fail`; in every MatchResources `matchPolicy: Equivalent` and empty namespace/object
selectors; every rule's `scope: "*"`). A MutatingAdmissionPolicy's `reinvocationPolicy` has no default:
it is required, as in kube-apiserver. Validation follows `validateValidatingAdmissionPolicySpec`,
`validateMutatingAdmissionPolicySpec` and their bindings' in `pkg/apis/admissionregistration/validation/
validation.go`: required fields, enums, rule shapes, label selectors, CEL identifiers of variables, the
operations a mutating policy may match (`*`, CONNECT, CREATE, UPDATE: a DELETE has no object to
mutate), the `patchType` union, and every expression compiling (`admission_policy.compile_policy`,
`mutating_policy.compile_policy`), so a policy whose CEL does not compile is refused with 422 as on a
real server. One departure: a mutation with `patchType: ApplyConfiguration` is refused, because the sim
can only run JSONPatch mutations (see `mutating_policy`). Not checked: the wildcard/subresource
combinations of `resources`, the 64-item and length limits, and `auditAnnotations` keys. No I/O here.
"""

from __future__ import annotations

import re
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, meta, names
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.policies import admission_policy, mutating_policy

FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
VALIDATION_ACTIONS = ("Audit", "Deny", "Warn")
NOT_FOUND_ACTIONS = ("Allow", "Deny")
MUTATING_OPERATIONS = ("*", "CONNECT", "CREATE", "UPDATE")
"""`supportedMutatingOperations`: a DELETE has no object to mutate."""
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
    causes = _policy_spec(spec)
    if not f.as_list(spec.get("validations")) and not f.as_list(spec.get("auditAnnotations")):
        detail = "validations or auditAnnotations must contain at least one item"
        causes += [f.required("spec.validations", detail), f.required("spec.auditAnnotations", detail)]
    for i, item in f.dicts(spec.get("validations")):
        causes += _validation(item, f.index("spec.validations", i))
    return causes + list(admission_policy.compile_policy(obj).problems)


def validate_mutating_policy(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateMutatingAdmissionPolicy`, CEL compilation included; ApplyConfiguration refused (sim only)."""
    spec = f.as_dict(obj.get("spec"))
    causes = _policy_spec(spec)
    if isinstance(spec.get("matchConstraints"), dict):
        causes += _mutable_operations(spec["matchConstraints"], "spec.matchConstraints")
    if not f.as_list(spec.get("mutations")):
        causes.append(f.required("spec.mutations", "mutations must contain at least one item"))
    for i, item in f.dicts(spec.get("mutations")):
        causes += _mutation(item, f.index("spec.mutations", i))
    causes += f.enum("spec.reinvocationPolicy", spec.get("reinvocationPolicy"), mutating_policy.REINVOCATION_POLICIES)
    return causes + list(mutating_policy.compile_policy(obj).problems)


def _policy_spec(spec: dict[str, Any]) -> list[errors.Cause]:
    """What both policy kinds check: failurePolicy, paramKind, matchConstraints, matchConditions, variables."""
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
    return causes


def _mutable_operations(match: dict[str, Any], path: str) -> list[errors.Cause]:
    """Every operation of every resource rule must be one a mutation applies to (the path has no index, as upstream)."""
    where = f.child(path, "resourceRules", "operations")
    return [f.not_supported(where, op, MUTATING_OPERATIONS) for _, rule in f.dicts(match.get("resourceRules"))
            for op in f.as_list(rule.get("operations")) if op not in MUTATING_OPERATIONS]


def _mutation(item: dict[str, Any], path: str) -> list[errors.Cause]:
    """`validateMutation`: the patchType union; ApplyConfiguration is refused because the sim cannot run it."""
    patch_type = item.get("patchType")
    causes = f.enum(f.child(path, "patchType"), patch_type, mutating_policy.PATCH_TYPES)
    if patch_type == mutating_policy.APPLY_CONFIGURATION:
        causes.append(f.invalid(f.child(path, "patchType"), patch_type,
                                "the lwsconf sim supports only JSONPatch mutations: write this mutation as patchType: "
                                "JSONPatch with jsonPatch.expression returning [JSONPatch{op, path, value}]"))
    elif patch_type == mutating_policy.JSON_PATCH:
        if not isinstance(item.get("jsonPatch"), dict):
            causes.append(f.required(f.child(path, "jsonPatch"), "must be specified when patchType is JSONPatch"))
        elif not f.as_str(item["jsonPatch"].get("expression")).strip():
            causes.append(f.required(f.child(path, "jsonPatch", "expression")))
        if item.get("applyConfiguration") is not None:
            causes.append(f.invalid(f.child(path, "applyConfiguration"), "{applyConfiguration}",
                                    "must not be specified when patchType is JSONPatch"))
    return causes


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
    causes = _binding_spec(spec)
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
        causes.append(f.required("spec.validationActions"))  # field.Required(..., ""): kube-apiserver 1.37.2
    return causes


def validate_mutating_binding(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateMutatingAdmissionPolicyBinding`."""
    spec = f.as_dict(obj.get("spec"))
    causes = _binding_spec(spec)
    if isinstance(spec.get("matchResources"), dict):
        causes += _mutable_operations(spec["matchResources"], "spec.matchResources")
    return causes


def _binding_spec(spec: dict[str, Any]) -> list[errors.Cause]:
    policy = f.as_str(spec.get("policyName"))
    causes = ([f.required("spec.policyName")] if not policy
              else f.invalid_each("spec.policyName", policy, names.dns1123_subdomain(policy)))
    if isinstance(spec.get("paramRef"), dict):
        causes += _param_ref(spec["paramRef"], "spec.paramRef")
    if isinstance(spec.get("matchResources"), dict):
        causes += _match_resources(spec["matchResources"], "spec.matchResources")
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


rule_causes = _rule
"""`validateRuleWithOperations`, also used for the rules of admission webhooks (`webhooks.config`)."""
named_causes = _named
"""Named CEL items (matchConditions, variables), also used for the matchConditions of admission webhooks."""
