"""startupPolicy (docs/lws-contract.md section 4.1): when a group's worker StatefulSet may be created.

The leader is held unready from its first instant with the probe's start-unready mode, so "before the
leader is Ready" is a state the test controls, not a race it hopes to win. With LeaderReady no worker
StatefulSet may exist for that group during the whole observation window; releasing the leader
(/ready?value=true) lets it appear. With LeaderCreated the workers come up regardless.
"""

from __future__ import annotations

from conformance.harness import LWSHarness, Obj, controller_of
from conformance.rollouts import change_template, leader_revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import observe


def _leader_running_unready(lws: LWSHarness, pod: str) -> None:
    lws.probe_json(pod)  # the process is up and answering ...
    assert not observe.pod_ready(lws.pod(pod)), f"{pod} is Ready although its probe starts unready"


@conformance(short_name="LeaderReadyGatesWorkers", features={Feature.STARTUP_LEADER_READY},
             description="With LeaderReady no worker StatefulSet exists while the leader is unready; it appears once "
                         "the leader is Ready (4.1).")
def test_leader_ready_gates_workers(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("gate", replicas=2, size=2, startup_policy="LeaderReady")
    lws.create(workloads.start_unready(manifest))
    for pod in ("gate-0", "gate-1"):
        _leader_running_unready(lws, pod)

    def no_worker_sets() -> None:
        sets = sorted(lws.statefulsets())
        assert "gate" in sets, f"leader StatefulSet gate is missing; StatefulSets {sets}"
        workers = [s for s in sets if s != "gate"]
        assert not workers, (f"worker StatefulSets {workers} exist while leaders gate-0 and gate-1 are unready, "
                             "want none until their leader is Ready (LeaderReady, 4.1)")
    lws.hold(no_worker_sets, what="no worker StatefulSet while both leaders are unready", name="gate")
    lws.probe_json("gate-0", "/ready", value="true")
    def group_zero_workers_made() -> Obj:
        return lws.statefulsets()["gate-0"]
    lws.wait(group_zero_workers_made, what="worker StatefulSet gate-0 after its leader turned Ready", name="gate")

    def only_group_zero() -> None:
        assert "gate-1" not in lws.statefulsets(), \
            "worker StatefulSet gate-1 exists while leader gate-1 is unready, want none until it is Ready " \
            "(LeaderReady, 4.1)"
    lws.hold(only_group_zero, what="no worker StatefulSet for the still-unready leader gate-1", name="gate")
    lws.probe_json("gate-1", "/ready", value="true")
    lws.ready("gate", replicas=2, size=2)


@conformance(short_name="LeaderCreatedDoesNotWait", features={Feature.STARTUP_LEADER_CREATED},
             description="With LeaderCreated (the default) workers are created and run while the leader is still "
                         "unready (4.1).")
def test_leader_created_does_not_wait(lws: LWSHarness) -> None:
    lws.create(workloads.start_unready(workloads.probe_lws("eager", replicas=1, size=3)))
    _leader_running_unready(lws, "eager-0")

    def workers_ready() -> None:
        pods = lws.pods("eager")
        workers = [pods.get(f"eager-0-{j}") for j in (1, 2)]
        assert all(w is not None and observe.pod_ready(w) for w in workers), "workers not Ready yet"
        assert not observe.pod_ready(pods["eager-0"]), "the leader turned Ready by itself"
    lws.wait(workers_ready, what="workers Ready while the leader is still unready", within="pods_running",
             name="eager")
    assert lws.statefulsets()["eager-0"]["spec"]["replicas"] == 2
    lws.probe_json("eager-0", "/ready", value="true")
    lws.groups_must_be_ready("eager", replicas=1, size=3)


@conformance(short_name="LeaderReadyGatesRecreatedGroup",
             features={Feature.STARTUP_LEADER_READY, Feature.GROUP_RESTART},
             description="With LeaderReady the gate holds every time a group is created, not only at the LWS's first "
                         "start: after a worker crash recreates the group, the new leader, unready, gets no worker "
                         "StatefulSet until it is Ready (4.1, 4.2).")
def test_leader_ready_gates_recreated_group(lws: LWSHarness) -> None:
    lws.create(workloads.start_unready(workloads.probe_lws("regate", replicas=1, size=2,
                                                           startup_policy="LeaderReady")))
    _leader_running_unready(lws, "regate-0")
    lws.probe_json("regate-0", "/ready", value="true")
    before = lws.ready("regate", replicas=1, size=2)[0]
    old_leader = before.pods[0]["metadata"]["uid"]
    with lws.timeline("regate"):
        lws.crash("regate-0-1")
        _new_leader_must_exist(lws, "regate", "regate-0", old_leader)
        _leader_running_unready(lws, "regate-0")
        _no_workers_while_unready(lws, "regate", 0, old_leader, "recreated")
        lws.probe_json("regate-0", "/ready", value="true")
        lws.group_must_be_recreated("regate", 0, before.uids, size=2)


@conformance(short_name="LeaderReadyGatesRolledOutGroup",
             features={Feature.STARTUP_LEADER_READY, Feature.ROLLING_UPDATE},
             description="With LeaderReady a group replaced by a rolling update waits too: the new revision's leader, "
                         "unready, gets no worker StatefulSet until it is Ready (4.1, 4.4.2).")
def test_leader_ready_gates_rolled_out_group(lws: LWSHarness) -> None:
    manifest = workloads.start_unready(workloads.probe_lws("rgate", replicas=1, size=2, startup_policy="LeaderReady"))
    lws.create(manifest)
    _leader_running_unready(lws, "rgate-0")
    lws.probe_json("rgate-0", "/ready", value="true")
    before = lws.ready("rgate", replicas=1, size=2)[0]
    old_leader = before.pods[0]["metadata"]["uid"]
    old = leader_revision(lws, "rgate")
    with lws.timeline("rgate"):
        change_template(lws, "rgate", manifest, "2")  # the leader template keeps LWSCONF_START_UNREADY=1
        _new_leader_must_exist(lws, "rgate", "rgate-0", old_leader)
        _leader_running_unready(lws, "rgate-0")
        _no_workers_while_unready(lws, "rgate", 0, old_leader, "rolled-out")
        lws.probe_json("rgate-0", "/ready", value="true")
        lws.rollout_must_complete("rgate", old=old, replicas=1, size=2)


def _no_workers_while_unready(lws: LWSHarness, name: str, index: int, old_leader: str, how: str) -> None:
    """Hold (stays_true): group `index`'s new leader, unready, has no worker StatefulSet; one controlled by the
    previous leader `old_leader` (the old group's, still going) may be left."""
    workers = f"{name}-{index}"

    def no_workers_for_new_leader() -> None:
        sets = lws.statefulsets()
        assert name in sets, f"leader StatefulSet {name} is missing; StatefulSets {sorted(sets)}"
        if workers in sets:
            owner = controller_of(sets[workers])
            assert owner is not None and owner["uid"] == old_leader, (
                f"worker StatefulSet {workers} (controller {owner}) exists while the {how} leader {workers} is "
                "unready, want none until it is Ready (LeaderReady, 4.1: the gate holds every time a group is "
                "created)")
    lws.hold(no_workers_for_new_leader, what=f"no worker StatefulSet while the {how} leader is unready", name=name)


def _new_leader_must_exist(lws: LWSHarness, name: str, leader: str, old_uid: str) -> str:
    """Wait (group_recreated) until pod `leader` exists again, not terminating, with a UID other than `old_uid`:
    the group was recreated. Returns the new UID."""
    def leader_replaced() -> str:
        uid = str(lws.pods(name)[leader]["metadata"]["uid"])
        assert uid != old_uid, f"{leader} is still the old pod {old_uid[:8]}"
        return uid
    return lws.wait(leader_replaced, what=f"leader {leader} to be recreated with its group", within="group_recreated",
                    name=name)
