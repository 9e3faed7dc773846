"""Failure handling (docs/lws-contract.md section 4.2): a group fails and recovers as a unit.

Crashes are real: the probe exits on request (`/exit?code=1`), so the container runtime restarts it
and `restartCount` rises, exactly as a crashing inference server would. Under the default
`RecreateGroupOnPodRestart` the whole group is replaced (every pod UID new, Ready again) and re-forms:
each new worker reaches the new leader at LWS_LEADER_ADDRESS. Other groups are untouched. Under `None`
only the crashed container restarts; under `RecreateGroupAfterStart` a group still starting is left
alone. Deleting a leader pod recreates its group under every policy (T4). Each test records the
groups' timeline from the fault to the recovery (`lws.timeline`) for the report's picture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.harness import LWSHarness, Obj
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import core
from lwsconf.waits import pods as pod_waits


def _recreated_and_reformed(lws: LWSHarness, name: str, index: int, old: set[str], size: int) -> None:
    group = lws.group_must_be_recreated(name, index, old, size=size)
    leader = group.pods[0]["metadata"]["name"]
    # The leader's own POD_IP (downward API) rather than its status.podIP: on --cluster=local the API shows a
    # pod's 198.18 stand-in while the pod itself (and so what its peers reach) has its loopback address.
    leader_ip = lws.probe_json(leader)["ip"]
    assert leader_ip, f"{leader}'s probe reports no POD_IP; cannot tell whom its workers reach"
    for j in range(1, size):
        worker = group.pods[j]["metadata"]["name"]
        address = lws.probe_json(worker)["lws"]["LWS_LEADER_ADDRESS"]
        reply = lws.probe_json(worker, "/peer", host=address, port=str(workloads.PROBE_PORT))
        assert "answer" in reply, f"{worker} could not reach {address}: {reply}"
        answer = reply["answer"]
        assert (answer["pod"], answer["ip"]) == (leader, leader_ip), \
            f"{worker} -> {address} reached {answer}, want the new leader {leader} at {leader_ip}"


def _untouched(lws: LWSHarness, name: str, index: int, uids: set[str]) -> None:
    now = lws.groups(name).get(index)
    assert now is not None and now.uids == uids, f"group {index} was disturbed: {lws.describe(name)}"


@dataclass(frozen=True)
class GroupFault:
    """A fault to one pod of an LWS, and the group it must replace (the cases below differ only in this data, as
    Gateway API's table-driven cases do)."""

    name: str
    replicas: int
    size: int
    pod: str
    group: int
    fault: Callable[[LWSHarness, str], None]
    restart_policy: str | None = None
    """None: the server's default (RecreateGroupOnPodRestart)."""


def _crash(lws: LWSHarness, pod: str) -> None:
    lws.crash(pod)


def _delete(lws: LWSHarness, pod: str) -> None:
    lws.delete_pod(pod)


def _fault_replaces_its_group(lws: LWSHarness, case: GroupFault) -> None:
    """The faulted pod's group is replaced and re-forms around its new leader; every other group keeps its pods."""
    lws.create(workloads.probe_lws(case.name, replicas=case.replicas, size=case.size,
                                   restart_policy=case.restart_policy))
    before = lws.ready(case.name, replicas=case.replicas, size=case.size)
    with lws.timeline(case.name):
        case.fault(lws, case.pod)
        _recreated_and_reformed(lws, case.name, case.group, before[case.group].uids, case.size)
    for index in range(case.replicas):
        if index != case.group:
            _untouched(lws, case.name, index, before[index].uids)


@conformance(short_name="GroupRecreatedOnWorkerCrash", features={Feature.GROUP_RESTART},
             description="A worker container crash replaces its whole group, which re-forms; other groups stay (4.2).")
def test_group_recreated_on_worker_crash(lws: LWSHarness) -> None:
    _fault_replaces_its_group(lws, GroupFault("crash", replicas=2, size=3, pod="crash-0-1", group=0, fault=_crash))


@conformance(short_name="GroupRecreatedOnWorkerDeletion", features={Feature.GROUP_RESTART},
             description="Deleting a worker pod replaces its whole group (upstream e2e: same pod count, no original "
                         "UID) (4.2).")
def test_group_recreated_on_worker_deletion(lws: LWSHarness) -> None:
    _fault_replaces_its_group(lws, GroupFault("wdel", replicas=1, size=3, pod="wdel-0-1", group=0, fault=_delete))


@conformance(short_name="GroupRecreatedOnLeaderCrash", features={Feature.GROUP_RESTART},
             description="A leader container crash replaces its whole group too (4.2, T16).")
def test_group_recreated_on_leader_crash(lws: LWSHarness) -> None:
    _fault_replaces_its_group(lws, GroupFault("lcrash", replicas=2, size=2, pod="lcrash-1", group=1, fault=_crash))


@conformance(short_name="RestartPolicyNoneRestartsOnlyTheContainer", features={Feature.RESTART_POLICY_NONE},
             description="Under restartPolicy None a crashed worker restarts in place: restartCount 1, every UID "
                         "kept (4.2).")
def test_restart_policy_none_restarts_only_the_container(lws: LWSHarness) -> None:
    _crash_restarts_only_the_container(lws, "none", "none-0-1")


@conformance(short_name="RestartPolicyNoneLeaderCrashRestartsOnlyTheContainer", features={Feature.RESTART_POLICY_NONE},
             description="Under restartPolicy None a crashed leader container restarts in place too: the policy "
                         "gate holds for leaders as for workers; restartCount 1, every UID of the group kept (4.2).")
def test_restart_policy_none_leader_crash_restarts_only_the_container(lws: LWSHarness) -> None:
    _crash_restarts_only_the_container(lws, "lnone", "lnone-0")


def _crash_restarts_only_the_container(lws: LWSHarness, name: str, crashed: str) -> None:
    """Crash `crashed` (a pod of group 0 of a 1x3 LWS under restartPolicy None): only its container restarts."""
    lws.create(workloads.probe_lws(name, replicas=1, size=3, restart_policy="None"))
    before = lws.ready(name, replicas=1, size=3)[0]
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in before.pods.values()}

    def same_pods() -> None:
        group = lws.groups(name).get(0)
        assert group is not None and group.uids == before.uids, \
            f"a pod of group 0 was replaced after {crashed}'s container crashed under restartPolicy None (4.2)"
    with lws.timeline(name):
        lws.crash(crashed)
        pod = lws.pod_must_have_restarted(crashed, uid=uids[crashed], restarts=1, name=name)
        lws.hold(same_pods, what="group 0 keeps every pod under restartPolicy None", name=name)
    assert pod_waits.restart_count(pod) == 1
    for pod_name, uid in uids.items():
        assert lws.pod(pod_name)["metadata"]["uid"] == uid, f"{pod_name} was replaced"


