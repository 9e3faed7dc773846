"""Rolling-update strategy knobs (docs/lws-contract.md §4.4.3-4.4.7): maxSurge, percentages, partition.

Surge is observed where it lives: the leader StatefulSet's `replicas` during the rollout (the peak must
match the traces of 4.4.5, which are not simply R + maxSurge, T13) and back to R at the end, while
the timeline shows availability never dropping below R with maxUnavailable 0. Every test records its
timeline (`lws.timeline`) for the report's picture. Partition holds the
groups below it on the old revision (T14) and lowering it resumes the rollout. The cap of maxSurge at R
shows only in the leader StatefulSet's own `maxUnavailable` (2.2), checked where the API server keeps
that field (the MaxUnavailableStatefulSet feature, on by default since Kubernetes 1.35). A group held
below the partition that fails is recreated from its own old revision (template and size), not from the
LWS's current spec.
"""

from __future__ import annotations

from conformance.harness import LWSHarness, annotations_of, controller_of
from conformance.rollouts import assert_at_most_down, group_revision, roll_template, rolling_update
from conformance.rollouts import change_template as change
from conformance.rollouts import leader_revision as revision
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import analysis
from lwsconf.waits import lws as lws_waits
from lwsconf.waits import observe


@conformance(short_name="MaxSurgeKeepsCapacity", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE},
             description="maxUnavailable 0 / maxSurge 1 with R=2: the leader StatefulSet peaks at 3, ready groups "
                         "never drop below 2 (4.4.5).")
def test_max_surge_keeps_capacity(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("surge", replicas=2, size=2, rollout=rolling_update(maxUnavailable=0, maxSurge=1))
    lws.create(manifest)
    lws.ready("surge", replicas=2, size=2)
    timeline, _, _ = roll_template(lws, "surge", manifest, replicas=2, size=2)
    assert analysis.peak_leader_replicas(timeline) == 3, \
        f"peak leader replicas, want 3:\n{analysis.describe(timeline)}"
    assert any(s.group == 2 and s.ready for s in timeline.samples), "the surge group 2 never became ready"
    # Capacity counts what the controller took down (the surge group 2 down until first ready, and again once
    # removed), not readiness flaps of untouched groups: against upstream v0.9.0 on sim (run
    # 20261203-072002-391a) old group 0's leader, never replaced, failed a 1s readiness probe under load
    # and min_ready gave 1, with no act of the controller.
    assert_at_most_down(timeline, range(3), 1, "maxUnavailable 0 with maxSurge 1 keeps 2 of groups 0..2 up (4.4.5)")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    assert lws.statefulsets()["surge"]["spec"]["replicas"] == 2


@conformance(short_name="MaxSurgeCappedAtReplicas", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE},
             description="maxSurge 4 with R=2 is capped at R: leader StatefulSet maxUnavailable 3 (not 5), peak 3 as "
                         "in 4.4.5 (2.2, T11, T13).")
def test_max_surge_capped_at_replicas(lws: LWSHarness) -> None:
    # The cap shows in no pod's life: the surge (wantReplicas) only compares maxSurge with the number of
    # outdated groups, never more than R, and the partition step cancels maxSurge out (4.4.4). It shows in
    # the leader StatefulSet's own maxUnavailable, max(1, maxUnavailable + maxSurge) with maxSurge capped
    # (2.2): the StatefulSet controller's budget for replacing leaders at once.
    manifest = workloads.probe_lws("cap", replicas=2, size=2, rollout=rolling_update(maxSurge=4))
    lws.create(manifest)
    lws.ready("cap", replicas=2, size=2)
    kept = _server_keeps_statefulset_max_unavailable(lws)
    if kept:
        _assert_leader_max_unavailable([_leader_max_unavailable(lws, "cap")], "at rest")
    timeline, _, _ = roll_template(lws, "cap", manifest, replicas=2, size=2)
    assert analysis.peak_leader_replicas(timeline) == 3, \
        f"peak leader replicas, want 3:\n{analysis.describe(timeline)}"
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    if kept:
        _assert_leader_max_unavailable([s.max_unavailable for s in timeline.leader_sts], "during the rollout",
                                       analysis.describe(timeline))


