"""Conversion between a served representation and the stored one, for resources that share storage.

kube-apiserver keeps one stored form per resource and converts every object it reads or writes to
and from the version the request names. Some resources even share their storage with a resource of
another group: events.k8s.io/v1 Event and core v1 Event are two representations of the same stored
objects (kubernetes/kubernetes `pkg/kubeapiserver/default_storage_factory_builder.go`:
`AddCohabitatingResources(api.Resource("events"), events.Resource("events"))`, core listed first, so
core v1 is the stored form), and an event created through either API is listed through both.

The sim does the same: a `ResourceInfo` whose `stored_as` names another resource keeps its objects in
that resource's table (`ResourceInfo.storage_key`), and a `Converter` registered here for its
(group, version, plural) maps each object to the stored form on write and back on every read, list
and watch event, and maps field-selector labels to the stored form's (`AddFieldLabelConversionFunc`).
Resources without a converter are stored exactly as served: the functions below return the very
same dict, so the common path costs nothing. Defaulting and validation stay per served form and run
before `to_storage`. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.apimachinery import selectors
from lwsconf.sim.apiserver.storage import resources

Obj = dict[str, Any]
GVR = tuple[str, str, str]


@dataclass(frozen=True)
class Converter:
    """How one served (group, version, plural) maps onto the stored form of its objects."""

    to_storage: Callable[[Obj], Obj]
    from_storage: Callable[[Obj], Obj]
    field_labels: Mapping[str, str]
    """Served field-selector label -> stored label; labels not listed are the same in both forms."""


# --- events.k8s.io/v1 Event <-> core v1 Event ----------------------------------------------------

EVENTS_V1_TO_CORE: dict[str, str] = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
"""Top-level field renames, from kubernetes/kubernetes `pkg/apis/events/v1/conversion.go`
(`Convert_v1_Event_To_core_Event` / `Convert_core_Event_To_v1_Event`: regarding<->involvedObject,
note<->message, deprecatedSource<->source, deprecated{First,Last}Timestamp/Count<->{first,last}Timestamp/
count). reportingController<->reportingComponent comes from the generated conversion: the internal
field `ReportingController` is serialized as `reportingComponent` by core/v1 (`json:"reportingComponent"`).
eventTime, series, action, reason, type, related and reportingInstance have the same names in both."""

_CORE_TO_EVENTS_V1 = {v: k for k, v in EVENTS_V1_TO_CORE.items()}

EVENTS_V1_FIELD_LABELS: dict[str, str] = {
    **{f"regarding.{f}": f"involvedObject.{f}" for f in
       ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
    "reportingController": "reportingComponent",
}
"""From `AddFieldLabelConversionsForEvent` in the same file (reason, source, type, metadata.* map to themselves)."""


def _rename(obj: Obj, mapping: Mapping[str, str], api_version: str) -> Obj:
    """A shallow copy with top-level keys renamed; the other form's names are dropped as unknown fields."""
    foreign = set(mapping.values())
    out: Obj = {}
    for key, value in obj.items():
        if key in mapping:
            out[mapping[key]] = value
        elif key not in foreign:
            out[key] = value
    out["apiVersion"] = api_version
    out["kind"] = "Event"
    return out


def _event_to_core(obj: Obj) -> Obj:
    out = _rename(obj, EVENTS_V1_TO_CORE, "v1")
    if out.get("involvedObject") is None:
        out["involvedObject"] = {}  # a Go struct: always serialized (the v37 client requires it)
    return out


_EVENTS_V1_OMITEMPTY = {"reportingController": "", "reportingInstance": "", "action": "", "reason": "", "note": "",
                        "type": "", "deprecatedCount": 0}
"""events.k8s.io/v1 fields tagged `omitempty` whose core/v1 counterparts are not (`reportingComponent`,
`reportingInstance`) or may be stored empty: Go's encoder drops the zero value, so a converted Event carries
none of them (kube-apiserver sends a webhook an events.k8s.io/v1 Event without `reportingInstance: ""`)."""


def _core_to_event(obj: Obj) -> Obj:
    out = _rename(obj, _CORE_TO_EVENTS_V1, "events.k8s.io/v1")
    for key, zero in _EVENTS_V1_OMITEMPTY.items():
        if key in out and out[key] == zero and type(out[key]) is type(zero):
            del out[key]
    if out.get("regarding") is None:
        out["regarding"] = {}
    return out


CONVERTERS: dict[GVR, Converter] = {
    ("events.k8s.io", "v1", "events"): Converter(_event_to_core, _core_to_event, EVENTS_V1_FIELD_LABELS),
}
"""One converter per served version stored in another form (`ResourceInfo.stored_as` is set for it)."""


# --- the hook the storage, handlers and watch use ------------------------------------------------

def converter_for(info: resources.ResourceInfo) -> Converter | None:
    """The converter of a resource served in a form other than its stored one, else None."""
    if info.stored_as is None:
        return None
    converter = CONVERTERS.get((info.group, info.version, info.plural))
    if converter is None:
        raise LookupError(f"{info.plural}.{info.group}/{info.version} is stored as {info.stored_as} but has no "
                          "converter: register one in conversion.CONVERTERS")
    return converter


def to_storage(info: resources.ResourceInfo, obj: Obj) -> Obj:
    """The object as it is stored (the same dict when the resource is stored as served)."""
    converter = converter_for(info)
    return obj if converter is None else converter.to_storage(obj)


def from_storage(info: resources.ResourceInfo, obj: Obj) -> Obj:
    """A stored object as this resource serves it (the same dict when stored as served).

    Converted objects are shallow copies sharing nested values with the stored object, which
    callers must treat as read-only, as they do stored objects.
    """
    converter = converter_for(info)
    return obj if converter is None else converter.from_storage(obj)


def field_selector(info: resources.ResourceInfo, sel: selectors.FieldSelector) -> selectors.FieldSelector:
    """A served form's field selector, with its labels renamed to the stored form's."""
    converter = converter_for(info)
    if converter is None or sel.is_empty():
        return sel
    labels = converter.field_labels
    return selectors.FieldSelector(tuple(
        selectors.FieldTerm(labels.get(t.field, t.field), t.value, t.negated) for t in sel.terms))
