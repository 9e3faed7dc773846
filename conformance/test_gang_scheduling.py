"""Volcano gang scheduling (docs/lws-contract.md section 4.13): one PodGroup per group and revision.

With gang scheduling configured for Volcano, each leader pod gets a `scheduling.volcano.sh/v1beta1` PodGroup
`N-i-<rev>` that it controls, and every pod of the group names it in `scheduling.k8s.io/group-name`. The five
scenarios are upstream's e2e ones (test/e2e/e2e_gang_scheduling_test.go:64-156, the same in v0.9.0, v0.10.0
and main): both startup policies, deletion with the LWS, a resize and a template rollout. Upstream runs them
with Volcano's scheduler; nothing here needs it: the harness serves the PodGroup kind (its own CRD where the
cluster has none, lwsconf/podgroups.py) and the pods keep the default scheduler, so only what the API shows
is checked: the PodGroups' names, labels, owner, minMember and minResources (as upstream's
test/testutils/util.go:812-920 checks them), the pods' annotation, and which PodGroups exist when.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubernetes.client import ApiException
from kubernetes.utils import parse_quantity as _parse

from conformance.harness import LWSHarness, Obj, annotations_of, assert_fields, labels
from conformance.rollouts import change_template, leader_revision
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import core, observe
from lwsconf.waits.podwatch import PodWatch


def parse_quantity(value: object) -> Decimal:
    """A quantity's exact value (the official client's parser)."""
    return Decimal(_parse(value))  # type: ignore[no-untyped-call]


LEADER_REQUESTS = {"cpu": "50m", "memory": "64Mi"}
WORKER_REQUESTS = {"cpu": "10m", "memory": "32Mi"}
"""The probe's own requests (lwsconf/workloads.py); the leader asks for more, so a sum that swaps them shows."""


def _gang_lws(name: str, *, replicas: int, size: int, startup_policy: str | None = None,
              annotations: dict[str, str] | None = None) -> Obj:
    manifest = workloads.probe_lws(name, replicas=replicas, size=size, startup_policy=startup_policy,
                                   annotations=annotations)

    def leader_requests(template: Obj) -> None:
        template["spec"]["containers"][0]["resources"] = {"requests": dict(LEADER_REQUESTS)}

    return workloads.edit_templates(manifest, leader_requests, leader=True, worker=False)


def _min_resources(size: int) -> dict[str, Decimal]:
    """The leader's requests plus (size - 1) workers' (upstream's CalculatePGMinResources, utils.go:83-103)."""
    return {key: parse_quantity(LEADER_REQUESTS[key]) + (size - 1) * parse_quantity(WORKER_REQUESTS[key])
            for key in LEADER_REQUESTS}


def _podgroups(lws: LWSHarness, name: str) -> dict[str, Obj]:
    """Every PodGroup labelled with LWS `name`'s name, by name."""
    items = observe.raw(lws.custom.list_namespaced_custom_object(
        lwsapi.VOLCANO_GROUP, lwsapi.VOLCANO_VERSION, lws.namespace, lwsapi.PODGROUP_PLURAL,
        label_selector=f"{lwsapi.NAME}={name}", _preload_content=False))["items"]
    return {pg["metadata"]["name"]: pg for pg in items}


def _describe(podgroups: dict[str, Obj]) -> str:
    return "; ".join(f"{n} (revision {labels(pg).get(lwsapi.TEMPLATE_REVISION_HASH)}, minMember "
                     f"{(pg.get('spec') or {}).get('minMember')})" for n, pg in sorted(podgroups.items())) or "none"


