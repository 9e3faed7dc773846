"""Pure pod-status rules: the kubelet's phase, conditions and container states from the agent's records."""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.sim.nodes.kubelet import admission, status
from lwsconf.sim.nodes.kubelet import state as st

NOW = "2026-01-01T00:00:00Z"


def _pod(policy: str = "Always", gates: tuple[str, ...] = (),
         conditions: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": policy, "containers": [{"name": "a"}, {"name": "b"}]}
    if gates:
        spec["readinessGates"] = [{"conditionType": g} for g in gates]
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec,
            "status": {"qosClass": "Burstable", "conditions": list(conditions)}}


def _state(*states: tuple[str, int | None]) -> st.PodState:
    pod_state = st.PodState("u", "127.42.0.1", admitted=True, sandbox=True, pod_ip="127.42.1.2")
    for i, (state, code) in enumerate(states):
        rec = st.ContainerRecord(spec={"name": "ab"[i], "image": "img:1"}, state=state, exit_code=code)
        if state in ("running", "exited", "done"):
            rec.container_id, rec.started_at = "containerd://x", NOW
        pod_state.containers.append(rec)
    return pod_state


@pytest.mark.parametrize(("policy", "states", "phase"), [
    ("Always", [("running", None), ("running", None)], "Running"),
    ("Always", [("created", None), ("running", None)], "Pending"),
    ("Never", [("done", 1), ("running", None)], "Running"),
    ("Never", [("done", 0), ("done", 2)], "Failed"),
    ("Never", [("done", 0), ("done", 0)], "Succeeded"),
    ("OnFailure", [("done", 0), ("done", 0)], "Succeeded"),
    ("Always", [("done", 0), ("done", 0)], "Running"),
])
def test_phase_follows_the_kubelet_rules(policy: str, states: list[tuple[str, int | None]], phase: str) -> None:
    assert status.pod_phase(_state(*states), policy) == phase


