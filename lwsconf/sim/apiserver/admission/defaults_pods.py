"""Pod defaulting: the v1 `SetDefaults_*` functions for pod specs, plus the pod admission plugins.

Pod templates (StatefulSet, Deployment, DaemonSet) get `default_pod_spec` only, exactly as the real
defaulters apply it to templates. A Pod additionally gets what happens to Pods alone: requests copied
from limits, `enableServiceLinks`, the ServiceAccount, Priority and DefaultTolerationSeconds
admission plugins, and a `Pending` status carrying its QoS class. Every function edits in place and
is idempotent, so running it again on UPDATE changes nothing that was already defaulted.
No I/O here.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.apimachinery import quantity

DEFAULT_TOLERATION_SECONDS = 300
"""DefaultTolerationSeconds admission: how long a pod stays on a not-ready/unreachable node."""

_NODE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_QOS_RESOURCES = ("cpu", "memory")
_DEFAULT_MODE = 0o644


def default_pod(obj: dict[str, Any], *, creating: bool = True) -> None:
    """Everything a Pod create gets: spec defaults, admission plugins and the initial status.

    The `default` service account comes from the ServiceAccount admission plugin, which acts on CREATE
    only: an update whose spec omits serviceAccountName changes it and is refused as an immutable pod
    field, as on kube-apiserver (serviceAccount and serviceAccountName are copied into each other by
    defaulting on every write)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    default_pod_spec(spec)
    _requests_from_limits(spec)
    if spec.get("hostNetwork") is True:
        _host_ports(spec)
    spec.setdefault("enableServiceLinks", True)
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or ("default" if creating else "")
    if account:
        spec["serviceAccountName"] = spec["serviceAccount"] = account
    if spec.get("priorityClassName") in (None, ""):
        spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    _default_tolerations(spec)
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", pod_qos_class(obj))
        for condition in status.get("conditions") or []:
            if isinstance(condition, dict):  # PodCondition's two times are metav1.Time values: null when unset
                condition.setdefault("lastProbeTime", None)
                condition.setdefault("lastTransitionTime", None)
        _pod_ips(status, "podIP", "podIPs")
        _pod_ips(status, "hostIP", "hostIPs")
        for field in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            for container in status.get(field) or []:
                if isinstance(container, dict):  # ContainerState values, not pointers: `{}` when unset
                    container.setdefault("state", {})
                    container.setdefault("lastState", {})


def _pod_ips(status: dict[str, Any], single: str, plural: str) -> None:
    """pkg/apis/core/v1/conversion.go `Convert_v1_PodStatus_To_core_PodStatus`: `podIP` given without
    `podIPs` (or differing from its first entry, the singular field being authoritative for older
    kubelets) makes `podIPs` `[{ip: podIP}]`; the way back, `podIP` is `podIPs[0]`. The same for
    `hostIP`/`hostIPs`. kube-apiserver 1.37.2 answers a status patch of `podIP` alone with both
    (lwsconf fidelity subresources/status-subresource/pod-status-ready)."""
    ip = status.get(single)
    ips = status.get(plural)
    if isinstance(ip, str) and ip and (not isinstance(ips, list) or not ips
                                       or not isinstance(ips[0], dict) or ips[0].get("ip") != ip):
        status[plural] = [{"ip": ip}]
    elif not ip and isinstance(ips, list) and ips and isinstance(ips[0], dict) and ips[0].get("ip"):
        status[single] = ips[0]["ip"]