_CAPPED = ("want 3 = max(1, maxUnavailable 1 + min(maxSurge 4, replicas 2)): maxSurge is capped at replicas "
           "(2.2, 4.4.3, T11); 5 means the cap is missing")


def _assert_leader_max_unavailable(seen: list[object], when: str, timeline: str = "") -> None:
    wrong = sorted({str(v) for v in seen if str(v) != "3"})
    assert not wrong, (f"leader StatefulSet 'cap': spec.updateStrategy.rollingUpdate.maxUnavailable {when} is "
                       f"{', '.join(wrong)}, {_CAPPED}" + (f"\n{timeline}" if timeline else ""))


def _leader_max_unavailable(lws: LWSHarness, name: str) -> object:
    spec = lws.statefulsets()[name]["spec"]
    return ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable")


def _server_keeps_statefulset_max_unavailable(lws: LWSHarness) -> bool:
    """Whether this API server keeps a StatefulSet's `rollingUpdate.maxUnavailable` (asked by a dry-run create).

    Without the MaxUnavailableStatefulSet feature (alpha before Kubernetes 1.35, beta and on since) the
    server drops the field on write (kubernetes/kubernetes pkg/registry/apps/statefulset/strategy.go,
    `dropStatefulSetDisabledFields`), so no implementation can show it there.
    """
    labels = {"app": "lwsconf-max-unavailable-check"}
    body = {"metadata": {"name": "lwsconf-max-unavailable-check"},
            "spec": {"selector": {"matchLabels": labels}, "serviceName": "lwsconf-max-unavailable-check",
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}
    created = observe.raw(lws.apps.create_namespaced_stateful_set(
        lws.namespace, body, dry_run="All", _preload_content=False))  # type: ignore[arg-type]
    return ((created["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable") == 2


@conformance(short_name="PercentagesRoundAsSpecified", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE,
                       Feature.ROLLING_UPDATE_MAX_UNAVAILABLE},
             description="With R=3, maxUnavailable 50% rounds down to 1 and maxSurge 50% up to 2: peak 5, leader "
                         "maxUnavailable 3 (4.4.3, T11).")
def test_percentages_round_as_specified(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("pct", replicas=3, size=2,
                                   rollout=rolling_update(maxUnavailable="50%", maxSurge="50%"))
    lws.create(manifest)
    lws.ready("pct", replicas=3, size=2)
    timeline, old, _ = roll_template(lws, "pct", manifest, replicas=3, size=2)
    assert analysis.peak_leader_replicas(timeline) == 5, \
        f"peak leader replicas, want 3 + ceil(1.5):\n{analysis.describe(timeline)}"
    seen = {str(s.max_unavailable) for s in timeline.leader_sts if s.revision != old}
    if _server_keeps_statefulset_max_unavailable(lws):
        assert "3" in seen, f"leader StatefulSet maxUnavailable values {seen}, want max(1, 1 + 2) = 3"
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)


@conformance(short_name="PartitionHoldsLowerGroups", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION},
             description="Groups below partition keep the old revision while the LWS is Available; lowering it to 0 "
                         "finishes (4.4.6, T14).")
def test_partition_holds_lower_groups(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("part", replicas=3, size=2, rollout=rolling_update(partition=1))
    lws.create(manifest)
    before = lws.ready("part", replicas=3, size=2)
    old = revision(lws, "part")

    def upper_updated() -> str:
        revs = [group_revision(lws, "part", i) for i in (1, 2)]
        assert revs[0] and revs[0] == revs[1] and revs[0] != old, f"groups 1, 2 on {revs}"
        status = lws.get("part").get("status") or {}
        assert status.get("updatedReplicas") == 2, f"status {status}"
        return str(revs[0])

    def group_zero_stays() -> None:
        assert lws.groups("part")[0].uids == before[0].uids and group_revision(lws, "part", 0) == old
        assert lws.statefulsets()["part"]["spec"]["updateStrategy"]["rollingUpdate"].get("partition") == 1
    with lws.timeline("part"):
        change(lws, "part", manifest, "2")
        new = lws.wait(upper_updated, what="groups 1 and 2 to be updated", within="rollout_complete", name="part")
        lws.lws_must_be_available("part")
        lws.hold(group_zero_stays, what="group 0 stays on the old revision below partition 1", name="part")
        assert len(lws.revisions("part")) == 2, "the old revision must be kept while partition > 0"
        lws.patch("part", {"spec": {"rolloutStrategy": rolling_update(partition=0)}})
        final = lws.rollout_must_complete("part", old=old, replicas=3, size=2)
    assert final == new


@conformance(short_name="PartitionKeepsSurge", slow=True,
             features={Feature.ROLLING_UPDATE_PARTITION, Feature.ROLLING_UPDATE_MAX_SURGE, Feature.STATUS_CONDITIONS},
             description="R=3, maxSurge 1, partition 2: the surge group stays (4 leaders, updated 2, Available) "
                         "until partition 0 (4.4.6, T7).")
def test_partition_keeps_surge(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("psurge", replicas=3, size=2, rollout=rolling_update(maxSurge=1, partition=2))
    lws.create(manifest)
    lws.ready("psurge", replicas=3, size=2)
    old = revision(lws, "psurge")

    def held() -> None:
        lws_obj = lws.get("psurge")
        status = lws_obj.get("status") or {}
        assert lws.statefulsets()["psurge"]["spec"]["replicas"] == 4, "leader StatefulSet replicas != 4"
        counts = (status.get("replicas"), status.get("readyReplicas"), status.get("updatedReplicas"))
        assert counts == (4, 4, 2), status
        assert lws_waits.condition(lws_obj, "Available") == "True", f"conditions {status.get('conditions')}"
    with lws.timeline("psurge"):
        change(lws, "psurge", manifest, "2")
        lws.wait(held, what="surge group 3 and group 2 updated, Available, held by partition 2",
                 within="rollout_complete", name="psurge")
        lws.hold(held, what="the partition holds the surge", name="psurge")
        lws.patch("psurge", {"spec": {"rolloutStrategy": rolling_update(partition=0)}})
        lws.rollout_must_complete("psurge", old=old, replicas=3, size=2)
    assert lws.statefulsets()["psurge"]["spec"]["replicas"] == 3


@conformance(short_name="ScaleUpDuringHeldRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION, Feature.SCALING},
             description="Groups added while a rollout is held by partition start on the new revision; old ones stay "
                         "(4.3, 4.4.4).")
def test_scale_up_during_held_rollout(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("grow", replicas=2, size=2, rollout=rolling_update(partition=2))
    lws.create(manifest)
    before = lws.ready("grow", replicas=2, size=2)
    old = revision(lws, "grow")
    with lws.timeline("grow"):
        change(lws, "grow", manifest, "2")
        new = _leader_must_take_new_revision(lws, "grow", old)
        lws.patch("grow", {"spec": {"replicas": 3}})
        lws.groups_must_be_ready("grow", replicas=3, size=2)
        assert group_revision(lws, "grow", 2) == new, \
            f"group 2 revision {group_revision(lws, 'grow', 2)}, want {new}"
        now = lws.groups("grow")
        assert [group_revision(lws, "grow", i) for i in (0, 1)] == [old, old]
        assert all(now[i].uids == before[i].uids for i in (0, 1)), \
            observe.describe_namespace(lws.api, lws.namespace, "grow")
        lws.patch("grow", {"spec": {"rolloutStrategy": rolling_update(partition=0)}})
        lws.rollout_must_complete("grow", old=old, replicas=3, size=2)


def _leader_must_take_new_revision(lws: LWSHarness, name: str, old: str) -> str:
    """Wait (lws_available) until the leader StatefulSet carries a revision key other than `old`; that key."""
    def new_key() -> str:
        key = revision(lws, name)
        assert key != old, f"leader StatefulSet still on {old}"
        return key
    return lws.wait(new_key, what="a new revision on the leader StatefulSet", name=name)


@conformance(short_name="RestartBelowPartitionKeepsOldRevision", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION, Feature.GROUP_RESTART},
             description="A group held below partition that crashes is recreated from its old revision: old template, "
                         "old size (4.2, 4.4.6).")
def test_restart_below_partition_keeps_old_revision(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("held", replicas=2, size=3, rollout=rolling_update(partition=1))
    lws.create(manifest)
    before = lws.ready("held", replicas=2, size=3)
    old = revision(lws, "held")
    lwt = workloads.with_env(manifest, {"LWSCONF_REVISION": "2"})["spec"]["leaderWorkerTemplate"]
    with lws.timeline("held"):
        lws.patch("held", {"spec": {"leaderWorkerTemplate": {**lwt, "size": 2}}},
                  step="template updated (LWSCONF_REVISION=2, size 3 -> 2)")
        _group_one_must_update(lws, "held", old, size=2)
        lws.crash("held-0-1")
        group = _group_must_come_back(lws, "held", 0, before[0].uids)
    assert group_revision(lws, "held", 0) == old, f"group 0 revisions {group.revisions()}, want only {old}"
    names = sorted(p["metadata"]["name"] for p in group.pods.values())
    assert names == ["held-0", "held-0-1", "held-0-2"], \
        f"recreated group 0 has pods {names}, want the old size 3 (held-0, held-0-1, held-0-2): a group below " \
        "partition keeps its revision's size (4.4.6)"
    for pod in names:
        seen = (annotations_of(lws.pod(pod)).get(lwsapi.SIZE),
                lws.probe_json(pod)["lws"].get("LWS_GROUP_SIZE"), lws.probe_json(pod, "/env").get("LWSCONF_REVISION"))
        assert seen == ("3", "3", None), \
            f"{pod} (size annotation, LWS_GROUP_SIZE, LWSCONF_REVISION) is {seen}, want ('3', '3', None): recreated " \
            "from the old revision, not the new template (which sets LWSCONF_REVISION=2, size 2)"


def _group_one_must_update(lws: LWSHarness, name: str, old: str, *, size: int) -> None:
    """Wait (rollout_complete) until group 1 is ready on a revision other than `old` with `size` pods, while
    group 0, below partition 1, stays on `old`."""
    def group_one_on_new_revision() -> None:
        group = lws.groups(name).get(1)
        rev = group_revision(lws, name, 1)
        assert group and rev and rev != old, f"group 1 revision {rev}"
        assert len(group.pods) == size and group.ready, f"group 1: {len(group.pods)} pods, ready {group.ready}"
        assert group_revision(lws, name, 0) == old, \
            f"group 0 left the old revision {old}: {group_revision(lws, name, 0)}"
    lws.wait(group_one_on_new_revision, within="rollout_complete", name=name,
             what=f"group 1 updated to the new revision and size {size}, group 0 held by partition 1")


def _group_must_come_back(lws: LWSHarness, name: str, index: int, old_uids: set[str]) -> lws_waits.Group:
    """Wait (group_recreated) until group `index` is back on new pods, as many as its worker StatefulSet (owned
    by the new leader) asks for plus the leader, all ready; the group."""
    def group_back() -> lws_waits.Group:
        group = lws.groups(name).get(index)
        assert group and not group.uids & old_uids, f"group {index} still has original pods (or none)"
        leader = group.pods.get(0)
        sts = lws.statefulsets().get(f"{name}-{index}")
        assert leader and sts and (controller_of(sts) or {}).get("uid") == leader["metadata"]["uid"], \
            f"no worker StatefulSet {name}-{index} owned by the new leader yet"
        want = sts["spec"]["replicas"]
        assert len(group.pods) == 1 + want and group.ready, \
            f"group {index}: {len(group.pods)} pods (want {1 + want}), ready {group.ready}"
        return group
    return lws.wait(group_back, within="group_recreated", name=name,
                    what=f"group {index} recreated after its worker crashed")
