"""Surge rollouts combined with other changes (docs/lws-contract.md sections 4.3, 4.4.4-4.4.7, 4.8): a scale-down,
a scale-up then a scale-down, a second template change, subgroups.

Upstream pins these in its integration tests (sigs.k8s.io/lws test/integration/controllers/leaderworkerset_test.go
"scale up and down during rolling update with maxSurge set", "multiple rolling update with maxSurge set") and
e2e tests (test/e2e/e2e_test.go "Can perform a rolling update with subgroupsize and MaxSurge set"), with fabricated
pods. Here each rollout runs on real workloads and is stopped deterministically: the new revision's workers start
unready (`hold_new_workers`), so the groups it makes are up but not ready and the rollout stops exactly where
maxUnavailable and maxSurge stop it. The test changes the LWS there, checks the leader StatefulSet's replicas and
partition and the groups (which are on the new revision, which keep their original pods), holds that state, and
only then releases the held workers. Claims about the whole rollout read the recorded timeline.

Counting "groups down": with maxSurge the surge groups stand in for groups being replaced, so up to
maxUnavailable + maxSurge of the indices below the burst may be down at once (4.4.5 row R=4, mU=1, mS=1: "4 -> 2"
takes groups 3 and 2 down together); groups the scale-down removes are not counted (they never come back).
"""

from __future__ import annotations

from conformance.harness import REVISION, LWSHarness, annotations_of, labels, sha1
from conformance.rollouts import assert_at_most_down, hold_new_workers, rolling_update
from conformance.rollouts import leader_revision as revision
from conformance.rollouts import rollout_must_finish_releasing as release_until_done
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import analysis
from lwsconf.timeline.model import Timeline
from lwsconf.waits import lws as lws_waits

SUBGROUP_INDEX, SUBGROUP_KEY = lwsapi.PREFIX + "subgroup-index", lwsapi.PREFIX + "subgroup-key"


