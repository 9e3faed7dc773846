"""Which requests a policy's `matchConstraints` (or a binding's `matchResources`) select.

The request is described by a `PolicyRequest` (admission attributes: operation, group/version/
resource, subresource, name, namespace, new and old object). Matching follows kube-apiserver
(`staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/matching/matching.go` and
`webhook/predicates/{rules,namespace,object}`):

* `namespaceSelector`: always matches cluster-scoped resources other than Namespaces; a Namespace
  being created or updated is matched on its own labels, anything else on its namespace's labels;
* `objectSelector`: matches the labels of the new or of the old object (either one);
* `excludeResourceRules` win over `resourceRules`; a binding without `resourceRules` matches all
  that its policy matched;
* a rule matches on `scope` (`Namespaced` never matches Namespaces or cluster-scoped objects),
  `operations`, `apiGroups`, `apiVersions` (each with `*`) and `resources`, where `R` matches only the
  main resource, `R/S` its subresource S, `R/*` R and all its subresources (the Go matcher's
  `sub == "*" || sub == opSub` lets the main resource through too), `*/S` subresource S of every
  resource and `*/*` everything; `resourceNames`, when set, must contain the request's name;
* with `matchPolicy: Equivalent` (the default) a request also matches a rule through an equivalent
  resource (the caller lists them: other versions, or another API serving the same stored objects),
  and the policy then sees the request as made to that resource.

No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.apimachinery import selectors

Labels = Mapping[str, str] | None


@dataclass(frozen=True)
class PolicyRequest:
    """The admission attributes a policy sees (`admission.Attributes` in kube-apiserver)."""

    operation: str
    """CREATE, UPDATE or DELETE."""
    group: str
    version: str
    resource: str
    kind: str
    subresource: str
    name: str
    namespace: str
    """The object's namespace; a Namespace's own name for requests about Namespaces; "" otherwise."""
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    dry_run: bool = False
    kind_group: str | None = None
    """The group of `kind` when it differs from the resource's (a `scale` subresource's autoscaling)."""
    kind_version: str | None = None
    original: PolicyRequest | None = None
    """The request as made, when this one is its equivalent-resource form."""

    @property
    def requested(self) -> PolicyRequest:
        return self.original or self

    @property
    def gvk(self) -> dict[str, str]:
        return {"group": self.group if self.kind_group is None else self.kind_group,
                "version": self.version if self.kind_version is None else self.kind_version, "kind": self.kind}

    @property
    def gvr(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "resource": self.resource}


def _wildcard_or(items: Any, value: str) -> bool:
    listed = f.as_list(items)
    return "*" in listed or value in listed


def _scope_matches(scope: str, req: PolicyRequest) -> bool:
    is_namespace = (req.group, req.version, req.resource) == ("", "v1", "namespaces")
    if scope == "Namespaced":
        return not is_namespace and bool(req.namespace)
    if scope == "Cluster":
        return is_namespace or not req.namespace
    return True


def _resource_matches(resources: Any, req: PolicyRequest) -> bool:
    for item in f.as_list(resources):
        res, _, sub = f.as_str(item).partition("/")
        if res in ("*", req.resource) and sub in ("*", req.subresource):
            return True
    return False


def rule_matches(rule: Mapping[str, Any], req: PolicyRequest) -> bool:
    """One `NamedRuleWithOperations` against the request (name included)."""
    if not (_scope_matches(f.as_str(rule.get("scope")) or "*", req)
            and _wildcard_or(rule.get("operations"), req.operation)
            and _wildcard_or(rule.get("apiGroups"), req.group) and _wildcard_or(rule.get("apiVersions"), req.version)
            and _resource_matches(rule.get("resources"), req)):
        return False
    names = f.as_list(rule.get("resourceNames"))
    return not names or req.name in names


def _any_rule(rules: Any, req: PolicyRequest) -> bool:
    return any(rule_matches(rule, req) for _, rule in f.dicts(rules))


def _selects(selector: Any, labels: Labels) -> bool:
    return selectors.LabelSelector.from_dict(f.as_dict(selector)).matches(labels)


def selectors_match(match: Mapping[str, Any], req: PolicyRequest, namespace_labels: Callable[[], Labels]) -> bool:
    """`namespaceSelector` and `objectSelector` (empty or absent selectors select everything)."""
    ns_selector, obj_selector = f.as_dict(match.get("namespaceSelector")), f.as_dict(match.get("objectSelector"))
    cluster_scoped = not req.namespace and req.resource != "namespaces"
    if ns_selector and not cluster_scoped and not _selects(ns_selector, namespace_labels()):
        return False
    if not obj_selector or selectors.LabelSelector.from_dict(obj_selector).is_empty():
        return True
    return any(o is not None and _selects(obj_selector, f.as_dict(o.get("metadata")).get("labels"))
               for o in (req.obj, req.old))


def constraints_match(match: Mapping[str, Any], candidates: Sequence[PolicyRequest],
                      namespace_labels: Callable[[], Labels], *, binding: bool = False) -> PolicyRequest | None:
    """The form of the request the constraints match, or None.

    Args:
        match: a policy's `matchConstraints` or a binding's `matchResources`.
        candidates: the request as made first, then its equivalent-resource forms.
        namespace_labels: the labels `namespaceSelector` is matched against (called only if needed).
        binding: True for a binding's `matchResources`, where absent `resourceRules` match everything.
    """
    req = candidates[0]
    if not selectors_match(match, req, namespace_labels):
        return None
    tried = candidates[:1] if match.get("matchPolicy") == "Exact" else candidates
    if any(_any_rule(match.get("excludeResourceRules"), c) for c in tried):
        return None
    if binding and not f.as_list(match.get("resourceRules")):
        return req
    return next((c for c in tried if _any_rule(match.get("resourceRules"), c)), None)
