"""Admission webhooks: the configurations' defaults and validation, and how a write meets its webhooks.

No webhook server runs in the corpus (steps are data), so the calls that are compared are those whose
outcome needs none: webhooks at `https://127.0.0.1:1` (a closed loopback port: connection refused on both
sides, never a non-loopback address) or at a Service that does not exist. Whether such a webhook is called at
all shows as the write failing (failurePolicy Fail) or passing: rules and operations, `matchPolicy` Exact vs
Equivalent, namespace and object selectors, `matchConditions` false or failing, dry run, DELETE, exemption of
the configuration types. Every webhook is limited to its scenario's namespace (`namespaceSelector` on
`kubernetes.io/metadata.name`) and its configuration deleted by the last step, so no other scenario meets it.
kube-apiserver reads configurations through an informer, so a configuration is not in force the instant it is
created: each scenario's configuration carries a probe webhook (labelled objects only, the others exclude
them) and the `active` step waits until a dry-run create of a labelled object fails through it.
Reference: kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/`.
"""

from __future__ import annotations

from typing import Any

from lwsconf.fidelity.corpus._build import ADMISSION, CORE, NS, configmap, create, delete, get, patch
from lwsconf.fidelity.model import MERGE, Scenario, Step, Until

MWC = f"{ADMISSION}/mutatingwebhookconfigurations"
VWC = f"{ADMISSION}/validatingwebhookconfigurations"
CLOSED = "https://127.0.0.1:1/hook"
"""A loopback port nothing listens on: the call fails with `connection refused` on both servers."""
PROBE_LABEL = "fid-webhook-probe"
NOT_PROBE = {"key": PROBE_LABEL, "operator": "DoesNotExist"}
IN_NS = {"matchLabels": {"kubernetes.io/metadata.name": NS}}
ACTIVE = Step("active", "POST", f"{CORE}/configmaps", configmap("probe", labels={PROBE_LABEL: "true"}),
              query={"dryRun": "All"}, until=Until("code", 500, 30.0))
"""Waits until the scenario's configuration is in force (its probe webhook fails the dry-run create)."""


def rule(*resources: str, operations: tuple[str, ...] = ("CREATE", "UPDATE"), group: str = "",
         **extra: Any) -> dict[str, Any]:
    return {"apiGroups": [group], "apiVersions": ["v1"], "operations": list(operations),
            "resources": list(resources or ("configmaps",)), **extra}


