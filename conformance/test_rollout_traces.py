"""Rollout traces of docs/lws-contract.md §4.4.5 that upstream pins in its integration tests, on a real workload.

Upstream's envtest cases (sigs.k8s.io/lws test/integration/controllers/leaderworkerset_test.go) fabricate
leader pods and StatefulSet status and check the leader StatefulSet after each step. Here the same
scenarios run against a cluster with a StatefulSet controller and kubelets, and the recorded timeline
(`lws.timeline`) is judged where the contract is exact whatever the timing: the first write that switches
the leader StatefulSet to the new revision (one apply of template, partition and replicas, 4.4.4 step 2),
the first partition step (computed before any new group can be ready), the peak of leader replicas
(surge), which groups are taken down before which, and where the rollout ends. Claims that depend on
which of two groups the kubelet readies first are not made.

Cases: template and replicas changed in one update, without maxSurge and with it, up and down; maxUnavailable 2
with maxSurge 2; maxUnavailable larger than replicas.
"""

from __future__ import annotations

from conformance.harness import LWSHarness
from conformance.rollouts import assert_at_most_down, change_template, rolling_update
from conformance.rollouts import leader_revision as revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import analysis
from lwsconf.timeline.model import LeaderSample, Timeline


def _template_and_replicas(lws: LWSHarness, name: str, manifest: dict[str, object], replicas: int) -> None:
    """One merge patch changing the pod templates (a new revision) and spec.replicas together."""
    lwt = workloads.with_env(manifest, {"LWSCONF_REVISION": "2"})["spec"]["leaderWorkerTemplate"]
    lws.patch(name, {"spec": {"replicas": replicas, "leaderWorkerTemplate": lwt}},
              step=f"template updated (LWSCONF_REVISION=2) and replicas set to {replicas}, one update")


def _first_on_new(timeline: Timeline, old: str) -> LeaderSample:
    """The first leader StatefulSet state carrying another revision than `old`: the write that started the rollout."""
    first = next((s for s in timeline.leader_sts if s.revision != old), None)
    assert first is not None, f"the leader StatefulSet never left revision {old}:\n{analysis.describe(timeline)}"
    return first


def _partitions(timeline: Timeline, old: str) -> list[int]:
    """The leader StatefulSet's partition values once on the new revision, repeats collapsed."""
    out: list[int] = []
    for s in timeline.leader_sts:
        if s.revision != old and (not out or out[-1] != s.partition):
            out.append(s.partition)
    return out


def _born_new(timeline: Timeline, groups: range, old: str) -> None:
    """Groups `groups` did not exist before the update: every leader they ever had carries the new revision."""
    wrong = sorted({s.group for s in timeline.samples if s.group in groups and s.leader is not None
                    and s.leader.revision == old})
    assert not wrong, (f"groups {wrong} had a leader on the old revision {old}: indices the update adds are above "
                       f"the partition and start on the new template (4.3, 4.4.4, T13)\n{analysis.describe(timeline)}")


def _taken_down(timeline: Timeline, original: dict[int, str]) -> dict[int, float]:
    """When each group first showed no live leader with its original UID (`original`: group -> UID[:8])."""
    out: dict[int, float] = {}
    for s in timeline.samples:
        if s.group in original and s.group not in out and \
                not any(p.leader and p.uid == original[s.group] for p in s.pods):
            out[s.group] = s.t
    return out


def _leaders_at_start(timeline: Timeline) -> dict[int, str]:
    first: dict[int, str] = {}
    for s in timeline.samples:
        if s.group not in first and s.leader is not None:
            first[s.group] = s.leader.uid
    return first


@conformance(short_name="TemplateAndReplicasChangedTogether", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.SCALING},
             description="Template and replicas 2 -> 3 in one update, no maxSurge: scaled up first with no surge, "
                         "the new group born on the new revision, then 1 and 0 replaced one at a time (4.3, 4.4.4, "
                         "T13).")
