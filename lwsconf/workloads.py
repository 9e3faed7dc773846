"""Building the workloads conformance tests deploy: LeaderWorkerSets running the probe or the emulator.

One way to build workloads: `probe_lws(...)` returns an LWS manifest (a dict) whose pods run
`lwsconf/probe/probe.py` from a stock python image, mounted from a ConfigMap that
`probe_configmap(...)` builds. The same manifest runs on sim (the simulator runs the program as a
process), kind and real clusters. Pods learn their identity through the downward API (POD_NAME,
POD_NAMESPACE, POD_IP, NODE_NAME), and readiness follows the probe's /readyz, which tests can flip.
`emulator_lws(...)` is the serving counterpart: its pods run the emulated multi-node inference
server (`lwsconf/emulator/emulator.py`) from the ConfigMap `emulator_configmap()` builds, the same way.
No I/O here.
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf import emulator, lwsapi, probe

GROUP, VERSION, PLURAL = lwsapi.GROUP, lwsapi.VERSION, lwsapi.PLURAL
API_VERSION = f"{GROUP}/{VERSION}"
PROBE_IMAGE = "python:3.12-slim"
PROBE_PORT = 8080
PROBE_CONFIGMAP = "lwsconf-probe"
PROBE_MOUNT = "/lwsconf"

Obj = dict[str, Any]


def probe_configmap(name: str = PROBE_CONFIGMAP) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"probe.py": probe.source()}}


def _field_env(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def probe_container(name: str = "probe", *, extra_env: list[Obj] | None = None) -> Obj:
    """A container running the probe program, ready when /readyz answers 200."""
    return {
        "name": name,
        "image": PROBE_IMAGE,
        "command": ["python", f"{PROBE_MOUNT}/probe.py", "--port", str(PROBE_PORT)],
        "ports": [{"name": "http", "containerPort": PROBE_PORT}],
        "env": [_field_env("POD_NAME", "metadata.name"), _field_env("POD_NAMESPACE", "metadata.namespace"),
                _field_env("POD_IP", "status.podIP"), _field_env("NODE_NAME", "spec.nodeName"),
                *(extra_env or [])],
        # Probed every second and Ready after one success, but unready only after 3 failures of 5 s each (as the
        # emulator's leader): a slow answer under load is not an unready pod. A 1 s / 1-failure probe flapped
        # running groups unready at load 6.8; the sim's prober then timed its attempts on a starved loop, and a
        # real kubelet on a busy node can be as late (its default failureThreshold is 3). Tests that flip
        # /ready?value=false wait for the Ready condition to fall, so they see it about 3 s later.
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": PROBE_PORT}, "periodSeconds": 1,
                           "timeoutSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
        "volumeMounts": [{"name": "lwsconf-probe", "mountPath": PROBE_MOUNT, "readOnly": True}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
    }


def probe_pod_template(*, labels: dict[str, str] | None = None, container: Obj | None = None,
                       resources: dict[str, Any] | None = None) -> Obj:
    c = copy.deepcopy(container or probe_container())
    if resources:
        c["resources"] = resources
    template: Obj = {
        "spec": {
            "containers": [c],
            "volumes": [{"name": "lwsconf-probe", "configMap": {"name": PROBE_CONFIGMAP}}],
            "terminationGracePeriodSeconds": 1,
        },
    }
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    return template


def probe_lws(name: str, *, replicas: int = 2, size: int = 2, restart_policy: str | None = None,
              leader_labels: dict[str, str] | None = None, separate_leader: bool = True,
              rollout: Obj | None = None, startup_policy: str | None = None,
              annotations: dict[str, str] | None = None, network: Obj | None = None,
              subgroup: Obj | None = None, resources: dict[str, Any] | None = None) -> Obj:
    """An LWS of `replicas` groups of `size` probe pods; optional fields are left to the server's defaults."""
    lwt: Obj = {"size": size, "workerTemplate": probe_pod_template(resources=resources)}
    if separate_leader:
        lwt["leaderTemplate"] = probe_pod_template(labels=leader_labels, resources=resources,
                                                   container=probe_container("leader"))
    if restart_policy is not None:
        lwt["restartPolicy"] = restart_policy
    if subgroup is not None:
        lwt["subGroupPolicy"] = subgroup
    spec: Obj = {"replicas": replicas, "leaderWorkerTemplate": lwt}
    if rollout is not None:
        spec["rolloutStrategy"] = rollout
    if startup_policy is not None:
        spec["startupPolicy"] = startup_policy
    if network is not None:
        spec["networkConfig"] = network
    meta: Obj = {"name": name}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": API_VERSION, "kind": "LeaderWorkerSet", "metadata": meta, "spec": spec}


def with_worker_env(lws: Obj, name: str, value: str) -> Obj:
    """A copy whose worker (and leader) containers carry one more env entry: a template change."""
    out = copy.deepcopy(lws)
    lwt = out["spec"]["leaderWorkerTemplate"]
    for template in (lwt.get("workerTemplate"), lwt.get("leaderTemplate")):
        if template:
            for c in template["spec"]["containers"]:
                c.setdefault("env", []).append({"name": name, "value": value})
    return out