def test_unfinished_init_containers_keep_the_pod_pending_and_app_containers_initializing() -> None:
    pod_state = _state(("pending", None), ("pending", None))
    pod_state.init_containers.append(st.ContainerRecord(spec={"name": "init", "image": "i"}, init=True,
                                                        state="running", container_id="c", started_at=NOW))
    built = status.pod_status(_pod(), pod_state, now=NOW)
    assert built["phase"] == "Pending"
    assert built["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    initialized = next(c for c in built["conditions"] if c["type"] == "Initialized")
    assert initialized["status"] == "False" and initialized["message"] == "containers with incomplete status: [init]"


def test_ready_needs_every_container_ready_and_every_readiness_gate_true() -> None:
    pod_state = _state(("running", None), ("running", None))
    built = status.pod_status(_pod(gates=("example.com/lb",)), pod_state, now=NOW)
    conditions = {c["type"]: c for c in built["conditions"]}
    assert conditions["ContainersReady"]["status"] == "True"
    assert conditions["Ready"]["status"] == "False" and conditions["Ready"]["reason"] == "ReadinessGatesNotReady"
    gate = {"type": "example.com/lb", "status": "True", "lastTransitionTime": NOW}
    built = status.pod_status(_pod(gates=("example.com/lb",), conditions=(gate,)), pod_state, now=NOW)
    conditions = {c["type"]: c for c in built["conditions"]}
    assert conditions["Ready"]["status"] == "True" and conditions["example.com/lb"] == gate
    assert built["qosClass"] == "Burstable"


def test_transition_time_only_moves_when_a_condition_changes() -> None:
    pod = _pod()
    first = status.pod_status(pod, _state(("running", None), ("running", None)), now=NOW)
    pod["status"]["conditions"] = first["conditions"]
    again = status.pod_status(pod, _state(("running", None), ("running", None)), now="2026-01-01T00:05:00Z")
    assert again["conditions"] == first["conditions"]
    changed = status.pod_status(pod, _state(("running", None), ("created", None)), now="2026-01-01T00:05:00Z")
    ready = next(c for c in changed["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == "2026-01-01T00:05:00Z" and ready["message"].endswith("[b]")


def test_effective_requests_and_fit_follow_the_scheduler_formula() -> None:
    pod = {"spec": {"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                                   {"name": "b", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}}],
                    "overhead": {"cpu": "100m"}}}
    requests = admission.pod_requests(pod)
    assert requests["cpu"] == admission.parse_quantity("3.1") and requests["memory"] == 2**30
    assert requests["nvidia.com/gpu"] == 2 and requests["pods"] == 1
    assert admission.fit(pod, [], {"cpu": "4", "memory": "2Gi", "pods": "10", "nvidia.com/gpu": "2"}) is None
    reason, message = admission.fit(pod, [pod], {"cpu": "8", "memory": "4Gi", "pods": "10",
                                                 "nvidia.com/gpu": "3"}) or ("", "")
    assert reason == "OutOfnvidia.com/gpu" and "requested: 2, used: 2, capacity: 3" in message
    with pytest.raises(admission.QuantityError, match="not a Kubernetes quantity"):
        admission.parse_quantity("2 cores")


def _with_sidecar(pod_state: st.PodState, state: str, *, restarts: int = 0, ready: bool = True) -> st.ContainerRecord:
    side = st.ContainerRecord(spec={"name": "side", "image": "img:1", "restartPolicy": "Always"}, init=True,
                              sidecar=True, state=state, restart_count=restarts)
    if state == "running":
        side.container_id, side.started_at = "containerd://s", NOW
        side.probe_results["readiness"] = ready
        side.spec["readinessProbe"] = {"httpGet": {"path": "/", "port": 81}}
    if restarts:
        side.last_terminated = {"exitCode": 1, "reason": "Error", "startedAt": NOW, "finishedAt": NOW}
    pod_state.init_containers.append(side)
    return side


@pytest.mark.parametrize("sidecar", ["exited", "backoff", "created"])
def test_a_restarting_sidecar_keeps_a_started_pod_running_and_initialized_but_not_ready(sidecar: str) -> None:
    """kubelet_pods.go `getPhase` leaves a sidecar that stopped after the pod initialized out of the phase
    (`!podHasInitialized`); generate.go keeps Initialized once an app container has started and counts the
    sidecar's readiness in ContainersReady. Before, the sim sent such a pod back to Pending and not Initialized
    (and kept it Ready): under RecreateGroupAfterStart a sidecar crash then looked like a starting group."""
    pod_state = _state(("running", None), ("running", None))
    rec = _with_sidecar(pod_state, sidecar, restarts=0 if sidecar == "exited" else 1)
    if sidecar == "exited":
        rec.exit_code = 1
    built = status.pod_status(_pod(), pod_state, now=NOW)
    conditions = {c["type"]: c for c in built["conditions"]}
    assert built["phase"] == "Running", built
    assert conditions["Initialized"]["status"] == "True", conditions
    assert conditions["ContainersReady"]["status"] == "False", conditions
    assert conditions["ContainersReady"]["message"] == "containers with unready status: [side]"
    assert conditions["Ready"]["status"] == "False", conditions


def test_an_unready_sidecar_makes_the_pod_unready_and_a_ready_one_counts_for_readiness() -> None:
    pod_state = _state(("running", None), ("running", None))
    side = _with_sidecar(pod_state, "running", restarts=1, ready=False)
    conditions = {c["type"]: c["status"] for c in status.pod_status(_pod(), pod_state, now=NOW)["conditions"]}
    assert conditions == {"PodReadyToStartContainers": "True", "Initialized": "True", "ContainersReady": "False",
                          "Ready": "False", "PodScheduled": "True"}
    side.probe_results["readiness"] = True
    built = status.pod_status(_pod(), pod_state, now=NOW)
    assert {c["type"]: c["status"] for c in built["conditions"]}["Ready"] == "True"
    assert built["initContainerStatuses"][0]["restartCount"] == 1 and built["phase"] == "Running"


def test_a_sidecar_not_started_before_any_app_container_ran_keeps_the_pod_pending() -> None:
    pod_state = _state(("pending", None), ("pending", None))
    _with_sidecar(pod_state, "created")
    built = status.pod_status(_pod(), pod_state, now=NOW)
    initialized = next(c for c in built["conditions"] if c["type"] == "Initialized")
    assert built["phase"] == "Pending"
    assert initialized["status"] == "False" and initialized["message"] == "containers with incomplete status: [side]"
