"""Restarting the controller disturbs no workload (LWSControllerRestart; upstream LWS tests that upgrading
its controller keeps running workloads).

A controller restart is the one step these tests take outside the Kubernetes API: `lws.restart_controller()`
(the harness's hook; the implementation fixture decides how, or withdraws the feature with its reason, and
the suite then reports NOT_SUPPORTED). Everything the new controller must rebuild it reads back from the
cluster, so each test checks that what was there survives and what was in flight finishes:

* at rest: no pod or StatefulSet is recreated (same UIDs), no ControllerRevision appears or goes, the status
  comes back to the same values, and a change made afterwards (a scale-up) is still reconciled;
* mid-rollout: the rollout is stopped deterministically (the new revision's workers start unready, so the
  first updated group cannot turn ready and maxUnavailable/maxSurge hold the rest), the controller restarts
  there, must leave the held groups alone, and, as the test releases each new group, completes the rollout
  with the usual guarantees (never half-updated, never more than maxUnavailable groups down, never more
  than maxSurge extra groups) recorded on the timeline;
* mid-group-restart: a worker pod is deleted, the controller restarts as soon as the group's restart has
  begun (its leader is going), and the group comes back whole while the other group is untouched.

The tests are disruptive: on a shared cluster restarting the controller disturbs everyone, so there the
harness restarts nothing without --allow-controller-restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.harness import NAME, LWSHarness
from conformance.rollouts import (
    assert_at_most_down,
    hold_new_workers,
    leader_revision,
    rollout_must_finish_releasing,
    running,
)
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import analysis
from lwsconf.waits import core, observe

Obj = dict[str, Any]


def _uids(objs: dict[str, Obj]) -> dict[str, str]:
    return {name: obj["metadata"]["uid"] for name, obj in objs.items()}


def _status_values(lws_obj: Obj) -> Obj:
    """The status an implementation computes: counters, selector and each condition's type/status/reason (the
    transition times and messages are left out: T8)."""
    status = dict(lws_obj.get("status") or {})
    status["conditions"] = sorted((c.get("type"), c.get("status"), c.get("reason"))
                                  for c in status.get("conditions") or [])
    return status


@dataclass(frozen=True)
class _AtRest:
    """What an Available LWS has before the restart, which the restart must leave as it is."""

    name: str
    pods: dict[str, str]
    statefulsets: dict[str, str]
    revisions: list[str]
    status: Obj

    @staticmethod
    def of(lws: LWSHarness, name: str) -> _AtRest:
        return _AtRest(name, _uids(lws.pods(name)), _uids(lws.statefulsets()), _revision_names(lws, name),
                       _status_values(lws.get(name)))

    def check(self, lws: LWSHarness, how: str, *, waiting: bool = False) -> None:
        """Fail unless every object is the same and the status has its values again; `waiting`: a changed
        object stops the wait at once (a deleted pod never comes back), a changed status only makes it go on."""
        status = _status_values(lws.get(self.name))  # read first: the objects read next are at least as new
        try:
            self._same_objects(lws, how)
        except AssertionError as exc:
            if waiting:
                raise core.Terminal(str(exc)) from None
            raise
        assert status == self.status, f"status after the restart: {status}, want {self.status}"

    def must_come_back(self, lws: LWSHarness, how: str) -> None:
        """Wait (lws_available) until the status has its values again; a recreated object fails at once."""
        def same_status_again() -> None:
            self.check(lws, how, waiting=True)
        lws.wait(same_status_again, name=self.name,
                 what="the status to come back to its values before the restart, nothing recreated")

    def must_stay(self, lws: LWSHarness, how: str) -> None:
        """Every object and the status stay as they were for `stays_true` seconds."""
        def nothing_recreated() -> None:
            self.check(lws, how)
        lws.hold(nothing_recreated, what="nothing recreated and the same status after the restart", name=self.name)

    def _same_objects(self, lws: LWSHarness, how: str) -> None:
        going = sorted(p["metadata"]["name"] for p in observe.pods(lws.api, lws.namespace, f"{NAME}={self.name}")
                       if p["metadata"].get("deletionTimestamp"))
        assert not going, f"pods {going} are being deleted after the restart ({how}); a restart deletes no pod"
        pods = _uids(lws.pods(self.name))
        assert pods == self.pods, \
            f"pods after the restart ({how}): {pods}, want the same pods and UIDs {self.pods}"
        sets = _uids(lws.statefulsets())
        assert sets == self.statefulsets, \
            f"StatefulSets after the restart: {sets}, want the same {self.statefulsets}"
        revisions = _revision_names(lws, self.name)
        assert revisions == self.revisions, \
            f"ControllerRevisions after the restart: {revisions}, want {self.revisions}"


def _revision_names(lws: LWSHarness, name: str) -> list[str]:
    return sorted(r["metadata"]["name"] for r in lws.revisions(name))


@conformance(short_name="ControllerRestartAtRest", slow=True, disruptive=True,
             features={Feature.CONTROLLER_RESTART, Feature.SCALING},
             description="Restarting the controller of an Available LWS recreates no pod or StatefulSet, adds or "
                         "removes no revision, brings back the same status, and a later scale-up is reconciled.")
def test_controller_restart_at_rest(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("calm", replicas=2, size=2))
    lws.ready("calm", replicas=2, size=2)
    before = _AtRest.of(lws, "calm")
    with lws.timeline("calm") as timeline:
        how = lws.restart_controller()
        before.must_come_back(lws, how)
        before.must_stay(lws, how)
    worst, when = analysis.max_unready(timeline, range(2))
    assert worst == 0, \
        f"{worst} group(s) not ready at t={when} across the restart:\n{analysis.describe(timeline, around=when)}"
    lws.scale("calm", 3)
    lws.ready("calm", replicas=3, size=2)
    kept = {name: uid for name, uid in _uids(lws.pods("calm")).items() if name in before.pods}
    assert kept == before.pods, \
        f"scaling up after the restart replaced pods of groups 0-1: {kept}, want {before.pods}"


def _stalled_group(lws: LWSHarness, name: str, old: str) -> tuple[int, str]:
    """(index, revision) of the one group on the new revision: leader Ready, its workers up but held unready."""
    fresh = {i: g for i, g in lws.groups(name).items() if g.revisions() - {old}}
    assert len(fresh) == 1, f"groups on a new revision: {sorted(fresh)}, want exactly one (the rollout's first)"
    index, group = next(iter(fresh.items()))
    size = int((group.pods[0]["metadata"].get("annotations") or {}).get(lwsapi.SIZE, "0"))
    assert len(group.pods) == size, f"group {index}: {len(group.pods)}/{size} pods"
    assert all(running(p) for p in group.pods.values()), f"group {index}: not all pods running"
    return index, next(iter(group.revisions()))


def _first_group_must_stall(lws: LWSHarness, name: str, old: str) -> tuple[int, str]:
    """Wait (rollout_complete) until the rollout's first group is up on the new revision with its workers held
    unready; (its index, the new revision)."""
    def first_group_stalled() -> tuple[int, str]:
        return _stalled_group(lws, name, old)
    return lws.wait(first_group_stalled, within="rollout_complete", name=name,
                    what="the rollout's first group to be up on the new revision with workers held")


def _rollout_across_restart(lws: LWSHarness, name: str, *, replicas: int, max_unavailable: int,
                            max_surge: int) -> None:
    """Stall a rollout at its first group, restart the controller there, then let the rollout finish."""
    manifest = workloads.probe_lws(name, replicas=replicas, size=2, rollout={"rollingUpdateConfiguration": {
        "maxUnavailable": max_unavailable, "maxSurge": max_surge}})
    lws.create(manifest)
    before = lws.ready(name, replicas=replicas, size=2)
    old = leader_revision(lws, name)
    with lws.timeline(name) as timeline:
        hold_new_workers(lws, name, manifest)
        stalled, new = _first_group_must_stall(lws, name, old)
        how = lws.restart_controller()

        def held() -> None:
            now = lws.groups(name)
            moved = [i for i in range(replicas) if i != stalled and (i not in now or now[i].uids != before[i].uids)]
            assert not moved, (
                f"groups {moved} were replaced after the restart ({how}) while group {stalled}, the rollout's "
                f"first on the new revision, is not ready: maxUnavailable {max_unavailable} and maxSurge "
                f"{max_surge} allow no more; the restarted controller must resume the rollout where it stopped "
                "(4.4.4)")
        lws.hold(held, what="the held rollout to stay where it stopped after the restart", name=name)
        rollout_must_finish_releasing(lws, name, old={old}, new=new, replicas=replicas, size=2)
        lws.rollout_must_complete(name, old=old, replicas=replicas, size=2)
    assert analysis.half_updated(timeline) == [], f"groups served half-updated:\n{analysis.describe(timeline)}"
    # Groups the controller took down (leader replaced), not readiness flaps of untouched groups: at load 9 on
    # sim (run 20261203-104812-f37a) the three old workers' 1 s probes failed together for 1.3 s before the
    # restart, with no act of the controller, and min_ready gave 0. The surge group stands in for one more.
    assert_at_most_down(timeline, range(replicas), max_unavailable + max_surge,
                        f"maxUnavailable {max_unavailable} with maxSurge {max_surge} (4.4.4, 4.4.5)")
    peak = analysis.peak_leader_replicas(timeline)
    assert peak <= replicas + max_surge, f"leader StatefulSet peaked at {peak} replicas, maxSurge allows " \
                                         f"{replicas + max_surge}:\n{analysis.describe(timeline)}"


@conformance(short_name="RolloutSurvivesControllerRestart", slow=True, disruptive=True,
             features={Feature.CONTROLLER_RESTART, Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE},
             description="A controller restart while a rollout (R=3, maxUnavailable 1) waits on its first group: the "
                         "other groups stay, then the rollout completes, never half-updated or more than 1 group down.")
def test_rollout_survives_controller_restart(lws: LWSHarness) -> None:
    _rollout_across_restart(lws, "ru", replicas=3, max_unavailable=1, max_surge=0)


@conformance(short_name="SurgeRolloutSurvivesControllerRestart", slow=True, disruptive=True,
             features={Feature.CONTROLLER_RESTART, Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE},
             description="A controller restart while a surge rollout (R=3, maxUnavailable 0, maxSurge 1) waits on "
                         "its surge group: the rollout completes with 3 groups always ready and at most 4 leaders.")
def test_surge_rollout_survives_controller_restart(lws: LWSHarness) -> None:
    _rollout_across_restart(lws, "surge", replicas=3, max_unavailable=0, max_surge=1)


@conformance(short_name="GroupRestartSurvivesControllerRestart", slow=True, disruptive=True,
             features={Feature.CONTROLLER_RESTART, Feature.GROUP_RESTART},
             description="A controller restart while a group is being recreated (a worker pod deleted): the group "
                         "comes back whole on new pods, once, and the other group keeps its pods (4.2).")
def test_group_restart_survives_controller_restart(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("mend", replicas=2, size=3))
    before = lws.ready("mend", replicas=2, size=3)
    leader_uid = before[0].pods[0]["metadata"]["uid"]
    with lws.timeline("mend") as timeline:
        lws.delete_pod("mend-0-1")

        def leader_going() -> None:
            live = lws.pods("mend").get("mend-0")
            assert live is None or live["metadata"]["uid"] != leader_uid, "leader mend-0 is not being replaced yet"
        lws.wait(leader_going, what="the group restart to begin (leader mend-0 deleted)", name="mend",
                 within="group_recreated")
        how = lws.restart_controller()
        group = lws.group_must_be_recreated("mend", 0, before[0].uids, size=3)

        def settled() -> None:
            now = lws.groups("mend")
            assert now[0].uids == group.uids, f"group 0 was recreated again after the restart ({how})"
            assert now[1].uids == before[1].uids, \
                f"group 1 was disturbed by the restart ({how}): {lws.describe('mend')}"
        lws.hold(settled, what="both groups to keep their pods after the recovery", name="mend")
    worst, when = analysis.max_unready(timeline, range(1, 2))
    assert worst == 0, f"group 1 was not ready at t={when}:\n{analysis.describe(timeline, around=when)}"


def _still_available(lws: LWSHarness, before: _AtRest, how: str) -> None:
    """The objects of `before` unchanged, and the LWS still Available with the same counters: an upgrade may
    change how status is worded (a newer version's reasons), not what it says of the workload."""
    status = lws.get(before.name).get("status") or {}
    before._same_objects(lws, how)
    available = {c.get("type"): c.get("status") for c in status.get("conditions") or []}.get("Available")
    assert available == "True", f"after the upgrade ({how}) the LWS's Available condition is {available}, want True"
    counters = {k: status.get(k) for k in ("replicas", "readyReplicas", "updatedReplicas")}
    want = {k: before.status.get(k) for k in counters}
    assert counters == want, f"status counters after the upgrade ({how}): {counters}, want {want}"


@conformance(short_name="ControllerUpgradeKeepsWorkloads", slow=True, disruptive=True,
             features={Feature.CONTROLLER_UPGRADE, Feature.SCALING, Feature.SUBGROUPS},
             description="Upgrading the controller (the implementation's previous build, then the one under test) "
                         "with LWS objects running recreates no pod or StatefulSet and adds no revision, keeps them "
                         "Available, and the new controller scales them and reconciles a new LWS (4.14).")
def test_controller_upgrade_keeps_workloads(lws: LWSHarness) -> None:
    # Upstream's test/e2e/upgrade/upgrade_test.go:76 makes its workloads under the latest release, upgrades the
    # manager, checks they are preserved, then that new ones reconcile. Two shapes here: plain groups, and
    # groups with subgroups and a partition (fields whose handling changed between v0.9.0 and main).
    plain = workloads.probe_lws("kept", replicas=2, size=2)
    shaped = workloads.probe_lws("shaped", replicas=2, size=3, rollout={"rollingUpdateConfiguration": {
        "partition": 1}})
    shaped["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 3}
    with lws.older_controller():
        lws.create(plain)
        lws.create(shaped)
        lws.ready("kept", replicas=2, size=2)
        lws.ready("shaped", replicas=2, size=3)
        before = [_AtRest.of(lws, "kept"), _AtRest.of(lws, "shaped")]
        with lws.timeline("kept") as timeline:
            how = lws.upgrade_controller()

            def nothing_recreated_and_still_available() -> None:
                for at_rest in before:
                    _still_available(lws, at_rest, how)
            lws.hold(nothing_recreated_and_still_available, name="kept",
                     what="every pod, StatefulSet and revision kept and both LWS Available after the upgrade")
        worst, when = analysis.max_unready(timeline, range(2))
        assert worst == 0, \
            f"{worst} group(s) not ready at t={when} across the upgrade:\n{analysis.describe(timeline, around=when)}"
        lws.scale("kept", 3)
        lws.ready("kept", replicas=3, size=2)
        kept = {name: uid for name, uid in _uids(lws.pods("kept")).items() if name in before[0].pods}
        assert kept == before[0].pods, \
            f"scaling up after the upgrade replaced pods of groups 0-1: {kept}, want {before[0].pods}"
        lws.create(workloads.probe_lws("fresh", replicas=1, size=2))
        lws.ready("fresh", replicas=1, size=2)