def edit_templates(lws: Obj, edit: Any, *, leader: bool = True, worker: bool = True) -> Obj:
    """A copy with `edit(template)` applied to the leader and/or worker pod template (in place on the copy)."""
    out = copy.deepcopy(lws)
    lwt = out["spec"]["leaderWorkerTemplate"]
    chosen = ([lwt.get("leaderTemplate")] if leader else []) + ([lwt.get("workerTemplate")] if worker else [])
    for template in chosen:
        if template:
            edit(template)
    return out


def with_env(lws: Obj, env: dict[str, str], *, leader: bool = True, worker: bool = True) -> Obj:
    """A copy whose chosen templates' containers carry extra literal env entries (a template change)."""
    def edit(template: Obj) -> None:
        for c in template["spec"]["containers"]:
            c.setdefault("env", []).extend({"name": k, "value": v} for k, v in env.items())
    return edit_templates(lws, edit, leader=leader, worker=worker)


def start_unready(lws: Obj, *, leader: bool = True, worker: bool = False) -> Obj:
    """Pods of the chosen templates start with failing readiness until /ready?value=true (probe option)."""
    return with_env(lws, {"LWSCONF_START_UNREADY": "1"}, leader=leader, worker=worker)


SIDECAR_PORT = 8081
"""The port of the probe a native sidecar runs (`probe_sidecar`): the app container has PROBE_PORT."""


def probe_sidecar(name: str = "sidecar", *, port: int = SIDECAR_PORT) -> Obj:
    """A native sidecar running the probe on its own `port`: an init container with `restartPolicy: Always`.

    The kubelet starts it before the app containers and restarts it whenever it exits, whatever the pod's
    restartPolicy, counting the restarts in `status.initContainerStatuses` (so `/exit?code=1` on `port`
    crashes an init container of a running pod, which a regular init container, done before the app
    starts, cannot be). Its readiness probe counts for the pod's Ready condition, as a sidecar's does.
    """
    container = probe_container(name)
    container["command"] = ["python", f"{PROBE_MOUNT}/probe.py", "--port", str(port)]
    container["ports"] = [{"name": "sidecar-http", "containerPort": port}]
    container["readinessProbe"]["httpGet"]["port"] = port
    container["restartPolicy"] = "Always"
    return container


def with_sidecar(lws: Obj, *, leader: bool = False, worker: bool = True, port: int = SIDECAR_PORT) -> Obj:
    """A copy whose chosen templates run a probe sidecar (`probe_sidecar`) on `port` besides their container."""
    def edit(template: Obj) -> None:
        template["spec"].setdefault("initContainers", []).append(probe_sidecar(port=port))
    return edit_templates(lws, edit, leader=leader, worker=worker)


def slow_to_terminate(lws: Obj, *, prestop_seconds: int, leader: bool = False, worker: bool = True) -> Obj:
    """A copy whose chosen templates' pods take about `prestop_seconds` to go once deleted: a preStop sleep
    (the kubelet's PodLifecycleSleepAction) on every container, within a grace period 5 s longer.

    For tests about what exists while a pod terminates: a deleted pod stays in the API, with its
    deletionTimestamp, until its kubelet has run the hook and stopped the container.
    """
    def edit(template: Obj) -> None:
        template["spec"]["terminationGracePeriodSeconds"] = prestop_seconds + 5
        for c in template["spec"]["containers"]:
            c["lifecycle"] = {"preStop": {"sleep": {"seconds": prestop_seconds}}}
    return edit_templates(lws, edit, leader=leader, worker=worker)


PARKED_LABEL = "lwsconf.dev/never-scheduled-here"


def parked(lws: Obj) -> Obj:
    """Pods that no node accepts (a nodeSelector on a label no node has): they exist but stay Pending.

    For tests about objects and admission only (labels, validation), where running pods would cost time.
    """
    def edit(template: Obj) -> None:
        template["spec"]["nodeSelector"] = {PARKED_LABEL: "true"}
    return edit_templates(lws, edit)


# --- the serving emulator (issue 16) ----------------------------------------------------------------

EMULATOR_IMAGE = PROBE_IMAGE  # a stock python image: the emulator is stdlib-only
EMULATOR_CONFIGMAP = "lwsconf-emulator"
EMULATOR_MOUNT = "/lwsconf-serving"
EMULATOR_PORT = 8080
EMULATOR_RENDEZVOUS_PORT = 29500
REVISION_LABEL = lwsapi.TEMPLATE_REVISION_HASH


def emulator_configmap(name: str = EMULATOR_CONFIGMAP) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"emulator.py": emulator.source()}}