def _check_podgroup(pg: Obj, *, leader: Obj, name: str, index: int, revision: str, min_member: int,
                    size: int) -> None:
    where = f"PodGroup {pg['metadata']['name']}"
    assert_fields(f"{where} labels", {lwsapi.NAME: name, lwsapi.GROUP_INDEX: str(index),
                                      lwsapi.TEMPLATE_REVISION_HASH: revision}, labels(pg))
    refs = pg["metadata"].get("ownerReferences") or []
    assert len(refs) == 1, \
        f"{where}: ownerReferences {refs}, want exactly one, the leader pod {leader['metadata']['name']}"
    assert_fields(f"{where} ownerReferences[0]",
                  {"apiVersion": "v1", "kind": "Pod", "name": leader["metadata"]["name"],
                   "uid": leader["metadata"]["uid"], "controller": True}, refs[0],
                  why={"uid": "the live leader pod's", "controller": "the leader pod controls its PodGroup"})
    spec: dict[str, Any] = pg.get("spec") or {}
    assert spec.get("minMember") == min_member, \
        f"{where}: spec.minMember is {spec.get('minMember')!r}, want {min_member} (4.13)"
    seen = {k: parse_quantity(v) for k, v in (spec.get("minResources") or {}).items()}
    want = _min_resources(size)
    wrong = [f"{k} is {seen.get(k)}, want {v}" for k, v in want.items() if seen.get(k) != v]
    assert not wrong, (f"{where}: spec.minResources {spec.get('minResources')!r}: {'; '.join(wrong)} (the leader "
                       f"template's requests {LEADER_REQUESTS} + {size - 1} x the worker's {WORKER_REQUESTS})")


def _podgroups_must_match(lws: LWSHarness, name: str, *, replicas: int, size: int, min_member: int) -> dict[str, Obj]:
    """Wait (create) until the current revision has exactly `replicas` PodGroups, `N-i-<rev>` for i < replicas,
    each as `_check_podgroup` wants against the live leader pod. Returns all PodGroups of `name`."""
    def podgroups_match() -> dict[str, Obj]:
        try:
            revision = leader_revision(lws, name)
        except ApiException as exc:
            if exc.status == 404:
                raise core.NotYet(f"no leader StatefulSet {name} yet") from None
            raise
        found = _podgroups(lws, name)
        current = {n for n, pg in found.items() if labels(pg).get(lwsapi.TEMPLATE_REVISION_HASH) == revision}
        want = {f"{name}-{i}-{revision}" for i in range(replicas)}
        assert current == want, f"PodGroups of revision {revision}: {sorted(current)}, want {sorted(want)}"
        for i in range(replicas):
            _check_podgroup(found[f"{name}-{i}-{revision}"], leader=lws.pod(f"{name}-{i}"), name=name, index=i,
                            revision=revision, min_member=min_member, size=size)
        return found

    return lws.wait(podgroups_match, what=f"{replicas} PodGroups of {name} for its current revision", within="create",
                    name=name)


def _pods_must_name_their_podgroup(lws: LWSHarness, name: str) -> None:
    """Every pod of `name` is annotated `scheduling.k8s.io/group-name: N-<group-index>-<its revision>`."""
    def pods_annotated() -> None:
        wrong = []
        for pod_name, pod in sorted(lws.pods(name).items()):
            pod_labels = labels(pod)
            want = f"{name}-{pod_labels.get(lwsapi.GROUP_INDEX)}-{pod_labels.get(lwsapi.TEMPLATE_REVISION_HASH)}"
            seen = annotations_of(pod).get(lwsapi.PODGROUP_GROUP_NAME)
            if seen != want:
                wrong.append(f"{pod_name}: {seen!r}, want {want!r}")
        assert not wrong, f"{lwsapi.PODGROUP_GROUP_NAME} annotations: {'; '.join(wrong)}"
    lws.wait(pods_annotated, what=f"every pod of {name} to name its PodGroup", within="create", name=name)