def test_template_and_replicas_changed_together(lws: LWSHarness) -> None:
    # Upstream: "rolling update with both worker template and number of replicas changed" (R 4 -> 6, partition 4,
    # replicas 6); contract 4.4.5 row "R=4 -> 6 together with template change" and 4.3 "scale-up is applied first
    # without surge (new groups are created directly on the new template because they are above the partition)".
    manifest = workloads.probe_lws("both", replicas=2, size=2)
    lws.create(manifest)
    lws.ready("both", replicas=2, size=2)
    old = revision(lws, "both")
    with lws.timeline("both") as timeline:
        _template_and_replicas(lws, "both", manifest, 3)
        lws.rollout_must_complete("both", old=old, replicas=3, size=2)
    first = _first_on_new(timeline, old)
    assert (first.replicas, first.partition) == (3, 2), (
        f"the update's first leader StatefulSet write has replicas {first.replicas}, partition {first.partition}; "
        f"want replicas 3 (the new R, no surge) and partition 2 (min(R, old StatefulSet replicas)): 4.4.4 step 2"
        f"\n{analysis.describe(timeline)}")
    assert analysis.peak_leader_replicas(timeline) == 3, \
        f"peak leader replicas, want 3 (maxSurge 0: never above R):\n{analysis.describe(timeline)}"
    _born_new(timeline, range(2, 3), old)
    assert analysis.replacement_order(timeline, old, 2) == [1, 0], \
        f"old groups' replacement order, want [1, 0] (highest first, 4.4.2):\n{analysis.describe(timeline)}"
    # The new group counts as unavailable until it is ready (4.4.2: a missing group is neither ready nor
    # updated), so with maxUnavailable 1 no old group goes down while it comes up.
    assert_at_most_down(timeline, range(3), 1, "maxUnavailable 1 over the 3 groups of the new R; an old group is "
                                         "taken down only once the new group 2 is ready (4.4.2, 4.4.4)")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    assert lws.statefulsets()["both"]["spec"]["replicas"] == 3


@conformance(short_name="TemplateAndReplicasChangedTogetherWithSurge", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE, Feature.SCALING},
             description="Template and replicas 2 -> 4 in one update with maxSurge 2: scaled to 4 first with "
                         "partition 2, then surge to 6, new groups born on the new revision, back to 4 at the end "
                         "(4.4.4, 4.4.5, T13).")
def test_template_and_replicas_changed_together_with_surge(lws: LWSHarness) -> None:
    # Upstream: "rolling update with replicas scaled up and maxSurge set" (R 2 -> 4 with a template change, mS 2:
    # replicas 6, partition 2, final 4); contract 4.4.5 row "R=2 -> 4 with template change, mS=2".
    manifest = workloads.probe_lws("bsurge", replicas=2, size=2, rollout=rolling_update(maxSurge=2))
    lws.create(manifest)
    lws.ready("bsurge", replicas=2, size=2)
    old = revision(lws, "bsurge")
    with lws.timeline("bsurge") as timeline:
        _template_and_replicas(lws, "bsurge", manifest, 4)
        lws.rollout_must_complete("bsurge", old=old, replicas=4, size=2)
    first = _first_on_new(timeline, old)
    assert (first.replicas, first.partition) == (4, 2), (
        f"the update's first leader StatefulSet write has replicas {first.replicas}, partition {first.partition}; "
        f"want replicas 4 and partition 2: a scale-up that comes with a template change is applied first, without "
        f"surge (4.4.4 step 2, T13)\n{analysis.describe(timeline)}")
    # The next reconcile sees groups 0..3 all not (ready and updated): u = 4 > maxSurge 2 keeps the burst,
    # R + maxSurge = 6 (wantReplicas, 4.4.4); the new groups cannot be ready that soon.
    assert analysis.peak_leader_replicas(timeline) == 6, \
        f"peak leader replicas, want 4 + maxSurge 2 = 6 (4.4.5):\n{analysis.describe(timeline)}"
    assert max(analysis.leader_uids(timeline)) <= 5, \
        f"a group above index 5 appeared (burst is R + maxSurge = 6):\n{analysis.describe(timeline)}"
    _born_new(timeline, range(2, 6), old)
    partitions = _partitions(timeline, old)
    assert partitions == sorted(partitions, reverse=True), \
        f"partition moved up within one rollout: {partitions} (4.4.2: it only moves down)\n" \
        f"{analysis.describe(timeline)}"
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    assert lws.statefulsets()["bsurge"]["spec"]["replicas"] == 4, "surge groups left after the rollout (4.4.7)"


@conformance(short_name="TemplateAndReplicasDownTogetherWithSurge", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE, Feature.SCALING},
             description="Template and replicas 4 -> 2 in one update with maxSurge 1: the first write has replicas 3 "
                         "(the new R + maxSurge) and partition 2 (min(R, stsReplicas)), never more leaders after it, "
                         "partition only down, and 2 replicas at the end (4.4.4 step 2, 4.4.5, 4.4.7).")
