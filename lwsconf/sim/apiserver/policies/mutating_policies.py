"""Enforcing MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) on CREATE and UPDATE.

Where: `admission.Admission.admit` calls `mutate` after decoding and defaulting and before the object's
validation, and the ValidatingAdmissionPolicies run later still (just before storage). That is
kube-apiserver's order: the create/update handlers run mutating admission (`mutatingAdmission.Admit`,
`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go` and `update.go`) on the decoded and
defaulted object, then call the registry, whose `BeforeCreate`/`BeforeUpdate` validate the object
before the validating admission plugins run (`registry/generic/registry/store.go`); among the mutating
plugins MutatingAdmissionPolicy comes before the mutating webhooks (`pkg/kubeapiserver/options/plugins.go`).
A mutated object must therefore pass ordinary validation, and validating policies see it mutated.
DELETE is never mutated (the plugin handles CREATE, UPDATE and CONNECT; `policy/mutating/plugin.go`).
Not mutated in the sim: `scale`, `binding` and `eviction` subresource writes (their own Scale, Binding
and Eviction objects would be the ones patched) and CONNECT (proxy) requests.

Which policies run is `admission_policies.invocations`, shared with the validating policies: bindings
whose policy's `matchConstraints` and own `matchResources` select the request, in policy then binding
name order, once per parameter object; matching sees the object as sent. Each invocation's mutations
then run on the object as mutated so far (`mutating_policy.apply_mutations`), and the object is
re-defaulted after every patch (`dispatcher.go`: `GetObjectDefaulter().Default`). Reinvocation
(`reinvocationPolicy: IfNeeded`): after the pass, every IfNeeded invocation that ran before the last
change made by a later invocation runs once more. When a mutating webhook then changes the object
(`webhooks.dispatch`), the chain's second round runs the IfNeeded invocations once more (`reinvocation=True`).

Errors (`policy/generic/policy_dispatcher.go`): configuration errors (`failed to configure policy: ...`)
and errors of a mutation are collected; those of policies with `failurePolicy: Ignore` are dropped, any
other denies the request once all invocations ran. The response is kube-apiserver's: HTTP 403 (from
`admission.NewForbidden`), message `policy 'P' with binding 'B' denied request: <error>` (or
`policy "P" denied request: <error>` without a binding), reason Invalid for a mutation's error and
Forbidden for a configuration error, and one cause per error. No I/O here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, objects
from lwsconf.sim.apiserver.policies import admission_policies
from lwsconf.sim.apiserver.policies.admission_policies import GROUP, Invocation, PolicyCache
from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest
from lwsconf.sim.apiserver.policies.mutating_policy import CompiledMutatingPolicy, apply_mutations, compile_policy
from lwsconf.sim.apiserver.schema import cel_ext
from lwsconf.sim.apiserver.storage import conversion, resources, store

POLICIES: store.ResourceKey = (GROUP, "mutatingadmissionpolicies")
BINDINGS: store.ResourceKey = (GROUP, "mutatingadmissionpolicybindings")
OPERATIONS = ("CREATE", "UPDATE")
"""The operations whose object a MutatingAdmissionPolicy can change (CONNECT has none in the sim)."""

Normalize = Callable[[dict[str, Any]], dict[str, Any]]
"""What kube-apiserver does to a patched object of the requested type (decode, prune, default)."""


@dataclass(frozen=True)
class PolicyError:
    policy: str
    binding: str | None
    message: str
    reason: str = "Invalid"

    def text(self) -> str:
        if self.binding is None:
            return f'policy "{self.policy}" denied request: {self.message}'
        return f"policy '{self.policy}' with binding '{self.binding}' denied request: {self.message}"


def mutating_cache() -> PolicyCache[CompiledMutatingPolicy]:
    return PolicyCache(compile_policy)


def mutate(db: store.Store, registry: resources.Registry, cache: PolicyCache[CompiledMutatingPolicy],
           info: resources.ResourceInfo, req: PolicyRequest, *, normalize: Normalize,
           reinvocation: bool = False) -> dict[str, Any] | None:
    """Run every bound MutatingAdmissionPolicy that matches the request on `req.obj`.

    Args:
        normalize: re-decodes and re-defaults a patched object of `info`'s served form.
        reinvocation: the chain's second round (a mutating webhook changed the object): only the
            `IfNeeded` invocations run, once each.

    Returns:
        The mutated object (a new dict), or None when no policy changed it.

    Raises:
        StatusError: a policy or binding could not be used, or a mutation failed, under `failurePolicy: Fail`.
    """
    if req.operation not in OPERATIONS or req.obj is None:
        return None
    calls = admission_policies.invocations(db, registry, cache, info, req, tables=(POLICIES, BINDINGS))
    if not calls:
        return None
    run = _Run(registry, info, normalize, req.obj)
    if reinvocation:
        for i, inv in enumerate(calls):
            if inv.policy.reinvocation_policy == "IfNeeded":
                run.invoke(i, inv)
    else:
        changed = [run.invoke(i, inv) for i, inv in enumerate(calls)]
        last_change = max((i for i, did in enumerate(changed) if did), default=-1)
        for i, inv in enumerate(calls):
            if i < last_change and run.invoked.get(i) and inv.policy.reinvocation_policy == "IfNeeded":
                run.invoke(i, inv)
    failures = [e for e in run.errors if e[0].failure_policy != "Ignore"]
    if failures:
        raise _denial(req, [e[1] for e in failures])
    return run.obj if run.obj is not req.obj else None


class _Run:
    """The object as mutated so far, and what each invocation did."""

    def __init__(self, registry: resources.Registry, info: resources.ResourceInfo, normalize: Normalize,
                 obj: dict[str, Any]) -> None:
        self.registry, self.info, self.normalize, self.obj = registry, info, normalize, obj
        self.invoked: dict[int, bool] = {}
        self.errors: list[tuple[CompiledMutatingPolicy, PolicyError]] = []

    def invoke(self, index: int, inv: Invocation[CompiledMutatingPolicy]) -> bool:
        """Run one invocation on the current object; returns whether it changed the object."""
        policy = inv.policy
        if inv.problem or inv.matched is None:
            self.errors.append((policy, PolicyError(policy.name, inv.binding_name, inv.problem, "Forbidden")))
            return False
        other = self._form(inv.matched)
        obj = self.obj if other is self.info else _converted(self.info, other, self.obj, inv.matched)
        seen = dataclasses.replace(inv.matched, obj=obj)
        normalize = self.normalize if other is self.info else _back_and_forth(self.info, other, self.normalize)
        result = apply_mutations(policy, admission_policies.activation(seen, inv.param, inv.namespace_object), obj,
                                 to_cel=_cel_value, normalize=normalize)
        self.invoked[index] = result.matched
        for message in result.errors or []:
            self.errors.append((policy, PolicyError(policy.name, inv.binding_name, message)))
        if result.obj is obj or result.obj == obj:
            return False  # as `apiequality.Semantic.DeepEqual` finds it
        self.obj = result.obj if other is self.info else _converted(other, self.info, result.obj, inv.matched)
        return True

    def _form(self, matched: PolicyRequest) -> resources.ResourceInfo:
        """The served type the policy matched the request through (an equivalent resource, or the requested one)."""
        if matched.original is None:
            return self.info
        return self.registry.lookup(matched.group, matched.version, matched.resource) or self.info


def _converted(info: resources.ResourceInfo, other: resources.ResourceInfo, obj: dict[str, Any],
               req: PolicyRequest) -> dict[str, Any]:
    converted = admission_policies.convert(info, other, obj, req)
    return obj if converted is None else converted


def _back_and_forth(info: resources.ResourceInfo, other: resources.ResourceInfo, normalize: Normalize) -> Normalize:
    """Normalize an object of `other`'s form through the requested type `info` (where defaults are known)."""
    def run(obj: dict[str, Any]) -> dict[str, Any]:
        back = conversion.from_storage(info, conversion.to_storage(other, obj))
        return conversion.from_storage(other, conversion.to_storage(info, normalize(back)))
    return run


def _cel_value(obj: dict[str, Any]) -> Any:
    return cel_ext.to_cel(None, obj, embedded=False)


def _denial(req: PolicyRequest, failures: list[PolicyError]) -> errors.StatusError:
    """`admission.NewForbidden` whose message and reason are the first error's, one cause per error."""
    asked = req.requested
    name = objects.admission_name(asked.obj, asked.name)
    first = failures[0]
    return errors.StatusError(403, first.reason, first.text(), kind=asked.resource, name=name,
                              group=asked.group or None,
                              causes=[admission_policies.MessageCause("", e.text(), "") for e in failures])
