"""Serving end to end (LWS-SERVING): a multi-node inference server on LWS, with real traffic.

Why LWS exists: a leader and its workers rendezvous through LWS_LEADER_ADDRESS/LWS_GROUP_SIZE, one
server answers through a leader-only Service, and a member failure takes the whole group down and
back. The server is the emulator by default (`lwsconf/emulator/emulator.py`: it rendezvouses, refuses
requests until its group is complete, names the pod and revision of every answer and fails its group
when a member goes away), so these scenarios run on every cluster; `--serving-server=vllm` runs them
against real vLLM on GPU nodes (checks that need the answering pod's name are then skipped, as vLLM
does not say). Requests go through the API server's `services/<svc>:<port>/proxy`; each is drawn on
the test's timeline, and the report gives requests, failures and p50/p99 latency per phase. With vLLM (or
the emulator standing in for it, `--vllm-stand-in=emulator`) each scenario first checks the cluster has
one GPU node per pod at its peak (groups, plus the rollout's surge group), else it is SKIPPED saying what it
needs and what there is; readiness waits are ModelReady (a model loads), and after deploying every group
must span its own nodes and every rank must have joined (`conformance/serving.py`).
"""

from __future__ import annotations

import pytest

from conformance import serving as srv
from conformance.harness import LWSHarness
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.serving import servers
from lwsconf.timeline import analysis
from lwsconf.waits import lws as lws_waits

ROLLOUT_PRESTOP = 3
"""Seconds of preStop sleep in the zero-error rollout: how long a terminating leader keeps answering while
endpoints and proxies learn it is going; serving stacks advise a few seconds."""
ROLLOUT_GRACE = 20


@pytest.fixture
def serving(lws: LWSHarness, serving_server: servers.ServingServer) -> srv.Serving:
    return srv.Serving(lws, serving_server)


def _needs_pod_names(serving: srv.Serving) -> None:
    if not serving.server.identifies_pods:
        pytest.skip(f"the {serving.server.name} server does not say which pod answered; this check needs it")


def _leaders(name: str, replicas: int) -> set[str]:
    return {f"{name}-{i}" for i in range(replicas)}


@conformance(short_name="ServingGroupsRendezvous", features={Feature.SERVING_RENDEZVOUS},
             description="Every group's leader reports a complete group of the right size, joined by its own workers "
                         "(index i from pod <leader>-i) from their own pod addresses.")
def test_serving_groups_rendezvous(lws: LWSHarness, serving: srv.Serving) -> None:
    _needs_pod_names(serving)
    serving.deploy("rdv", replicas=2, size=3)
    for group in range(2):
        leader = f"rdv-{group}"
        view = serving.group_view(leader)
        assert view["complete"] and view["group_size"] == 3 and view["joined"] == 2, f"{leader}: {view}"
        members = {m["index"]: m for m in view["members"] if m["index"] != 0}
        assert {i: m["pod"] for i, m in members.items()} == {1: f"{leader}-1", 2: f"{leader}-2"}, view["members"]
        for index, member in members.items():
            own = serving.group_view(member["pod"])
            assert own["index"] == index and own["group_size"] == 3 and own["complete"], f"{member['pod']}: {own}"
            assert member["address"] == own["address"], (
                f"{leader} saw worker {index} join from {member['address']}, but {member['pod']} is at "
                f"{own['address']}: the worker reached its leader through something else than its own address")


@conformance(short_name="ServingRoutesOnlyToLeaders", features={Feature.LEADER_SERVICE, Feature.SERVING_RENDEZVOUS},
             description="Completions through the leader Service are all answered, by leaders of complete groups, "
                         "and by the leader of every group.")
def test_serving_routes_only_to_leaders(lws: LWSHarness, serving: srv.Serving) -> None:
    _, svc = serving.deploy("route", replicas=3, size=2)
    leaders = _leaders("route", 3)
    with lws.timeline("route"), serving.traffic(svc) as sent:
        if serving.server.identifies_pods:
            for leader in sorted(leaders):
                serving.answered(sent, count=2, pods={leader}, since=0.0,
                                 what=f"a completion through {svc} answered by {leader}")
        else:
            serving.answered(sent, count=10, since=0.0, what=f"10 completions through {svc}")
    requests = sent.snapshot()
    assert not srv.failures(requests), srv.summary(requests)
    if serving.server.identifies_pods:
        strays = {r.pod for r in requests} - leaders
        assert not strays, f"answered by {sorted(map(str, strays))}, which are not leaders; {srv.summary(requests)}"


@conformance(short_name="ServingRecoversFromWorkerProcessFailure", slow=True,
             features={Feature.SERVING_UNDER_LOAD, Feature.GROUP_RESTART},
             description="A worker's server process crashes under load: the group restarts as a unit (new leader and "
                         "workers), the other group keeps answering, serving from the restarted group resumes, and "
                         "no request reaches a half-formed group; the time to recover is on the timeline.")
