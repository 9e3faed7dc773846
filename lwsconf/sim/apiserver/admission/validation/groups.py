"""Validation for the kinds outside core/apps: Events (both APIs), Lease, EndpointSlice and CRDs.

Event rules follow `pkg/apis/core/validation/events.go` (kubernetes/kubernetes): every Event passes
`legacyValidateEvent` (namespace agreement with the regarding object; and, once `eventTime` is set,
`reportingController`, `reportingInstance`, `action` and `reason` are required and length-limited);
Events written through events.k8s.io/v1 additionally need `eventTime`, a `type` of Normal or
Warning, a `series` with count >= 2, and must leave the deprecated first/last timestamps, count and
source unset; on update most of their fields are immutable. Field paths in the causes use the
internal names (`reportingController`, `involvedObject`, `message`) exactly as the apiserver reports
them for both APIs. The CRD checks here are the spec-level ones; schema structure is checked by the
CRD machinery. No I/O here.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, names
from lwsconf.sim.apiserver.apimachinery import fields as f

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024
EVENT_TYPES = ("Normal", "Warning")
ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
CRD_SCOPES = ("Cluster", "Namespaced")

_EVENTS_V1_TO_INTERNAL = {"regarding": "involvedObject", "note": "message", "deprecatedSource": "source",
                          "deprecatedFirstTimestamp": "firstTimestamp", "deprecatedLastTimestamp": "lastTimestamp",
                          "deprecatedCount": "count", "reportingController": "reportingController",
                          "reportingInstance": "reportingInstance"}
_CORE_TO_INTERNAL = {"reportingComponent": "reportingController"}


def _internal_event(obj: dict[str, Any], *, events_api: bool) -> dict[str, Any]:
    """The event with field names of the internal type, which the Go validation is written against."""
    mapping = _EVENTS_V1_TO_INTERNAL if events_api else _CORE_TO_INTERNAL
    out = {mapping.get(k, k): v for k, v in obj.items()}
    out["namespace"] = f.as_str(f.as_dict(obj.get("metadata")).get("namespace"))
    return out


def _legacy_event(ev: dict[str, Any]) -> list[errors.Cause]:
    """`legacyValidateEvent`: what every Event must satisfy, whichever API wrote it."""
    ns = ev["namespace"]
    involved_ns = f.as_str(f.as_dict(ev.get("involvedObject")).get("namespace"))
    mismatch = f.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    causes: list[errors.Cause] = []
    if not ev.get("eventTime"):
        if (not involved_ns and ns not in ("", "default")) or (involved_ns and ns != involved_ns):
            causes.append(mismatch)
    else:
        if not involved_ns and ns not in ("default", "kube-system"):
            causes.append(mismatch)
        causes += _reporting_fields(ev)
    if ns:
        causes += f.invalid_each("namespace", ns, names.dns1123_subdomain(ns))
    return causes


def _reporting_fields(ev: dict[str, Any]) -> list[errors.Cause]:
    controller = f.as_str(ev.get("reportingController"))
    causes = [] if controller else [f.required("reportingController")]
    causes += f.invalid_each("reportingController", controller, names.qualified_name(controller))
    for field, limit in (("reportingInstance", REPORTING_INSTANCE_LIMIT), ("action", ACTION_LIMIT),
                         ("reason", REASON_LIMIT)):
        value = f.as_str(ev.get(field))
        if not value:
            causes.append(f.required(field))
        if len(value) > limit:
            causes.append(f.invalid(field, "", f"can have at most {limit} characters"))
    if len(f.as_str(ev.get("message"))) > NOTE_LIMIT:
        causes.append(f.invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return causes


def validate_core_event(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """core/v1 Events get only the legacy checks (backwards compatibility), on create and update."""
    return _legacy_event(_internal_event(obj, events_api=False))


def validate_events_event(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """events.k8s.io/v1 Events: legacy checks plus the strict ones; most fields immutable on update."""
    ev = _internal_event(obj, events_api=True)
    causes = _legacy_event(ev)
    if old is not None:
        before = _internal_event(old, events_api=True)
        if ev.get("series") != before.get("series"):
            causes += _series(ev.get("series"))
        for field in ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count",
                      "type", "eventTime", "action", "related", "reportingController", "reportingInstance"):
            causes += f.unchanged(field, ev.get(field), before.get(field))
        return causes
    causes += _series(ev.get("series"))
    if not ev.get("eventTime"):
        causes.append(f.required("eventTime"))
    if ev.get("type") not in EVENT_TYPES:
        causes.append(f.invalid("type", "", f"has invalid value: {f.as_str(ev.get('type'))}"))
    for field in ("firstTimestamp", "lastTimestamp", "count"):
        if ev.get(field):
            causes.append(f.invalid(field, "", "needs to be unset"))
    source = f.as_dict(ev.get("source"))
    if source.get("component") or source.get("host"):
        causes.append(f.invalid("source", "", "needs to be unset"))
    return causes


def _series(series: Any) -> list[errors.Cause]:
    if series is None:
        return []
    series = f.as_dict(series)
    count = series.get("count")
    causes = [] if f.is_int(count) and count >= 2 else [f.invalid("series.count", "", "should be at least 2")]
    if not series.get("lastObservedTime"):
        causes.append(f.required("series.lastObservedTime"))
    return causes


# --- Lease and EndpointSlice ----------------------------------------------------------------------

def validate_lease(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateLeaseSpec`: a positive duration and non-negative transitions when given."""
    spec = f.as_dict(obj.get("spec"))
    causes: list[errors.Cause] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not f.is_int(duration) or duration <= 0):
        causes.append(f.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and (not f.is_int(transitions) or transitions < 0):
        causes.append(f.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return causes


def validate_endpointslice(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateEndpointSlice(Update)`: addressType required, supported and immutable; addresses present."""
    causes = f.enum("addressType", obj.get("addressType"), ADDRESS_TYPES)
    for i, endpoint in f.dicts(obj.get("endpoints")):
        addresses = f.as_list(endpoint.get("addresses"))
        if not addresses:
            causes.append(f.required(f.child(f.index("endpoints", i), "addresses"), "must contain at least 1 address"))
        elif not all(isinstance(a, str) for a in addresses):
            causes.append(f.invalid(f.child(f.index("endpoints", i), "addresses"), addresses, "must be strings"))
    for i, port in f.dicts(obj.get("ports")):
        if port.get("port") is not None:
            number = port["port"]
            problems = names.port_number(number) if f.is_int(number) else ["must be an integer"]
            causes += f.invalid_each(f.child(f.index("ports", i), "port"), number, problems)
    if old is not None:
        causes += f.unchanged("addressType", obj.get("addressType"), old.get("addressType"))
    return causes


# --- CustomResourceDefinition ---------------------------------------------------------------------

def validate_crd(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """Spec-level `ValidateCustomResourceDefinition`: names, group, scope and the version list."""
    spec = f.as_dict(obj.get("spec"))
    names_ = f.as_dict(spec.get("names"))
    group, plural = f.as_str(spec.get("group")), f.as_str(names_.get("plural"))
    causes = _crd_group(group)
    causes += _crd_names(names_)
    name = f.as_str(f.as_dict(obj.get("metadata")).get("name"))
    if plural and group and name != f"{plural}.{group}":
        causes.append(f.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    causes += f.enum("spec.scope", spec.get("scope"), CRD_SCOPES)
    causes += _crd_versions(spec.get("versions"))
    if old is not None:
        old_spec = f.as_dict(old.get("spec"))
        causes += f.unchanged("spec.group", spec.get("group"), old_spec.get("group"))
        causes += f.unchanged("spec.scope", spec.get("scope"), old_spec.get("scope"))
    return causes


def _crd_group(group: str) -> list[errors.Cause]:
    if not group:
        return [f.required("spec.group")]
    causes = f.invalid_each("spec.group", group, names.dns1123_subdomain(group))
    if "." not in group:
        causes.append(f.invalid("spec.group", group, "should be a domain with at least one dot"))
    return causes


def _crd_names(crd_names: dict[str, Any]) -> list[errors.Cause]:
    """`ValidateCustomResourceDefinitionNames`: DNS-1035 plural/singular, kinds DNS-1035 up to case."""
    causes: list[errors.Cause] = []
    for field in ("plural", "singular", "kind", "listKind"):
        value = f.as_str(crd_names.get(field))
        if not value:
            causes += [f.required(f.child("spec.names", field))] if field in ("plural", "kind") else []
            continue
        is_kind = field in ("kind", "listKind")
        problems = names.dns1035_label(value.lower() if is_kind else value)
        if problems and is_kind:
            causes.append(f.invalid(f.child("spec.names", field), value,
                                    "may have mixed case, but should otherwise match: " + ",".join(problems)))
        elif problems:
            causes.append(f.invalid(f.child("spec.names", field), value, ",".join(problems)))
    return causes


def _crd_versions(versions: Any) -> list[errors.Cause]:
    items = f.dicts(versions)
    if not items:
        return [f.required("spec.versions", "must have at least one version")]
    causes: list[errors.Cause] = []
    seen: set[str] = set()
    for i, version in items:
        at = f.index("spec.versions", i)
        vname = f.as_str(version.get("name"))
        problems = names.dns1035_label(vname)
        if problems:
            causes.append(f.invalid(f.child(at, "name"), vname, ",".join(problems)))
        if vname in seen:
            causes.append(f.invalid("spec.versions", versions, "must contain unique version names"))
        seen.add(vname)
        if not f.as_dict(version.get("schema")).get("openAPIV3Schema"):
            causes.append(f.required(f.child(at, "schema", "openAPIV3Schema"), "schemas are required"))
    if sum(1 for _, v in items if v.get("storage") is True) != 1:
        causes.append(f.invalid("spec.versions", versions, "must have exactly one version marked as storage version"))
    return causes
