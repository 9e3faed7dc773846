"""One scheduling decision: a snapshot of the cluster, and the node a pending pod goes to (or why none).

`scheduler.py` builds a `Snapshot` from its informers (plus the pods it has assumed) for every
attempt and calls `decide`; the predicates each node is filtered by live in `filters.py`.
This module is the step between the two, kept pure so that the choice can be tested without an API
server: filter every node, report kube-scheduler's `0/N nodes are available: ...` when none is
left, otherwise take the feasible node with the most resources left (LeastAllocated over cpu and
memory), ties broken by node name. Upstream breaks ties at random; the sim stays reproducible.
No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.controllers.scheduler import filters as sf
from lwsconf.sim.controllers.scheduler import resource_requests as rr

Obj = dict[str, Any]
NO_NODES = "no nodes available to schedule pods"
"""What kube-scheduler reports when the cluster has no node at all (ErrNoNodesAvailable)."""


def node_name_of(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


@dataclass
class NodeInfo:
    """One node with the pods placed on it and what they request (plain and for scoring)."""

    node: Obj
    pods: list[Obj]
    requested: rr.Resources
    nonzero_requested: rr.Resources

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])


@dataclass
class Snapshot:
    """What one scheduling attempt looks at: nodes (sorted by name) and namespace labels."""

    nodes: list[NodeInfo]
    namespace_labels: dict[str, sf.Labels]

    @staticmethod
    def build(nodes: Iterable[Obj], placed_pods: Iterable[Obj], namespaces: Iterable[Obj],
              requests_of: Callable[[Obj], tuple[rr.Resources, rr.Resources]] | None = None) -> Snapshot:
        """Group non-terminal placed pods by node; pods on unknown nodes are left out.

        `requests_of(pod)` gives (requests, nonzero requests); default: computed from the spec each time.
        """
        infos = {n["metadata"]["name"]: NodeInfo(n, [], {}, {}) for n in nodes}
        for pod in placed_pods:
            info = infos.get(node_name_of(pod))
            if info is None or sf.is_terminal(pod):
                continue
            info.pods.append(pod)
            plain, nonzero = requests_of(pod) if requests_of else (rr.pod_requests(pod),
                                                                   rr.pod_requests(pod, nonzero=True))
            rr.add_resources(info.requested, plain)
            rr.add_resources(info.nonzero_requested, nonzero)
        ns_labels = {n["metadata"]["name"]: sf.labels_of(n) for n in namespaces}
        return Snapshot([infos[name] for name in sorted(infos)], ns_labels)


@dataclass(frozen=True)
class Decision:
    """The chosen node, or None with the FitError message saying why no node fits."""

    node: str | None
    message: str = ""


def decide(pod: Obj, snapshot: Snapshot) -> Decision:
    """Filter every node, then take the least allocated feasible one (ties: lowest name)."""
    if not snapshot.nodes:
        return Decision(None, NO_NODES)
    request = rr.pod_requests(pod)
    placed = [(p, sf.labels_of(info.node)) for info in snapshot.nodes for p in info.pods]
    affinity = sf.affinity_state(pod, placed, snapshot.namespace_labels)
    nonzero_request = rr.pod_requests(pod, nonzero=True)
    failures: list[list[str]] = []
    feasible: list[tuple[int, str]] = []
    for info in snapshot.nodes:
        reasons = sf.node_reasons(pod, request, info.node, info.requested, len(info.pods), affinity)
        if reasons:
            failures.append(reasons)
            continue
        allocatable = rr.resources_of((info.node.get("status") or {}).get("allocatable"))
        score = sf.least_allocated_score(nonzero_request, allocatable, info.nonzero_requested)
        feasible.append((-score, info.name))
    if not feasible:
        return Decision(None, sf.fit_error_message(len(snapshot.nodes), failures))
    return Decision(min(feasible)[1])
