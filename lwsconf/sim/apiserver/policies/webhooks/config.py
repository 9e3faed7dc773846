"""Defaults and validation of Mutating- and ValidatingWebhookConfiguration, as kube-apiserver applies them.

Defaults (`pkg/apis/admissionregistration/v1/defaults.go`): every webhook gets `failurePolicy: Fail`,
`matchPolicy: Equivalent`, empty namespace and object selectors and `timeoutSeconds: 10`; a mutating one
`reinvocationPolicy: Never`; every rule `scope: "*"`; a service reference `port: 443`.

Validation (`validation/validation.go`, `validate{Validating,Mutating}WebhookConfiguration` with the
create options, and `staging/src/k8s.io/apiserver/pkg/util/webhook/validation.go`): a fully qualified, unique
webhook name (at least three dot-separated segments), each rule's shape, the enums, `sideEffects`
required and one of None/NoneOnDryRun (a v1 object cannot declare side effects), `timeoutSeconds` in 1..30,
label selectors, exactly one of `clientConfig.url` (https, a host, no user, query or fragment) and
`clientConfig.service` (name, namespace, a valid port, a path of DNS-subdomain segments), at least one
`admissionReviewVersions` entry kube-apiserver speaks (v1, v1beta1) with no duplicates, and
`matchConditions` (qualified unique names, CEL compiling to bool over `object`, `oldObject`, `request`).
Simplification: an update is held to the create rules (kube-apiserver relaxes some of them for objects
stored before they existed, which the sim never has). No I/O here.
"""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urlsplit

from cel_expr_python import cel

from lwsconf.sim.apiserver.apimachinery import errors, meta, names
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.policies import admission_policy
from lwsconf.sim.apiserver.policies import validation as validation_admission
from lwsconf.sim.apiserver.schema import cel_ext

GROUP = "admissionregistration.k8s.io"
MUTATING = (GROUP, "mutatingwebhookconfigurations")
VALIDATING = (GROUP, "validatingwebhookconfigurations")
REVIEW_VERSIONS = ("v1", "v1beta1")
"""`AcceptedAdmissionReviewVersions`: the AdmissionReview versions kube-apiserver can send."""
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
DEFAULT_TIMEOUT_SECONDS = 10
_URL_FORM = "; desired format: https://host[/path]"


# ---- defaults ----


def default_configuration(obj: dict[str, Any], old: dict[str, Any] | None, *, mutating: bool) -> None:
    """`SetDefaults_{Validating,Mutating}Webhook`, `SetDefaults_Rule`, `SetDefaults_ServiceReference`, in place."""
    for _, hook in f.dicts(obj.get("webhooks")):
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for _, rule in f.dicts(hook.get("rules")):
            rule.setdefault("scope", "*")
        service = f.as_dict(f.as_dict(hook.get("clientConfig")).get("service"))
        if service:
            service.setdefault("port", 443)


