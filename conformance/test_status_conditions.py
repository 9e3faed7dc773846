"""Status counters and conditions (docs/lws-contract.md sections 1.4, 4.5).

Conditions are matched on type and status only (trap T8: a False condition keeps its True-time
reason and message), and every status write must carry `observedGeneration == metadata.generation`.
Intermediate states are made deterministic by holding pods unready (probe start-unready mode):
a fresh LWS is Progressing until its groups are ready; a template change whose pods never turn Ready
holds UpdateInProgress and Progressing True and Available False; a fixing change completes it.
"""

from __future__ import annotations

from typing import Any

from conformance.harness import LWSHarness, change_template, leader_revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import lws as lws_waits
from lwsconf.waits import rollout

Obj = dict[str, Any]


def _conditions(lws_obj: Obj) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (lws_obj.get("status") or {}).get("conditions") or []}


def _status_is(lws: LWSHarness, name: str, *, true: set[str], not_true: set[str], counts: dict[str, int]) -> Obj:
    lws_obj = lws.get(name)
    status, generation = lws_obj.get("status") or {}, lws_obj["metadata"].get("generation")
    assert status.get("observedGeneration") == generation, f"observedGeneration {status.get('observedGeneration')} != {generation}"
    stale = [c["type"] for c in status.get("conditions") or [] if c.get("observedGeneration", generation) != generation]
    assert not stale, f"conditions with a stale observedGeneration: {stale}"
    conds = _conditions(lws_obj)
    assert all(conds.get(c) == "True" for c in true), f"conditions {conds}, want {sorted(true)} True"
    assert all(conds.get(c) != "True" for c in not_true), f"conditions {conds}, want {sorted(not_true)} not True"
    seen = {k: status.get(k, 0) for k in counts}
    assert seen == counts, f"status counters {seen}, want {counts}"
    return lws_obj


@conformance(short_name="ProgressingUntilReadyThenAvailable", features={Feature.STATUS_CONDITIONS},
             description="A new LWS is Progressing (not UpdateInProgress) while leaders are unready, then Available with Progressing False (4.5).")
def test_progressing_until_ready_then_available(lws: LWSHarness) -> None:
    lws.create(workloads.start_unready(workloads.probe_lws("cond", replicas=2, size=2)))
    lws.probe_json("cond-0")
    lws.probe_json("cond-1")
    lws.wait(lambda: _status_is(lws, "cond", true={"Progressing"}, not_true={"Available", "UpdateInProgress"},
                                counts={"readyReplicas": 0}), what="Progressing while leaders are unready", name="cond")
    lws.hold(lambda: _status_is(lws, "cond", true={"Progressing"}, not_true={"Available", "UpdateInProgress"},
                                counts={"readyReplicas": 0}), what="no Available while no group is ready", name="cond")
    for pod in ("cond-0", "cond-1"):
        lws.probe_json(pod, "/ready", value="true")
    lws.wait(lambda: _status_is(lws, "cond", true={"Available"}, not_true={"Progressing", "UpdateInProgress"},
                                counts={"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}),
             what="Available with every counter at 2", name="cond")


@conformance(short_name="ScaleUpMakesProgressing", features={Feature.STATUS_CONDITIONS, Feature.SCALING},
             description="Scaling up a ready LWS turns Progressing True and Available False until the new group is ready (4.5).")
def test_scale_up_makes_progressing(lws: LWSHarness) -> None:
    lws.create(workloads.start_unready(workloads.probe_lws("grow", replicas=1, size=2)))
    lws.probe_json("grow-0", "/ready", value="true")
    lws.ready("grow", replicas=1, size=2)
    lws.patch("grow", {"spec": {"replicas": 2}})
    lws.probe_json("grow-1")
    lws.wait(lambda: _status_is(lws, "grow", true={"Progressing"}, not_true={"Available"},
                                counts={"readyReplicas": 1}), what="Progressing after scale-up", name="grow")
    lws.probe_json("grow-1", "/ready", value="true")
    lws.wait(lambda: _status_is(lws, "grow", true={"Available"}, not_true={"Progressing"},
                                counts={"readyReplicas": 2}), what="Available again", name="grow")


@conformance(short_name="RolloutConditions", slow=True, features={Feature.STATUS_CONDITIONS, Feature.ROLLING_UPDATE},
             description="During a rollout UpdateInProgress and Progressing are True and Available False; after it, only Available (4.5).")
def test_rollout_conditions(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("upd", replicas=2, size=2)
    lws.create(manifest)
    lws.ready("upd", replicas=2, size=2)
    old = leader_revision(lws, "upd")
    change_template(lws, "upd", manifest, "stuck", unready=True)

    def updating() -> Obj:
        return _status_is(lws, "upd", true={"UpdateInProgress", "Progressing"}, not_true={"Available"},
                          counts={"replicas": 2, "readyReplicas": 1, "updatedReplicas": 1})
    lws.wait(updating, what="UpdateInProgress while group 1 is stuck on an unready revision",
             timeout=lws.t.rollout_complete, name="upd")

    def still_updating() -> Obj:
        # status.replicas mirrors the leader StatefulSet's status and may lag or dip (trap T7), so the
        # "stays true" claim is about the conditions and the ready/updated counters only.
        return _status_is(lws, "upd", true={"UpdateInProgress", "Progressing"}, not_true={"Available"},
                          counts={"readyReplicas": 1, "updatedReplicas": 1})
    lws.hold(still_updating, what="the stuck rollout keeps reporting UpdateInProgress", name="upd")
    stuck = leader_revision(lws, "upd")
    change_template(lws, "upd", manifest, "fixed")
    rollout.rollout_must_complete(lws.api, lws.namespace, "upd", old={old, stuck}, replicas=2, size=2, t=lws.t)
    lws.wait(lambda: _status_is(lws, "upd", true={"Available"}, not_true={"Progressing", "UpdateInProgress"},
                                counts={"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}),
             what="only Available after the rollout", name="upd")


@conformance(short_name="ZeroReplicasIsAvailable", features={Feature.STATUS_CONDITIONS},
             description="An LWS with replicas 0 reports Available with zero counters (4.5).")
def test_zero_replicas_is_available(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("empty", replicas=0, size=2))
    lws.wait(lambda: _status_is(lws, "empty", true={"Available"}, not_true={"Progressing", "UpdateInProgress"},
                                counts={"replicas": 0, "readyReplicas": 0}), what="Available with 0 groups", name="empty")
    assert lws_waits.condition(lws.get("empty"), "Available") == "True"
