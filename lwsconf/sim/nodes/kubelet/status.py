"""Pure builders of what the kubelet writes: pod status (phase, conditions, container statuses). No I/O.

The rules follow the kubelet (pkg/kubelet/kubelet_pods.go `getPhase`, `generateAPIPodStatus`, and
pkg/kubelet/status/generate.go for the conditions):

* phase: Pending while init containers are unfinished or any container waits without ever having
  run; Running while something runs (or will be restarted); once every container has stopped,
  Succeeded if all exited 0 and nothing will restart, else Failed (restartPolicy Never, or the pod is
  terminating). A terminal phase never changes again. Sidecars (init containers with `restartPolicy:
  Always`) hold the pod Pending only until an app container has run: one crashing later restarts (its
  `restartCount` in initContainerStatuses rises) while the pod stays Running and Initialized.
* conditions: PodReadyToStartContainers (sandbox up), Initialized, ContainersReady (sidecars' readiness
  included), Ready (also honouring spec.readinessGates), PodScheduled (True), each with the pod's generation as
  observedGeneration, after the conditions owned by others (readiness gates, DisruptionTarget), kept as they are.
  lastTransitionTime only moves when a condition's status changes.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.nodes.kubelet import state as st
from lwsconf.sim.nodes.network import podnet

Obj = dict[str, Any]
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled")
SANDBOX_NOT_READY = "PodSandboxNotReady"
SANDBOX_NOT_READY_MESSAGE = "pod sandbox is not ready"
"""PodReadyToStartContainers False: kubelet/types/constants.go:45,50 (status/generate.go:271-291)."""


def container_status(rec: st.ContainerRecord, *, init_pending: bool = False) -> Obj:
    """One entry of status.containerStatuses / initContainerStatuses."""
    out: Obj = {"name": rec.name, "image": rec.image, "imageID": st.image_id(rec.image) if rec.container_id
                or rec.last_terminated else "", "ready": rec.ready, "restartCount": rec.restart_count,
                "started": rec.started, "state": _state(rec, init_pending=init_pending),
                "lastState": {"terminated": rec.last_terminated} if rec.last_terminated else {}}
    if rec.container_id:
        out["containerID"] = rec.container_id
    return out


def _state(rec: st.ContainerRecord, *, init_pending: bool) -> Obj:
    if rec.state == "running":
        return {"running": {"startedAt": rec.started_at}}
    if rec.terminated and rec.exit_code is not None:
        return {"terminated": rec.terminated_dict()}
    reason = rec.waiting_reason
    if init_pending and not rec.init and reason == "ContainerCreating":
        reason = "PodInitializing"
    waiting: Obj = {"reason": reason}
    if rec.waiting_message:
        waiting["message"] = rec.waiting_message
    return {"waiting": waiting}


def pod_phase(state: st.PodState, restart_policy: str) -> str:
    """The kubelet's getPhase over the agent's records (a terminal phase already reached wins)."""
    if state.phase is not None:
        return state.phase
    if not state.admitted or not state.sandbox:
        return "Pending"
    terminal = state.terminating
    if state.initializing():
        failed_init = any(r.terminated and r.exit_code != 0 and r.state == "done" for r in state.init_containers)
        return "Failed" if failed_init else "Pending"
    waiting = running = stopped = succeeded = 0
    for rec in state.containers:
        if rec.state == "running":
            running += 1
        elif rec.terminated or rec.last_terminated is not None:
            stopped += 1
            succeeded += int(rec.terminated and rec.exit_code == 0)
        else:
            waiting += 1
    if waiting and not terminal:
        return "Pending"
    if running:
        return "Running"
    if not stopped:
        return "Pending"
    if terminal or restart_policy == "Never":
        return "Succeeded" if stopped == succeeded else "Failed"
    if restart_policy == "OnFailure" and stopped == succeeded:
        return "Succeeded"
    return "Running"


def pod_status(pod: Obj, state: st.PodState, *, now: str | None = None,
               addresses: podnet.PodAddressMap = podnet.IDENTITY) -> Obj:
    """The whole status the agent writes for `pod` (qosClass and others' conditions are kept).

    The pod IP is shown as `addresses` maps it (on `--cluster=local` its 198.18 address, see `podnet`).
    """
    now = now or st.now_rfc3339()
    old = pod.get("status") or {}
    spec = pod.get("spec") or {}
    phase = pod_phase(state, str(spec.get("restartPolicy") or "Always"))
    init_pending = not state.init_done()
    generation = (pod.get("metadata") or {}).get("generation")
    # status.observedGeneration: the generation the kubelet saw (kubelet_pods.go, podutil
    # CalculatePodStatusObservedGeneration: PodObservedGenerationTracking is on in 1.37)
    status: Obj = {**({"observedGeneration": generation} if generation else {}), "phase": phase}
    if state.reason:
        status["reason"] = state.reason
    if state.message:
        status["message"] = state.message
    status["conditions"] = conditions(pod, state, phase, now=now)
    if state.host_ip and state.admitted:
        status["hostIP"] = state.host_ip
        status["hostIPs"] = [{"ip": state.host_ip}]
    if state.pod_ip:
        status["podIP"] = addresses.to_cluster(state.pod_ip)
        status["podIPs"] = [{"ip": status["podIP"]}]
    if state.start_time:
        status["startTime"] = state.start_time
    if state.init_containers:
        status["initContainerStatuses"] = [container_status(r) for r in state.init_containers]
    status["containerStatuses"] = [container_status(r, init_pending=init_pending) for r in state.containers]
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    for key in ("nominatedNodeName", "resize"):
        if old.get(key):
            status[key] = old[key]
    return status


def conditions(pod: Obj, state: st.PodState, phase: str, *, now: str) -> list[Obj]:
    """The pod's conditions: the kubelet's own, then everyone else's unchanged."""
    old = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
    completed = phase == "Succeeded"
    failed = phase == "Failed"
    # Sidecars count for ContainersReady (generate.go `GenerateContainersReadyCondition`); once an app
    # container has run, the pod stays Initialized while a sidecar restarts (`GeneratePodInitializedCondition`).
    unready = [r.name for r in [*(r for r in state.init_containers if r.sidecar), *state.containers] if not r.ready]
    incomplete = [] if state.app_container_seen() else \
        [r.name for r in state.init_containers if not (r.started if r.sidecar else (r.terminated and r.exit_code == 0))]
    # A terminal pod's readiness says why, without a message (generate.go:88-95, :293-321): PodCompleted or PodFailed.
    terminal_reason = "PodCompleted" if completed else "PodFailed" if failed else ""
    containers_ready = _cond(not unready and not terminal_reason, terminal_reason or "ContainersNotReady",
                             "" if terminal_reason else f"containers with unready status: [{' '.join(unready)}]")
    gates_ok, gate_message = _readiness_gates(pod, old)
    ready = containers_ready if not (containers_ready[0] and not gates_ok) else \
        (False, "ReadinessGatesNotReady", gate_message)
    # Succeeded: Initialized True with the reason PodCompleted (generate.go:210-218)
    initialized = (True, "PodCompleted", "") if completed else \
        _cond(not incomplete, "ContainersNotInitialized",
              f"containers with incomplete status: [{' '.join(incomplete)}]")
    # Others' conditions first, then the kubelet's in the order it generates them, PodScheduled True last (it owns
    # that one too), each with the pod's generation as observedGeneration (PodObservedGenerationTracking, GA):
    # k8s.io/kubernetes@v1.37.2 pkg/kubelet/kubelet_pods.go:1976-2018, status/status_manager.go:1453-1486.
    own = {
        "PodReadyToStartContainers": _cond(state.sandbox and not state.terminal, SANDBOX_NOT_READY,
                                           SANDBOX_NOT_READY_MESSAGE),
        "Initialized": initialized,
        "Ready": ready,
        "ContainersReady": containers_ready,
        "PodScheduled": (True, "", ""),
    }
    generation = (pod.get("metadata") or {}).get("generation")
    out: list[Obj] = [c for t, c in old.items() if t not in KUBELET_CONDITIONS]
    for ctype, value in own.items():
        out.append(_condition(ctype, value, old.get(ctype), now, generation))
    return out


def _cond(ok: bool, reason: str, message: str) -> tuple[bool, str, str]:
    return (True, "", "") if ok else (False, reason, message)


def _condition(ctype: str, value: tuple[bool, str, str], previous: Obj | None, now: str,
               generation: int | None = None) -> Obj:
    status = "True" if value[0] else "False"
    moved = previous is None or previous.get("status") != status
    cond: Obj = {"type": ctype, **({"observedGeneration": generation} if generation else {}), "status": status,
                 "lastProbeTime": None,
                 "lastTransitionTime": now if moved or not previous else previous.get("lastTransitionTime", now)}
    if value[1]:
        cond["reason"] = value[1]
    if value[2]:
        cond["message"] = value[2]
    return cond


def _readiness_gates(pod: Obj, old: dict[Any, Obj]) -> tuple[bool, str]:
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        ctype = (gate or {}).get("conditionType")
        cond = old.get(ctype)
        if cond is None:
            return False, f'corresponding condition of pod readiness gate "{ctype}" does not exist.'
        if cond.get("status") != "True":
            return False, f'the status of pod readiness gate "{ctype}" is not "True", but {cond.get("status")}'
    return True, ""


def backoff_message(rec: st.ContainerRecord, pod: Obj, seconds: float) -> str:
    """The CrashLoopBackOff waiting message, as the kubelet words it."""
    meta = pod.get("metadata") or {}
    shown = f"{seconds:g}s" if seconds >= 1 else f"{int(seconds * 1000)}ms"
    return (f"back-off {shown} restarting failed container={rec.name} "
            f"pod={meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})")
