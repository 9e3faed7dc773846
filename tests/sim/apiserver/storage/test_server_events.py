"""Core v1 and events.k8s.io/v1 Events are one resource: written through either API, seen through both.

kube-apiserver stores both as core v1 Events and converts per request (`lwsconf.sim.apiserver.storage.conversion`
cites the upstream sources). The server tests drive both typed v37 clients (`CoreV1Api`,
`EventsV1Api`); the unit tests pin the field mapping itself.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from lwsconf.sim.apiserver.apimachinery import selectors
from lwsconf.sim.apiserver.schema import discovery
from lwsconf.sim.apiserver.storage import conversion, resources
from tests.conftest import SimAPI

EVENT_TIME = datetime(2026, 1, 10, 12, 0, 0, 123456, tzinfo=UTC)
SEEN = datetime(2026, 1, 10, 11, 58, 0, tzinfo=UTC)
REGISTRY = resources.Registry()


def served(group: str) -> resources.ResourceInfo:
    info = REGISTRY.lookup(group, "v1", "events")
    assert info is not None
    return info


CORE_INFO, EVENTS_INFO = served(""), served("events.k8s.io")


def pod_ref(name: str) -> client.V1ObjectReference:
    return client.V1ObjectReference(kind="Pod", name=name, namespace="default", api_version="v1", uid=f"uid-{name}")


def new_style(name: str, about: str = "web-0", **fields: Any) -> client.EventsV1Event:
    """An event as an events.k8s.io/v1 recorder writes it."""
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(name=name), regarding=pod_ref(about), event_time=EVENT_TIME,
        reporting_controller="example.com/ctl", reporting_instance="ctl-1", action="Create", reason="Created",
        type="Normal", note=f"created {about}", **fields)


def old_style(name: str, about: str = "web-1", **fields: Any) -> client.CoreV1Event:
    """An event as a core v1 recorder (the kubelet) writes it, with an eventTime so EventsV1Api can read it."""
    return client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=name), involved_object=pod_ref(about), reason="Pulled",
        message=f"pulled image for {about}", type="Normal",
        source=client.V1EventSource(component="kubelet", host="node-1"), first_timestamp=SEEN,
        last_timestamp=SEEN, count=3, event_time=EVENT_TIME, reporting_component="kubelet",
        reporting_instance="node-1", action="Pull", **fields)


@pytest.fixture
def apis(sim_api: SimAPI) -> tuple[client.CoreV1Api, client.EventsV1Api]:
    return client.CoreV1Api(sim_api.api), client.EventsV1Api(sim_api.api)


def names(items: list[Any]) -> list[str]:
    return [i.metadata.name for i in items]


# --- through the server -----------------------------------------------------------------------------

def test_event_created_through_events_api_is_read_and_listed_through_core(
        apis: tuple[client.CoreV1Api, client.EventsV1Api]) -> None:
    core, events = apis
    series = client.EventsV1EventSeries(count=2, last_observed_time=EVENT_TIME)
    created = events.create_namespaced_event("default", new_style("e1", series=series, related=pod_ref("web-9")))
    got = core.read_namespaced_event("e1", "default")
    assert (got.api_version, got.kind) == ("v1", "Event")
    assert (got.metadata.uid, got.metadata.resource_version) == (created.metadata.uid,
                                                                 created.metadata.resource_version)
    assert (got.involved_object.name, got.involved_object.uid, got.message) == ("web-0", "uid-web-0", "created web-0")
    assert (got.reporting_component, got.reporting_instance) == ("example.com/ctl", "ctl-1")
    assert (got.action, got.reason, got.type, got.event_time) == ("Create", "Created", "Normal", EVENT_TIME)
    assert (got.series.count, got.series.last_observed_time, got.related.name) == (2, EVENT_TIME, "web-9")
    # Go's zero values as kube-apiserver 1.37.2 shows an events.k8s.io Event through core/v1 (kube-scheduler's,
    # held-out fidelity corpus): no count, null timestamps, an empty source struct
    assert (got.count, got.first_timestamp, got.last_timestamp) == (None, None, None)
    assert (got.source.component, got.source.host) == (None, None)
    assert names(core.list_namespaced_event("default").items) == ["e1"]
    assert names(core.list_event_for_all_namespaces().items) == ["e1"]
    assert names(events.list_namespaced_event("default").items) == ["e1"]


def test_event_created_through_core_is_read_and_listed_through_events_api(
        apis: tuple[client.CoreV1Api, client.EventsV1Api]) -> None:
    core, events = apis
    created = core.create_namespaced_event("default", old_style("k1"))
    got = events.read_namespaced_event("k1", "default")
    assert (got.api_version, got.kind, got.metadata.uid) == ("events.k8s.io/v1", "Event", created.metadata.uid)
    assert (got.regarding.name, got.note) == ("web-1", "pulled image for web-1")
    assert (got.deprecated_source.component, got.deprecated_source.host) == ("kubelet", "node-1")
    assert (got.deprecated_count, got.deprecated_first_timestamp, got.deprecated_last_timestamp) == (3, SEEN, SEEN)
    assert (got.reporting_controller, got.reporting_instance, got.action) == ("kubelet", "node-1", "Pull")
    assert (got.reason, got.type, got.event_time) == ("Pulled", "Normal", EVENT_TIME)
    assert names(events.list_namespaced_event("default").items) == ["k1"]
    assert names(events.list_event_for_all_namespaces().items) == ["k1"]


def test_raw_bodies_use_only_each_forms_own_field_names(sim_api: SimAPI,
                                                        apis: tuple[client.CoreV1Api, client.EventsV1Api]) -> None:
    core, _ = apis
    core.create_namespaced_event("default", old_style("k1"))
    as_new = sim_api.request("GET", "/apis/events.k8s.io/v1/namespaces/default/events/k1").json()
    as_old = sim_api.request("GET", "/api/v1/namespaces/default/events/k1").json()
    assert not {"involvedObject", "message", "source", "count", "reportingComponent"} & set(as_new), as_new
    assert not {"regarding", "note", "deprecatedSource", "deprecatedCount", "reportingController"} & set(as_old), as_old
    assert as_new["metadata"] == as_old["metadata"]


def test_watch_through_one_api_sees_writes_through_the_other(
        apis: tuple[client.CoreV1Api, client.EventsV1Api]) -> None:
    core, events = apis
    rv = events.list_namespaced_event("default").metadata.resource_version
    core.create_namespaced_event("default", old_style("k1"))
    core.patch_namespaced_event("k1", "default", {"message": "pulled again"})
    events.create_namespaced_event("default", new_style("e1"))
    core.delete_namespaced_event("k1", "default")
    seen = [(e["type"], e["object"].metadata.name, e["object"].note) for e in watch.Watch().stream(
        events.list_namespaced_event, "default", resource_version=rv, timeout_seconds=1)]
    assert seen == [("ADDED", "k1", "pulled image for web-1"), ("MODIFIED", "k1", "pulled again"),
                    ("ADDED", "e1", "created web-0"), ("DELETED", "k1", "pulled again")]
    old_view = [(e["type"], e["object"].metadata.name, e["object"].message) for e in watch.Watch().stream(
        core.list_namespaced_event, "default", timeout_seconds=1)]
    assert old_view == [("ADDED", "e1", "created web-0")]


def test_field_selectors_use_each_forms_labels(apis: tuple[client.CoreV1Api, client.EventsV1Api]) -> None:
    core, events = apis
    events.create_namespaced_event("default", new_style("e1", about="web-0"))
    core.create_namespaced_event("default", old_style("k1", about="web-1"))

    def listed(api: Any, selector: str) -> list[str]:
        return names(api.list_namespaced_event("default", field_selector=selector).items)

    assert listed(events, "regarding.name=web-1") == ["k1"]
    assert listed(events, "regarding.kind=Pod,regarding.uid=uid-web-0") == ["e1"]
    assert listed(events, "reportingController=kubelet") == ["k1"]
    assert listed(events, "source=kubelet,type=Normal") == ["k1"]
    assert listed(core, "involvedObject.name=web-0") == ["e1"]
    assert listed(core, "reportingComponent=example.com/ctl") == ["e1"]
    assert listed(core, "reportingComponent!=example.com/ctl") == ["k1"]
    watched = [e["object"].metadata.name for e in watch.Watch().stream(
        events.list_namespaced_event, "default", field_selector="regarding.name=web-1", timeout_seconds=1)]
    assert watched == ["k1"]
    with pytest.raises(ApiException) as err:
        events.list_namespaced_event("default", field_selector="involvedObject.name=web-0")
    assert err.value.status == 400 and "field label not supported" in json.loads(err.value.body)["message"]


def test_each_api_keeps_its_own_validation_on_shared_objects(
        apis: tuple[client.CoreV1Api, client.EventsV1Api]) -> None:
    core, events = apis
    core.create_namespaced_event("default", old_style("k1"))
    assert core.patch_namespaced_event("k1", "default", {"message": "core may edit"}).message == "core may edit"
    with pytest.raises(ApiException) as err:
        events.patch_namespaced_event("k1", "default", {"note": "events.k8s.io may not"})
    status = json.loads(err.value.body)
    assert err.value.status == 422 and [c["field"] for c in status["details"]["causes"]] == ["message"], status
    assert events.read_namespaced_event("k1", "default").note == "core may edit"
    with pytest.raises(ApiException) as taken:
        events.create_namespaced_event("default", new_style("k1"))
    assert taken.value.status == 409, taken.value.body


def test_delete_through_one_api_removes_the_event_from_both(
        apis: tuple[client.CoreV1Api, client.EventsV1Api]) -> None:
    core, events = apis
    events.create_namespaced_event("default", new_style("e1"))
    core.create_namespaced_event("default", old_style("k1"))
    core.delete_namespaced_event("e1", "default")
    assert names(events.list_namespaced_event("default").items) == ["k1"]
    events.delete_collection_namespaced_event("default")
    assert core.list_namespaced_event("default").items == []
    with pytest.raises(ApiException) as err:
        events.read_namespaced_event("k1", "default")
    assert err.value.status == 404


def test_discovery_gives_both_event_resources_one_storage_version_hash(sim_api: SimAPI) -> None:
    core_list = client.CoreV1Api(sim_api.api).get_api_resources().resources
    events_list = client.EventsV1Api(sim_api.api).get_api_resources().resources
    core_hash = next(r.storage_version_hash for r in core_list if r.name == "events")
    events_hash = next(r.storage_version_hash for r in events_list if r.name == "events")
    pods_hash = next(r.storage_version_hash for r in core_list if r.name == "pods")
    assert core_hash == events_hash != pods_hash


# --- the conversion itself ------------------------------------------------------------------------

FULL_NEW: dict[str, Any] = {
    "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
    "regarding": {"kind": "Pod", "name": "p"}, "note": "n", "deprecatedSource": {"component": "c", "host": "h"},
    "deprecatedFirstTimestamp": "2026-01-10T11:58:00Z", "deprecatedLastTimestamp": "2026-01-10T11:59:00Z",
    "deprecatedCount": 4, "reportingController": "ctl", "reportingInstance": "i", "action": "A", "reason": "R",
    "type": "Warning", "eventTime": "2026-01-10T12:00:00.000000Z", "related": {"kind": "Node", "name": "n1"},
    "series": {"count": 2, "lastObservedTime": "2026-01-10T12:01:00.000000Z"},
}
FULL_OLD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "p"}, "message": "n", "source": {"component": "c", "host": "h"},
    "firstTimestamp": "2026-01-10T11:58:00Z", "lastTimestamp": "2026-01-10T11:59:00Z",
    "count": 4, "reportingComponent": "ctl", "reportingInstance": "i", "action": "A", "reason": "R",
    "type": "Warning", "eventTime": "2026-01-10T12:00:00.000000Z", "related": {"kind": "Node", "name": "n1"},
    "series": {"count": 2, "lastObservedTime": "2026-01-10T12:01:00.000000Z"},
}


def test_every_events_v1_field_maps_onto_its_core_field_and_back() -> None:
    assert conversion.to_storage(EVENTS_INFO, FULL_NEW) == FULL_OLD
    assert conversion.from_storage(EVENTS_INFO, FULL_OLD) == FULL_NEW


def test_the_other_forms_field_names_are_dropped_as_unknown_fields() -> None:
    stored = conversion.to_storage(EVENTS_INFO, {**FULL_NEW, "message": "stray", "count": 9})
    assert (stored["message"], stored["count"]) == ("n", 4)
    bare = conversion.to_storage(EVENTS_INFO, {"metadata": {"name": "e"}})
    assert bare["involvedObject"] == {}, "the Go struct is always serialized, and the v37 client requires it"


def test_resources_stored_as_served_are_passed_through_uncopied() -> None:
    assert conversion.to_storage(CORE_INFO, FULL_OLD) is FULL_OLD
    assert conversion.from_storage(CORE_INFO, FULL_OLD) is FULL_OLD
    sel = selectors.FieldSelector.parse("involvedObject.name=p")
    assert conversion.field_selector(CORE_INFO, sel) is sel


def test_events_v1_field_labels_map_to_core_labels() -> None:
    sel = selectors.FieldSelector.parse("regarding.name=p,reportingController!=c,type=Normal,source=s")
    assert str(conversion.field_selector(EVENTS_INFO, sel)) == (
        "involvedObject.name=p,reportingComponent!=c,type=Normal,source=s")


def test_events_v1_shares_the_core_event_table_and_hash() -> None:
    assert EVENTS_INFO.storage_key == CORE_INFO.storage_key == ("", "events")
    assert EVENTS_INFO.key == ("events.k8s.io", "events"), "defaults and validation stay per form"
    assert discovery.storage_version_hash(EVENTS_INFO) == discovery.storage_version_hash(CORE_INFO)


def test_every_resource_stored_in_another_form_has_a_converter() -> None:
    for info in REGISTRY.all():
        if info.stored_as is not None:
            assert conversion.converter_for(info) is not None, info
            assert REGISTRY.lookup(*info.stored_as) is not None, f"{info.stored_as} is not served"
    orphan = resources.ResourceInfo(group="x.io", version="v1", plural="things", kind="Thing", namespaced=True,
                                    stored_as=("", "v1", "configmaps"))
    with pytest.raises(LookupError, match="register one in conversion.CONVERTERS"):
        conversion.to_storage(orphan, {})
