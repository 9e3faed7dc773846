"""Unknown fields of built-in kinds, at the root and in metadata: what kube-apiserver's typed decoding drops.

kube-apiserver decodes a built-in object into its Go type, so a field the type does not have is dropped,
and reported as `unknown field "x"` under `fieldValidation=Strict` (400) or `Warn` (a warning). The sim keeps
built-ins as JSON, so it applies the same rule from the table below: the top-level fields of each served
kind, plus ObjectMeta's fields under `metadata`. Nested fields (`spec.x`) are not checked here: the sim has
no typed schema of every built-in spec. No I/O here.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.schema import OBJECT_META_FIELDS

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


def drop_unknown(key: tuple[str, str], obj: dict[str, Any]) -> list[str]:
    """Remove, in place, top-level fields `key`'s kind does not have and non-ObjectMeta metadata fields.

    Returns the removed fields' paths (`extra`, `metadata.extra`), sorted. A kind missing from
    `ROOT_FIELDS` has its metadata checked only.
    """
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