def _podgroups_must_be_only(lws: LWSHarness, name: str, revision: str) -> None:
    """Wait (delete) until no PodGroup of `name` of another revision is left: they go with their leaders."""
    def only_current() -> None:
        found = _podgroups(lws, name)
        stale = {n for n, pg in found.items() if labels(pg).get(lwsapi.TEMPLATE_REVISION_HASH) != revision}
        assert not stale, f"PodGroups of replaced leaders still there: {sorted(stale)}; all: {_describe(found)}"
    lws.wait(only_current, what=f"PodGroups of {name} of revisions other than {revision} to be gone", within="delete",
             name=name)


@conformance(short_name="PodGroupPerLeaderCreatedGroup", features={Feature.GANG_SCHEDULING},
             description="Each group of a LeaderCreated LWS has a PodGroup N-i-<rev> controlled by its leader pod, "
                         "minMember = size, minResources = leader + (size-1) workers' requests, the LWS's queue "
                         "annotation and volcano.sh/ annotations carried over; every pod names it (4.13).")
def test_podgroup_per_leader_created_group(lws: LWSHarness) -> None:
    annotations = {lwsapi.PODGROUP_QUEUE_NAME: "lwsconf-queue", f"{lwsapi.VOLCANO_ANNOTATION_PREFIX}lwsconf": "kept",
                   "example.com/other": "not-kept"}
    lws.create(_gang_lws("gang", replicas=2, size=4, startup_policy="LeaderCreated", annotations=annotations))
    lws.ready("gang", replicas=2, size=4)
    found = _podgroups_must_match(lws, "gang", replicas=2, size=4, min_member=4)
    for pg_name, pg in found.items():
        assert (pg.get("spec") or {}).get("queue") == "lwsconf-queue", \
            f"PodGroup {pg_name}: spec.queue is {(pg.get('spec') or {}).get('queue')!r}, want 'lwsconf-queue' " \
            f"(from the LWS's {lwsapi.PODGROUP_QUEUE_NAME} annotation)"
        carried = {k: v for k, v in annotations_of(pg).items() if k in annotations}
        assert carried == {f"{lwsapi.VOLCANO_ANNOTATION_PREFIX}lwsconf": "kept"}, \
            f"PodGroup {pg_name}: LWS annotations on it {carried}, want only the volcano.sh/ one"
    _pods_must_name_their_podgroup(lws, "gang")


@conformance(short_name="PodGroupPerLeaderReadyGroup", features={Feature.GANG_SCHEDULING,
                                                                 Feature.STARTUP_LEADER_READY},
             description="Under startupPolicy LeaderReady each group's PodGroup has minMember 1 (the leader alone "
                         "may start) and still the whole group's minResources (4.13).")
def test_podgroup_per_leader_ready_group(lws: LWSHarness) -> None:
    lws.create(_gang_lws("gangready", replicas=2, size=4, startup_policy="LeaderReady"))
    lws.ready("gangready", replicas=2, size=4)
    _podgroups_must_match(lws, "gangready", replicas=2, size=4, min_member=1)
    _pods_must_name_their_podgroup(lws, "gangready")


@conformance(short_name="PodGroupsDeletedWithTheLWS", features={Feature.GANG_SCHEDULING, Feature.DELETION},
             description="Deleting the LWS (foreground) removes its PodGroups with the leader pods that own "
                         "them (4.12, 4.13).")
def test_podgroups_deleted_with_the_lws(lws: LWSHarness) -> None:
    lws.create(_gang_lws("gangdel", replicas=1, size=2))
    lws.ready("gangdel", replicas=1, size=2)
    _podgroups_must_match(lws, "gangdel", replicas=1, size=2, min_member=2)
    lws.delete("gangdel", propagation="Foreground")
    lws.lws_must_be_gone("gangdel")

    def no_podgroup_left() -> None:
        left = _podgroups(lws, "gangdel")
        assert not left, f"PodGroups left after deleting gangdel: {_describe(left)}"
    lws.wait(no_podgroup_left, what="every PodGroup of gangdel to be garbage-collected", within="delete")


