"""Enforcing ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) on every write.

The handlers call `enforce` after defaulting, validation and the kind hooks, just before storage, as
kube-apiserver runs validating admission after the registry strategy's validation
(`registry/generic/registry/store.go`: `BeforeCreate` then `createValidation`). For each binding
(`spec.policyName` naming an existing policy) whose policy's `matchConstraints` and own
`matchResources` select the request (`admission_policy_match`), the policy is evaluated once per
parameter object (`admission_policy.evaluate`), and each failed validation goes to the binding's
`validationActions`: Deny rejects the request, Warn adds the warning
`Validation failed for ValidatingAdmissionPolicy 'P' with binding 'B': <message>`, Audit is ignored
here (the sim keeps no audit log). Configuration errors (a `paramKind` that is not served, a
missing parameter with `parameterNotFoundAction: Deny`...) deny under `failurePolicy: Fail` whatever
the actions, as `policy/validating/dispatcher.go` does. The first denial becomes the response:
`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy 'P' with binding 'B' denied request:
<message>` with the validation's reason and its code (`reasonToCode`: Invalid 422, Forbidden 403,
Unauthorized 401, RequestEntityTooLarge 413) and one cause holding the message.

`invocations` (which (policy, binding, param) evaluations a request calls for, and the configuration
errors on the way) is shared with the MutatingAdmissionPolicies of `mutating_policies`.
Requests on the policy and binding types themselves are exempt (`IsExemptAdmissionConfigurationResource`).
Compiled policies are cached per (name, resourceVersion). The object a CREATE is checked with carries
its uid, creationTimestamp and generated name, stamped before validating admission as kube-apiserver's
`BeforeCreate` does (`Storage.stamp_for_create`). Simplification: the request is always made by
`system:admin` (the sim has one bearer token). No I/O here.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from lwsconf.sim.apiserver.apimachinery import errors, objects, selectors
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.policies import admission_policy
from lwsconf.sim.apiserver.policies import admission_policy_match as match
from lwsconf.sim.apiserver.policies.admission_policy import CompiledPolicy, Decision
from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest
from lwsconf.sim.apiserver.schema import cel_ext
from lwsconf.sim.apiserver.storage import conversion, resources, store

GROUP = "admissionregistration.k8s.io"
POLICIES: store.ResourceKey = (GROUP, "validatingadmissionpolicies")
BINDINGS: store.ResourceKey = (GROUP, "validatingadmissionpolicybindings")
NAMESPACES: store.ResourceKey = ("", "namespaces")
EXEMPT_KINDS = frozenset({"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                          "MutatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
                          "MutatingWebhookConfiguration"})
USER_INFO = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}
"""Who every request to the sim is made by (its single token is the cluster admin's)."""
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_NAMESPACE_META = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers")


class Compiled(Protocol):
    """What dispatch needs of a compiled policy, validating or mutating."""

    @property
    def name(self) -> str: ...
    @property
    def failure_policy(self) -> str: ...
    @property
    def match_constraints(self) -> dict[str, Any]: ...
    @property
    def param_kind(self) -> dict[str, Any] | None: ...


P = TypeVar("P", bound=Compiled)


class PolicyCache(Generic[P]):
    """Compiled policies by (name, resourceVersion), bounded."""

    def __init__(self, compile_policy: Callable[[dict[str, Any]], P], max_entries: int = 256) -> None:
        self._compile = compile_policy
        self._entries: OrderedDict[tuple[str, str], P] = OrderedDict()
        self._max = max_entries

    def get(self, policy: dict[str, Any]) -> P:
        meta = f.as_dict(policy.get("metadata"))
        key = (f.as_str(meta.get("name")), f.as_str(meta.get("resourceVersion")))
        hit = self._entries.get(key)
        if hit is None:
            hit = self._entries[key] = self._compile(policy)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return hit


def validating_cache() -> PolicyCache[CompiledPolicy]:
    return PolicyCache(admission_policy.compile_policy)


def request_for(info: resources.ResourceInfo, operation: str, *, namespace: str | None, name: str,
                obj: dict[str, Any] | None, old: dict[str, Any] | None, subresource: str | None = None,
                dry_run: bool = False, kind: tuple[str, str, str] | None = None) -> PolicyRequest:
    """The attributes of a write to `info` (`kind`: (group, version, kind) of a subresource's own type)."""
    if info.key == NAMESPACES:
        namespace = name  # kube-apiserver: the namespace of a request about a Namespace is its name
    group, version, kind_name = kind if kind is not None else (None, None, info.kind)
    return PolicyRequest(operation, info.group, info.version, info.plural, kind_name, subresource or "", name,
                         namespace or "", obj, old, dry_run, group, version)


# ---- which (policy, binding, param) evaluations a request calls for ----


@dataclass(frozen=True)
class Invocation(Generic[P]):
    """One evaluation of a policy for a request (`generic.PolicyInvocation`), or a configuration error.

    `problem` set: the policy or binding cannot be used (`failed to configure policy: ...`), which the
    policy's failurePolicy turns into a denial or ignores; the other fields may then be empty.
    """

    policy: P
    binding: dict[str, Any] | None
    matched: PolicyRequest | None = None
    """The request in the form the policy matched (an equivalent resource's form with matchPolicy Equivalent)."""
    param: Any = None
    namespace_object: dict[str, Any] | None = None
    problem: str = ""

    @property
    def binding_name(self) -> str | None:
        return None if self.binding is None else f.as_str(self.binding["metadata"]["name"])


def invocations(db: store.Store, registry: resources.Registry, cache: PolicyCache[P], info: resources.ResourceInfo,
                req: PolicyRequest, *, tables: tuple[store.ResourceKey, store.ResourceKey]) -> list[Invocation[P]]:
    """Every bound policy the request calls for, in policy then binding name order (`policy_dispatcher.go`).

    Args:
        tables: the (policies, bindings) store keys: validating or mutating ones.
    """
    policies_key, bindings_key = tables
    bindings = db.table(bindings_key).objects
    if not bindings or req.kind in EXEMPT_KINDS and (req.kind_group or req.group) == GROUP:
        return []
    candidates = _candidates(registry, info, req)
    labels: Callable[[], match.Labels] = lambda: _namespace_labels(db, req)  # noqa: E731
    out: list[Invocation[P]] = []
    for policy_name, bound in _by_policy(bindings.values()):
        policy = db.get(policies_key, "", policy_name)
        if policy is None:
            continue  # a binding to a missing policy is ignored
        compiled = cache.get(policy)
        matched = match.constraints_match(compiled.match_constraints, candidates, labels)
        if matched is None:
            continue
        param_info, problem = _param_info(registry, compiled)
        if problem:
            out.append(Invocation(compiled, None, matched, problem=f"failed to configure policy: {problem}"))
            continue
        for binding in bound:
            out += _binding_invocations(db, compiled, binding, param_info, matched, candidates, labels)
    return out


def _by_policy(bindings: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
        grouped.setdefault(f.as_str(f.as_dict(binding.get("spec")).get("policyName")), []).append(binding)
    return sorted(grouped.items())


def _binding_invocations(db: store.Store, compiled: P, binding: dict[str, Any],
                         param_info: resources.ResourceInfo | None, matched: PolicyRequest,
                         candidates: list[PolicyRequest], labels: Callable[[], match.Labels]) -> list[Invocation[P]]:
    spec = f.as_dict(binding.get("spec"))
    scope = spec.get("matchResources")
    if isinstance(scope, dict) and match.constraints_match(scope, candidates, labels, binding=True) is None:
        return []
    params, problem = _params(db, compiled, param_info, spec.get("paramRef"), matched.namespace)
    if problem:
        return [Invocation(compiled, binding, matched, problem=f"failed to configure binding: {problem}")]
    namespace_object = _namespace_object(db, matched)
    return [Invocation(compiled, binding, matched, param, namespace_object) for param in params]


# ---- validating admission ----


@dataclass
class _Outcome:
    denials: list[tuple[str, str | None, Decision]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def enforce(db: store.Store, registry: resources.Registry, cache: PolicyCache[CompiledPolicy],
            info: resources.ResourceInfo, req: PolicyRequest) -> list[str]:
    """Run every bound ValidatingAdmissionPolicy that matches the request.

    Returns:
        The warnings of `Warn` bindings whose validations failed.

    Raises:
        StatusError: a `Deny` binding's validation failed, or a policy or binding could not be used and
            its policy's `failurePolicy` is Fail.
    """
    outcome = _Outcome()
    for inv in invocations(db, registry, cache, info, req, tables=(POLICIES, BINDINGS)):
        compiled, name = inv.policy, inv.binding_name
        if inv.problem or inv.matched is None:
            if compiled.failure_policy != "Ignore":
                outcome.denials.append((compiled.name, name, Decision(inv.problem, error=True)))
            continue
        actions = f.as_list(f.as_dict((inv.binding or {}).get("spec")).get("validationActions"))
        for decision in admission_policy.evaluate(compiled, activation(inv.matched, inv.param, inv.namespace_object)):
            if "Deny" in actions:
                outcome.denials.append((compiled.name, name, decision))
            if "Warn" in actions:
                outcome.warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{compiled.name}' "
                                        f"with binding '{name}': {decision.message}")
    if outcome.denials:
        raise _denial(req, *outcome.denials[0])
    return outcome.warnings


# ---- the request as the policy sees it ----


def _candidates(registry: resources.Registry, info: resources.ResourceInfo, req: PolicyRequest) -> list[PolicyRequest]:
    """The request, then its forms through equivalent resources (same stored objects, other group/version)."""
    out = [req]
    for other in registry.all():
        if other is info or other.storage_key != info.storage_key:
            continue
        if req.subresource and req.subresource not in other.subresources:
            continue
        kind = req.kind if req.kind_group is not None else other.kind
        out.append(dataclasses.replace(
            req, group=other.group, version=other.version, resource=other.plural, kind=kind, original=req,
            obj=convert(info, other, req.obj, req), old=convert(info, other, req.old, req)))
    return out


def convert(info: resources.ResourceInfo, other: resources.ResourceInfo, obj: dict[str, Any] | None,
            req: PolicyRequest) -> dict[str, Any] | None:
    """An object of `info`'s served form as `other` serves it (both store the same objects)."""
    if obj is None or req.kind_group is not None:
        return obj  # subresource objects (Scale...) have their own type whatever the resource's version
    converted = conversion.from_storage(other, conversion.to_storage(info, obj))
    return {**converted, "apiVersion": other.api_version} if converted is obj else converted


def _namespace_labels(db: store.Store, req: PolicyRequest) -> match.Labels:
    if req.resource == "namespaces" and not req.group and not req.subresource and req.operation in ("CREATE", "UPDATE"):
        return f.as_dict(f.as_dict((req.obj or {}).get("metadata")).get("labels"))
    namespace = db.get(NAMESPACES, "", req.namespace)
    return f.as_dict(f.as_dict((namespace or {}).get("metadata")).get("labels"))


def _namespace_object(db: store.Store, req: PolicyRequest) -> dict[str, Any] | None:
    if not req.namespace or (req.group, req.resource) == ("", "namespaces"):
        return None
    namespace = db.get(NAMESPACES, "", req.namespace)
    if namespace is None:
        return None
    meta = namespace["metadata"]
    return {"metadata": {k: meta[k] for k in _NAMESPACE_META if k in meta},
            "spec": namespace.get("spec") or {}, "status": namespace.get("status") or {}}


def activation(req: PolicyRequest, param: Any, namespace_object: dict[str, Any] | None) -> dict[str, Any]:
    asked = req.requested
    request = {
        "uid": objects.new_uid(), "kind": req.gvk, "resource": req.gvr, "subResource": req.subresource,
        "requestKind": asked.gvk, "requestResource": asked.gvr, "requestSubResource": asked.subresource,
        "name": req.name, "namespace": req.namespace, "operation": req.operation, "userInfo": USER_INFO,
        "dryRun": req.dry_run,
        "options": {"kind": _OPTIONS_KIND.get(req.operation, ""), "apiVersion": "meta.k8s.io/v1"},
    }
    return {"object": _value(req.obj), "oldObject": _value(req.old), "request": request,
            "params": _value(param), "namespaceObject": namespace_object}


def _value(obj: Any) -> Any:
    return None if obj is None else cel_ext.to_cel(None, obj, embedded=False)


# ---- parameters ----


def _param_info(registry: resources.Registry, compiled: Compiled) -> tuple[resources.ResourceInfo | None, str]:
    """The served type of `paramKind` (None without one), or why the policy cannot be used."""
    kind = compiled.param_kind
    if kind is None:
        return None, ""
    api_version, kind_name = f.as_str(kind.get("apiVersion")), f.as_str(kind.get("kind"))
    info = registry.by_kind(api_version, kind_name)
    if info is None:
        gv = api_version if "/" in api_version else f"/{api_version}"
        return None, f"failed to find resource referenced by paramKind: '{gv}, Kind={kind_name}'"
    return info, ""


def _params(db: store.Store, compiled: Compiled, info: resources.ResourceInfo | None, ref: Any,
            namespace: str) -> tuple[list[Any], str]:
    """`generic.CollectParams`: the parameter objects to evaluate with, or why the binding cannot be used."""
    if info is None or not isinstance(ref, dict):
        return [None], ""  # no paramKind, or a binding without paramRef: evaluated once with null params
    ref_namespace = f.as_str(ref.get("namespace"))
    if ref_namespace and not info.namespaced:
        return [], "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
    scope = (ref_namespace or namespace) if info.namespaced else ""
    if info.namespaced and not scope:
        return [], "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
    if ref.get("name"):
        found = db.get(info.storage_key, scope, f.as_str(ref["name"]))
        params: list[Any] = [] if found is None else [conversion.from_storage(info, found)]
    else:
        label_sel = selectors.LabelSelector.from_dict(f.as_dict(ref.get("selector")))
        keys = db.list_keys(info.storage_key, scope or None, label_sel, selectors.FieldSelector.parse(""))
        table = db.table(info.storage_key).objects
        params = [conversion.from_storage(info, table[k]) for k in keys]
    if not params and ref.get("parameterNotFoundAction") == "Deny":
        return [], "no params found for policy binding with `Deny` parameterNotFoundAction"
    return params, ""


# ---- the rejection ----


class MessageCause(errors.Cause):
    """A cause with only a message, as the policy plugin adds it (`metav1.StatusCause{Message: ...}`)."""

    def to_dict(self) -> dict[str, str]:
        return {"message": self.message}


def _denial(req: PolicyRequest, policy: str, binding: str | None, decision: Decision) -> errors.StatusError:
    """`admission.NewForbidden` with the reason and code of the decision (`policy/validating/dispatcher.go`)."""
    asked = req.requested
    if binding is None:
        cause = f"ValidatingAdmissionPolicy '{policy}' denied request: {decision.message}"
    else:
        cause = f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {decision.message}"
    resource = f"{asked.resource}.{asked.group}" if asked.group else asked.resource
    name = objects.admission_name(asked.obj, asked.name)
    reason = decision.reason if decision.reason in admission_policy.REASON_CODES else "Invalid"
    return errors.StatusError(admission_policy.REASON_CODES[reason], reason,
                              f'{resource} "{name}" is forbidden: {cause}',
                              kind=asked.resource, name=name, group=asked.group or None,
                              causes=[MessageCause("", cause, "")])


def name_of(obj: Mapping[str, Any] | None) -> str:
    meta = f.as_dict((obj or {}).get("metadata"))
    return f.as_str(meta.get("name")) or f.as_str(meta.get("generateName"))


def equivalent_forms(registry: resources.Registry, info: resources.ResourceInfo,
                     req: PolicyRequest) -> list[PolicyRequest]:
    """The request, then its forms through equivalent resources (also what `matchPolicy: Equivalent`
    webhooks match through, `webhooks.matching`)."""
    return _candidates(registry, info, req)
