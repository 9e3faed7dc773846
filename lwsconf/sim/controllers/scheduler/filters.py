"""The scheduler's predicates: pure functions deciding whether a pod may run on a node, and why not.

Each function mirrors one kube-scheduler filter plugin and returns the reason strings that plugin
reports, word for word, because users (and conformance tests) read them in `FailedScheduling`
events: `Insufficient nvidia.com/gpu`, `node(s) didn't match pod anti-affinity rules`, ...
(kubernetes pkg/scheduler/framework/plugins/*: noderesources/fit.go, tainttoleration,
nodeunschedulable, nodeaffinity, interpodaffinity/filtering.go).

Also here: label selectors. Quantities and a pod's effective request, which the filters and the
scoring share, are in `resource_requests.py`. Objects are the plain JSON dicts of the REST API.
No I/O here; `decision.py` runs them over a cluster snapshot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.controllers.scheduler.resource_requests import resources_of

Obj = dict[str, Any]
Labels = Mapping[str, str]

PODS = "pods"
TERMINAL_PHASES = ("Succeeded", "Failed")

# Reason strings, as the upstream plugins spell them.
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_TOO_MANY_PODS = "Too many pods"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


# --- label selectors ----------------------------------------------------------------------------

def _requirement_matches(req: Obj, labels: Labels) -> bool:
    key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):  # node selectors only: one integer value compared with the label's
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, IndexError, ValueError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_matches(selector: Obj | None, labels: Labels | None) -> bool:
    """metav1.LabelSelector semantics: None selects nothing, `{}` selects everything."""
    if selector is None:
        return False
    labels = labels or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_requirement_matches(r, labels) for r in selector.get("matchExpressions") or ())


def labels_of(obj: Obj) -> Labels:
    return (obj.get("metadata") or {}).get("labels") or {}


# --- node-level filters -------------------------------------------------------------------------

def ready_status(node: Obj) -> str:
    """The node's Ready condition status: True, False or Unknown (a node without one is not ready)."""
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return str(cond.get("status") or "Unknown")
    return "False"


def effective_taints(node: Obj) -> list[Obj]:
    """The node's taints plus the NoSchedule taint the node lifecycle controller keeps on a node
    whose Ready condition is not True (TaintNodesByCondition: not-ready for False, unreachable for
    Unknown). kube-scheduler itself never reads the Ready condition: it sees that taint."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, dict)]
    status = ready_status(node)
    if status != "True":
        key = TAINT_UNREACHABLE if status == "Unknown" else TAINT_NOT_READY
        if not any(t.get("key") == key and t.get("effect") == "NoSchedule" for t in taints):
            taints.append({"key": key, "effect": "NoSchedule"})
    return taints


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """core/v1 Toleration.ToleratesTaint: empty effect/key match any; Exists ignores the value."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if effect and effect != taint.get("effect"):
        return False
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(pod: Obj, node: Obj) -> str | None:
    """TaintToleration: the first NoSchedule/NoExecute taint no toleration matches, as a reason."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    for taint in effective_taints(node):
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}"
    return None


def cordoned(pod: Obj, node: Obj) -> bool:
    """NodeUnschedulable: `spec.unschedulable` blocks pods not tolerating the unschedulable taint."""
    if not (node.get("spec") or {}).get("unschedulable"):
        return False
    taint = {"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"}
    return not any(tolerates(t, taint) for t in (pod.get("spec") or {}).get("tolerations") or ())


def _node_term_matches(term: Obj, node: Obj) -> bool:
    """One nodeSelectorTerm: all its expressions and fields hold; an empty term matches nothing."""
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    node_fields = {"metadata.name": (node.get("metadata") or {}).get("name", "")}
    return (all(_requirement_matches(e, labels_of(node)) for e in expressions)
            and all(_requirement_matches(f, node_fields) for f in fields))


def matches_node_affinity(pod: Obj, node: Obj) -> bool:
    """NodeAffinity: `nodeSelector` (all pairs) and the required nodeSelectorTerms (any term)."""
    spec = pod.get("spec") or {}
    labels = labels_of(node)
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return True
    return any(_node_term_matches(t, node) for t in required.get("nodeSelectorTerms") or ())


def insufficient_resources(request: Mapping[str, int], allocatable: Mapping[str, int],
                           requested: Mapping[str, int], pod_count: int) -> list[str]:
    """NodeResourcesFit: one reason per resource that does not fit (noderesources/fit.go)."""
    reasons = []
    if pod_count + 1 > allocatable.get(PODS, 0):
        reasons.append(REASON_TOO_MANY_PODS)
    for name in sorted(request, key=lambda n: (n not in ("cpu", "memory", "ephemeral-storage"), n)):
        want = request[name]
        if name != PODS and want > 0 and want > allocatable.get(name, 0) - requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


# --- inter-pod affinity ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AffinityTerm:
    """A required PodAffinityTerm, resolved against the namespace of the pod that carries it."""

    selector: Obj | None
    topology_key: str
    namespaces: frozenset[str]
    namespace_selector: Obj | None

    def matches(self, pod: Obj, namespace_labels: Mapping[str, Labels]) -> bool:
        """Whether `pod` is one of the pods this term talks about (framework.AffinityTerm.Matches)."""
        ns = (pod.get("metadata") or {}).get("namespace") or ""
        in_scope = ns in self.namespaces or selector_matches(self.namespace_selector, namespace_labels.get(ns))
        return in_scope and selector_matches(self.selector, labels_of(pod))


def required_terms(pod: Obj, kind: str) -> list[AffinityTerm]:
    """The required terms of `podAffinity` or `podAntiAffinity`. With neither `namespaces` nor
    `namespaceSelector`, a term means the pod's own namespace."""
    block = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    own = (pod.get("metadata") or {}).get("namespace") or ""
    terms = []
    for term in block.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        namespaces = frozenset(term.get("namespaces") or ())
        ns_selector = term.get("namespaceSelector")
        if not namespaces and ns_selector is None:
            namespaces = frozenset({own})
        terms.append(AffinityTerm(term.get("labelSelector"), term.get("topologyKey") or "", namespaces,
                                  ns_selector))
    return terms


