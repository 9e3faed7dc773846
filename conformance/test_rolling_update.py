"""Rolling updates (docs/lws-contract.md section 4.4): a template change replaces groups, whole, from the top.

A watch-based timeline (`lws.timeline`, saved as timeline.json and drawn in the report) records every
group's revision and readiness and the test's steps while the rollout runs, so whole-rollout claims
(`lwsconf.timeline.analysis`) are checked at every observed instant: no
group ever serves with its leader and workers on different revisions, groups are replaced from the
highest index down, and never more than maxUnavailable groups are down at once (every rollout here,
size changes, superseded and scaled-down rollouts included: `assert_at_most_down`, counted from observed
pods only, never from status counters, which include surge groups, trap T7). Stalls are made
deterministic with the probe's start-unready mode: a revision whose pods never turn Ready stops the
rollout exactly where the contract says it stops.
"""

from __future__ import annotations

from conformance.harness import REVISION, LWSHarness, Obj, annotations_of, labels
from conformance.rollouts import assert_at_most_down, group_revision, roll_template
from conformance.rollouts import change_template as change
from conformance.rollouts import leader_revision as revision
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import analysis

_WHY = "a group was taken down before the ones above it were ready again (4.4.2, 4.4.4)"


@conformance(short_name="RollingUpdateGroupByGroupFromTheTop", slow=True, features={Feature.ROLLING_UPDATE},
             description="A template change replaces groups highest index first, one at a time, never half-updated "
                         "(4.4.2).")
def test_rolling_update_group_by_group_from_the_top(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("roll", replicas=3, size=2)
    lws.create(manifest)
    before = lws.ready("roll", replicas=3, size=2)
    timeline, old, new = roll_template(lws, "roll", manifest, replicas=3, size=2)
    assert analysis.half_updated(timeline) == [], f"groups served half-updated:\n{analysis.describe(timeline)}"
    assert analysis.replacement_order(timeline, old, 3) == [2, 1, 0], \
        f"replacement order:\n{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(3), 1, _WHY)
    after = lws.groups("roll")
    assert all(not (after[i].uids & before[i].uids) for i in range(3)), "a group kept an old pod"
    assert new != old


@conformance(short_name="RollingUpdateMaxUnavailable", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE},
             description="maxUnavailable 2 lets two groups update at once and never more (4.4.3, 4.4.5 trace mU=2).")
def test_rolling_update_max_unavailable(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("mu", replicas=3, size=2,
                                   rollout={"rollingUpdateConfiguration": {"maxUnavailable": 2}})
    lws.create(manifest)
    lws.ready("mu", replicas=3, size=2)
    timeline, old, _ = roll_template(lws, "mu", manifest, replicas=3, size=2)
    assert_at_most_down(timeline, range(3), 2, _WHY)
    lowered = [s.partition for s in timeline.leader_sts if s.revision != old and s.partition < 3]
    assert lowered and lowered[0] == 1, f"first partition step {lowered[:1]}, want R - maxUnavailable = 1:\n" \
                                        f"{analysis.describe(timeline)}"
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)


@conformance(short_name="RollingUpdateChangesSize", slow=True, features={Feature.ROLLING_UPDATE},
             description="Changing size rolls every group to the new size; pods see the new LWS_GROUP_SIZE (4.4.1, "
                         "T18).")
def test_rolling_update_changes_size(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("resize", replicas=2, size=2))
    lws.ready("resize", replicas=2, size=2)
    old = revision(lws, "resize")
    with lws.timeline("resize") as timeline:
        lws.patch("resize", {"spec": {"leaderWorkerTemplate": {"size": 3}}})
        lws.rollout_must_complete("resize", old=old, replicas=2, size=3)
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    assert_at_most_down(timeline, range(2), 1, _WHY)
    for pod_name, pod in lws.pods("resize").items():
        assert annotations_of(pod).get(lwsapi.SIZE) == "3", f"{pod_name}: {annotations_of(pod)}"
        assert lws.probe_json(pod_name)["lws"]["LWS_GROUP_SIZE"] == "3"
    assert [lws.statefulsets()[f"resize-{i}"]["spec"]["replicas"] for i in (0, 1)] == [2, 2]


@conformance(short_name="LeaderTemplateChangeRollsOut", slow=True, features={Feature.ROLLING_UPDATE},
             description="A change to leaderTemplate alone (workerTemplate unchanged) is an update: a new revision "
                         "key, rolled out group by group from the top, every pod of each group replaced and the "
                         "leaders running the new leader template (4.4.1, 4.4.2).")
