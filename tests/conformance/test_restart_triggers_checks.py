"""The pure parts of conformance/test_restart_triggers.py: the overlap check can fail, and the workloads it
deploys have the shape the scenario needs (a sidecar on its own port, workers slow to terminate)."""

from __future__ import annotations

from conformance.test_restart_triggers import _first_overlap, _Seen
from lwsconf import workloads

OLD_LEADER, NEW_LEADER, OLD_WORKER = "old-leader-uid", "new-leader-uid", "old-worker-uid"


def _ev(event: str, name: str, uid: str, *, deleting: bool = False, finalizers: tuple[str, ...] = ()) -> _Seen:
    return _Seen(event, name, uid, finalizers, deleting)


def test_a_new_leader_beside_a_terminating_old_worker_is_an_overlap() -> None:
    background = [_ev("ADDED", "fg-0", OLD_LEADER), _ev("ADDED", "fg-0-1", OLD_WORKER),
                  _ev("DELETED", "fg-0", OLD_LEADER, deleting=True), _ev("ADDED", "fg-0", NEW_LEADER),
                  _ev("MODIFIED", "fg-0-1", OLD_WORKER, deleting=True), _ev("DELETED", "fg-0-1", OLD_WORKER)]
    found = _first_overlap(background, "fg-0", OLD_LEADER, {OLD_WORKER})
    assert found is not None and found.startswith("after event 3 (ADDED fg-0 new-lead)"), found


def test_workers_removed_before_the_new_leader_is_no_overlap() -> None:
    foreground = [_ev("ADDED", "fg-0", OLD_LEADER), _ev("ADDED", "fg-0-1", OLD_WORKER),
                  _ev("MODIFIED", "fg-0", OLD_LEADER, deleting=True, finalizers=("foregroundDeletion",)),
                  _ev("MODIFIED", "fg-0-1", OLD_WORKER, deleting=True), _ev("DELETED", "fg-0-1", OLD_WORKER),
                  _ev("DELETED", "fg-0", OLD_LEADER, deleting=True), _ev("ADDED", "fg-0", NEW_LEADER),
                  _ev("ADDED", "fg-0-1", "new-worker-uid")]
    assert _first_overlap(foreground, "fg-0", OLD_LEADER, {OLD_WORKER}) is None


def test_the_sidecar_runs_the_probe_on_its_own_port_and_restarts_always() -> None:
    lws = workloads.with_sidecar(workloads.probe_lws("s", replicas=1, size=2))
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert "initContainers" not in lwt["leaderTemplate"]["spec"]
    (sidecar,) = lwt["workerTemplate"]["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["command"][-2:] == ["--port", str(workloads.SIDECAR_PORT)] != [
        "--port", str(workloads.PROBE_PORT)]
    assert sidecar["readinessProbe"]["httpGet"]["port"] == workloads.SIDECAR_PORT


def test_slow_workers_get_a_prestop_sleep_within_their_grace_period() -> None:
    lws = workloads.slow_to_terminate(workloads.probe_lws("f", replicas=1, size=3), prestop_seconds=3)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    worker = lwt["workerTemplate"]["spec"]
    assert worker["containers"][0]["lifecycle"] == {"preStop": {"sleep": {"seconds": 3}}}
    assert worker["terminationGracePeriodSeconds"] > 3
    assert "lifecycle" not in lwt["leaderTemplate"]["spec"]["containers"][0]