@conformance(short_name="LeaderDeletionRecreatesGroupUnderNone", features={Feature.RESTART_POLICY_NONE},
             description="Deleting a leader pod recreates its group even under restartPolicy None (ownership, T4).")
def test_leader_deletion_recreates_group_under_none(lws: LWSHarness) -> None:
    _fault_replaces_its_group(lws, GroupFault("ldel", replicas=1, size=2, pod="ldel-0", group=0, fault=_delete,
                                              restart_policy="None"))


@conformance(short_name="RecreateAfterStartRecreatesAStartedGroup", features={Feature.RECREATE_AFTER_START},
             description="Under RecreateGroupAfterStart a crash in a fully started group recreates the group (4.2).")
def test_recreate_after_start_recreates_a_started_group(lws: LWSHarness) -> None:
    _fault_replaces_its_group(lws, GroupFault("after", replicas=1, size=2, pod="after-0-1", group=0, fault=_crash,
                                              restart_policy="RecreateGroupAfterStart"))


@conformance(short_name="RecreateAfterStartLeavesAStartingGroup", features={Feature.RECREATE_AFTER_START},
             description="Under RecreateGroupAfterStart a crash while group pods are still Pending restarts only the "
                         "container (4.2).")
def test_recreate_after_start_leaves_a_starting_group(lws: LWSHarness) -> None:
    def pend(template: dict[str, object]) -> None:
        template["spec"]["nodeSelector"] = {workloads.PARKED_LABEL: "true"}  # type: ignore[index]
    manifest = workloads.probe_lws("starting", replicas=1, size=2, restart_policy="RecreateGroupAfterStart")
    lws.create(workloads.edit_templates(manifest, pend, leader=False))
    lws.probe_json("starting-0")
    def worker_exists() -> Obj:
        return lws.pods("starting")["starting-0-1"]
    lws.wait(worker_exists, what="worker starting-0-1 to exist (Pending)", name="starting")
    leader_uid = lws.pod("starting-0")["metadata"]["uid"]
    worker_uid = lws.pod("starting-0-1")["metadata"]["uid"]

    def left_alone() -> None:
        pods = lws.pods("starting")
        uids = {p: obj["metadata"]["uid"] for p, obj in pods.items()}
        assert uids == {"starting-0": leader_uid, "starting-0-1": worker_uid}, f"group changed: {uids}"
    with lws.timeline("starting"):
        lws.crash("starting-0")
        lws.pod_must_have_restarted("starting-0", uid=leader_uid, restarts=1, name="starting")
        lws.hold(left_alone, what="the still-starting group keeps its pods", name="starting")


