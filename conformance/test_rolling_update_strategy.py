"""Rolling-update strategy knobs (docs/lws-contract.md §4.4.3-4.4.7): maxSurge, percentages, partition.

Surge is observed where it lives: the leader StatefulSet's `replicas` during the rollout (the peak must
match the traces of 4.4.5, which are not simply R + maxSurge, T13) and back to R at the end, while
the timeline shows availability never dropping below R with maxUnavailable 0. Every test records its
timeline (`lws.timeline`) for the report's picture. Partition holds the
groups below it on the old revision (T14) and lowering it resumes the rollout. The cap of maxSurge at R
shows only in the leader StatefulSet's own `maxUnavailable` (2.2), checked where the API server keeps
that field (the MaxUnavailableStatefulSet feature, on by default since Kubernetes 1.35). A group held
below the partition that fails is recreated from its own old revision (template and size, subgroup policy
type, subdomain policy, claim templates: upstream #963), not from the LWS's current spec.
"""

from __future__ import annotations

from conformance.harness import LWSHarness, Obj, annotations_of, controller_of, labels
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


# --- the held group's other revision fields (kubernetes-sigs/lws#963) -----------------------------------------------
#
# Upstream builds a worker StatefulSet from the revision named by its leader's template-revision-hash
# (pkg/controllers/pod_controller.go:382 at main 060ab4d), but until #963 (commit d014d0f, after v0.10.0) it took
# size, subGroupPolicy, networkConfig and the claim templates from the live spec (v0.10.0 pod_controller.go:416-454;
# main reads them from the revision, 414-458):
# an old group recreated mid-rollout got its old pod template mixed with the new policies. Only what an update may
# change is tested: subGroupSize and the presence of subGroupPolicy are immutable (V20-V22), subGroupPolicyType,
# subdomainPolicy and volumeClaimTemplates are not (contract 1.2, 5.1).


def _held_group_restarts(lws: LWSHarness, manifest: Obj, change: Obj, *, step: str, size: int,
                         rolls: bool = True) -> lws_waits.Group:
    """Create `manifest` (2 groups, partition 1), merge-patch `change` onto its spec, wait until group 1 takes the
    new revision (`rolls`; otherwise only until the revision exists), crash worker 1 of group 0 and wait for that
    group to come back; the group, checked to be on the old revision only."""
    name = manifest["metadata"]["name"]
    lws.create(manifest)
    before = lws.ready(name, replicas=2, size=size)
    old = revision(lws, name)
    with lws.timeline(name):
        lws.patch(name, {"spec": change}, step=step)
        if rolls:
            _group_one_must_update(lws, name, old, size=size)
        else:
            _new_revision_must_exist(lws, name, old)
        lws.crash(f"{name}-0-1")
        group = _group_must_come_back(lws, name, 0, before[0].uids)
    assert group_revision(lws, name, 0) == old, f"group 0 revisions {group.revisions()}, want only {old}"
    return group


def _new_revision_must_exist(lws: LWSHarness, name: str, old: str) -> None:
    """Wait (lws_available) until the LWS owns a ControllerRevision other than `old`: the change was seen."""
    def second_revision() -> None:
        keys = {labels(r).get(lwsapi.TEMPLATE_REVISION_HASH) for r in lws.revisions(name)}
        assert keys - {old}, f"ControllerRevisions of {name} have keys {sorted(k or '' for k in keys)} only"
    lws.wait(second_revision, what=f"a ControllerRevision of {name} other than {old}", name=name)


@conformance(short_name="RestartBelowPartitionKeepsOldSubGroupPolicy", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION, Feature.GROUP_RESTART,
                       Feature.SUBGROUPS},
             description="A group held below partition that crashes while subGroupPolicyType rolls LeaderWorker -> "
                         "LeaderExcluded gets its worker StatefulSet from its old revision: workers annotated "
                         "subgroup-policy-type LeaderWorker (2.3, 4.4.6, 4.8; upstream #963).")
