"""The timeline recorder, against a bare simulated API server (the test plays the controllers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

from lwsconf.timeline import analysis, model
from lwsconf.waits import core, recorder
from tests.conftest import SimAPI

NS = "default"
L = "leaderworkerset.sigs.k8s.io/"


def pod(name: str, rev: str, owner: dict[str, Any] | None, *, size: int = 2) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {L + "name": "demo", L + "template-revision-hash": rev},
                            "annotations": {L + "size": str(size)}}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "python:3.12-slim"}]}}


def set_ready(api: client.ApiClient, name: str, ready: bool) -> None:
    core_api = client.CoreV1Api(api)
    obj = core_api.read_namespaced_pod(name, NS)
    obj.status = client.V1PodStatus(phase="Running", conditions=[
        client.V1PodCondition(type="Ready", status="True" if ready else "False")])
    core_api.replace_namespaced_pod_status(name, NS, obj)


def worker_sts(api: client.ApiClient, name: str, leader_uid: str) -> str:
    body = {"metadata": {"name": name, "labels": {L + "name": "demo"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": leader_uid,
                                              "controller": True}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "serviceName": "demo",
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    return str(client.AppsV1Api(api).create_namespaced_stateful_set(NS, body).metadata.uid)


def make_group(api: client.ApiClient, leader_rev: str, worker_rev: str) -> None:
    core_api = client.CoreV1Api(api)
    leader_uid = core_api.create_namespaced_pod(NS, pod("demo-0", leader_rev, None)).metadata.uid
    sts_uid = worker_sts(api, "demo-0", leader_uid)
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "demo-0", "uid": sts_uid, "controller": True}
    core_api.create_namespaced_pod(NS, pod("demo-0-1", worker_rev, owner))
    set_ready(api, "demo-0", True)
    set_ready(api, "demo-0-1", True)


def wait_for(timeline: model.Timeline, predicate: Any) -> None:
    def check() -> None:
        if not predicate(timeline):
            raise core.NotYet(analysis.describe(timeline))
    core.wait_until(check, what="timeline sample", timeout=10, poll=0.05)


def test_a_consistent_ready_group_is_sampled_ready_and_never_half_updated(sim_api: SimAPI, tmp_path: Path) -> None:
    out = tmp_path / "timeline.json"
    with recorder.record_timeline(sim_api.api, NS, "demo", path=out) as rec:
        rec.step("group created")
        make_group(sim_api.api, "r1", "r1")
        wait_for(rec.timeline, lambda tl: any(s.ready for s in tl.samples))
    timeline = rec.timeline
    assert analysis.half_updated(timeline) == []
    assert timeline.samples[-1].revision == "r1" and len(timeline.samples[-1].pods) == 2
    assert [s.text for s in timeline.steps] == ["group created"] and timeline.end is not None
    assert model.load(out) == timeline, "the file holds exactly what was recorded"


def test_a_ready_group_with_mixed_revisions_is_reported_half_updated(sim_api: SimAPI) -> None:
    with recorder.record_timeline(sim_api.api, NS, "demo") as rec:
        make_group(sim_api.api, "r2", "r1")
        wait_for(rec.timeline, analysis.half_updated)
    bad = analysis.half_updated(rec.timeline)[0]
    assert bad.group == 0 and bad.revisions == ("r1", "r2") and bad.mixed and bad.revision is None


def test_workers_of_a_worker_statefulset_owned_by_another_leader_are_not_members(sim_api: SimAPI) -> None:
    core_api = client.CoreV1Api(sim_api.api)
    with recorder.record_timeline(sim_api.api, NS, "demo") as rec:
        timeline = rec.timeline
        leader_uid = core_api.create_namespaced_pod(NS, pod("demo-0", "r2", None)).metadata.uid
        stale = worker_sts(sim_api.api, "demo-0", "0000-old-leader")
        owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "demo-0", "uid": stale}
        core_api.create_namespaced_pod(NS, pod("demo-0-1", "r1", owner))
        set_ready(sim_api.api, "demo-0-1", True)
        set_ready(sim_api.api, "demo-0", True)  # last: its sample is taken after the worker's events
        wait_for(timeline, lambda tl: any(s.pods and s.pods[0].ready for s in tl.samples))
    assert leader_uid and analysis.half_updated(timeline) == []
    assert all(not s.ready for s in timeline.samples)


def test_leader_statefulset_samples_track_replicas_and_partition(sim_api: SimAPI) -> None:
    apps = client.AppsV1Api(sim_api.api)
    body = {"metadata": {"name": "demo", "labels": {L + "name": "demo", L + "template-revision-hash": "r1"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "serviceName": "demo",
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    with recorder.record_timeline(sim_api.api, NS, "demo") as rec:
        apps.create_namespaced_stateful_set(NS, body)
        apps.patch_namespaced_stateful_set("demo", NS, {"spec": {"replicas": 3}})
        wait_for(rec.timeline, lambda tl: analysis.peak_leader_replicas(tl) == 3)
    assert [s.replicas for s in rec.timeline.leader_sts] == [2, 3]
    assert rec.timeline.leader_sts[0].partition == 2 and rec.timeline.leader_sts[0].revision == "r1"


def test_stop_ends_the_watches_at_once(sim_api: SimAPI, monkeypatch: Any) -> None:
    """stop() ends the open watch reads instead of waiting for the server to close them: with watches of 60 s,
    the threads are gone when it returns (it joins them for at most 10 s)."""
    monkeypatch.setattr(recorder, "WATCH_SECONDS", 60)
    rec = recorder.TimelineRecorder(sim_api.api, NS, "demo")
    rec.start()
    make_group(sim_api.api, "r1", "r1")
    wait_for(rec.timeline, lambda tl: any(s.ready for s in tl.samples))
    rec.stop()
    alive = [t.name for t in rec._threads if t.is_alive()]
    assert alive == [], f"watch threads still reading after stop(): {alive}"
    assert rec.timeline.errors == [], "ending the reads is no watch error"