@conformance(short_name="PodGroupsRecreatedOnResize", slow=True,
             features={Feature.GANG_SCHEDULING, Feature.ROLLING_UPDATE},
             description="Changing size rolls every group to a new revision with a new PodGroup whose minMember and "
                         "minResources follow the new size; the old revision's PodGroups go with the old "
                         "leaders (4.4.1, 4.13).")
def test_podgroups_recreated_on_resize(lws: LWSHarness) -> None:
    lws.create(_gang_lws("gangsize", replicas=2, size=2))
    lws.ready("gangsize", replicas=2, size=2)
    _podgroups_must_match(lws, "gangsize", replicas=2, size=2, min_member=2)
    old = leader_revision(lws, "gangsize")
    lws.patch("gangsize", {"spec": {"leaderWorkerTemplate": {"size": 4}}}, step="size 2 -> 4")
    new = lws.rollout_must_complete("gangsize", old=old, replicas=2, size=4)
    _podgroups_must_match(lws, "gangsize", replicas=2, size=4, min_member=4)
    _podgroups_must_be_only(lws, "gangsize", new)
    _pods_must_name_their_podgroup(lws, "gangsize")


@conformance(short_name="PodGroupsRecreatedOnRollingUpdate", slow=True,
             features={Feature.GANG_SCHEDULING, Feature.ROLLING_UPDATE},
             description="A template rollout gives every group a PodGroup of the new revision owned by its new "
                         "leader pod; the old revision's PodGroups go with the old leaders (4.4, 4.13).")
def test_podgroups_recreated_on_rolling_update(lws: LWSHarness) -> None:
    manifest = _gang_lws("gangroll", replicas=2, size=3)
    lws.create(manifest)
    lws.ready("gangroll", replicas=2, size=3)
    before = _podgroups_must_match(lws, "gangroll", replicas=2, size=3, min_member=3)
    old = leader_revision(lws, "gangroll")
    change_template(lws, "gangroll", manifest, "2")
    new = lws.rollout_must_complete("gangroll", old=old, replicas=2, size=3)
    after = _podgroups_must_match(lws, "gangroll", replicas=2, size=3, min_member=3)
    assert not set(before) & {n for n, pg in after.items() if labels(pg).get(lwsapi.TEMPLATE_REVISION_HASH) == new}, \
        f"a PodGroup of the old revision {old} was kept for the new one {new}: before {sorted(before)}, after " \
        f"{sorted(after)}"
    _podgroups_must_be_only(lws, "gangroll", new)
    _pods_must_name_their_podgroup(lws, "gangroll")


@conformance(short_name="PodGroupRecreatedWithItsGroup", features={Feature.GANG_SCHEDULING, Feature.GROUP_RESTART},
             description="When a worker's deletion recreates its group, the group's PodGroup goes with the old "
                         "leader pod and the new leader gets one of the same name, controlled by it (4.2, 4.13).")
def test_podgroup_recreated_with_its_group(lws: LWSHarness) -> None:
    lws.create(_gang_lws("gangrst", replicas=2, size=2))
    before = lws.ready("gangrst", replicas=2, size=2)
    old = _podgroups_must_match(lws, "gangrst", replicas=2, size=2, min_member=2)
    lws.delete_pod("gangrst-1-1")
    lws.group_must_be_recreated("gangrst", 1, before[1].uids, size=2)
    after = _podgroups_must_match(lws, "gangrst", replicas=2, size=2, min_member=2)
    assert set(after) == set(old), f"PodGroups before the restart {sorted(old)}, after {sorted(after)}: same names"
    untouched = old[f"gangrst-0-{leader_revision(lws, 'gangrst')}"]["metadata"]["uid"]
    assert after[f"gangrst-0-{leader_revision(lws, 'gangrst')}"]["metadata"]["uid"] == untouched, \
        "group 0's PodGroup was replaced though group 0 was not restarted"


