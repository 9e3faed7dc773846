"""The scheduler's pure parts: each filter, messages and the choice.

Expected values follow kube-scheduler (plugins noderesources, tainttoleration, nodeunschedulable,
nodeaffinity, interpodaffinity; framework.FitError). Quantities and pod requests: test_resource_requests.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.sim.controllers.scheduler import decision as sd
from lwsconf.sim.controllers.scheduler import filters as sf
from lwsconf.sim.controllers.scheduler import scheduler as sched_mod

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, labels: dict[str, str] | None = None, *, ready: str = "True", taints: list[Obj] | None = None,
         allocatable: dict[str, str] | None = None, unschedulable: bool = False) -> Obj:
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {"allocatable": allocatable or {"cpu": "4", "memory": "8Gi", "pods": "10", GPU: "8"},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def pod(name: str, *, ns: str = "default", labels: dict[str, str] | None = None, node_name: str = "",
        requests: dict[str, str] | None = None, **spec: Any) -> Obj:
    ctr: Obj = {"name": "c", "resources": {"requests": requests or {}}}
    body: Obj = {"containers": [ctr], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": labels or {}},
            "spec": body, "status": {"phase": "Running" if node_name else "Pending"}}


# --- node filters ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
     {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoExecute"}, True),
    ({"key": "k", "value": "other"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
    ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "any", "effect": "NoSchedule"}, True),
    ({"operator": "Exists"}, {"key": "whatever", "value": "x", "effect": "NoExecute"}, True),
    ({"operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
    ({"key": "other", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
])
def test_toleration_matching(toleration: Obj, taint: Obj, expected: bool) -> None:
    assert sf.tolerates(toleration, taint) is expected


def test_prefer_no_schedule_taints_do_not_filter_and_the_first_hard_one_is_named() -> None:
    n = node("n", taints=[{"key": "soft", "effect": "PreferNoSchedule"},
                          {"key": "gpu", "value": "a100", "effect": "NoExecute"}])
    assert sf.untolerated_taint(pod("p"), n) == "node(s) had untolerated taint {gpu: a100}"
    assert sf.untolerated_taint(pod("p", tolerations=[{"key": "gpu", "operator": "Exists"}]), n) is None


def test_a_node_that_is_not_ready_repels_like_its_not_ready_or_unreachable_taint() -> None:
    assert sf.untolerated_taint(pod("p"), node("n", ready="False")) == \
        "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    assert sf.untolerated_taint(pod("p"), node("n", ready="Unknown")) == \
        "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
    everything = pod("p", tolerations=[{"operator": "Exists"}])
    assert sf.untolerated_taint(everything, node("n", ready="False")) is None


def test_cordoned_nodes_take_only_pods_tolerating_the_unschedulable_taint() -> None:
    n = node("n", unschedulable=True)
    assert sf.cordoned(pod("p"), n)
    assert not sf.cordoned(pod("p", tolerations=[{"key": sf.TAINT_UNSCHEDULABLE, "operator": "Exists"}]), n)


def affinity_pod(*terms: list[Obj], node_selector: dict[str, str] | None = None) -> Obj:
    required = {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}
    return pod("p", nodeSelector=node_selector or {},
               affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})


@pytest.mark.parametrize(("expression", "labels", "expected"), [
    ({"key": "gpu", "operator": "In", "values": ["a100", "h100"]}, {"gpu": "h100"}, True),
    ({"key": "gpu", "operator": "In", "values": ["a100"]}, {}, False),
    ({"key": "gpu", "operator": "NotIn", "values": ["a100"]}, {}, True),
    ({"key": "gpu", "operator": "NotIn", "values": ["a100"]}, {"gpu": "a100"}, False),
    ({"key": "gpu", "operator": "Exists"}, {"gpu": ""}, True),
    ({"key": "gpu", "operator": "DoesNotExist"}, {"gpu": "x"}, False),
    ({"key": "gen", "operator": "Gt", "values": ["3"]}, {"gen": "4"}, True),
    ({"key": "gen", "operator": "Gt", "values": ["3"]}, {"gen": "3"}, False),
    ({"key": "gen", "operator": "Lt", "values": ["3"]}, {"gen": "2"}, True),
    ({"key": "gen", "operator": "Lt", "values": ["3"]}, {"gen": "two"}, False),
    ({"key": "gen", "operator": "Lt", "values": ["3"]}, {}, False),
])
def test_node_selector_operators(expression: Obj, labels: dict[str, str], expected: bool) -> None:
    assert sf.matches_node_affinity(affinity_pod([expression]), node("n", labels)) is expected


def test_node_selector_terms_are_ored_and_their_expressions_anded() -> None:
    a100 = {"key": "gpu", "operator": "In", "values": ["a100"]}
    big = {"key": "size", "operator": "In", "values": ["big"]}
    small_a100 = node("n", {"gpu": "a100", "size": "small"})
    assert not sf.matches_node_affinity(affinity_pod([a100, big]), small_a100)
    assert sf.matches_node_affinity(affinity_pod([a100, big], [a100]), small_a100)
    assert not sf.matches_node_affinity(affinity_pod([]), small_a100), "an empty term matches nothing"
    assert not sf.matches_node_affinity(affinity_pod([a100], node_selector={"size": "big"}), small_a100)


def test_match_fields_select_a_node_by_name() -> None:
    p = pod("p", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}})
    assert sf.matches_node_affinity(p, node("n1")) and not sf.matches_node_affinity(p, node("n2"))


def test_every_short_resource_is_named_and_extended_resources_the_node_lacks_count_as_zero() -> None:
    request = {"cpu": 3000, "memory": 1, GPU: 1, "example.com/fpga": 1}
    reasons = sf.insufficient_resources(request, {"cpu": 4000, "memory": 10, GPU: 8, "pods": 2},
                                        {"cpu": 2000, GPU: 8}, pod_count=2)
    assert reasons == ["Too many pods", "Insufficient cpu", "Insufficient example.com/fpga",
                       "Insufficient nvidia.com/gpu"]


def test_label_selectors_none_selects_nothing_and_empty_selects_everything() -> None:
    assert not sf.selector_matches(None, {"a": "b"})
    assert sf.selector_matches({}, {})
    selector = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                                      "values": ["db"]}]}
    assert sf.selector_matches(selector, {"app": "web", "tier": "front"})
    assert not sf.selector_matches(selector, {"app": "web", "tier": "db"})


# --- inter-pod affinity ------------------------------------------------------------------------------

def anti(selector: Obj, key: str = ZONE, **extra: Any) -> Obj:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": selector, "topologyKey": key, **extra}]}}


def with_affinity(selector: Obj, key: str = ZONE) -> Obj:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": selector, "topologyKey": key}]}}


ZONE_A, ZONE_B = {ZONE: "a"}, {ZONE: "b"}


def reason(incoming: Obj, placed: list[tuple[Obj, dict[str, str]]], target: dict[str, str],
           ns_labels: dict[str, dict[str, str]] | None = None) -> str | None:
    state = sf.affinity_state(incoming, placed, ns_labels or {})
    return sf.inter_pod_affinity_reason(state, target)


def test_anti_affinity_rejects_the_domain_holding_a_matching_pod_only() -> None:
    incoming = pod("new", affinity=anti({"matchLabels": {"app": "web"}}))
    placed = [(pod("web-0", labels={"app": "web"}), ZONE_A)]
    assert reason(incoming, placed, ZONE_A) == sf.REASON_ANTI_AFFINITY
    assert reason(incoming, placed, ZONE_B) is None
    assert reason(incoming, placed, {}) is None, "a node without the topology label cannot violate it"


def test_an_existing_pods_anti_affinity_keeps_the_incoming_pod_out_of_its_domain() -> None:
    guard = pod("guard", affinity=anti({"matchLabels": {"app": "web"}}))
    placed = [(guard, ZONE_A)]
    assert reason(pod("new", labels={"app": "web"}), placed, ZONE_A) == sf.REASON_EXISTING_ANTI_AFFINITY
    assert reason(pod("new", labels={"app": "web"}), placed, ZONE_B) is None
    assert reason(pod("other", labels={"app": "db"}), placed, ZONE_A) is None


def test_affinity_needs_a_matching_pod_in_the_domain_unless_it_is_the_first_of_its_group() -> None:
    incoming = pod("w", labels={"group": "g"}, affinity=with_affinity({"matchLabels": {"group": "g"}}))
    assert reason(incoming, [], ZONE_B) is None, "first pod matching its own term may go anywhere"
    assert reason(incoming, [], {}) == sf.REASON_AFFINITY, "but only to nodes carrying the topology key"
    placed = [(pod("leader", labels={"group": "g"}), ZONE_A)]
    assert reason(incoming, placed, ZONE_A) is None
    assert reason(incoming, placed, ZONE_B) == sf.REASON_AFFINITY
    stranger = pod("s", affinity=with_affinity({"matchLabels": {"group": "g"}}))
    assert reason(stranger, [], ZONE_A) == sf.REASON_AFFINITY, "not matching its own term: no exception"


def test_terms_default_to_the_pods_namespace_and_namespace_selectors_widen_them() -> None:
    placed = [(pod("web-0", ns="other", labels={"app": "web"}), ZONE_A)]
    ns_labels = {"other": {"team": "ml"}}
    own_ns = pod("new", affinity=anti({"matchLabels": {"app": "web"}}))
    assert reason(own_ns, placed, ZONE_A, ns_labels) is None
    listed = pod("new", affinity=anti({"matchLabels": {"app": "web"}}, namespaces=["other"]))
    assert reason(listed, placed, ZONE_A, ns_labels) == sf.REASON_ANTI_AFFINITY
    every_ns = pod("new", affinity=anti({"matchLabels": {"app": "web"}}, namespaceSelector={}))
    assert reason(every_ns, placed, ZONE_A, ns_labels) == sf.REASON_ANTI_AFFINITY
    by_label = pod("new", affinity=anti({"matchLabels": {"app": "web"}},
                                        namespaceSelector={"matchLabels": {"team": "infra"}}))
    assert reason(by_label, placed, ZONE_A, ns_labels) is None


# --- messages and the decision ------------------------------------------------------------------------

def test_fit_error_counts_reasons_per_node_and_sorts_them() -> None:
    per_node = [["Insufficient nvidia.com/gpu"]] * 2 + [[sf.REASON_ANTI_AFFINITY]] * 4
    assert sf.fit_error_message(6, per_node) == (
        "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 4 node(s) didn't match pod anti-affinity rules.")


def snapshot(nodes: list[Obj], placed: list[Obj]) -> sd.Snapshot:
    return sd.Snapshot.build(nodes, placed, [{"metadata": {"name": "default", "labels": {}}}])


def test_the_least_allocated_feasible_node_wins_and_ties_go_to_the_lowest_name() -> None:
    nodes = [node("c"), node("b"), node("a")]
    assert sd.decide(pod("p"), snapshot(nodes, [])).node == "a"
    busy = [pod("x", node_name="a", requests={"cpu": "2", "memory": "4Gi"})]
    assert sd.decide(pod("p"), snapshot(nodes, busy)).node == "b"


def test_terminal_pods_free_their_resources_and_no_nodes_is_its_own_message() -> None:
    done = pod("done", node_name="a", requests={GPU: "8"})
    done["status"]["phase"] = "Succeeded"
    assert sd.decide(pod("p", requests={GPU: "8"}), snapshot([node("a")], [done])).node == "a"
    assert sd.decide(pod("p"), snapshot([], [])) == sd.Decision(None, sd.NO_NODES)


def test_assumed_pods_are_counted_until_the_informer_shows_them_bound() -> None:
    cache = sched_mod.AssumeCache()
    first, second = pod("first", requests={GPU: "8"}), pod("second", requests={GPU: "8"})
    cache.assume(first, "a")
    decision = sd.decide(second, snapshot([node("a")], cache.overlay([])))
    assert decision == sd.Decision(None, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    bound_first = pod("first", node_name="a", requests={GPU: "8"})
    assert len(cache.overlay([bound_first])) == 1, "the informer's copy replaces the assumed one"
    cache.observe(bound_first)
    assert len(cache) == 0
