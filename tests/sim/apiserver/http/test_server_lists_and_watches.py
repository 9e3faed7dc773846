"""Lists (selectors, paging) and watches (resume, 410, bookmarks, WatchList) through the official client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.conftest import SimAPI, start_sim_api
from tests.sim.apiserver.http.test_server_objects import pod


@pytest.fixture
def labelled(sim_api: SimAPI) -> client.CoreV1Api:
    core = client.CoreV1Api(sim_api.api)
    for i in range(6):
        core.create_namespaced_pod("default", pod(f"p{i}", {"app": "a" if i < 4 else "b", "tier": str(i % 2)}))
    core.create_namespaced_pod("kube-system", pod("other", {"app": "a"}))
    return core


def names(items: list[client.V1Pod]) -> list[str]:
    return [p.metadata.name for p in items]


def test_equality_and_set_based_label_selectors(labelled: client.CoreV1Api) -> None:
    assert names(labelled.list_namespaced_pod("default", label_selector="app=a").items) == ["p0", "p1", "p2", "p3"]
    assert names(labelled.list_namespaced_pod("default", label_selector="app=a,tier!=0").items) == ["p1", "p3"]
    assert names(labelled.list_namespaced_pod("default", label_selector="app in (b),tier").items) == ["p4", "p5"]
    assert names(labelled.list_namespaced_pod("default", label_selector="!tier").items) == []
    assert len(labelled.list_pod_for_all_namespaces(label_selector="app=a").items) == 5


def test_field_selectors_on_name_and_phase(labelled: client.CoreV1Api) -> None:
    assert names(labelled.list_namespaced_pod("default", field_selector="metadata.name=p2").items) == ["p2"]
    assert len(labelled.list_namespaced_pod("default", field_selector="status.phase=Pending").items) == 6
    assert labelled.list_namespaced_pod("default", field_selector="spec.nodeName=").items


def test_unsupported_field_selector_is_400(labelled: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        labelled.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert err.value.status == 400 and "field label not supported" in json.loads(err.value.body)["message"]


def test_limit_and_continue_page_through_everything(labelled: client.CoreV1Api) -> None:
    seen: list[str] = []
    token = None
    while True:
        page = labelled.list_namespaced_pod("default", limit=4, _continue=token)
        seen += names(page.items)
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"p{i}" for i in range(6)]


def test_watch_resumes_from_a_list_resource_version(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x")))
    core.delete_namespaced_config_map("x", "default")
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1)]
    assert events == [("ADDED", "x"), ("DELETED", "x")]


def test_watch_without_resource_version_starts_with_current_state(labelled: client.CoreV1Api) -> None:
    events = list(watch.Watch().stream(labelled.list_namespaced_pod, "default", label_selector="app=b",
                                       timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "p4"), ("ADDED", "p5")]


def test_filtered_watch_sees_objects_leaving_the_selection_as_deleted(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    core.create_namespaced_pod("default", pod("m", {"app": "a"}))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.patch_namespaced_pod("m", "default", {"metadata": {"labels": {"app": "z"}}})
    core.patch_namespaced_pod("m", "default", {"metadata": {"labels": {"app": "a"}}})
    events = [e["type"] for e in watch.Watch().stream(core.list_namespaced_pod, "default", label_selector="app=a",
                                                      resource_version=rv, timeout_seconds=1)]
    assert events == ["DELETED", "ADDED"]


def test_watch_from_a_compacted_resource_version_gets_410(tmp_path: Path) -> None:
    sim, loop = start_sim_api(tmp_path, history_size=5)
    try:
        core = client.CoreV1Api(sim.api)
        old_rv = core.list_namespaced_config_map("default").metadata.resource_version
        for i in range(10):
            core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"c{i}")))
        with pytest.raises(ApiException) as err:
            list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old_rv,
                                      timeout_seconds=1))
        assert err.value.status == 410
    finally:
        sim.api.close()
        loop.run(sim.server.stop())
        loop.stop()


def test_watchlist_sends_initial_events_then_an_annotated_bookmark(labelled: client.CoreV1Api,
                                                                   sim_api: SimAPI) -> None:
    reply = sim_api.request(
        "GET", "/api/v1/namespaces/default/pods",
        params={"watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true",
                "resourceVersionMatch": "NotOlderThan", "labelSelector": "app=b", "timeoutSeconds": "1"},
    )
    lines = [json.loads(line) for line in reply.text.splitlines() if line.strip()]
    assert [e["type"] for e in lines] == ["ADDED", "ADDED", "BOOKMARK"]
    assert lines[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


CMS = "/api/v1/namespaces/default/configmaps"


def test_watch_list_needs_not_older_than_and_bookmarks(sim_api: SimAPI) -> None:
    """watch/watch-errors/send-initial-without-match: ValidateListOptions' 422 for sendInitialEvents."""
    reply = sim_api.request("GET", CMS, params={"watch": "true", "timeoutSeconds": "1", "sendInitialEvents": "true",
                                                "allowWatchBookmarks": "true"})
    assert reply.status_code == 422
    assert reply.json()["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                                       "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")


def test_watch_list_without_bookmarks_is_accepted(sim_api: SimAPI) -> None:
    """watch/watch-errors/send-initial-without-bookmarks: kube-apiserver 1.37.2 answers 200."""
    reply = sim_api.request("GET", CMS, params={"watch": "true", "timeoutSeconds": "1", "sendInitialEvents": "true",
                                                "resourceVersionMatch": "NotOlderThan"})
    assert reply.status_code == 200
    assert "BOOKMARK" not in reply.text, "no initial-events-end BOOKMARK without allowWatchBookmarks"
