"""Rollouts that meet trouble (docs/lws-contract.md sections 2.5, 4.2, 4.4): cases upstream fixed bugs for.

* A rolling update replaces each group once. When a group's old leader goes, the garbage collector
  deletes its old workers while the new leader already exists under the same name; a group-restart
  policy that took those deletions for a failure of the new group restarted it a second time
  (kubernetes-sigs/lws#291). Contract 4.2: workers of a group already being replaced do not trigger.
* A rollout that starts while groups are unhealthy completes, and the unhealthy groups count against
  maxUnavailable (kubernetes-sigs/lws#488: the update took the healthy groups down too), even when no
  group is ready at all (kubernetes-sigs/lws#567: the partition never moved).
* A leader StatefulSet whose revision is gone (deleted, or written by a release without
  ControllerRevisions) gets a revision with its own key, and no rollout (2.5 "Upgrade/adoption").

Unhealthy groups are made the way upstream's integration tests make them, through a worker: the
probe's `/ready?value=false` fails the readiness of one worker, so its worker StatefulSet is no longer
available while the leader pod stays Ready (upstream `SetStatefulsetToUnReady` on the worker StatefulSet).
"""

from __future__ import annotations

from conformance.harness import REVISION, LWSHarness, controller_of, labels
from conformance.rollouts import assert_at_most_down, change_template, rolling_update
from conformance.rollouts import leader_revision as revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import analysis
from lwsconf.timeline.model import Timeline


def _partitions_below(timeline: Timeline, old: str, replicas: int) -> list[int]:
    """The leader StatefulSet's partition values below `replicas` once on the new revision, repeats collapsed."""
    out: list[int] = []
    for s in timeline.leader_sts:
        if s.revision != old and s.partition < replicas and (not out or out[-1] != s.partition):
            out.append(s.partition)
    return out


def _make_unready(lws: LWSHarness, pod: str) -> None:
    """Fail `pod`'s readiness and wait until its Ready condition is False. Waiting for the LWS's readyReplicas alone
    was not enough: under load another group's leader flapped unready for a moment, the count matched before this
    pod had failed three probes, and the rollout then started with every group ready (a fresh clone's run beside
    the soak, 2026-12-07: first partition 2, not 3)."""
    lws.step(f"readiness of {pod} failed (/ready?value=false)")
    lws.probe_json(pod, "/ready", value="false")

    def pod_unready() -> None:
        conditions = (lws.pod(pod).get("status") or {}).get("conditions") or []
        ready = [c.get("status") for c in conditions if c.get("type") == "Ready"]
        assert ready == ["False"], f"pod {pod} Ready condition {ready}"
    lws.wait(pod_unready, what=f"pod {pod} to be unready (its readiness probe fails)")


def _ready_replicas_must_be(lws: LWSHarness, name: str, want: int, *, why: str) -> None:
    """Wait (lws_available) until status.readyReplicas is `want` for the current generation (`why`: the state
    that makes it so, for the message)."""
    def ready_replicas() -> None:
        obj = lws.get(name)
        status = obj.get("status") or {}
        assert status.get("observedGeneration") == obj["metadata"].get("generation"), f"status {status}"
        # An absent counter is 0: Go clients omit zero counters (omitempty), as upstream's status writes do.
        assert status.get("readyReplicas", 0) == want, \
            f"status.readyReplicas {status.get('readyReplicas')}, want {want}"
    lws.wait(ready_replicas, what=f"status.readyReplicas {want} with {why}", name=name)


@conformance(short_name="LeaderRestartedOnceDuringRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.GROUP_RESTART},
             description="Under RecreateGroupOnPodRestart a rollout replaces each leader once: the old workers' "
                         "deletion does not restart the new group; a later worker deletion still does (4.2, "
                         "lws#291).")