def webhook(name: str, *, url: str = CLOSED, rules: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """A webhook on this scenario's namespace only, never on the probe object (see `ACTIVE`)."""
    objects = dict(extra.pop("objectSelector", {}))
    objects["matchExpressions"] = [*objects.get("matchExpressions", []), NOT_PROBE]
    return {"name": name, "clientConfig": {"url": url}, "rules": rules or [rule()], "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "namespaceSelector": IN_NS, "objectSelector": objects, **extra}


def with_probe(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the probe webhook `ACTIVE` waits for (labelled ConfigMaps only, at a closed port)."""
    probe = {"name": "probe.example.com", "clientConfig": {"url": CLOSED}, "rules": [rule(operations=("CREATE",))],
             "sideEffects": "None", "admissionReviewVersions": ["v1"], "namespaceSelector": IN_NS,
             "objectSelector": {"matchLabels": {PROBE_LABEL: "true"}}}
    return {**config, "webhooks": [*config["webhooks"], probe]}


def configuration(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(hooks)}


def validating(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return configuration("ValidatingWebhookConfiguration", name, *hooks)


def mutating(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return configuration("MutatingWebhookConfiguration", name, *hooks)


def _scenario(name: str, collection: str, config: dict[str, Any], *steps: Step) -> Scenario:
    item = f"{collection}/{config['metadata']['name']}"
    return Scenario("webhooks", name, (create("install", collection, with_probe(config)), ACTIVE, *steps,
                                       delete("uninstall", item)))


def _invalid(name: str, change: dict[str, Any]) -> Step:
    hook = webhook("bad.example.com")
    for key, value in change.items():
        if value is None:
            hook.pop(key)
        else:
            hook[key] = value
    return create(f"invalid-{name}", MWC, mutating(f"fid-invalid-{name}", hook))


VALIDATION = Scenario("webhooks", "webhooks-validation", (
    _invalid("no-side-effects", {"sideEffects": None}),
    _invalid("side-effects-some", {"sideEffects": "Some"}),
    _invalid("short-name", {"name": "hook"}),
    _invalid("timeout", {"timeoutSeconds": 31}),
    _invalid("review-versions", {"admissionReviewVersions": ["v2"]}),
    _invalid("no-review-versions", {"admissionReviewVersions": None}),
    _invalid("no-client-config", {"clientConfig": {}}),
    _invalid("http-url", {"clientConfig": {"url": "http://127.0.0.1:1/x"}}),
    _invalid("url-query", {"clientConfig": {"url": "https://127.0.0.1:1/x?q=1#f"}}),
    _invalid("service-path", {"clientConfig": {"service": {"name": "s", "namespace": "n", "path": "x//y"}}}),
    _invalid("enums", {"failurePolicy": "Sometimes", "matchPolicy": "Loose", "reinvocationPolicy": "Always"}),
    _invalid("match-condition", {"matchConditions": [{"name": "c", "expression": "object.metadata.name"}]}),
    _invalid("rule", {"rules": [{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"],
                                 "resources": ["pods"], "scope": "Somewhere"}]}),
    create("invalid-duplicate-names", VWC, validating("fid-invalid-dup", webhook("a.example.com"),
                                                      webhook("a.example.com"))),
))

DEFAULTS = Scenario("webhooks", "webhooks-defaults", (
    create("mutating-defaults", MWC, mutating("fid-defaults-m", webhook(
        "m.example.com",
        clientConfig={"service": {"name": "webhook-service", "namespace": "system", "path": "/mutate--v1-pod"}},
        rules=[rule("pods", operations=("CREATE",))]))),
    create("validating-defaults", VWC, validating("fid-defaults-v", webhook("v.example.com"))),
    get("get-mutating", f"{MWC}/fid-defaults-m"),
    delete("delete-mutating", f"{MWC}/fid-defaults-m"),
    delete("delete-validating", f"{VWC}/fid-defaults-v"),
))

_MERGE_A = {"data": {"a": "2"}}

SCENARIOS: tuple[Scenario, ...] = (
    VALIDATION,
    DEFAULTS,
    _scenario("webhooks-fail-closed", VWC, validating("fid-fail-closed", webhook("closed.example.com")),
              create("create-refused", f"{CORE}/configmaps", configmap("c1")),
              create("dry-run-refused", f"{CORE}/configmaps", configmap("c1"), query={"dryRun": "All"}),
              get("not-created", f"{CORE}/configmaps/c1")),
    _scenario("webhooks-fail-open", MWC, mutating("fid-fail-open", webhook("open.example.com", failurePolicy="Ignore")),
              create("create-passes", f"{CORE}/configmaps", configmap("c1"))),
    _scenario("webhooks-missing-service", VWC, validating("fid-missing-service", webhook(
        "svc.example.com", clientConfig={"service": {"name": "nowhere", "namespace": NS, "path": "/validate"}})),
        create("create-refused", f"{CORE}/configmaps", configmap("c1"))),
    _scenario("webhooks-operations", VWC, validating("fid-operations", webhook(
        "update.example.com", rules=[rule(operations=("UPDATE",))])),
        create("create-not-hooked", f"{CORE}/configmaps", configmap("c1")),
        patch("update-hooked", f"{CORE}/configmaps/c1", _MERGE_A, MERGE),
        delete("delete-not-hooked", f"{CORE}/configmaps/c1")),
    _scenario("webhooks-delete", VWC, validating("fid-delete", webhook(
        "delete.example.com", rules=[rule(operations=("DELETE",))])),
        create("create-not-hooked", f"{CORE}/configmaps", configmap("c1")),
        delete("delete-hooked", f"{CORE}/configmaps/c1")),
    _scenario("webhooks-object-selector", VWC, validating("fid-object-selector", webhook(
        "labels.example.com", objectSelector={"matchLabels": {"hooked": "yes"}})),
        create("unlabelled-passes", f"{CORE}/configmaps", configmap("c1")),
        create("labelled-refused", f"{CORE}/configmaps", configmap("c2", labels={"hooked": "yes"})),
        patch("label-added-refused", f"{CORE}/configmaps/c1", {"metadata": {"labels": {"hooked": "yes"}}}, MERGE)),
    _scenario("webhooks-match-conditions", VWC, validating("fid-match-conditions", webhook(
        "cond.example.com", matchConditions=[{"name": "named-x", "expression": "object.metadata.name == 'x'"}])),
        create("condition-false-passes", f"{CORE}/configmaps", configmap("c1")),
        create("condition-true-refused", f"{CORE}/configmaps", configmap("x"))),
    _scenario("webhooks-match-condition-error", VWC, validating("fid-match-condition-error", webhook(
        "err.example.com", matchConditions=[{"name": "missing", "expression": "object.data.missing == 'x'"}])),
        create("error-under-fail", f"{CORE}/configmaps", configmap("c1"))),
    _scenario("webhooks-equivalent", VWC, validating("fid-equivalent", webhook(
        "events.example.com", rules=[rule("events", group="events.k8s.io", operations=("CREATE",))])),
        create("core-event-hooked", f"{CORE}/events", {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"}, "reason": "Test", "message": "m",
            "type": "Normal", "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS}})),
    _scenario("webhooks-exact", VWC, validating("fid-exact", webhook(
        "exact.example.com", matchPolicy="Exact",
        rules=[rule("events", group="events.k8s.io", operations=("CREATE",))])),
        create("core-event-not-hooked", f"{CORE}/events", {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"}, "reason": "Test", "message": "m",
            "type": "Normal", "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS}})),
    _scenario("webhooks-subresource", VWC, validating("fid-subresource", webhook(
        "status.example.com", rules=[rule("services/status", operations=("UPDATE",))])),
        create("service", f"{CORE}/services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                               "spec": {"ports": [{"port": 80}]}},
               vary=("body.spec.clusterIP", "body.spec.clusterIPs")),  # allocated from different ranges
        patch("main-resource-not-hooked", f"{CORE}/services/s", {"metadata": {"labels": {"a": "b"}}}, MERGE,
              vary=("body.spec.clusterIP", "body.spec.clusterIPs")),
        patch("status-hooked", f"{CORE}/services/s/status", {"status": {"loadBalancer": {}}}, MERGE)),
)
