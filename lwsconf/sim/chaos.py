"""Fault injection for the simulated cluster: crash a container, fail a pod, cut off, slow or delete a node.

Why: the harness's own tests and fault scenarios need failures on demand (a worker crashing, a node
going away) to see what an LWS implementation does about them. Conformance tests must not use this:
it only works on the sim (they use the probe workload's portable `/exit` instead).

How: every fault is an annotation (or a deletion) written through the Kubernetes API, which the sim's
node agents and controllers react to, so it works from any process against a `lwsconf sim up`
cluster (`lwsconf sim chaos ...` is the command-line form). The functions take an official-client
`ApiClient` (as `lwsconf.waits` do) and are synchronous: their callers are pytest tests and the CLI,
and the official client works with any kubeconfig; the async `lwsconf.kubeclient` is for the sim's
own controllers. Each returns the changed object as a dict and raises `ChaosError` (a one-line
message saying what to fix) for a missing or unsuitable target, or when the target is not simulated.

    api = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
    chaos.crash_container(api, "default", "web-0", "main", exit_code=3)
    chaos.node_not_ready(api, "gpu-1")            # ... later: chaos.node_ready(api, "gpu-1")
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from kubernetes import client

Obj = dict[str, Any]
PREFIX = "chaos.lwsconf.dev/"
SIMULATED = "lwsconf.dev/simulated"
NOT_READY_MODES = ("unreachable", "not-ready")
_MERGE = "application/merge-patch+json"


class ChaosError(ValueError):
    """The fault cannot be injected; the message says why and what to do instead."""


def crash_container(api: client.ApiClient, ns: str, pod: str, container: str | None = None, exit_code: int = 1,
                    times: int = 1) -> Obj:
    """Make a container exit with `exit_code`, `times` more times (each after it is running again).

    The node agent's `container-crash` stage (stages/chaos) terminates the running container (a
    real process is killed) with that exit code and reason Error; the pod's restartPolicy decides
    what follows: Always/OnFailure restart it (restartCount + 1, lastState.terminated.exitCode N,
    after the usual back-off), Never leaves the pod Failed. A container not running yet crashes
    once it runs. `container` None means the pod's default container (the
    `kubectl.kubernetes.io/default-container` annotation, else the first one).
    """
    if not 0 <= exit_code <= 255:
        raise ChaosError(f"exit code {exit_code} is out of range; a container exit code is 0-255")
    if times < 1:
        raise ChaosError(f"times must be at least 1, got {times}")
    obj = _running_pod(api, ns, pod)
    name = _container_name(obj, container)
    statuses = (obj.get("status") or {}).get("containerStatuses", []) + \
        (obj.get("status") or {}).get("initContainerStatuses", [])
    restarts = next((int(s.get("restartCount", 0)) for s in statuses if s.get("name") == name), 0)
    return _annotate_pod(api, ns, pod, {"crash-container": name, "exit-code": str(exit_code),
                                        "crash-times": str(restarts + times)})


def fail_pod(api: client.ApiClient, ns: str, pod: str, reason: str = "Evicted", message: str | None = None,
             exit_code: int = 137) -> Obj:
    """Fail a pod as a node-pressure eviction does: containers killed, phase Failed, never restarted.

    The agent's `pod-fail` stage kills every container (exit code `exit_code`), sets phase Failed
    with `reason` and `message` and records a Warning event with that reason. It acts once the pod
    is Running. A controller then replaces the pod (the StatefulSet controller deletes a Failed pod
    and creates it again).
    """
    if not reason or any(c.isspace() for c in reason):
        raise ChaosError(f"reason must be one CamelCase word like Evicted, got {reason!r}")
    if not 0 <= exit_code <= 255:
        raise ChaosError(f"exit code {exit_code} is out of range; a container exit code is 0-255")
    _running_pod(api, ns, pod)
    values = {"fail-pod": "true", "reason": reason, "exit-code": str(exit_code),
              "message": message or "lwsconf chaos: pod failed on purpose"}
    return _annotate_pod(api, ns, pod, values)


def node_not_ready(api: client.ApiClient, node: str, mode: str = "unreachable") -> Obj:
    """Take a node out of service until `node_ready`.

    `mode="unreachable"` (a network partition, a dead kubelet): the node's agent stops renewing its
    Lease and writing node and pod status, and ignores pod changes; its containers keep running. The
    node lifecycle controller then (after its grace period, 5 s in the sim) sets Ready=Unknown,
    marks the node's pods NotReady and taints the node `node.kubernetes.io/unreachable` NoSchedule
    and NoExecute; pods not tolerating that are deleted after their tolerationSeconds (300 s by
    default). As on a real cluster, such a deletion is not finished until the node is back or deleted.

    `mode="not-ready"`: the kubelet stays connected and reports Ready=False; the taints are
    `node.kubernetes.io/not-ready` and evicted pods are terminated and removed normally.
    """
    if mode not in NOT_READY_MODES:
        raise ChaosError(f"mode must be one of {', '.join(NOT_READY_MODES)}, got {mode!r}")
    return _annotate_node(api, node, {"not-ready": "true" if mode == "unreachable" else mode})


def node_ready(api: client.ApiClient, node: str) -> Obj:
    """End `node_not_ready`: the agent renews its Lease and reports Ready at once, catches up with
    the pods changed meanwhile (finishing deletions), and the node lifecycle controller removes the
    not-ready/unreachable taints."""
    return _annotate_node(api, node, {"not-ready": None})


def delete_node(api: client.ApiClient, node: str) -> Obj:
    """Delete the Node object, as a cloud provider does when the machine is gone.

    The node's agent stops all its containers, its Lease and status reports, and stays stopped (it
    does not register again until the cluster restarts). Its Lease is garbage-collected with the
    Node; the pods bound to it are orphans, which the node lifecycle controller's pod GC marks
    Failed (DisruptionTarget DeletionByPodGC) and force-deletes, so controllers re-create them on
    other nodes. Returns the Node as it was.
    """
    obj = _simulated_node(api, node)
    try:
        client.CoreV1Api(api).delete_node(node)
    except client.ApiException as exc:
        if exc.status == 404:
            raise ChaosError(f"node {node} is already gone") from None
        raise
    return obj


def slow_kubelet(api: client.ApiClient, node: str, delay_seconds: float) -> Obj:
    """Make a node's agent wait `delay_seconds` before each pod status write and each final pod
    deletion (0 restores normal speed). Containers still start on time; what others see of them
    (Running, Ready, restarts, deletions) lags by the delay."""
    if not math.isfinite(delay_seconds) or delay_seconds < 0:
        raise ChaosError(f"the delay must be a number of seconds >= 0, got {delay_seconds!r}")
    return _annotate_node(api, node, {"slow": f"{delay_seconds:g}" if delay_seconds else None})


# --- helpers ----------------------------------------------------------------------------------------

def _raw(response: Any) -> Obj:
    return json.loads(response.data)  # type: ignore[no-any-return]


def _running_pod(api: client.ApiClient, ns: str, pod: str) -> Obj:
    """The pod, if it exists, is not finished, and is (or will be) on a simulated node."""
    try:
        obj = _raw(client.CoreV1Api(api).read_namespaced_pod(pod, ns, _preload_content=False))
    except client.ApiException as exc:
        if exc.status == 404:
            raise ChaosError(f"pod {ns}/{pod} not found; list pods with `kubectl get pods -n {ns}`") from None
        raise
    phase = (obj.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise ChaosError(f"pod {ns}/{pod} is already {phase}: nothing runs there any more")
    node = (obj.get("spec") or {}).get("nodeName")
    if node:
        _simulated_node(api, node, what=f"pod {ns}/{pod} runs on node {node}, which")
    return obj


def _container_name(pod: Obj, wanted: str | None) -> str:
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    init_names = [c["name"] for c in spec.get("initContainers") or []]
    meta = pod.get("metadata") or {}
    if wanted is None:
        default = (meta.get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
        return str(default) if default in names else names[0]
    if wanted not in names + init_names:
        raise ChaosError(f"pod {meta.get('namespace')}/{meta.get('name')} has no container {wanted!r}; "
                         f"its containers: {', '.join(names + init_names)}")
    return wanted


def _simulated_node(api: client.ApiClient, node: str, *, what: str = "") -> Obj:
    try:
        obj = _raw(client.CoreV1Api(api).read_node(node, _preload_content=False))
    except client.ApiException as exc:
        if exc.status == 404:
            raise ChaosError(f"{what} does not exist" if what else
                             f"node {node} not found; list nodes with `kubectl get nodes`") from None
        raise
    if ((obj.get("metadata") or {}).get("annotations") or {}).get(SIMULATED) != "true":
        raise ChaosError(f"{what or 'node ' + node} is not a simulated lwsconf node (no {SIMULATED} annotation); "
                         "fault injection only works on a `lwsconf sim up` cluster")
    return obj


def _annotate_pod(api: client.ApiClient, ns: str, pod: str, values: Mapping[str, str | None]) -> Obj:
    body = {"metadata": {"annotations": {PREFIX + k: v for k, v in values.items()}}}
    return _raw(client.CoreV1Api(api).patch_namespaced_pod(pod, ns, body, _content_type=_MERGE,
                                                           _preload_content=False))


def _annotate_node(api: client.ApiClient, node: str, values: Mapping[str, str | None]) -> Obj:
    _simulated_node(api, node)
    body = {"metadata": {"annotations": {PREFIX + k: v for k, v in values.items()}}}
    return _raw(client.CoreV1Api(api).patch_node(node, body, _content_type=_MERGE, _preload_content=False))