def test_template_and_replicas_down_together_with_surge(lws: LWSHarness) -> None:
    # Upstream: "rolling update with replicas scaled down and maxSurge set" (R 6 -> 3 with a template change, mS 2:
    # replicas 5, partition 2, final 3); contract 4.4.5 row "R=6 -> 3 with a template change, mS=2".
    manifest = workloads.probe_lws("dsurge", replicas=4, size=2, rollout=rolling_update(maxSurge=1))
    lws.create(manifest)
    lws.ready("dsurge", replicas=4, size=2)
    old = revision(lws, "dsurge")
    with lws.timeline("dsurge") as timeline:
        _template_and_replicas(lws, "dsurge", manifest, 2)
        lws.rollout_must_complete("dsurge", old=old, replicas=2, size=2)
    first = _first_on_new(timeline, old)
    assert (first.replicas, first.partition) == (3, 2), (
        f"the update's first leader StatefulSet write has replicas {first.replicas}, partition {first.partition}; "
        f"want replicas 3 (wantReplicas of the new R: 2 outdated > maxSurge 1, so R + maxSurge) and partition 2 "
        f"(min(R, stsReplicas)): the scale-down is applied with the update (4.4.4 step 2)\n"
        f"{analysis.describe(timeline)}")
    after = [s.replicas for s in timeline.leader_sts if s.t >= first.t]
    assert max(after) == 3, f"leader replicas from the update on {after}, want at most 3 = R + maxSurge:\n" \
                            f"{analysis.describe(timeline)}"
    partitions = _partitions(timeline, old)
    assert partitions[0] == 2 and partitions[-1] == 0 and partitions == sorted(partitions, reverse=True), \
        f"partitions on the new revision {partitions}, want 2 first, only down, 0 last (4.4.2)\n" \
        f"{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(3), 2, "maxUnavailable 1 + maxSurge 1 over the new burst's 3 indices (4.4.4)")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    assert lws.statefulsets()["dsurge"]["spec"]["replicas"] == 2, "surge groups left after the rollout (4.4.7)"


@conformance(short_name="MaxUnavailableTwoMaxSurgeTwoSequence", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE,
                       Feature.ROLLING_UPDATE_MAX_SURGE},
             description="R=4, maxUnavailable 2, maxSurge 2: replicas 6 with the new revision, first partition 2, "
                         "groups 3 and 2 taken down before 1 and 0, never more than 6 leaders, back to 4 (4.4.4, "
                         "4.4.5).")
def test_max_unavailable_two_max_surge_two_sequence(lws: LWSHarness) -> None:
    # Upstream: "rolling update with maxUnavailable and maxSurge set" (replicas 6, partition 2; 3 and 2 done ->
    # replicas 4, partition 0); contract 4.4.5 row "R=4, mU=2, mS=2".
    manifest = workloads.probe_lws("mums", replicas=4, size=2,
                                   rollout=rolling_update(maxUnavailable=2, maxSurge=2))
    lws.create(manifest)
    lws.ready("mums", replicas=4, size=2)
    old = revision(lws, "mums")
    with lws.timeline("mums") as timeline:
        change_template(lws, "mums", manifest, "2")
        lws.rollout_must_complete("mums", old=old, replicas=4, size=2)
    first = _first_on_new(timeline, old)
    assert (first.replicas, first.partition) == (6, 4), (
        f"the update's first leader StatefulSet write has replicas {first.replicas}, partition {first.partition}; "
        f"want replicas 6 = wantReplicas(R) = R + maxSurge (every group outdated, 4.4.4 step 2, T13) and "
        f"partition 4\n{analysis.describe(timeline)}")
    partitions = _partitions(timeline, old)
    assert partitions[:2] == [4, 2] and partitions[-1] == 0, (
        f"partitions on the new revision {partitions}, want 4, then 2 (R - maxUnavailable: step = maxUnavailable + "
        f"maxSurge with the burst in place, 4.4.4 step 6), ..., 0\n{analysis.describe(timeline)}")
    assert partitions == sorted(partitions, reverse=True), \
        f"partition moved up within one rollout: {partitions} (4.4.2)\n{analysis.describe(timeline)}"
    assert analysis.peak_leader_replicas(timeline) == 6, \
        f"peak leader replicas, want R + maxSurge = 6:\n{analysis.describe(timeline)}"
    assert max(analysis.leader_uids(timeline)) <= 5, \
        f"a group above index 5 appeared (burst is 6):\n{analysis.describe(timeline)}"
    _born_new(timeline, range(4, 6), old)
    down = _taken_down(timeline, {g: uid for g, uid in _leaders_at_start(timeline).items() if g < 4})
    assert set(down) == {0, 1, 2, 3}, f"groups taken down {sorted(down)}, want all 4:\n{analysis.describe(timeline)}"
    assert max(down[2], down[3]) < min(down[0], down[1]), (
        f"groups taken down at {dict(sorted(down.items()))}: groups 3 and 2 (released by partition 2) must go "
        f"before 1 and 0 (4.4.2, highest index first)\n{analysis.describe(timeline)}")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    assert lws.statefulsets()["mums"]["spec"]["replicas"] == 4, "surge groups left after the rollout (4.4.7)"