@conformance(short_name="RecreateAfterStartAnnotationLeavesAStartingGroup", features={Feature.RECREATE_AFTER_START},
             description="Under RecreateGroupOnPodRestart with the experimental-recreate-group-after-start annotation "
                         "a crash while a group pod is still Pending restarts only the container, as under "
                         "RecreateGroupAfterStart (4.2).")
def test_recreate_after_start_annotation_leaves_a_starting_group(lws: LWSHarness) -> None:
    # Upstream: the annotation's presence turns RecreateGroupOnPodRestart into RecreateGroupAfterStart (v0.9.0
    # pkg/controllers/pod_controller.go:220-222; its integration test "... RecreateGroupAfterStart annotation is
    # set, and a pod is pending"). Without the annotation the same crash recreates the group
    # (GroupRecreatedOnLeaderCrash), so this tells the annotation read from ignored.
    def pend(template: dict[str, object]) -> None:
        template["spec"]["nodeSelector"] = {workloads.PARKED_LABEL: "true"}  # type: ignore[index]
    manifest = workloads.probe_lws("annot", replicas=1, size=2, restart_policy="RecreateGroupOnPodRestart",
                                   annotations={lwsapi.RECREATE_GROUP_AFTER_START: ""})
    lws.create(workloads.edit_templates(manifest, pend, leader=False))
    lws.probe_json("annot-0")

    def worker_exists() -> Obj:
        return lws.pods("annot")["annot-0-1"]
    lws.wait(worker_exists, what="worker annot-0-1 to exist (Pending)", name="annot")
    uids = {pod: lws.pod(pod)["metadata"]["uid"] for pod in ("annot-0", "annot-0-1")}

    def left_alone() -> None:
        now = {p: obj["metadata"]["uid"] for p, obj in lws.pods("annot").items()}
        assert now == uids, (f"group changed {now}, want {uids}: with the experimental-recreate-group-after-start "
                             "annotation a group with a Pending pod is still starting and is not recreated (4.2)")
    with lws.timeline("annot"):
        lws.crash("annot-0")
        lws.pod_must_have_restarted("annot-0", uid=uids["annot-0"], restarts=1, name="annot")
        lws.hold(left_alone, what="the still-starting group keeps its pods", name="annot")


@conformance(short_name="RecreateAfterStartLeavesAGroupShortOfPods",
             features={Feature.RECREATE_AFTER_START, Feature.STARTUP_LEADER_READY},
             description="Under RecreateGroupAfterStart a crash in a group that does not yet have all `size` pods "
                         "(no Pending pod: the workers are not created yet) restarts only the container (4.2).")
def test_recreate_after_start_leaves_a_group_short_of_pods(lws: LWSHarness) -> None:
    # LeaderReady with the leader held unready: the group is its Running leader alone, short of its worker, and
    # no pod of it is Pending, so only the count says it is still starting.
    manifest = workloads.probe_lws("short", replicas=1, size=2, restart_policy="RecreateGroupAfterStart",
                                   startup_policy="LeaderReady")
    lws.create(workloads.start_unready(manifest))
    lws.probe_json("short-0")
    leader_uid = lws.pod("short-0")["metadata"]["uid"]

    def leader_alone() -> None:
        pods = {p: obj["metadata"]["uid"] for p, obj in lws.pods("short").items()}
        assert pods == {"short-0": leader_uid}, \
            f"group pods {pods}, want the unready leader short-0 ({leader_uid[:8]}) alone (LeaderReady, 4.1)"
    leader_alone()  # the precondition: a group short of pods, its leader unready
    with lws.timeline("short"):
        lws.crash("short-0")
        _restarted_in_place(lws, "short", "short-0", leader_uid)
        lws.hold(leader_alone, what="the group short of pods keeps its leader (RecreateGroupAfterStart, 4.2)",
                 name="short")


def _restarted_in_place(lws: LWSHarness, name: str, pod: str, uid: str) -> None:
    """Wait (group_recreated) until pod `pod` shows a container restart while still the pod `uid`; a new UID
    (the group was recreated) fails at once. Readiness is not awaited: the pod may be held unready."""
    def container_restarted() -> None:
        now = lws.pods(name)[pod]
        if now["metadata"]["uid"] != uid:
            raise core.Terminal(f"{pod} was replaced (uid {uid[:8]} gone): the group was recreated, want only the "
                                "container restarted")
        count = pod_waits.restart_count(now)
        assert count >= 1, f"{pod} restartCount {count}, want >= 1"
    lws.wait(container_restarted, what=f"{pod}'s container to restart in place", within="group_recreated", name=name)