def default_pod_spec(spec: dict[str, Any]) -> None:
    """`SetDefaults_PodSpec` and the per-field defaulters it reaches (containers, probes, volumes)."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for field in _CONTAINER_LISTS:
        for ctr in f.as_list(spec.get(field)):
            if isinstance(ctr, dict):
                default_container(ctr)
    for vol in f.as_list(spec.get("volumes")):
        if isinstance(vol, dict):
            _default_volume(vol)
    _canonical_resources(spec.get("resources"))
    _canonical_resources({"overhead": spec.get("overhead")})


def image_pull_policy(image: str) -> str:
    """`Always` for `:latest` or an untagged, undigested image; `IfNotPresent` otherwise."""
    if not image:
        return "IfNotPresent"  # the real parser fails on it and falls through to IfNotPresent
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if not tag and digest:
        return "IfNotPresent"
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def default_container(ctr: dict[str, Any]) -> None:
    """`SetDefaults_Container` plus ports, probes, handlers, env field refs and resources."""
    if not ctr.get("imagePullPolicy"):
        ctr["imagePullPolicy"] = image_pull_policy(f.as_str(ctr.get("image")))
    if not ctr.get("terminationMessagePath"):
        ctr["terminationMessagePath"] = "/dev/termination-log"
    if not ctr.get("terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    if ctr.get("resources") is None:
        ctr["resources"] = {}
    _canonical_resources(ctr.get("resources"))
    for port in f.as_list(ctr.get("ports")):
        if isinstance(port, dict) and not port.get("protocol"):
            port["protocol"] = "TCP"
    for probe in _PROBES:
        if isinstance(ctr.get(probe), dict):
            _default_probe(ctr[probe])
    for hook in ("postStart", "preStop"):
        _default_handler(f.as_dict(f.as_dict(ctr.get("lifecycle")).get(hook)))
    for var in f.as_list(ctr.get("env")):
        ref = f.as_dict(f.as_dict(f.as_dict(var).get("valueFrom")).get("fieldRef"))
        if ref and not ref.get("apiVersion"):
            ref["apiVersion"] = "v1"


def _default_probe(probe: dict[str, Any]) -> None:
    for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                         ("failureThreshold", 3)):
        if not probe.get(field):
            probe[field] = value
    _default_handler(probe)


def _default_handler(handler: dict[str, Any]) -> None:
    http = handler.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")
    grpc = handler.get("grpc")
    if isinstance(grpc, dict):
        grpc.setdefault("service", "")


def _default_volume(vol: dict[str, Any]) -> None:
    """`SetDefaults_Volume` (emptyDir when no source) and the 0644 `defaultMode` of projected sources."""
    sources = [k for k in vol if k != "name"]
    if not sources:
        vol["emptyDir"] = {}
    for source in ("configMap", "secret", "projected", "downwardAPI"):
        src = vol.get(source)
        if isinstance(src, dict) and src.get("defaultMode") is None:
            src["defaultMode"] = _DEFAULT_MODE
    empty_dir = vol.get("emptyDir")
    if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
        empty_dir["sizeLimit"] = quantity.to_string(empty_dir["sizeLimit"])
    for item in f.as_list(f.as_dict(vol.get("downwardAPI")).get("items")):
        ref = f.as_dict(f.as_dict(item).get("fieldRef"))
        if ref and not ref.get("apiVersion"):
            ref["apiVersion"] = "v1"


def _canonical_resources(resources: Any) -> None:
    """Numbers in resource lists become strings, as the apiserver always serializes quantities."""
    for part in f.as_dict(resources).values():
        if isinstance(part, dict):
            for name, value in part.items():
                part[name] = quantity.to_string(value)


def _requests_from_limits(spec: dict[str, Any]) -> None:
    """`SetDefaults_Pod`: a container (or pod-level) limit without a request also becomes the request."""
    holders = [f.as_dict(c) for field in ("initContainers", "containers") for c in f.as_list(spec.get(field))]
    resources = [f.as_dict(h.get("resources")) for h in holders] + [f.as_dict(spec.get("resources"))]
    for res in resources:
        limits = res.get("limits")
        if isinstance(limits, dict) and limits:
            requests = res.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)


def _host_ports(spec: dict[str, Any]) -> None:
    """With hostNetwork, a Pod's container ports are also host ports (`SetDefaults_Pod`)."""
    for field in ("initContainers", "containers"):
        for ctr in f.as_list(spec.get(field)):
            for port in f.as_list(f.as_dict(ctr).get("ports")):
                if isinstance(port, dict) and not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort")


def _default_tolerations(spec: dict[str, Any]) -> None:
    """DefaultTolerationSeconds admission: tolerate not-ready/unreachable nodes for 300 s."""
    tolerations = spec.setdefault("tolerations", [])
    if not isinstance(tolerations, list):
        return
    for taint in _NODE_TAINTS:
        covered = any((t.get("key") in (taint, None, "")) and t.get("effect") in ("NoExecute", None, "")
                      for t in map(f.as_dict, tolerations))
        if not covered:
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})


def pod_qos_class(pod: dict[str, Any]) -> str:
    """The QoS class (`BestEffort`, `Burstable`, `Guaranteed`) as `ComputePodQOS` derives it.

    Only cpu and memory count. Pod-level `spec.resources`, when set, replaces the containers'. A pod
    is Guaranteed when every container (or the pod) limits both cpu and memory and the summed
    requests equal the summed limits; BestEffort when nothing is requested or limited.
    """
    spec = f.as_dict(pod.get("spec"))
    pod_level = f.as_dict(spec.get("resources"))
    if pod_level.get("requests") or pod_level.get("limits"):
        holders = [pod_level]
    else:
        holders = [f.as_dict(f.as_dict(c).get("resources"))
                   for field in ("containers", "initContainers") for c in f.as_list(spec.get(field))]
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for res in holders:
        _add_positive(requests, f.as_dict(res.get("requests")))
        found = _add_positive(limits, f.as_dict(res.get("limits")))
        guaranteed = guaranteed and set(_QOS_RESOURCES) <= found
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests.keys() == limits.keys() and all(requests[k] == limits[k] for k in requests):
        return "Guaranteed"
    return "Burstable"


def _add_positive(total: dict[str, Any], resources: dict[str, Any]) -> set[str]:
    found = set()
    for name in _QOS_RESOURCES:
        amount = quantity.parse(resources.get(name)) if name in resources else None
        if amount is not None and amount > 0:
            total[name] = total.get(name, 0) + amount
            found.add(name)
    return found
