"""Status counters and conditions (docs/lws-contract.md sections 1.4, 4.5).

Conditions are matched on type and status only (trap T8: a False condition keeps its True-time
reason and message), and every status write must carry `observedGeneration == metadata.generation`.
Intermediate states are made deterministic by holding pods unready (probe start-unready mode):
a fresh LWS is Progressing until its groups are ready; a template change whose pods never turn Ready
holds UpdateInProgress and Progressing True and Available False; a fixing change completes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.harness import LWSHarness
from conformance.rollouts import change_template, leader_revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeouts import TimeoutName
from lwsconf.waits import lws as lws_waits

Obj = dict[str, Any]


def _status_is(lws: LWSHarness, name: str, *, true: set[str], not_true: set[str], counts: dict[str, int]) -> Obj:
    """Fail unless the status is for the current generation (conditions too), `true` conditions are True,
    `not_true` are not, and each counter in `counts` has its value."""
    lws_obj = lws.get(name)
    status, generation = lws_obj.get("status") or {}, lws_obj["metadata"].get("generation")
    assert status.get("observedGeneration") == generation, \
        f"observedGeneration {status.get('observedGeneration')} != {generation}"
    stale = lws_waits.stale_conditions(lws_obj)
    assert not stale, f"conditions whose observedGeneration is not metadata.generation {generation}: {stale} (4.5)"
    conds = lws_waits.conditions(lws_obj)
    assert all(conds.get(c) == "True" for c in true), f"conditions {conds}, want {sorted(true)} True"
    assert all(conds.get(c) != "True" for c in not_true), f"conditions {conds}, want {sorted(not_true)} not True"
    # The counters are int32 with omitempty (1.4): an absent counter is 0 on the wire, not a missing field.
    seen = {k: status.get(k, 0) for k in counts}
    assert seen == counts, f"status counters {seen}, want {counts}"
    return lws_obj


@dataclass(frozen=True)
class Status:
    """A status an LWS must reach or keep: conditions True and not True, and counter values (`_status_is`)."""

    true: set[str]
    not_true: set[str]
    counts: dict[str, int]

    def must_be_reached(self, lws: LWSHarness, name: str, *, what: str,
                        within: TimeoutName = "lws_available") -> Obj:
        """Wait (`within`, lws_available unless given) until LWS `name` reports this status."""
        def status_reached() -> Obj:
            return _status_is(lws, name, true=self.true, not_true=self.not_true, counts=self.counts)
        return lws.wait(status_reached, what=what, within=within, name=name)

    def must_stay(self, lws: LWSHarness, name: str, *, what: str) -> Obj:
        """LWS `name` keeps reporting this status for `stays_true` seconds."""
        def status_kept() -> Obj:
            return _status_is(lws, name, true=self.true, not_true=self.not_true, counts=self.counts)
        return lws.hold(status_kept, what=what, name=name)


ONLY_AVAILABLE = frozenset({"Progressing", "UpdateInProgress"})
"""The conditions that are not True once an LWS is Available and no update is under way."""


@conformance(short_name="ProgressingUntilReadyThenAvailable", features={Feature.STATUS_CONDITIONS},
             description="A new LWS is Progressing (not UpdateInProgress) while leaders are unready, then Available "
                         "with Progressing False (4.5).")
def test_progressing_until_ready_then_available(lws: LWSHarness) -> None:
    lws.create(workloads.start_unready(workloads.probe_lws("cond", replicas=2, size=2)))
    lws.probe_json("cond-0")
    lws.probe_json("cond-1")
    progressing = Status(true={"Progressing"}, not_true={"Available", "UpdateInProgress"}, counts={"readyReplicas": 0})
    progressing.must_be_reached(lws, "cond", what="Progressing while leaders are unready")
    progressing.must_stay(lws, "cond", what="no Available while no group is ready")
    for pod in ("cond-0", "cond-1"):
        lws.probe_json(pod, "/ready", value="true")
    Status(true={"Available"}, not_true=set(ONLY_AVAILABLE),
           counts={"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}).must_be_reached(
        lws, "cond", what="Available with every counter at 2")


@conformance(short_name="ScaleUpMakesProgressing", features={Feature.STATUS_CONDITIONS, Feature.SCALING},
             description="Scaling up a ready LWS turns Progressing True and Available False until the new group is "
                         "ready (4.5).")
def test_scale_up_makes_progressing(lws: LWSHarness) -> None:
    lws.create(workloads.start_unready(workloads.probe_lws("grow", replicas=1, size=2)))
    lws.probe_json("grow-0", "/ready", value="true")
    lws.ready("grow", replicas=1, size=2)
    lws.patch("grow", {"spec": {"replicas": 2}})
    lws.probe_json("grow-1")
    Status(true={"Progressing"}, not_true={"Available"}, counts={"readyReplicas": 1}).must_be_reached(
        lws, "grow", what="Progressing after scale-up")
    lws.probe_json("grow-1", "/ready", value="true")
    Status(true={"Available"}, not_true={"Progressing"}, counts={"readyReplicas": 2}).must_be_reached(
        lws, "grow", what="Available again")


@conformance(short_name="RolloutConditions", slow=True, features={Feature.STATUS_CONDITIONS, Feature.ROLLING_UPDATE},
             description="During a rollout UpdateInProgress and Progressing are True and Available False; after it, "
                         "only Available (4.5).")
def test_rollout_conditions(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("upd", replicas=2, size=2)
    lws.create(manifest)
    lws.ready("upd", replicas=2, size=2)
    old = leader_revision(lws, "upd")
    change_template(lws, "upd", manifest, "stuck", unready=True)

    updating = {"UpdateInProgress", "Progressing"}
    Status(true=updating, not_true={"Available"},
           counts={"replicas": 2, "readyReplicas": 1, "updatedReplicas": 1}).must_be_reached(
        lws, "upd", what="UpdateInProgress while group 1 is stuck on an unready revision", within="rollout_complete")
    # status.replicas mirrors the leader StatefulSet's status and may lag or dip (trap T7), so the
    # "stays true" claim is about the conditions and the ready/updated counters only.
    Status(true=updating, not_true={"Available"}, counts={"readyReplicas": 1, "updatedReplicas": 1}).must_stay(
        lws, "upd", what="the stuck rollout keeps reporting UpdateInProgress")
    stuck = leader_revision(lws, "upd")
    change_template(lws, "upd", manifest, "fixed")
    lws.rollout_must_complete("upd", old={old, stuck}, replicas=2, size=2)
    Status(true={"Available"}, not_true=set(ONLY_AVAILABLE),
           counts={"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}).must_be_reached(
        lws, "upd", what="only Available after the rollout")


@conformance(short_name="ZeroReplicasIsAvailable", features={Feature.STATUS_CONDITIONS},
             description="An LWS with replicas 0 reports Available with zero counters (4.5).")
def test_zero_replicas_is_available(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("empty", replicas=0, size=2))
    Status(true={"Available"}, not_true=set(ONLY_AVAILABLE),
           counts={"replicas": 0, "readyReplicas": 0}).must_be_reached(lws, "empty", what="Available with 0 groups")
    assert lws_waits.condition(lws.get("empty"), "Available") == "True"


@conformance(short_name="ConditionsFollowGenerationWhenStatusStays", features={Feature.STATUS_CONDITIONS},
             description="A spec change that leaves every condition's status as it was (startupPolicy, then "
                         "rolloutStrategy) still moves each condition's observedGeneration, True and False ones, to "
                         "metadata.generation (1.4, 4.5).")
def test_conditions_follow_generation_when_status_stays(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("ogen", replicas=2, size=2))
    lws.ready("ogen", replicas=2, size=2)
    available = Status(true={"Available"}, not_true=set(ONLY_AVAILABLE), counts={"readyReplicas": 2})
    before = available.must_be_reached(lws, "ogen", what="Available at the first generation")
    types = sorted(c["type"] for c in before["status"]["conditions"])
    assert {"Available", "Progressing"} <= set(types), \
        f"conditions {types}, want Available (True) and Progressing (False, from the creation) both listed (4.5)"
    # Neither change is a new revision (2.5: the revision holds leaderWorkerTemplate and networkConfig only),
    # so nothing rolls and no condition changes status; only the generation moves.
    for change, patch in (("startupPolicy LeaderReady", {"spec": {"startupPolicy": "LeaderReady"}}),
                          ("maxUnavailable 2", {"spec": {"rolloutStrategy": {
                              "rollingUpdateConfiguration": {"maxUnavailable": 2}}}})):
        generation = lws.patch("ogen", patch)["metadata"]["generation"]
        seen = available.must_be_reached(
            lws, "ogen", what=f"every condition at generation {generation} after {change}, Available still True")
        assert seen["metadata"]["generation"] == generation, \
            f"generation {seen['metadata']['generation']}, want {generation}: something else changed the spec"