@conformance(short_name="MaxUnavailableAboveReplicas", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE},
             description="maxUnavailable 10 with R=3 is accepted and not capped: the first partition step is 0, all "
                         "groups at once, no surge, and the rollout completes (4.4.3, 5.1).")
def test_max_unavailable_above_replicas(lws: LWSHarness) -> None:
    # Upstream: "workerTemplate changed with maxUnavailable greater than replicas" (partition 0 at once); contract
    # 4.4.3 "maxUnavailableAbs is not capped (a value > R makes the first step jump straight to partition 0)" and
    # 5.1 "maxUnavailable or maxSurge larger than replicas (e.g. 10)" accepted.
    manifest = workloads.probe_lws("wide", replicas=3, size=2, rollout=rolling_update(maxUnavailable=10))
    lws.create(manifest)
    lws.ready("wide", replicas=3, size=2)
    old = revision(lws, "wide")
    with lws.timeline("wide") as timeline:
        change_template(lws, "wide", manifest, "2")
        lws.rollout_must_complete("wide", old=old, replicas=3, size=2)
    lowered = [p for p in _partitions(timeline, old) if p < 3]
    assert lowered[:1] == [0], (f"partitions below R on the new revision {lowered}, want 0 first: maxUnavailable 10 "
                                f"is not capped at R, step >= R (4.4.3)\n{analysis.describe(timeline)}")
    assert analysis.peak_leader_replicas(timeline) == 3, \
        f"peak leader replicas, want 3 (maxSurge 0):\n{analysis.describe(timeline)}"
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)


@conformance(short_name="UnusedSurgeWidensTheStep", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE,
                       Feature.ROLLING_UPDATE_MAX_SURGE},
             description="R=2, maxUnavailable 2, maxSurge 2: no surge group is made (at most maxSurge groups unready "
                         "and maxUnavailable covers them), and the surge left unused widens the partition step to "
                         "maxUnavailable + maxSurge - (burst - replicas) = 2: the first partition step is 0, both "
                         "groups at once (4.4.4 steps 5-6).")
def test_unused_surge_widens_the_step(lws: LWSHarness) -> None:
    # Contract 4.4.4: wantReplicas(unready=2) = R + max(0, unready - maxUnavailable) = 2 (step 5), and the rolling
    # step is maxUnavailable + maxSurge - (burstReplicas - stsReplicas) = 2 + 2 - (4 - 2) = 2 (step 6), so partition
    # 2 - 0 - 2 = 0 (upstream v0.9.0 pkg/controllers/leaderworkerset_controller.go rollingUpdatePartition). The
    # make mutate run of issue 28 found a reconciler shrinking that step once stsReplicas < burst
    # (`(mU + mS) >> (burst - stsReplicas)`, step 1 here) passing every test: its rollout only went slower.
    manifest = workloads.probe_lws("unused", replicas=2, size=2,
                                   rollout=rolling_update(maxUnavailable=2, maxSurge=2))
    lws.create(manifest)
    lws.ready("unused", replicas=2, size=2)
    old = revision(lws, "unused")
    with lws.timeline("unused") as timeline:
        change_template(lws, "unused", manifest, "2")
        lws.rollout_must_complete("unused", old=old, replicas=2, size=2)
    lowered = [p for p in _partitions(timeline, old) if p < 2]
    assert lowered[:1] == [0], (
        f"partitions below R on the new revision {lowered}, want 0 first: step = maxUnavailable + maxSurge - "
        f"(burst - replicas) = 2 + 2 - (4 - 2) = 2 with no surge group made (4.4.4 step 6)\n"
        f"{analysis.describe(timeline)}")
    assert analysis.peak_leader_replicas(timeline) == 2, (
        f"peak leader replicas, want 2: with 2 groups unready and maxUnavailable 2, wantReplicas adds no surge "
        f"(4.4.4 step 5)\n{analysis.describe(timeline)}")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
