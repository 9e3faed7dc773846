"""Validation of built-in objects on CREATE and UPDATE, as kube-apiserver's registry strategies do it.

Two entry points: `validate_metadata` (every kind, custom ones included) and `validate_builtin` (the
kind-specific rules of the built-ins in `resources.BUILTINS`). Both return `errors.Cause`s worded
and typed as the real server's `Status.details.causes`, so the caller answers `errors.invalid(...)`
(422). Besides the Kubernetes rules, they reject what would make a stored object undeserializable by
the strict v37 Python client (a container without `name`, a non-string label value...). Run them
after `defaults.default_builtin`, as the real server validates defaulted objects. The rules live in
one module per area (`pods`, `workloads`, `core`,
`groups`); this module is the public face and the dispatch table. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lwsconf.sim.apiserver.admission import batch
from lwsconf.sim.apiserver.admission.validation import core, groups, pods, workloads
from lwsconf.sim.apiserver.admission.validation import disruption as policy
from lwsconf.sim.apiserver.apimachinery import errors, meta, names
from lwsconf.sim.apiserver.policies import validation as admission_api
from lwsconf.sim.apiserver.policies.webhooks import config as webhook_config

# Name and value format rules (each returns Kubernetes-worded problems; empty means valid).
dns1123_subdomain = names.dns1123_subdomain
dns1123_label = names.dns1123_label
dns1035_label = names.dns1035_label
qualified_name = names.qualified_name
label_value = names.label_value
env_var_name = names.env_var_name
relaxed_env_var_name = names.relaxed_env_var_name
config_map_key = names.config_map_key

validate_metadata = meta.validate_metadata
validate_labels = meta.validate_labels
validate_label_selector = meta.validate_label_selector
selector_matches = meta.selector_matches

NAME_RULES: dict[tuple[str, str], str] = {
    ("", "namespaces"): "dns1123_label",
    ("", "pods"): "dns1123_subdomain",
    ("", "services"): "dns1035_label",
    ("", "endpoints"): "dns1123_subdomain",
    ("", "configmaps"): "dns1123_subdomain",
    ("", "secrets"): "dns1123_subdomain",
    ("", "serviceaccounts"): "dns1123_subdomain",
    ("", "events"): "dns1123_subdomain",
    ("", "nodes"): "dns1123_subdomain",
    ("", "persistentvolumeclaims"): "dns1123_subdomain",
    ("apps", "statefulsets"): "dns1123_label",
    ("apps", "controllerrevisions"): "dns1123_subdomain",
    ("apps", "deployments"): "dns1123_subdomain",
    ("apps", "replicasets"): "dns1123_subdomain",
    ("apps", "daemonsets"): "dns1123_subdomain",
    ("discovery.k8s.io", "endpointslices"): "dns1123_subdomain",
    batch.JOBS: "dns1123_subdomain",
    batch.CRONJOBS: "dns1123_subdomain",
    ("coordination.k8s.io", "leases"): "dns1123_subdomain",
    ("policy", "poddisruptionbudgets"): "dns1123_subdomain",
    # the reviews are answered before admission and never stored (`reviews`): listed so every built-in has a rule
    ("authorization.k8s.io", "selfsubjectaccessreviews"): "dns1123_subdomain",
    ("authorization.k8s.io", "selfsubjectrulesreviews"): "dns1123_subdomain",
    ("authentication.k8s.io", "selfsubjectreviews"): "dns1123_subdomain",
    ("authentication.k8s.io", "tokenreviews"): "dns1123_subdomain",
    ("authorization.k8s.io", "subjectaccessreviews"): "dns1123_subdomain",
    ("events.k8s.io", "events"): "dns1123_subdomain",
    ("apiextensions.k8s.io", "customresourcedefinitions"): "dns1123_subdomain",
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): "dns1123_subdomain",
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): "dns1123_subdomain",
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): "dns1123_subdomain",
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): "dns1123_subdomain",
    webhook_config.MUTATING: "dns1123_subdomain",
    webhook_config.VALIDATING: "dns1123_subdomain",
}
"""Each built-in's `metadata.name` rule (`apimachinery.names.RULES` keys). StatefulSet names are DNS-1123
labels since they prefix pod hostnames; Services are DNS-1035 labels. Custom resources (not listed)
use DNS-1123 subdomains, which is also `NAME_RULES.get(key, "dns1123_subdomain")`'s fallback."""

Validator = Callable[[dict[str, Any], dict[str, Any] | None], list[errors.Cause]]

VALIDATORS: dict[tuple[str, str], Validator] = {
    ("", "pods"): pods.validate_pod,
    ("", "services"): core.validate_service,
    ("", "configmaps"): core.validate_configmap,
    ("", "secrets"): core.validate_secret,
    ("", "namespaces"): core.validate_namespace,
    ("", "nodes"): core.validate_node,
    ("", "persistentvolumeclaims"): core.validate_pvc,
    ("", "events"): groups.validate_core_event,
    ("apps", "statefulsets"): workloads.validate_statefulset,
    ("apps", "deployments"): workloads.validate_deployment,
    ("apps", "replicasets"): workloads.validate_replicaset,
    ("apps", "daemonsets"): workloads.validate_daemonset,
    ("apps", "controllerrevisions"): workloads.validate_controllerrevision,
    ("discovery.k8s.io", "endpointslices"): groups.validate_endpointslice,
    batch.JOBS: batch.validate_job,
    batch.CRONJOBS: batch.validate_cronjob,
    ("coordination.k8s.io", "leases"): groups.validate_lease,
    ("policy", "poddisruptionbudgets"): policy.validate_pdb,
    ("events.k8s.io", "events"): groups.validate_events_event,
    ("apiextensions.k8s.io", "customresourcedefinitions"): groups.validate_crd,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): admission_api.validate_policy,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): admission_api.validate_binding,
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): admission_api.validate_mutating_policy,
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): admission_api.validate_mutating_binding,
    webhook_config.MUTATING: webhook_config.validate_mutating,
    webhook_config.VALIDATING: webhook_config.validate_validating,
}
"""One function per kind; kinds not listed (serviceaccounts, endpoints, custom resources) get none."""


STATUS_VALIDATORS: dict[tuple[str, str], Callable[[dict[str, Any]], list[errors.Cause]]] = {
    ("apps", "deployments"): workloads.validate_deployment_status,
    ("apps", "replicasets"): workloads.validate_replicaset_status,
    ("apps", "statefulsets"): workloads.validate_statefulset_status,
}
"""What a write through the status subresource is checked against (the strategies' ValidateUpdate of
their status); kinds not listed take any status."""


def validate_builtin_status(key: tuple[str, str], obj: dict[str, Any]) -> list[errors.Cause]:
    """The status checks of a built-in kind, for a write through `/status`."""
    validator = STATUS_VALIDATORS.get(key)
    return validator(obj) if validator is not None else []


def validate_builtin(key: tuple[str, str], obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """Kind-specific validation of a built-in object (metadata is `validate_metadata`'s job).

    Args:
        key: `(group, plural)`, as `ResourceInfo.key`.
        obj: the defaulted object about to be stored.
        old: the stored object on UPDATE (enables the immutability rules), None on CREATE.

    Returns:
        The causes; empty when the object may be stored. Unknown keys give no causes.
    """
    validator = VALIDATORS.get(key)
    return validator(obj, old) if validator is not None else []