def default_mutating(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    default_configuration(obj, old, mutating=True)


def default_validating(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    default_configuration(obj, old, mutating=False)


# ---- validation ----


def validate_mutating(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    return _configuration(obj, mutating=True)


def validate_validating(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    return _configuration(obj, mutating=False)


def _configuration(obj: dict[str, Any], *, mutating: bool) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    seen: set[str] = set()
    if obj.get("webhooks") is not None and not isinstance(obj.get("webhooks"), list):
        return [f.invalid("webhooks", obj.get("webhooks"), "must be a list of webhooks")]
    for i, hook in f.dicts(obj.get("webhooks")):
        path = f.index("webhooks", i)
        causes += _webhook(hook, path, mutating=mutating)
        causes += _review_versions(hook.get("admissionReviewVersions"), f.child(path, "admissionReviewVersions"))
        name = f.as_str(hook.get("name"))
        if name and name in seen:
            causes.append(f.duplicate(f.child(path, "name"), name))
        seen.add(name)
    return causes


def _webhook(hook: dict[str, Any], path: str, *, mutating: bool) -> list[errors.Cause]:
    """`validate{Validating,Mutating}Webhook` in its order of checks."""
    causes = _fully_qualified(f.child(path, "name"), f.as_str(hook.get("name")))
    for i, rule in f.dicts(hook.get("rules")):
        causes += validation_admission.rule_causes(rule, f.index(f.child(path, "rules"), i))
    causes += f.enum(f.child(path, "failurePolicy"), hook.get("failurePolicy"), ("Fail", "Ignore"), optional=True)
    causes += f.enum(f.child(path, "matchPolicy"), hook.get("matchPolicy"), ("Equivalent", "Exact"), optional=True)
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        causes.append(f.required(f.child(path, "sideEffects"), "must specify one of " + ", ".join(NO_SIDE_EFFECTS)))
    elif side_effects not in NO_SIDE_EFFECTS:
        causes.append(f.not_supported(f.child(path, "sideEffects"), side_effects, NO_SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and (not f.is_int(timeout) or not 1 <= timeout <= 30):
        causes.append(f.invalid(f.child(path, "timeoutSeconds"), timeout,
                                "the timeout value must be between 1 and 30 seconds"))
    for selector in ("namespaceSelector", "objectSelector"):
        if hook.get(selector) is not None:
            causes += meta.validate_label_selector(hook[selector], f.child(path, selector))
    if mutating:
        causes += f.enum(f.child(path, "reinvocationPolicy"), hook.get("reinvocationPolicy"), REINVOCATION_POLICIES,
                         optional=True)
    causes += _client_config(f.as_dict(hook.get("clientConfig")), f.child(path, "clientConfig"))
    return causes + _match_conditions(hook.get("matchConditions"), f.child(path, "matchConditions"))


def _fully_qualified(path: str, name: str) -> list[errors.Cause]:
    """`utilvalidation.IsFullyQualifiedName`."""
    if not name:
        return [f.required(path)]
    problems = names.dns1123_subdomain(name)
    if problems:
        return [f.invalid(path, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [f.invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _review_versions(versions: Any, path: str) -> list[errors.Cause]:
    """`validateAdmissionReviewVersions` with a recognized version required (create)."""
    listed = f.as_list(versions)
    if not listed:
        return [f.required(path, "must specify one of " + ", ".join(REVIEW_VERSIONS))]
    causes: list[errors.Cause] = []
    seen: set[str] = set()
    for i, version in enumerate(listed):
        text = f.as_str(version)
        if text in seen:
            causes.append(f.invalid(f.index(path, i), version, "duplicate version"))
            continue
        seen.add(text)
        causes += f.invalid_each(f.index(path, i), version, names.dns1035_label(text))
    if not seen & set(REVIEW_VERSIONS):
        causes.append(f.invalid(path, listed, "must include at least one of " + ", ".join(REVIEW_VERSIONS)))
    return causes


def _client_config(config: dict[str, Any], path: str) -> list[errors.Cause]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [f.required(path, "exactly one of url or service is required")]
    if url is not None:
        return _url(f.child(path, "url"), f.as_str(url))
    return _service(f.as_dict(service), f.child(path, "service"))


def _url(path: str, url: str) -> list[errors.Cause]:
    """`webhook.ValidateWebhookURL` with https forced."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a bad port, as Go's url.Parse fails
    except ValueError as exc:
        return [f.required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    causes = []
    if parts.scheme != "https":
        causes.append(f.invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not parts.netloc.rpartition("@")[2]:
        causes.append(f.invalid(path, "", "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        causes.append(f.invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(f.invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(f.invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def _service(service: dict[str, Any], path: str) -> list[errors.Cause]:
    """`webhook.ValidateWebhookService`."""
    causes = []
    for field in ("name", "namespace"):
        if not f.as_str(service.get(field)):
            causes.append(f.required(f.child(path, field)))
    port = service.get("port", 443)
    if not f.is_int(port) or not 1 <= port <= 65535:
        causes.append(f.invalid(f.child(path, "port"), port,
                                "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = service.get("path")
    if url_path is None or url_path in ("", "/"):
        return causes
    text = f.as_str(url_path)
    if text == "//":
        return [*causes, f.invalid(f.child(path, "path"), text, "segment[0] may not be empty")]
    if not text.startswith("/"):
        causes.append(f.invalid(f.child(path, "path"), text, "must start with a '/'"))
    steps = text[1:].removesuffix("/").split("/")
    for i, step in enumerate(steps):
        if not step:
            causes.append(f.invalid(f.child(path, "path"), text, f"segment[{i}] may not be empty"))
        for problem in names.dns1123_subdomain(step) if step else []:
            causes.append(f.invalid(f.child(path, "path"), text, f"segment[{i}]: {problem}"))
    return causes


def _match_conditions(items: Any, path: str) -> list[errors.Cause]:
    """`validateMatchConditions`: at most 64, qualified unique names, expressions compiling to bool."""
    listed = f.as_list(items)
    causes: list[errors.Cause] = []
    if len(listed) > 64:
        causes.append(errors.Cause(path, f"Too many: {len(listed)}: must have at most 64 items", "FieldValueTooMany"))
    causes += validation_admission.named_causes(items, path, qualified=True)
    for i, item in f.dicts(items):
        text = f.as_str(item.get("expression")).strip()
        if text:
            admission_policy.compile_expression(environment(), text, "bool",
                                                f.child(f.index(path, i), "expression"), causes)
    return causes


@cache
def environment() -> Any:
    """The CEL environment of a webhook's matchConditions: `object`, `oldObject`, `request` (no params)."""
    variables = {name: cel.Type.DYN for name in ("object", "oldObject", "request")}
    return cel.NewEnv(variables=variables, extensions=cel_ext.extensions())