def _rollout_must_stop(lws: LWSHarness, name: str, *, replicas: int, partition: int, held: set[int],
                       kept: dict[int, set[str]], not_on: set[str], size: int = 2) -> str:
    """Wait (rollout_complete) until the leader StatefulSet has `replicas` and `partition`, groups `held` are up
    (all `size` pods) on one revision not in `not_on`, their workers held unready, and groups `kept` still have
    their original pods (`kept`: index -> pod UIDs); then hold it (stays_true): the rollout stops there while
    its new groups are not ready (4.4.4 steps 5-6). Returns the held groups' revision."""
    where = f"(replicas {replicas}, partition {partition}), groups {sorted(held)} held on the new revision"

    def stopped() -> str:
        sts = lws.statefulsets()[name]["spec"]
        seen = (sts.get("replicas"), ((sts.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition")
                or 0)
        assert seen == (replicas, partition), \
            f"leader StatefulSet {name} (replicas, partition) {seen}, want {(replicas, partition)}"
        found = lws.groups(name)  # one snapshot for every claim below
        assert sorted(found) == list(range(replicas)), f"groups {sorted(found)}, want 0..{replicas - 1}"
        revs = set().union(*(found[i].revisions() for i in held))
        assert len(revs) == 1 and not revs & (not_on | {""}), \
            f"held groups' pods on revisions {sorted(revs)}, want one new revision (not {sorted(not_on)})"
        short = {i: len(found[i].pods) for i in held if len(found[i].pods) != size}
        assert not short, f"held groups' pod counts {short}, want {size} each"
        moved = sorted(i for i, uids in kept.items() if found[i].uids != uids)
        assert not moved, (f"groups {moved} were replaced while groups {sorted(held)} are not ready: maxUnavailable "
                           "and maxSurge allow no more (4.4.4)")
        return str(revs.pop())
    new = lws.wait(stopped, what=f"the rollout to stop at {where}", within="rollout_complete", name=name)
    lws.hold(stopped, what=f"the rollout to stay at {where} while they are not ready", name=name)
    return new


def _status_must_show_update(lws: LWSHarness, name: str, *, replicas: int, ready: int, updated: int) -> None:
    """Wait (lws_available) until the status, for the current generation, counts `replicas` leaders, `ready`
    ready and `updated` updated groups (surge groups included, 4.5) with UpdateInProgress and Progressing True
    and Available False."""
    def updating() -> None:
        obj = lws.get(name)
        status = obj.get("status") or {}
        assert status.get("observedGeneration") == obj["metadata"].get("generation"), f"status {status}"
        # An absent counter is 0: Go clients omit zero counters (omitempty).
        counts = tuple(status.get(k, 0) for k in ("replicas", "readyReplicas", "updatedReplicas"))
        assert counts == (replicas, ready, updated), \
            f"status (replicas, readyReplicas, updatedReplicas) {counts}, want {(replicas, ready, updated)}"
        conditions = lws_waits.conditions(obj)
        want = {"UpdateInProgress": "True", "Progressing": "True", "Available": "False"}
        assert {k: conditions.get(k) for k in want} == want, f"conditions {conditions}, want {want} (4.5)"
    lws.wait(updating, name=name, what=f"status replicas {replicas}, ready {ready}, updated {updated} and "
                                       "UpdateInProgress while the rollout is held")


def _scale(lws: LWSHarness, name: str, frm: int, to: int) -> float:
    """Set spec.replicas (recorded as a step); the timeline's time just before it, so every leader StatefulSet
    write the change causes is recorded after it."""
    before = lws.clock()
    lws.patch(name, {"spec": {"replicas": to}}, step=f"replicas {frm} -> {to} during the rollout")
    return before


def _replicas_never_rise(timeline: Timeline, since: float, why: str) -> None:
    seen = [s.replicas for s in timeline.leader_sts if s.t >= since]
    assert all(a >= b for a, b in zip(seen, seen[1:], strict=False)), \
        f"leader StatefulSet replicas after the scale-down {seen}, want never rising: {why}\n" \
        f"{analysis.describe(timeline)}"


def _surge_released(lws: LWSHarness, name: str, replicas: int) -> None:
    spec = lws.statefulsets()[name]["spec"]
    seen = (spec["replicas"], ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0)
    assert seen == (replicas, 0), \
        f"leader StatefulSet (replicas, partition) {seen} after the rollout, want ({replicas}, 0): surge released " \
        "(4.4.7)"


@conformance(short_name="ScaleDownDuringSurgeRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE, Feature.SCALING},
             description="R=4, maxSurge 1, the rollout held on groups 4 (surge) and 3: scaling to 2 removes them, the "
                         "leader StatefulSet holds 3 replicas (new R + maxSurge) and partition 1 (groups 2 and 1 "
                         "replaced, group 0 kept) until they are ready, then partition 0 and 2 replicas: surge "
                         "released, replicas never rising after the scale-down (4.3, 4.4.4, 4.4.7).")
def test_scale_down_during_surge_rollout(lws: LWSHarness) -> None:
    # Upstream: "scale up and down during rolling update with maxSurge set" (its last phase: R -> 2 gives replicas
    # 3, partition 1; then partition 0 and replicas 2); contract 4.4.5 row "R=4, mS=2, update, R -> 6, then R -> 2"
    # and 4.3 "a scale-down lowers the partition to at most the new burst size".
    manifest = workloads.probe_lws("sdown", replicas=4, size=2, rollout=rolling_update(maxSurge=1))
    lws.create(manifest)
    before = lws.ready("sdown", replicas=4, size=2)
    old = revision(lws, "sdown")
    with lws.timeline("sdown") as timeline:
        hold_new_workers(lws, "sdown", manifest)
        new = _rollout_must_stop(lws, "sdown", replicas=5, partition=3, held={3, 4}, not_on={old},
                                 kept={i: before[i].uids for i in range(3)})
        _status_must_show_update(lws, "sdown", replicas=5, ready=3, updated=2)
        cut = _scale(lws, "sdown", 4, 2)
        _rollout_must_stop(lws, "sdown", replicas=3, partition=1, held={1, 2}, not_on={old}, kept={0: before[0].uids})
        _status_must_show_update(lws, "sdown", replicas=3, ready=1, updated=2)
        release_until_done(lws, "sdown", old={old}, new=new, replicas=2, size=2)
        lws.rollout_must_complete("sdown", old=old, replicas=2, size=2)
    _surge_released(lws, "sdown", 2)
    assert analysis.partitions(timeline, new) == [4, 3, 1, 0], (
        f"partitions on the new revision {analysis.partitions(timeline, new)}, want [4, 3, 1, 0]: 4 at the update, 3 "
        f"(step maxUnavailable + maxSurge = 2 with the surge group up), 1 after the scale-down (new burst 3), 0 once "
        f"groups 2 and 1 are ready (4.4.4)\n{analysis.describe(timeline)}")
    _replicas_never_rise(timeline, cut, "the scale-down keeps the new burst (3) while groups are outdated, then "
                                        "releases it (4.4.4 step 5, 4.4.7)")
    order = analysis.replacement_order(timeline, old, 4)
    assert order[:1] == [3] and order[-1:] == [0] and sorted(order) == [0, 1, 2, 3], \
        f"replacement order {order}, want 3 first and 0 last (highest index first, 4.4.2)\n" \
        f"{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(3), 2, "maxUnavailable 1 + maxSurge 1 over the new burst's 3 indices (4.4.4)")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)


@conformance(short_name="ScaleUpThenDownDuringSurgeRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE, Feature.SCALING},
             description="R=3, maxSurge 1, the rollout held at replicas 4 / partition 2: scaling to 4 gives replicas 5 "
                         "with the partition kept at 2 and the new group 4 born on the new revision; scaling to 2 "
                         "then gives replicas 3 / partition 1; released, it ends at 2 replicas, partition 0, every "
                         "group on the new revision, the partition never rising (4.3, 4.4.4, 4.4.7).")
def test_scale_up_then_down_during_surge_rollout(lws: LWSHarness) -> None:
    # Upstream: "scale up and down during rolling update with maxSurge set" (R=4, mS=2: replicas 6 / partition 3;
    # R -> 6: 8 / 3; R -> 2: 3 / 1; then 2 / 0); contract 4.4.5 row "R=4, mS=2, update, R -> 6, then R -> 2".
    manifest = workloads.probe_lws("updown", replicas=3, size=2, rollout=rolling_update(maxSurge=1))
    lws.create(manifest)
    before = lws.ready("updown", replicas=3, size=2)
    old = revision(lws, "updown")
    kept = {i: before[i].uids for i in range(2)}
    with lws.timeline("updown") as timeline:
        hold_new_workers(lws, "updown", manifest)
        new = _rollout_must_stop(lws, "updown", replicas=4, partition=2, held={2, 3}, not_on={old}, kept=kept)
        _scale(lws, "updown", 3, 4)
        _rollout_must_stop(lws, "updown", replicas=5, partition=2, held={2, 3, 4}, not_on={old}, kept=kept)
        _status_must_show_update(lws, "updown", replicas=5, ready=2, updated=3)
        cut = _scale(lws, "updown", 4, 2)
        _rollout_must_stop(lws, "updown", replicas=3, partition=1, held={1, 2}, not_on={old}, kept={0: kept[0]})
        release_until_done(lws, "updown", old={old}, new=new, replicas=2, size=2)
        lws.rollout_must_complete("updown", old=old, replicas=2, size=2)
    _surge_released(lws, "updown", 2)
    partitions = analysis.partitions(timeline, new)
    assert partitions == [3, 2, 1, 0], (
        f"partitions on the new revision {partitions}, want [3, 2, 1, 0]: the scale-up keeps partition 2 (the new "
        f"group is born above it), the scale-down lowers it to 1, never up within the rollout (4.4.2, 4.4.4)\n"
        f"{analysis.describe(timeline)}")
    born = sorted({s.leader.revision for s in timeline.samples if s.group == 4 and s.leader is not None}, key=str)
    assert born == [new], f"group 4's leaders were on revisions {born}, want only {new}: a group added during a " \
                          f"rollout is above the partition and starts on the new template (4.3)"
    _replicas_never_rise(timeline, cut, "the scale-down keeps the new burst (3) while groups are outdated, then "
                                        "releases it (4.4.4 step 5, 4.4.7)")
    assert_at_most_down(timeline, range(3), 2, "maxUnavailable 1 + maxSurge 1 over the final burst's 3 indices "
                                               "(4.4.4)")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)


@conformance(short_name="SecondChangeDuringSurgeRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE},
             description="R=3, maxSurge 1, the rollout of a first change held on groups 3 (surge) and 2: a second "
                         "change restarts the rollout (its first write: replicas 4, partition 3 = min(R, replicas)), "
                         "replaces the held groups first, keeps 0 and 1 until they are ready, never runs 0 or 1 on "
                         "the superseded revision, and ends with 3 groups on the newest revision, surge released and "
                         "one ControllerRevision (4.4.2, 4.4.4, 2.5).")
def test_second_change_during_surge_rollout(lws: LWSHarness) -> None:
    # Upstream: "multiple rolling update with maxSurge set" (R=4, mU=1, mS=2: replicas 6, partition 3, 2 revisions;
    # the second change resets the partition to 4 then 3, updated 0, 3 revisions; all done: replicas 4, 1
    # revision); contract 4.4.5 row "R=4, mU=1, mS=2, two template changes".
    manifest = workloads.probe_lws("again", replicas=3, size=2, rollout=rolling_update(maxSurge=1))
    lws.create(manifest)
    before = lws.ready("again", replicas=3, size=2)
    old = revision(lws, "again")
    kept = {i: before[i].uids for i in range(2)}
    with lws.timeline("again") as timeline:
        hold_new_workers(lws, "again", manifest, "first")
        first = _rollout_must_stop(lws, "again", replicas=4, partition=2, held={2, 3}, not_on={old}, kept=kept)
        hold_new_workers(lws, "again", manifest, "second")
        second = _rollout_must_stop(lws, "again", replicas=4, partition=2, held={2, 3}, not_on={old, first},
                                    kept=kept)
        _status_must_show_update(lws, "again", replicas=4, ready=2, updated=2)
        keys = sorted(str(labels(r).get(REVISION)) for r in lws.revisions("again"))
        assert keys == sorted([old, first, second]), \
            f"ControllerRevisions {keys} mid-rollout, want the three revisions {sorted([old, first, second])} (2.5)"
        release_until_done(lws, "again", old={old, first}, new=second, replicas=3, size=2)
        lws.rollout_must_complete("again", old={old, first}, replicas=3, size=2)
    _surge_released(lws, "again", 3)
    restart = next((s for s in timeline.leader_sts if s.revision == second), None)
    assert restart is not None and (restart.replicas, restart.partition) == (4, 3), (
        f"the second change's first leader StatefulSet write {restart}, want replicas 4 and partition 3: a further "
        f"change restarts the rollout at min(R, stsReplicas) (4.4.2, 4.4.4 step 2)\n{analysis.describe(timeline)}")
    partitions = analysis.partitions(timeline, second)
    assert partitions[:2] == [3, 2] and partitions[-1] == 0 and partitions == sorted(partitions, reverse=True), (
        f"partitions on the newest revision {partitions}, want 3, 2, ..., 0, never rising (4.4.2, 4.4.4)\n"
        f"{analysis.describe(timeline)}")
    assert not [s for s in timeline.samples if s.group < 2 and first in s.revisions], \
        f"groups 0/1 ran the superseded revision {first}:\n{analysis.describe(timeline)}"
    assert analysis.peak_leader_replicas(timeline) == 4, \
        f"peak leader replicas, want R + maxSurge = 4 across both changes:\n{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(4), 2, "maxUnavailable 1 + maxSurge 1 over the burst's 4 indices (4.4.4)")
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    _only_revision_must_be(lws, "again", second)


def _only_revision_must_be(lws: LWSHarness, name: str, key: str) -> None:
    """Wait (lws_available) until revision `key`'s ControllerRevision is the only one left (2.5, T27)."""
    def only_revision() -> None:
        keys = sorted(str(labels(r).get(REVISION)) for r in lws.revisions(name))
        assert keys == [key], f"ControllerRevisions {keys}, want only {key}"
    lws.wait(only_revision, what="the superseded ControllerRevisions to be pruned", name=name)


_SUBGROUP_OF = (0, 0, 1, 1)
"""Subgroup index of pods 0..3 (leader first) for size 4, subGroupSize 2 by the 4.8 formula ((S-1) % sgs != 0:
`j // sgs`): {L, 1}, {2, 3}. A layout on which upstream v0.9.0's older formula agrees (conformance/divergences.yaml,
SubGroupLabelsAndIndex[size3-sgs1-leader-excluded]), so this test checks the labels' presence on every group, not
the formula again."""


def _subgroup_labels_must_be_right(lws: LWSHarness, name: str, groups: set[int], when: str) -> None:
    """Wait (lws_available) until every pod of `groups` carries subgroup-index (`_SUBGROUP_OF`) and subgroup-key
    sha1('<leader>/<index>') and the subgroup-size annotation (the reference patches the labels on just after a
    pod appears; upstream's webhook stamps them at admission)."""
    def labelled() -> None:
        found = lws.groups(name)
        for i in sorted(groups):
            for j, pod in sorted(found[i].pods.items()):
                seen = (labels(pod).get(SUBGROUP_INDEX), labels(pod).get(SUBGROUP_KEY),
                        annotations_of(pod).get(lwsapi.PREFIX + "subgroup-size"))
                want = (str(_SUBGROUP_OF[j]), sha1(f"{name}-{i}/{_SUBGROUP_OF[j]}"), "2")
                assert seen == want, (f"pod {pod['metadata']['name']} (subgroup-index, subgroup-key, subgroup-size) "
                                      f"{seen}, want {want} (4.8, 3.1: key sha1('<leader>/<index>'))")
    lws.wait(labelled, what=f"subgroup labels on every pod of groups {sorted(groups)} {when}", name=name)


@conformance(short_name="SubGroupsThroughSurgeRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE, Feature.SUBGROUPS},
             description="R=2, size 4, subGroupSize 2, maxSurge 2: the rollout peaks at 3 leaders (R + R - "
                         "maxUnavailable), the surge group's pods carry the subgroup labels as the others do, and it "
                         "ends with every group on the new revision, its pods labelled, surge released (4.4.4, "
                         "4.4.7, 4.8).")
def test_subgroups_through_surge_rollout(lws: LWSHarness) -> None:
    # Upstream: e2e "Can perform a rolling update with subgroupsize and MaxSurge set" (R=4, maxSurge 4, subGroupSize
    # 1: replicas 7, then 4, valid pods) with the layout of its "Can deploy lws with subgroupsize set" (size 4,
    # subGroupSize 2, labels on every pod); contract 4.4.4 wantReplicas (u = 2 <= maxSurge: R + u - maxUnavailable).
    manifest = workloads.probe_lws("sgsurge", replicas=2, size=4, rollout=rolling_update(maxSurge=2),
                                   subgroup={"subGroupSize": 2})
    lws.create(manifest)
    before = lws.ready("sgsurge", replicas=2, size=4)
    old = revision(lws, "sgsurge")
    _subgroup_labels_must_be_right(lws, "sgsurge", {0, 1}, "before the rollout")
    with lws.timeline("sgsurge") as timeline:
        hold_new_workers(lws, "sgsurge", manifest)
        new = _rollout_must_stop(lws, "sgsurge", replicas=3, partition=1, held={1, 2}, not_on={old},
                                 kept={0: before[0].uids}, size=4)
        _subgroup_labels_must_be_right(lws, "sgsurge", {0, 1, 2}, "held mid-rollout (group 2 is the surge group)")
        release_until_done(lws, "sgsurge", old={old}, new=new, replicas=2, size=4)
        lws.rollout_must_complete("sgsurge", old=old, replicas=2, size=4)
    _surge_released(lws, "sgsurge", 2)
    _subgroup_labels_must_be_right(lws, "sgsurge", {0, 1}, "after the rollout")
    assert analysis.peak_leader_replicas(timeline) == 3, \
        f"peak leader replicas, want 3 (R + 2 outdated - maxUnavailable 1, 4.4.4):\n{analysis.describe(timeline)}"
    assert analysis.partitions(timeline, new) == [2, 1, 0], \
        f"partitions on the new revision {analysis.partitions(timeline, new)}, want [2, 1, 0]\n" \
        f"{analysis.describe(timeline)}"
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)