@conformance(short_name="PodGroupBeforeTheLeaderIsReady", features={Feature.GANG_SCHEDULING,
                                                                    Feature.STARTUP_LEADER_READY},
             description="Under LeaderReady a group's PodGroup exists while its leader is still unready and its "
                         "worker StatefulSet is not made yet: the scheduler needs it for the leader (4.1, 4.13).")
def test_podgroup_before_the_leader_is_ready(lws: LWSHarness) -> None:
    lws.create(workloads.start_unready(_gang_lws("gangwait", replicas=2, size=3, startup_policy="LeaderReady")))
    _podgroups_must_match(lws, "gangwait", replicas=2, size=3, min_member=1)

    def still_no_workers() -> None:
        workers = sorted(s for s in lws.statefulsets() if s != "gangwait")
        assert not workers, f"worker StatefulSets {workers} exist while both leaders are unready (LeaderReady, 4.1)"
        unready = [p for p in ("gangwait-0", "gangwait-1") if not observe.pod_ready(lws.pod(p))]
        assert unready == ["gangwait-0", "gangwait-1"], f"leaders held unready: only {unready}"
    lws.hold(still_no_workers, what="both leaders unready and no worker StatefulSet, with their PodGroups made",
             name="gangwait")


@conformance(short_name="PodGroupForSingletonGroups", features={Feature.GANG_SCHEDULING},
             description="Groups of one pod (size 1, no worker StatefulSet) get a PodGroup each too, minMember 1, "
                         "minResources the leader's requests (4.13).")
def test_podgroup_for_singleton_groups(lws: LWSHarness) -> None:
    lws.create(_gang_lws("gangone", replicas=2, size=1))
    lws.ready("gangone", replicas=2, size=1)
    _podgroups_must_match(lws, "gangone", replicas=2, size=1, min_member=1)
    _pods_must_name_their_podgroup(lws, "gangone")


class _FirstSight:
    """Each pod of an LWS as the first watch event showed it (a watch from before the LWS exists)."""

    def __init__(self, lws: LWSHarness, name: str) -> None:
        self.first: dict[str, Obj] = {}
        self.watch = PodWatch(lws.api, lws.namespace, f"{lwsapi.NAME}={name}", self._event, name="pod-first-sight")

    def start(self) -> None:
        listed = self.watch.start()
        if listed:
            self.watch.stop("first sightings are unknown")
        assert not listed, f"pods exist before the LWS: {[p['metadata']['name'] for p in listed]}"

    def stop(self) -> dict[str, Obj]:
        self.watch.stop("first sightings are unknown")
        return dict(self.first)

    def _event(self, kind: str, pod: Obj) -> None:
        if kind == "ADDED":
            self.first.setdefault(pod["metadata"]["uid"], pod)


@conformance(short_name="PodsNamedTheirPodGroupAtCreation", features={Feature.GANG_SCHEDULING},
             description="Every pod carries scheduling.k8s.io/group-name = N-i-<rev> already when it is created "
                         "(upstream's pod webhook sets it at admission), so a gang scheduler never sees it without "
                         "its PodGroup (3.4, 4.13).")
def test_pods_named_their_podgroup_at_creation(lws: LWSHarness) -> None:
    sight = _FirstSight(lws, "gangborn")
    sight.start()
    lws.create(_gang_lws("gangborn", replicas=2, size=3))
    lws.ready("gangborn", replicas=2, size=3)
    first = sight.stop()
    revision = leader_revision(lws, "gangborn")
    want = {f"gangborn-{i}{'' if j == 0 else f'-{j}'}": f"gangborn-{i}-{revision}" for i in range(2) for j in range(3)}
    seen = {pod["metadata"]["name"]: annotations_of(pod).get(lwsapi.PODGROUP_GROUP_NAME) for pod in first.values()}
    assert_fields(f"{lwsapi.PODGROUP_GROUP_NAME} of each pod as first seen (watch ADDED)", want, seen, exact=True)
