"""Which webhooks of which configurations a request calls, in kube-apiserver's order and with its matching.

Webhooks are taken from every configuration of the kind, configurations sorted by name and webhooks in
their listed order (kube-apiserver's `configuration/{mutating,validating}_webhook_manager.go` sort the
configurations by name). For each, `ShouldCallHook` (`generic/webhook.go`) decides:

1. `namespaceSelector` and `objectSelector` (the rules of `admission_policy_match.selectors_match`: a
   cluster-scoped object always passes the namespace selector, a Namespace is matched on its own labels,
   the object selector on the new or the old object's labels);
2. the `rules` against the request as made; with `matchPolicy: Equivalent`, rule by rule against each
   equivalent resource (another version or group serving the same objects), the webhook then being
   called with the request in that form (`kind`/`resource` of the equivalent, `requestKind` of the original);
3. `matchConditions` (CEL over `object`, `oldObject`, `request`): any false skips the webhook; errors
   with no false deny the request (403 Forbidden) under `failurePolicy: Fail` and skip it under Ignore
   (`matchconditions/matcher.go`).

Requests on the webhook and policy configuration types themselves are never sent to webhooks
(`rules.IsExemptAdmissionConfigurationResource`). No I/O here.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.policies import admission_policies, admission_policy
from lwsconf.sim.apiserver.policies import admission_policy_match as match
from lwsconf.sim.apiserver.policies.admission_policy import Expr
from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest
from lwsconf.sim.apiserver.policies.webhooks import config
from lwsconf.sim.apiserver.schema import cel_ext
from lwsconf.sim.apiserver.storage import resources, store


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration, as dispatch needs it."""

    configuration: str
    index: int
    spec: dict[str, Any]
    conditions: tuple[tuple[str, Expr], ...]

    @property
    def name(self) -> str:
        return f.as_str(self.spec.get("name"))

    @property
    def uid(self) -> str:
        """What reinvocation remembers a webhook by (`webhook.NewMutatingWebhookAccessor`:
        `<config>/<name>/<index>`)."""
        return f"{self.configuration}/{self.name}/{self.index}"

    @property
    def failure_policy(self) -> str:
        return f.as_str(self.spec.get("failurePolicy")) or "Fail"

    @property
    def reinvocation_policy(self) -> str:
        return f.as_str(self.spec.get("reinvocationPolicy")) or "Never"


@dataclass(frozen=True)
class Call:
    """A webhook to call, with the request in the form its rules matched."""

    webhook: Webhook
    request: PolicyRequest


class WebhookCache:
    """The webhooks of each configuration, matchConditions compiled once per (kind, name, resourceVersion)."""

    def __init__(self, max_entries: int = 256) -> None:
        self._entries: OrderedDict[tuple[str, str, str], tuple[Webhook, ...]] = OrderedDict()
        self._max = max_entries

    def webhooks(self, db: store.Store, key: store.ResourceKey) -> list[Webhook]:
        out: list[Webhook] = []
        table = db.table(key).objects
        for _, configuration in sorted(table.items()):
            out += self._compiled(key, configuration)
        return out

    def _compiled(self, key: store.ResourceKey, configuration: dict[str, Any]) -> tuple[Webhook, ...]:
        meta = f.as_dict(configuration.get("metadata"))
        name = f.as_str(meta.get("name"))
        cache_key = (key[1], name, f.as_str(meta.get("resourceVersion")))
        hit = self._entries.get(cache_key)
        if hit is None:
            hit = self._entries[cache_key] = tuple(
                Webhook(name, i, hook, _conditions(hook)) for i, hook in f.dicts(configuration.get("webhooks")))
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return hit


def _conditions(hook: dict[str, Any]) -> tuple[tuple[str, Expr], ...]:
    problems: list[errors.Cause] = []
    return admission_policy.compile_named(config.environment(), {"matchConditions": hook.get("matchConditions")},
                                          "matchConditions", "bool", problems)


def is_exempt(req: PolicyRequest) -> bool:
    return req.kind in admission_policies.EXEMPT_KINDS and (req.kind_group or req.group) == admission_policies.GROUP


def calls(db: store.Store, registry: resources.Registry, webhooks: list[Webhook], info: resources.ResourceInfo,
          req: PolicyRequest) -> list[Call]:
    """The webhooks `req` calls, in order.

    Raises:
        StatusError: a webhook's matchConditions failed to evaluate under `failurePolicy: Fail` (403).
    """
    if not webhooks or is_exempt(req):
        return []
    candidates = admission_policies.equivalent_forms(registry, info, req)
    labels: Callable[[], match.Labels] = lambda: namespace_labels(db, req)  # noqa: E731
    out = []
    for hook in webhooks:
        form = should_call(hook, candidates, labels)
        if form is not None:
            out.append(Call(hook, form))
    return out


def should_call(hook: Webhook, candidates: list[PolicyRequest],
                labels: Callable[[], match.Labels]) -> PolicyRequest | None:
    """`ShouldCallHook`: the request form the webhook is called with, or None."""
    req = candidates[0]
    if not match.selectors_match(hook.spec, req, labels):
        return None
    rules = [rule for _, rule in f.dicts(hook.spec.get("rules"))]
    form = req if any(match.rule_matches(rule, req) for rule in rules) else None
    if form is None and hook.spec.get("matchPolicy", "Equivalent") == "Equivalent":
        form = next((c for rule in rules for c in candidates[1:] if match.rule_matches(rule, c)), None)
    if form is None or not hook.conditions:
        return form
    data = {"object": _value(form.obj), "oldObject": _value(form.old),
            "request": admission_policies.activation(form, None, None)["request"]}
    matched, error = admission_policy.conditions_hold(hook.conditions, data, {})
    if error is not None:
        if hook.failure_policy == "Ignore":
            return None
        asked = req.requested
        raise errors.forbidden(asked.resource, asked.group, asked.name or admission_policies.name_of(asked.obj), error)
    return form if matched else None


def _value(obj: Any) -> Any:
    return None if obj is None else cel_ext.to_cel(None, obj, embedded=False)


def namespace_labels(db: store.Store, req: PolicyRequest) -> match.Labels:
    if req.resource == "namespaces" and not req.group and not req.subresource and req.operation in ("CREATE", "UPDATE"):
        return f.as_dict(f.as_dict((req.obj or {}).get("metadata")).get("labels"))
    namespace = db.get(admission_policies.NAMESPACES, "", req.namespace)
    return f.as_dict(f.as_dict((namespace or {}).get("metadata")).get("labels"))