def test_leader_template_change_rolls_out(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("lead", replicas=3, size=2)
    lws.create(manifest)
    before = lws.ready("lead", replicas=3, size=2)
    old = revision(lws, "lead")
    with lws.timeline("lead") as timeline:
        change(lws, "lead", manifest, "leader-only", worker=False)
        _leader_statefulset_must_leave(lws, "lead", old)
        new = lws.rollout_must_complete("lead", old=old, replicas=3, size=2)
    assert analysis.half_updated(timeline) == [], f"groups served half-updated:\n{analysis.describe(timeline)}"
    assert analysis.replacement_order(timeline, old, 3) == [2, 1, 0], \
        f"replacement order:\n{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(3), 1, _WHY)
    after = lws.groups("lead")
    for i in range(3):
        kept = after[i].uids & before[i].uids
        assert not kept, f"group {i} kept pods {sorted(kept)} across a leaderTemplate update (4.4.1: the whole group " \
                         "is replaced)"
        leader, workers = after[i].pods[0], [after[i].pods[j] for j in range(1, 2)]
        assert _env_value(leader, "LWSCONF_REVISION") == "leader-only", \
            f"leader {leader['metadata']['name']} does not run the changed leaderTemplate"
        for worker in workers:
            assert _env_value(worker, "LWSCONF_REVISION") is None, \
                f"worker {worker['metadata']['name']} got the leaderTemplate's change"
    assert new != old


def _leader_statefulset_must_leave(lws: LWSHarness, name: str, old: str) -> None:
    """Wait (create) until the leader StatefulSet names a revision key other than `old`: the update began.

    Bounded by the short `create` timeout, so a controller that does not see the change fails here in seconds,
    saying so, rather than at the end of the rollout wait.
    """
    def leader_statefulset_moved() -> None:
        now = revision(lws, name)
        assert now != old, (f"leader StatefulSet {name} still at revision key {old} after a leaderTemplate-only "
                            "change; want a new revision (4.4.1: the snapshot holds leaderWorkerTemplate entire)")
    lws.wait(leader_statefulset_moved, what=f"leader StatefulSet {name} to move to a new revision", within="create",
             name=name)


def _env_value(pod: Obj, env_name: str) -> str | None:
    """The literal value of `env_name` in the pod's first container (None when the container has no such entry)."""
    container = pod["spec"]["containers"][0]
    values = [e["value"] for e in container.get("env") or () if e["name"] == env_name]
    assert len(values) <= 1, f"{pod['metadata']['name']}: {len(values)} entries named {env_name}"
    return values[0] if values else None


@conformance(short_name="SecondChangeMidRollout", slow=True, features={Feature.ROLLING_UPDATE},
             description="A rollout stuck on an unready revision stops; a newer change supersedes it, and the old "
                         "revisions are pruned (4.4.2, 2.5, T27).")
def test_second_change_mid_rollout(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("twice", replicas=3, size=2)
    lws.create(manifest)
    before = lws.ready("twice", replicas=3, size=2)
    old = revision(lws, "twice")
    with lws.timeline("twice") as timeline:
        change(lws, "twice", manifest, "stuck", unready=True)
        stuck = _group_must_move(lws, "twice", 2, old)

        def lower_groups_wait() -> None:
            now = lws.groups("twice")
            assert all(now[i].uids == before[i].uids for i in (0, 1)), "a group below the stuck one was replaced"
        lws.hold(lower_groups_wait, what="groups 0 and 1 wait while group 2 is unready (maxUnavailable 1)",
                 name="twice")
        change(lws, "twice", manifest, "fixed")
        final = lws.rollout_must_complete("twice", old={old, stuck}, replicas=3, size=2)
    assert not [s for s in timeline.samples if s.group < 2 and stuck in s.revisions], \
        f"groups 0/1 ran the superseded revision:\n{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(3), 1, _WHY)  # stuck group 2 counts: the fix replaces it before touching 1
    _old_revisions_must_be_pruned(lws, "twice", final)


def _group_must_move(lws: LWSHarness, name: str, index: int, old: str) -> str:
    """Wait (lws_available) until group `index` is on one revision other than `old`; that revision."""
    def group_moved() -> str:
        rev = group_revision(lws, name, index)
        assert rev and rev != old, f"group {index} revision {rev}"
        return rev
    return lws.wait(group_moved, what=f"group {index} to move to the stuck revision", name=name)


def _old_revisions_must_be_pruned(lws: LWSHarness, name: str, key: str) -> None:
    """Wait (lws_available) until revision `key`'s ControllerRevision is the only one left (2.5, T27)."""
    def only_revision() -> None:
        keys = sorted(str(labels(r).get(REVISION)) for r in lws.revisions(name))
        assert keys == [key], f"ControllerRevisions {keys}, want only {key}"
    lws.wait(only_revision, what="old ControllerRevisions to be pruned", name=name)


@conformance(short_name="ScaleDownDuringRollout", slow=True, features={Feature.ROLLING_UPDATE, Feature.SCALING},
             description="Scaling down while a rollout is stuck removes the top group; a fixing change then "
                         "completes (4.3, 4.4.4).")
def test_scale_down_during_rollout(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("shrink", replicas=3, size=2)
    lws.create(manifest)
    lws.ready("shrink", replicas=3, size=2)
    old = revision(lws, "shrink")
    with lws.timeline("shrink") as timeline:
        change(lws, "shrink", manifest, "stuck", unready=True)
        stuck = _group_must_move(lws, "shrink", 2, old)
        lws.patch("shrink", {"spec": {"replicas": 2}})
        _top_group_must_go(lws, "shrink")
        change(lws, "shrink", manifest, "fixed")
        lws.rollout_must_complete("shrink", old={old, stuck}, replicas=2, size=2)
    assert lws.statefulsets()["shrink"]["spec"]["replicas"] == 2
    # Groups 0 and 1 are the ones left: the stuck rollout may go on into group 1 after the scale-down
    # (4.4.4 step 6), but group 0 only once group 1 is ready on the fixed revision.
    assert_at_most_down(timeline, range(2), 1, _WHY)


def _top_group_must_go(lws: LWSHarness, name: str) -> None:
    """Wait (lws_available) until group 2 has no pods and no worker StatefulSet (scaled down from 3 to 2)."""
    def top_group_gone() -> None:
        assert 2 not in lws.groups(name), "group 2 still has pods"
        assert f"{name}-2" not in lws.statefulsets(), f"worker StatefulSet {name}-2 still exists"
    lws.wait(top_group_gone, what="group 2 to be removed by the scale-down", name=name)