def test_serving_recovers_from_worker_process_failure(lws: LWSHarness, serving: srv.Serving) -> None:
    _needs_pod_names(serving)
    _, svc = serving.deploy("heal", replicas=2, size=2)
    old = lws.groups("heal")[0].uids
    with lws.timeline("heal"), serving.traffic(svc) as sent:
        serving.answered(sent, count=1, pods={"heal-0"}, what="heal-0 to answer before the crash")
        crashed_at = lws.clock()
        serving.crash("heal-0-1")

        lws.group_must_be_recreated("heal", 0, old, size=2)  # as a unit: every pod new
        back = serving.answered(sent, count=1, pods={"heal-0"}, since=crashed_at,
                                what="the recreated group 0 to answer through the Service")[0]
        lws.step(f"serving from group 0 resumed {back.t - crashed_at:.1f}s after the crash")
        serving.answered(sent, count=3, pods={"heal-1"}, since=crashed_at, what="heal-1 to keep answering")
    requests = sent.snapshot()
    strays = [r for r in requests if r.ok and r.pod not in _leaders("heal", 2)]
    assert not strays, f"answers from pods that are not leaders: {strays[:5]}"
    half = srv.refused_by_incomplete_groups(requests)
    assert not half, (f"the Service sent {len(half)} requests to a group whose rendezvous was not complete (a "
                      f"half-restarted group in the Service):\n{srv.summary(half)}")


@conformance(short_name="ServingRolloutLosesNoRequest", slow=True,
             features={Feature.SERVING_UNDER_LOAD, Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE},
             description="With maxSurge 1, a preStop delay and graceful drain, no request through the leader Service "
                         "fails during a rolling update, every answer comes from a leader of a complete group, and "
                         "answers move from the old revision to the new one.")
def test_serving_rollout_loses_no_request(lws: LWSHarness, serving: srv.Serving) -> None:
    replicas, size = 3, 2
    manifest, svc = serving.deploy("roll", replicas=replicas, size=size, prestop_seconds=ROLLOUT_PRESTOP,
                                   grace_seconds=ROLLOUT_GRACE,
                                   rollout={"type": "RollingUpdate",
                                            "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1}})
    (old,) = lws.groups("roll")[0].revisions()
    with lws.timeline("roll") as timeline, serving.traffic(svc) as sent:
        serving.answered(sent, count=10, since=0.0, what="10 completions before the rollout")
        lwt = workloads.with_env(manifest, {"LWSCONF_ROLLOUT": "2"})["spec"]["leaderWorkerTemplate"]
        lws.patch("roll", {"spec": {"leaderWorkerTemplate": lwt}}, step="template updated (rollout starts)")
        updated = _rollout_must_finish(lws, "roll", replicas=replicas, size=size, old=old)
        lws.step("rollout complete")
        serving.answered(sent, count=10, what="10 completions after the rollout")
    requests = sent.snapshot()
    assert not srv.failures(requests), (f"requests failed during the rollout:\n{srv.summary(requests)}\n"
                                        f"{analysis.describe(timeline)}")
    if serving.server.identifies_pods:
        leaders = _leaders("roll", replicas + 1)  # the surge group serves too
        strays = [r for r in requests if r.pod not in leaders]
        assert not strays, f"answers from pods that are not leaders: {strays[:5]}"
        revisions = {r.revision for r in requests}
        assert updated in revisions and len(revisions) >= 2, f"answers came from revisions {revisions}, want old and " \
                                                              f"new ({updated})"


def _rollout_must_finish(lws: LWSHarness, name: str, *, replicas: int, size: int, old: str) -> str:
    """Wait (rollout_complete) until exactly `replicas` groups of `size` pods are ready on one revision other than
    `old`; the new revision. Only the pods are judged: traffic, not status, is what this test is about."""
    def every_group_on_the_new_revision() -> str:
        return lws_waits.one_new_revision(lws.groups(name), replicas=replicas, size=size, old={old})
    return lws.wait(every_group_on_the_new_revision, what="every group on the new revision, ready",
                    within="rollout_complete", name=name)


@conformance(short_name="ServingScaleOutJoinsCompleteGroups", slow=True,
             features={Feature.SERVING_UNDER_LOAD, Feature.SCALING},
             description="Scaling out under load: no request fails, and new groups answer through the Service only "
                         "once their rendezvous is complete.")
def test_serving_scale_out_joins_complete_groups(lws: LWSHarness, serving: srv.Serving) -> None:
    _, svc = serving.deploy("grow", replicas=1, size=3, peak_replicas=3)
    with lws.timeline("grow"), serving.traffic(svc) as sent:
        serving.answered(sent, count=5, since=0.0, what="5 completions before scaling")
        lws.scale("grow", 3)
        lws.groups_must_be_ready("grow", replicas=3, size=3, within=serving.server.ready_within)  # models load
        lws.lws_must_be_available("grow")
        serving.leaders_must_be_endpoints("grow", svc, 3)
        if serving.server.identifies_pods:
            for leader in ("grow-1", "grow-2"):
                serving.answered(sent, count=1, pods={leader}, what=f"new group leader {leader} to answer")
    requests = sent.snapshot()
    assert not srv.failures(requests), f"requests failed during the scale-out:\n{srv.summary(requests)}"
