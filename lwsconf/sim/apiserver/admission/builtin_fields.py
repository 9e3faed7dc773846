"""Unknown fields of built-in kinds: what kube-apiserver's typed decoding drops.

kube-apiserver decodes a built-in object into its Go type, so a field the type does not have is dropped,
and reported as `unknown field "x"` under `fieldValidation=Strict` (400) or `Warn` (a warning). The sim keeps
built-ins as JSON, so it applies the same rule: at every depth from the Go types (`protobuf.godecode`, from
the committed schema; `spec.replicaz`, `spec.template.spec.containers[0].x`), and for a kind without a Go
type there, from the table below (top-level fields, and ObjectMeta's under `metadata`). No I/O here.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.protobuf import godecode
from lwsconf.sim.apiserver.schema.schema import OBJECT_META_FIELDS

_TYPE_META = ("apiVersion", "kind", "metadata")
_SPEC_STATUS = ("spec", "status")
_CORE_EVENT = ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
               "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance")
_EVENTS_V1 = ("eventTime", "series", "reportingController", "reportingInstance", "action", "reason", "regarding",
              "related", "note", "type", "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp",
              "deprecatedCount")

ROOT_FIELDS: dict[tuple[str, str], frozenset[str]] = {key: frozenset(_TYPE_META + fields) for key, fields in {
    ("", "namespaces"): _SPEC_STATUS, ("", "pods"): _SPEC_STATUS, ("", "services"): _SPEC_STATUS,
    ("", "nodes"): _SPEC_STATUS, ("", "persistentvolumeclaims"): _SPEC_STATUS,
    ("", "endpoints"): ("subsets",), ("", "configmaps"): ("data", "binaryData", "immutable"),
    ("", "secrets"): ("data", "stringData", "type", "immutable"),
    ("", "serviceaccounts"): ("secrets", "imagePullSecrets", "automountServiceAccountToken"),
    ("", "events"): _CORE_EVENT, ("events.k8s.io", "events"): _EVENTS_V1,
    ("apps", "statefulsets"): _SPEC_STATUS, ("apps", "deployments"): _SPEC_STATUS,
    ("apps", "replicasets"): _SPEC_STATUS,
    ("apps", "daemonsets"): _SPEC_STATUS, ("apps", "controllerrevisions"): ("data", "revision"),
    ("discovery.k8s.io", "endpointslices"): ("addressType", "endpoints", "ports"),
    ("coordination.k8s.io", "leases"): ("spec",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _SPEC_STATUS,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): _SPEC_STATUS,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): ("spec",),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): _SPEC_STATUS,
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): ("spec",),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): ("webhooks",),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): ("webhooks",),
}.items()}
"""The top-level fields of each served built-in kind (its Go type's JSON fields)."""


def drop_unknown(key: tuple[str, str], obj: dict[str, Any], message: str | None = None) -> list[str]:
    """Remove, in place, the fields the kind's Go type does not have; returns their paths.

    With `message` (the kind's protobuf message), at every depth, in document order as sigs.k8s.io/json
    reports them (lwsconf fidelity requests/field-validation/nested-unknown-*). Otherwise from the table:
    top-level fields `key`'s kind does not have and non-ObjectMeta metadata fields, sorted (a kind missing
    from `ROOT_FIELDS` has its metadata checked only).
    """
    if message is not None:
        return godecode.decode(obj, message, prune=True).unknown
    removed = []
    allowed = ROOT_FIELDS.get(key)
    if allowed is not None:
        for field in [f for f in obj if f not in allowed]:
            removed.append(field)
            del obj[field]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for field in [f for f in meta if f not in OBJECT_META_FIELDS]:
            removed.append(f"metadata.{field}")
            del meta[field]
    return sorted(removed)