def test_restart_below_partition_keeps_old_subgroup_policy(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("hsg", replicas=2, size=3, rollout=rolling_update(partition=1),
                                   subgroup={"subGroupSize": 2, "subGroupPolicyType": "LeaderWorker"})
    _held_group_restarts(lws, manifest, {"leaderWorkerTemplate": {"subGroupPolicy": {
        "subGroupPolicyType": "LeaderExcluded"}}}, step="subGroupPolicyType LeaderWorker -> LeaderExcluded", size=3)
    sts = lws.statefulsets()["hsg-0"]
    seen = {"hsg-0 template": annotations_of(sts["spec"]["template"]).get(lwsapi.SUBGROUP_POLICY_TYPE)}
    seen.update({pod: annotations_of(lws.pod(pod)).get(lwsapi.SUBGROUP_POLICY_TYPE) for pod in ("hsg-0-1", "hsg-0-2")})
    assert set(seen.values()) == {"LeaderWorker"}, \
        f"{lwsapi.SUBGROUP_POLICY_TYPE} of the recreated group 0's worker StatefulSet and workers: {seen}, want " \
        "LeaderWorker everywhere: a group below partition is rebuilt from its own revision, not the live " \
        "LeaderExcluded (2.3, 4.4.6)"


@conformance(short_name="RestartBelowPartitionKeepsOldSubdomainPolicy", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION, Feature.GROUP_RESTART,
                       Feature.SUBDOMAIN_UNIQUE_PER_REPLICA},
             description="A group held below partition that crashes while subdomainPolicy rolls Shared -> "
                         "UniquePerReplica gets its worker StatefulSet from its old revision: serviceName N, workers "
                         "under subdomain N, LWS_LEADER_ADDRESS N-0.N.ns reaching its old leader (2.3, 4.4.6, 4.9; "
                         "upstream #963).")
def test_restart_below_partition_keeps_old_subdomain_policy(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("hsd", replicas=2, size=2, rollout=rolling_update(partition=1))
    _held_group_restarts(lws, manifest, {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}},
                         step="subdomainPolicy Shared -> UniquePerReplica", size=2)
    service_name = lws.statefulsets()["hsd-0"]["spec"].get("serviceName")
    subdomain = lws.pod("hsd-0-1")["spec"].get("subdomain")
    assert (service_name, subdomain) == ("hsd", "hsd"), \
        f"recreated group 0: worker StatefulSet hsd-0 serviceName {service_name!r}, worker hsd-0-1 subdomain " \
        f"{subdomain!r}; want 'hsd' and 'hsd': the group's own revision is Shared (2.3, 4.4.6), its leader hsd-0 " \
        "(old template) lives under subdomain hsd"
    address = f"hsd-0.hsd.{lws.namespace}"
    seen = lws.probe_json("hsd-0-1")["lws"].get("LWS_LEADER_ADDRESS")
    assert seen == address, f"hsd-0-1: LWS_LEADER_ADDRESS {seen!r}, want {address!r} (the Shared form, 4.9)"
    reply = lws.probe_json("hsd-0-1", "/peer", host=address, port=str(workloads.PROBE_PORT))
    assert (reply.get("answer") or {}).get("pod") == "hsd-0", f"hsd-0-1 -> {address}: {reply}, want hsd-0 to answer"


def _claim(storage: str) -> Obj:
    return {"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}}


@conformance(short_name="RestartOfOldGroupKeepsOldClaimTemplates", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION, Feature.GROUP_RESTART,
                       Feature.VOLUME_CLAIM_TEMPLATES},
             description="After a claim template edit (1Mi -> 2Mi), a group still on the old revision that crashes "
                         "gets its worker StatefulSet's volumeClaimTemplates from that revision (1Mi), whether or not "
                         "the leader StatefulSet could take the edit (2.3, 4.10, T19; upstream #963).")
def test_restart_of_old_group_keeps_old_claim_templates(lws: LWSHarness) -> None:
    def mount(template: Obj) -> None:
        template["spec"]["containers"][0]["volumeMounts"].append({"name": "data", "mountPath": "/data"})
    manifest = workloads.edit_templates(
        workloads.probe_lws("hpvc", replicas=2, size=2, rollout=rolling_update(partition=1)), mount)
    lwt = manifest["spec"]["leaderWorkerTemplate"]
    lwt["volumeClaimTemplates"] = [_claim("1Mi")]
    # T19: the leader StatefulSet's volumeClaimTemplates are immutable, so the rollout itself may never start; group
    # 0 is then on the old revision because nothing could roll, and still below partition 1 if it could.
    _held_group_restarts(lws, manifest, {"leaderWorkerTemplate": {**lwt, "volumeClaimTemplates": [_claim("2Mi")]}},
                         step="claim template data 1Mi -> 2Mi", size=2, rolls=False)
    claims = lws.statefulsets()["hpvc-0"]["spec"].get("volumeClaimTemplates") or []
    seen = [(c["metadata"]["name"], ((c.get("spec") or {}).get("resources") or {}).get("requests")) for c in claims]
    assert seen == [("data", {"storage": "1Mi"})], \
        f"recreated worker StatefulSet hpvc-0 volumeClaimTemplates (name, requests) {seen}, want " \
        "[('data', {'storage': '1Mi'})]: the group's own revision's claim template, not the live 2Mi (2.3, 4.10)"
