"""Where a DaemonSet's pods belong: the DaemonSet controller's node predicates. No I/O here.

Follows kubernetes/kubernetes `pkg/controller/daemon` (`NodeShouldRunDaemonPod` / `predicates`) and
`pkg/controller/daemon/util/daemonset_util.go`:

* a node should run the daemon pod when the pod's `nodeSelector` and required node affinity match
  it and every NoSchedule/NoExecute taint of the node is tolerated - the scheduler's own checks
  (`scheduler.filters`), as upstream's `predicates` uses the scheduler plugins. Every daemon pod
  tolerates `not-ready`/`unreachable` NoExecute, the pressure taints and `unschedulable`
  (`AddOrUpdateDaemonPodTolerations`), so cordoned nodes get daemon pods; a node whose Ready
  condition is not True carries the `not-ready` *NoSchedule* taint (the scheduler models the node
  lifecycle controller's taint), which daemon pods do not tolerate unless their template does;
* each pod is pinned to its node by replacing the required node affinity with one term matching
  field `metadata.name` (`ReplaceDaemonSetPodNodeNameNodeAffinity`), so the scheduler binds it there;
* a pod's node is its `spec.nodeName`, or before binding the node named by that pin
  (`GetTargetNodeName`).
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf.sim.controllers.scheduler import filters as sf

Obj = dict[str, Any]

DAEMON_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")
NAME_FIELD = "metadata.name"


def with_daemon_tolerations(pod_spec: Obj) -> Obj:
    """A copy of `pod_spec` carrying the tolerations every daemon pod gets (no duplicates)."""
    out = copy.deepcopy(pod_spec)
    tolerations = list(out.get("tolerations") or [])
    wanted = list(DAEMON_TOLERATIONS) + ([NETWORK_UNAVAILABLE] if out.get("hostNetwork") else [])
    for key, effect in wanted:
        tolerations = [t for t in tolerations if not (t.get("key") == key and t.get("effect") == effect)]
        tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    out["tolerations"] = tolerations
    return out


def should_run(node: Obj, pod_spec: Obj) -> bool:
    """Whether the daemon pod belongs on `node` (`pod_spec` already carries the daemon tolerations).

    Upstream's `predicates` runs the scheduler's NodeAffinity and TaintToleration checks, so this
    uses the sim scheduler's: the same answer for the controller and for the binding.
    """
    pod = {"spec": pod_spec}
    return sf.matches_node_affinity(pod, node) and sf.untolerated_taint(pod, node) is None


def pin_to_node(pod_spec: Obj, node_name: str) -> None:
    """Replace the required node affinity with `metadata.name In [node_name]` (in place)."""
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": NAME_FIELD, "operator": "In", "values": [node_name]}]}]}


def target_node(pod: Obj) -> str | None:
    """`GetTargetNodeName`: the bound node, else the single node the affinity pin names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution")) or {})
    for term in required.get("nodeSelectorTerms") or ():
        for req in term.get("matchFields") or ():
            values = req.get("values") or []
            if req.get("key") == NAME_FIELD and req.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return None