def test_leader_restarted_once_during_rollout(lws: LWSHarness) -> None:
    # Upstream: integration test "leader with RecreateGroupOnPodRestart only gets restarted once during rolling
    # update" (deleting outdated workers leaves the new leader; deleting a current worker deletes it) and issue
    # kubernetes-sigs/lws#291 ("Leader is killed twice during update"). Contract 4.2: the event is ignored when
    # "the leader's template-revision-hash differs from the worker's (the worker belongs to a group already being
    # replaced)" or the worker's StatefulSet is not the one the leader controls.
    manifest = workloads.probe_lws("once", replicas=2, size=3, restart_policy="RecreateGroupOnPodRestart")
    lws.create(manifest)
    lws.ready("once", replicas=2, size=3)
    old = revision(lws, "once")
    with lws.timeline("once") as timeline:
        change_template(lws, "once", manifest, "2")
        lws.rollout_must_complete("once", old=old, replicas=2, size=3)
        after = lws.groups("once")

        def nothing_recreated() -> None:
            now = lws.groups("once")
            moved = [i for i in (0, 1) if i not in now or now[i].uids != after[i].uids]
            assert not moved, f"groups {moved} were recreated after the rollout completed, with no failure"
        lws.hold(nothing_recreated, what="both groups keep their pods once the rollout is done", name="once")
        lws.delete_pod("once-1-1")
        lws.group_must_be_recreated("once", 1, after[1].uids, size=3)
    cut = next(s.t for s in timeline.steps if s.text.startswith("pod once-1-1 deleted"))
    leaders: dict[int, set[str]] = {}
    for s in timeline.samples:
        if s.t < cut:
            leaders.setdefault(s.group, set()).update(p.uid for p in s.pods if p.leader)
    twice = {g: sorted(u) for g, u in leaders.items() if len(u) != 2}
    assert not twice, (f"leader UIDs per group during the rollout {twice}, want exactly 2 each (the original and its "
                       f"replacement): a group was restarted again by its old workers' deletion (4.2, lws#291)\n"
                       f"{analysis.describe(timeline)}")


@conformance(short_name="RolloutStartsWithUnhealthyGroup", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE},
             description="R=4, maxUnavailable 2, group 1 unready when the update starts: the first partition is 3, "
                         "not 2, never more than 2 groups down, and the rollout completes (4.4.4, 4.4.5, lws#488).")
def test_rollout_starts_with_unhealthy_group(lws: LWSHarness) -> None:
    # Upstream: integration test "rolling update with unhealthy pods below partition" (partition 3 instead of 2) from
    # kubernetes-sigs/lws#488; contract 4.4.5 row "R=4, mU=2, group 1 unready before update: partition 3 (not 2: the
    # unavailable group below counts against mU)".
    manifest = workloads.probe_lws("sick", replicas=4, size=2, rollout=rolling_update(maxUnavailable=2))
    lws.create(manifest)
    lws.ready("sick", replicas=4, size=2)
    old = revision(lws, "sick")
    with lws.timeline("sick") as timeline:
        _make_unready(lws, "sick-1-1")
        _ready_replicas_must_be(lws, "sick", 3, why="group 1 unready")
        change_template(lws, "sick", manifest, "2")
        lws.rollout_must_complete("sick", old=old, replicas=4, size=2)
    lowered = _partitions_below(timeline, old, 4)
    assert lowered[:1] == [3], (
        f"partitions below R on the new revision {lowered}, want 3 first: group 1 is already unavailable, so only "
        f"one more group may go (R - maxUnavailable = 2 would take 3 of 4 down; 4.4.4 step 6)\n"
        f"{analysis.describe(timeline)}")
    assert_at_most_down(timeline, range(4), 2, "maxUnavailable 2, and group 1, unready from the start, counts "
                        "(4.4.4)", unready_at_start=frozenset({1}))
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)


@conformance(short_name="RolloutCompletesWhenNoGroupIsReady", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE,
                       Feature.ROLLING_UPDATE_MAX_SURGE},
             description="R=2, maxUnavailable 0, maxSurge 1, no group ready when the update starts: the partition "
                         "still moves (2, 1, 0) and the rollout completes, surge released (4.4.4, 4.4.5, lws#567).")