def emulator_container(name: str, *, leader: bool, drain_seconds: int, extra_env: list[Obj] | None = None) -> Obj:
    """A container running the emulator; its role comes from the LWS_* variables the implementation injects.

    Why each piece: LWSCONF_REVISION reads the pod's template-revision-hash label through the downward
    API, so every answer names the revision that served it (what rollout tests count); POD_IP is the
    bind address (the emulator binds it, and workers join from it, so /group shows pod addresses).
    The leader alone is probed: its /health is 503 until the whole group has joined, so a leader is
    Ready only with a complete group, as upstream's vLLM example probes only its leader. No preStop:
    tests that want one (zero-error rollouts) add it; the drain timeout stays under the grace period so
    a drain finishes before the kubelet's SIGKILL.
    """
    container: Obj = {
        "name": name,
        "image": EMULATOR_IMAGE,
        "command": ["python", f"{EMULATOR_MOUNT}/emulator.py"],
        "ports": [{"name": "http", "containerPort": EMULATOR_PORT}],
        "env": [_field_env("POD_NAME", "metadata.name"), _field_env("POD_NAMESPACE", "metadata.namespace"),
                _field_env("POD_IP", "status.podIP"),
                _field_env("LWSCONF_REVISION", f"metadata.labels['{REVISION_LABEL}']"),
                {"name": "LWSCONF_PORT", "value": str(EMULATOR_PORT)},
                {"name": "LWSCONF_RENDEZVOUS_PORT", "value": str(EMULATOR_RENDEZVOUS_PORT)},
                {"name": "LWSCONF_DRAIN_TIMEOUT", "value": str(drain_seconds)},
                *(extra_env or [])],
        "volumeMounts": [{"name": "lwsconf-emulator", "mountPath": EMULATOR_MOUNT, "readOnly": True}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
    }
    if leader:
        container["ports"].append({"name": "rendezvous", "containerPort": EMULATOR_RENDEZVOUS_PORT})
        # Probed every second, but a group leaves its Service only after 3 failures of 5 s each: the sim's
        # processes share two cores with the whole cluster, and one slow answer under load is not a broken
        # group (a 1 s / 1-failure probe flapped leaders out of their Service at load 8, 2026-12-03).
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 1,
                                       "timeoutSeconds": 5, "failureThreshold": 3}
    return container


def _emulator_template(container: Obj, grace_seconds: int, labels: dict[str, str] | None = None) -> Obj:
    template: Obj = {"spec": {"containers": [container],
                              "volumes": [{"name": "lwsconf-emulator", "configMap": {"name": EMULATOR_CONFIGMAP}}],
                              "terminationGracePeriodSeconds": grace_seconds}}
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    return template


def _with_prestop(container: Obj, seconds: int) -> Obj:
    """A preStop sleep (the kubelet's PodLifecycleSleepAction): the pod keeps serving while the endpoint
    controllers and proxies learn it is terminating, as serving stacks advise; SIGTERM comes after."""
    if seconds > 0:
        container["lifecycle"] = {"preStop": {"sleep": {"seconds": seconds}}}
    return container


def emulator_lws(name: str, *, replicas: int = 2, size: int = 2, env: dict[str, str] | None = None,
                 grace_seconds: int = 10, rollout: Obj | None = None, restart_policy: str | None = None,
                 leader_labels: dict[str, str] | None = None, prestop_seconds: int = 0) -> Obj:
    """An LWS of `replicas` groups of `size` emulator pods (leader template apart: only it has a readiness probe).

    `env` adds literal LWSCONF_* settings (model, delays, heartbeat timeouts) to leader and workers alike;
    `leader_labels` go on the leader template only (what a leader-only Service selects); `prestop_seconds`
    puts a preStop sleep on the leader's container, and the emulator then drains on SIGTERM for at most what
    is left of `grace_seconds` less one second. Optional fields are left to the server.

    Workers get no preStop sleep: they are behind no Service, and a group's workers are deleted only once its
    leader pod is gone (their StatefulSet is owned by it), when there is nothing left to keep serving for; a
    sleep there only held every replaced group another `prestop_seconds` (3 s per rollout wave on the sim).
    """
    drain = grace_seconds - prestop_seconds - 1
    if drain < 1:
        raise ValueError(f"grace_seconds={grace_seconds} with prestop_seconds={prestop_seconds}: give the drain at "
                         "least 1 s before SIGKILL (grace_seconds >= prestop_seconds + 2)")
    extra = [{"name": k, "value": v} for k, v in (env or {}).items()]
    lwt: Obj = {
        "size": size,
        "leaderTemplate": _emulator_template(_with_prestop(
            emulator_container("leader", leader=True, drain_seconds=drain, extra_env=extra), prestop_seconds),
            grace_seconds, leader_labels),
        "workerTemplate": _emulator_template(_with_prestop(
            emulator_container("worker", leader=False, drain_seconds=drain, extra_env=extra), 0), grace_seconds),
    }
    if restart_policy is not None:
        lwt["restartPolicy"] = restart_policy
    spec: Obj = {"replicas": replicas, "leaderWorkerTemplate": lwt}
    if rollout is not None:
        spec["rolloutStrategy"] = rollout
    return {"apiVersion": API_VERSION, "kind": "LeaderWorkerSet", "metadata": {"name": name}, "spec": spec}
