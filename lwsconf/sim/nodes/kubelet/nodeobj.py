"""Pure builders of the Node object a kubelet registers and the status it reports. No I/O here.

Registration (pkg/kubelet/kubelet_node_status.go `initialNode`) creates the Node with its labels,
taints, podCIDR and providerID; the status carries capacity and allocatable (the layout's, with the
counts device plugins report replacing the layout's for the resources they serve), the four
node conditions with Ready=True ("kubelet is posting ready status"), the InternalIP and Hostname
addresses, the kubelet endpoint port (the log server, which `pods/log` is forwarded to) and nodeInfo.
Allocatable equals capacity except for unhealthy devices: the sim reserves nothing for system daemons.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from lwsconf import __version__
from lwsconf.sim.nodes import layout

Obj = dict[str, Any]
KUBELET_VERSION = "v1.37.0-lwsconf"
_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_object(spec: layout.NodeSpec, *, pod_cidr: str) -> Obj:
    """The Node to create at registration (status is written separately)."""
    node_spec: Obj = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr], "providerID": f"lwsconf://{spec.name}"}
    if spec.taints:
        node_spec["taints"] = [dict(t) for t in spec.taints]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": spec.name, "labels": dict(spec.labels),
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                         "lwsconf.dev/simulated": "true"}},
            "spec": node_spec}


DECLARED_FEATURES = ("ExtendWebSocketsToKubelet",)
"""What the node agent declares (status.declaredFeatures, sorted as validation requires): its kubelet
port serves exec/attach over WebSocket and port-forward over the WebSocket SPDY tunnel, so
kube-apiserver 1.36+ proxies kubectl's WebSocket to it instead of translating to SPDY
(pkg/registry/core/pod/rest/subresources.go, `checkNodeSupportsWebsockets`)."""


def capacity(spec: layout.NodeSpec, device_counts: Mapping[str, int]) -> dict[str, str]:
    """The layout's capacity, with each device-plugin resource replaced by its healthy device count."""
    out = dict(spec.capacity)
    for resource, count in device_counts.items():
        out[resource] = str(count)
    return out


def node_status(spec: layout.NodeSpec, *, host_ip: str, kubelet_port: int, caps: Mapping[str, str],
                allocatable: Mapping[str, str], now: str, boot_id: str, previous: Obj | None = None,
                not_ready_message: str | None = None) -> Obj:
    """status for the Node: capacity, allocatable, conditions, addresses, endpoints, nodeInfo.

    With `not_ready_message`, Ready is False with reason KubeletNotReady and that message, as a
    kubelet whose runtime or network is not ready reports it (pkg/kubelet/nodestatus `ReadyCondition`).
    """
    old = {c.get("type"): c for c in ((previous or {}).get("conditions") or [])}
    conditions = []
    for ctype, status, reason, message in _CONDITIONS:
        if ctype == "Ready" and not_ready_message is not None:
            status, reason, message = "False", "KubeletNotReady", not_ready_message
        before = old.get(ctype) or {}
        moved = before.get("status") != status
        conditions.append({"type": ctype, "status": status, "reason": reason, "message": message,
                           "lastHeartbeatTime": now,
                           "lastTransitionTime": now if moved else before.get("lastTransitionTime", now)})
    return {"capacity": dict(caps), "allocatable": dict(allocatable), "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": host_ip}, {"type": "Hostname", "address": spec.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "declaredFeatures": list(DECLARED_FEATURES),
            "nodeInfo": node_info(spec.name, boot_id)}


def node_info(name: str, boot_id: str) -> Obj:
    """Stable identifiers per node name, and what software the node claims to run."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {"machineID": digest[:32], "systemUUID": str(uuid.UUID(digest[:32])), "bootID": boot_id,
            "kernelVersion": "6.1.0-lwsconf", "osImage": f"lwsconf simulated node {__version__}",
            "containerRuntimeVersion": f"lwsconf://{__version__}", "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}