TopologyPair = tuple[str, str]


@dataclass
class AffinityState:
    """interpodaffinity's PreFilter state: per topology pair, how many existing pods matter."""

    affinity_terms: list[AffinityTerm]
    anti_affinity_terms: list[AffinityTerm]
    affinity_counts: Counter[TopologyPair]
    anti_affinity_counts: Counter[TopologyPair]
    existing_anti_affinity_counts: Counter[TopologyPair]
    matches_own_affinity: bool


def affinity_state(pod: Obj, placed: Iterable[tuple[Obj, Labels]],
                   namespace_labels: Mapping[str, Labels]) -> AffinityState:
    """Count, over the already placed (pod, node labels) pairs, the topology pairs holding pods that
    the incoming pod's terms select, and those whose own anti-affinity selects the incoming pod."""
    affinity, anti = required_terms(pod, "podAffinity"), required_terms(pod, "podAntiAffinity")
    state = AffinityState(affinity, anti, Counter(), Counter(), Counter(),
                          bool(affinity) and all(t.matches(pod, namespace_labels) for t in affinity))
    for other, node_labels in placed:
        for term in required_terms(other, "podAntiAffinity"):
            if term.topology_key in node_labels and term.matches(pod, namespace_labels):
                state.existing_anti_affinity_counts[(term.topology_key, node_labels[term.topology_key])] += 1
        if affinity and all(t.matches(other, namespace_labels) for t in affinity):
            for term in affinity:
                if term.topology_key in node_labels:
                    state.affinity_counts[(term.topology_key, node_labels[term.topology_key])] += 1
        for term in anti:
            if term.topology_key in node_labels and term.matches(other, namespace_labels):
                state.anti_affinity_counts[(term.topology_key, node_labels[term.topology_key])] += 1
    return state


def inter_pod_affinity_reason(state: AffinityState, node_labels: Labels) -> str | None:
    """InterPodAffinity Filter, in upstream's order: own affinity, own anti-affinity, then the
    anti-affinity of pods already placed."""
    if state.affinity_terms and not _satisfies_affinity(state, node_labels):
        return REASON_AFFINITY
    for term in state.anti_affinity_terms:
        value = node_labels.get(term.topology_key)
        if value is not None and state.anti_affinity_counts[(term.topology_key, value)] > 0:
            return REASON_ANTI_AFFINITY
    if any(state.existing_anti_affinity_counts[pair] > 0 for pair in node_labels.items()):
        return REASON_EXISTING_ANTI_AFFINITY
    return None


def _satisfies_affinity(state: AffinityState, node_labels: Labels) -> bool:
    pods_exist = True
    for term in state.affinity_terms:
        value = node_labels.get(term.topology_key)
        if value is None:
            return False  # every topology label must exist on the node
        if state.affinity_counts[(term.topology_key, value)] <= 0:
            pods_exist = False
    # The first pod of a group that has affinity to itself: allowed when no pod anywhere matches
    # yet and the pod matches its own terms (interpodaffinity/filtering.go, satisfyPodAffinity).
    return pods_exist or (not state.affinity_counts and state.matches_own_affinity)


# --- the whole filter chain and the failure message --------------------------------------------------

def node_reasons(pod: Obj, request: Mapping[str, int], node: Obj, requested: Mapping[str, int],
                 pod_count: int, affinity: AffinityState) -> list[str]:
    """Why `pod` cannot go to `node` (empty: it can), stopping at the first failing plugin in the
    default profile's order: NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit,
    InterPodAffinity. Each entry counts once in the `0/N nodes are available` histogram."""
    if cordoned(pod, node):
        return [REASON_UNSCHEDULABLE]
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return [taint]
    if not matches_node_affinity(pod, node):
        return [REASON_NODE_AFFINITY]
    allocatable = resources_of((node.get("status") or {}).get("allocatable"))
    reasons = insufficient_resources(request, allocatable, requested, pod_count)
    if reasons:
        return reasons
    reason = inter_pod_affinity_reason(affinity, labels_of(node))
    return [reason] if reason else []


def fit_error_message(node_count: int, reasons_per_node: Iterable[list[str]]) -> str:
    """framework.FitError.Error(): "0/N nodes are available: " + sorted "count reason" entries."""
    histogram: Counter[str] = Counter()
    for reasons in reasons_per_node:
        histogram.update(reasons)
    entries = sorted(f"{count} {reason}" for reason, count in histogram.items())
    if not entries:
        return f"0/{node_count} nodes are available."
    return f"0/{node_count} nodes are available: {', '.join(entries)}."


def least_allocated_score(nonzero_request: Mapping[str, int], allocatable: Mapping[str, int],
                          nonzero_requested: Mapping[str, int]) -> int:
    """NodeResourcesFit's default LeastAllocated score over cpu and memory (weight 1 each), 0-100:
    the share left free after placing the pod, averaged."""
    scores = []
    for name in ("cpu", "memory"):
        capacity = allocatable.get(name, 0)
        used = nonzero_requested.get(name, 0) + nonzero_request.get(name, 0)
        scores.append(0 if capacity <= 0 or used > capacity else (capacity - used) * 100 // capacity)
    return sum(scores) // len(scores)