def test_rollout_completes_when_no_group_is_ready(lws: LWSHarness) -> None:
    # Upstream: kubernetes-sigs/lws#567 ("RollingUpdate stuck if all old pod are not ready", maxUnavailable 0 /
    # maxSurge 1, fixed by #568) and integration test "rolling update with no ready replicas"; contract 4.4.4 step 6
    # ("if idx is not ready or is updated: p = idx": an unready index, or the ready surge above it, lets the partition
    # down) and 4.4.5 row "R=2, mU=1, both groups unready: partition 1; group 1 done -> 0".
    manifest = workloads.probe_lws("stuck", replicas=2, size=2, rollout=rolling_update(maxUnavailable=0, maxSurge=1))
    lws.create(manifest)
    lws.ready("stuck", replicas=2, size=2)
    old = revision(lws, "stuck")
    with lws.timeline("stuck") as timeline:
        _make_unready(lws, "stuck-0-1")
        _make_unready(lws, "stuck-1-1")
        _ready_replicas_must_be(lws, "stuck", 0, why="both groups unready")
        change_template(lws, "stuck", manifest, "2")
        lws.rollout_must_complete("stuck", old=old, replicas=2, size=2)
    lowered = _partitions_below(timeline, old, 2)
    assert lowered == [1, 0], (
        f"partitions below R on the new revision {lowered}, want [1, 0]: once the surge group 2 is ready the "
        f"unready group 1 is replaced, then group 0 (4.4.4 step 6)\n{analysis.describe(timeline)}")
    assert analysis.peak_leader_replicas(timeline) == 3, \
        f"peak leader replicas, want R + maxSurge = 3:\n{analysis.describe(timeline)}"
    assert analysis.half_updated(timeline) == [], analysis.describe(timeline)
    assert lws.statefulsets()["stuck"]["spec"]["replicas"] == 2, "the surge group was not released (4.4.7)"


@conformance(short_name="MissingRevisionRecreatedWithoutRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.SCALING},
             description="With the LWS's ControllerRevisions deleted, the next reconcile (a scale-up) recreates one "
                         "with the leader StatefulSet's key: no rollout, no group restarted, the new group on that "
                         "key (2.5).")
def test_missing_revision_recreated_without_rollout(lws: LWSHarness) -> None:
    # Upstream: integration test "if a leaderSts exists, but a matching controllerRevision doesn't, it will create one
    # that matches the leaderSts" (no rollout, still 1 revision); contract 2.5 "Upgrade/adoption: if the leader
    # StatefulSet carries a key for which no revision exists, the controller creates a revision with that key from
    # the current spec, so no rollout is triggered". Deleting a revision need not wake the controller (upstream's
    # does not watch ControllerRevisions), so a scale-up, which is no revision change, makes it reconcile; its new
    # group needs the revision too (4.1: the worker StatefulSet is built from the leader's revision).
    manifest = workloads.probe_lws("adopt", replicas=2, size=2)
    lws.create(manifest)
    before = lws.ready("adopt", replicas=2, size=2)
    key = revision(lws, "adopt")
    revisions = lws.revisions("adopt")
    assert [labels(r).get(REVISION) for r in revisions] == [key], \
        f"ControllerRevisions {[r['metadata']['name'] for r in revisions]}, want one with key {key} (2.5)"
    with lws.timeline("adopt"):
        lws.step(f"ControllerRevision {revisions[0]['metadata']['name']} deleted")
        for r in revisions:
            lws.apps.delete_namespaced_controller_revision(r["metadata"]["name"], lws.namespace)
        lws.scale("adopt", 3)
        lws.groups_must_be_ready("adopt", replicas=3, size=2, within="scale_complete")

        def adopted() -> None:
            found = lws.revisions("adopt")
            keys = [labels(r).get(REVISION) for r in found]
            assert keys == [key], f"ControllerRevisions with keys {keys}, want exactly [{key!r}] (the leader " \
                                  f"StatefulSet's key, 2.5)"
            owner = controller_of(found[0]) or {}
            assert (owner.get("kind"), owner.get("name")) == ("LeaderWorkerSet", "adopt"), \
                f"ControllerRevision {found[0]['metadata']['name']} controller {owner}, want the LWS (2.5)"
        lws.wait(adopted, what="a ControllerRevision with the leader StatefulSet's key again", name="adopt")
        lws.lws_must_be_available("adopt")

        def no_rollout() -> None:
            assert revision(lws, "adopt") == key, f"leader StatefulSet key {revision(lws, 'adopt')}, want {key}: " \
                                                  "a recreated revision is no spec change (2.5)"
            now = lws.groups("adopt")
            moved = [i for i in (0, 1) if i not in now or now[i].uids != before[i].uids]
            assert not moved, f"groups {moved} were replaced: adopting the key must not roll or restart groups (2.5)"
            revs = {i: g.revisions() for i, g in now.items()}
            assert all(r == {key} for r in revs.values()), f"group revisions {revs}, want {key} everywhere"
            adopted()
        lws.hold(no_rollout, what="no rollout and no group restarted after the revision came back", name="adopt")
