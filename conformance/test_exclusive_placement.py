"""Exclusive topology placement (docs/lws-contract.md section 4.7): one group per topology domain.

The topology key is chosen from the cluster at run time: the first of zone, region, hostname whose
schedulable nodes carry at least two distinct values (the sim's GPU nodes span two zones). The taints
of those nodes are tolerated, so the check is about placement, not about which nodes admit CPU pods.
With D domains: D groups land in D different domains, every worker in its leader's domain (a
nodeSelector, T22), and group D stays Pending with no worker StatefulSet. Skipped, with the reason,
only when the cluster has fewer than two domains.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from conformance.harness import LWSHarness
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import lws as lws_waits
from lwsconf.waits import observe

CANDIDATE_KEYS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region", "kubernetes.io/hostname")
EXCLUSIVE = lwsapi.EXCLUSIVE_TOPOLOGY
MAX_DOMAINS = 4
"""More domains than this would mean too many groups for a conformance test; such clusters use a smaller key."""


def _domains(lws: LWSHarness) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    nodes = [n for n in observe.raw(lws.core.list_node(_preload_content=False))["items"]
             if not (n.get("spec") or {}).get("unschedulable")]
    for key in CANDIDATE_KEYS:
        by_value: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for node in nodes:
            value = (node["metadata"].get("labels") or {}).get(key)
            if value:
                by_value[value].append(node)
        if 2 <= len(by_value) <= MAX_DOMAINS:
            return key, dict(by_value)
    pytest.skip(f"exclusive placement needs 2..{MAX_DOMAINS} topology domains; no node label of {CANDIDATE_KEYS} "
                f"gives that on this cluster's {len(nodes)} schedulable nodes")


def _tolerations(domains: dict[str, list[dict[str, Any]]]) -> list[dict[str, str]]:
    taints = {(t["key"], t["effect"]) for nodes in domains.values() for n in nodes
              for t in (n.get("spec") or {}).get("taints") or []}
    return [{"key": k, "operator": "Exists", "effect": e} for k, e in sorted(taints)]


@conformance(short_name="ExclusivePlacementOneGroupPerDomain", slow=True, features={Feature.EXCLUSIVE_PLACEMENT},
             description="Each group gets its own topology domain, workers follow their leader, and a group beyond "
                         "the domains stays Pending (4.7).")
def test_exclusive_placement_one_group_per_domain(lws: LWSHarness) -> None:
    key, domains = _domains(lws)
    node_domain = {n["metadata"]["name"]: value for value, nodes in domains.items() for n in nodes}
    count = len(domains)
    tolerations = _tolerations(domains)

    def tolerate(template: dict[str, Any]) -> None:
        template["spec"]["tolerations"] = tolerations
    manifest = workloads.probe_lws("excl", replicas=count + 1, size=2, annotations={EXCLUSIVE: key})
    lws.create(workloads.edit_templates(manifest, tolerate))

    def placed() -> dict[int, str]:
        # Which `count` of the count+1 groups win the domains is not promised: the leader StatefulSet creates
        # its pods in parallel (2.2) and the scheduler takes them in any order (a real kube-scheduler does).
        groups = lws_waits.groups(lws.api, lws.namespace, "excl")
        out = {}
        for i, group in sorted(groups.items()):
            if group.ready and len(group.pods) == 2:
                seen = {node_domain.get(p["spec"].get("nodeName", ""), "?") for p in group.pods.values()}
                assert len(seen) == 1, f"group {i} spans domains {seen}"
                out[i] = seen.pop()
        assert len(out) >= count, f"{len(out)} of {count + 1} groups ready ({sorted(out)}), want {count}"
        return out
    placement = lws.wait(placed, what=f"{count} groups ready, one per {key} domain", name="excl")
    assert len(placement) == count, f"{len(placement)} groups ready, want {count}: {placement}"
    assert sorted(placement.values()) == sorted(domains), f"groups per domain: {placement}"
    first = min(placement)
    worker_sts = lws.statefulsets()[f"excl-{first}"]["spec"]["template"]["spec"]
    assert (worker_sts.get("nodeSelector") or {}).get(key) == placement[first], f"worker nodeSelector {worker_sts}"
    unplaced = next(i for i in range(count + 1) if i not in placement)

    def extra_group_pending() -> None:
        leader = lws.pods("excl").get(f"excl-{unplaced}")
        assert leader is not None, f"leader excl-{unplaced} does not exist"
        assert not leader["spec"].get("nodeName"), f"excl-{unplaced} was scheduled to {leader['spec'].get('nodeName')}"
        assert f"excl-{unplaced}" not in lws.statefulsets(), "a worker StatefulSet exists for the unscheduled leader"
    lws.hold(extra_group_pending, what=f"group {unplaced} stays Pending: every {key} domain is taken", name="excl")


@conformance(short_name="ExclusivePlacementAnnotationsPropagate", features={Feature.EXCLUSIVE_PLACEMENT},
             description="The exclusive-topology annotation is copied to every pod; leaders repel other groups on "
                         "the key, workers follow by nodeSelector (3.2, 4.7).")
def test_exclusive_placement_annotations_propagate(lws: LWSHarness) -> None:
    key, domains = _domains(lws)
    tolerations = _tolerations(domains)

    def tolerate(template: dict[str, Any]) -> None:
        template["spec"]["tolerations"] = tolerations
    manifest = workloads.probe_lws("exann", replicas=1, size=2, annotations={EXCLUSIVE: key})
    lws.create(workloads.edit_templates(manifest, tolerate))
    lws.ready("exann", replicas=1, size=2)
    for name, pod in lws.pods("exann").items():
        assert (pod["metadata"].get("annotations") or {}).get(EXCLUSIVE) == key, f"{name} lacks {EXCLUSIVE}"
    # Upstream adds an own-group podAffinity and an other-groups podAntiAffinity term (4.7); how groups are kept
    # apart is the implementation's choice, but a required anti-affinity term on the key is common to all of them.
    leader = lws.pod("exann-0")
    anti = ((leader["spec"].get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    assert key in [t.get("topologyKey") for t in anti], f"leader anti-affinity terms {anti}"
    worker = lws.pod("exann-0-1")
    leader_node = observe.raw(lws.core.read_node(leader["spec"]["nodeName"], _preload_content=False))
    want = (leader_node["metadata"].get("labels") or {}).get(key)
    assert want is not None, f"leader exann-0 runs on node {leader['spec']['nodeName']} without the {key} label"
    assert (worker["spec"].get("nodeSelector") or {}).get(key) == want, \
        f"worker nodeSelector {worker['spec'].get('nodeSelector')}, want {key}: {want!r} (the leader node's, 4.7)"
