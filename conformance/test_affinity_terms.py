"""The pod affinity terms of exclusive placement (docs/lws-contract.md section 4.7), as pods carry them.

Upstream's pod webhook integration tests (contract 6.4: "Leader pod with exclusive placement enabled have pod
affinity/anti-affinity", "... exclusive placement and subgroup exclusive placement ...", "Worker pod with
exclusive ... and subgroup exclusive ...", "... will not override other affinity terms") pin down which terms
each pod gets. Two levels are checked here:

* LWSExclusivePlacement (every implementation that places groups exclusively): the user's own affinity terms
  survive on every pod, leaders carry a required anti-affinity term on the topology key, and workers carry no
  group-level pod (anti-)affinity term of the implementation (they follow their leader by nodeSelector, T22).
* LWSExclusivePlacementAffinityTerms (optional): the exact terms of 4.7, keyed on each pod's own group-key, and
  for `leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology` on its subgroup-key: the leader carries two
  pairs, a worker only its subgroup's pair (upstream pkg/webhooks/pod_webhook.go SetExclusiveAffinities, v0.9.0
  :122-155 and :185-227). Implementations that keep groups apart by other terms do not claim it.

Only the pod specs are read, so the test needs the pods to exist, not to run: with subgroup-exclusive-topology on
`kubernetes.io/os` (one domain for every node), the second subgroup can never be placed and stays Pending.
"""

from __future__ import annotations

from typing import Any

from conformance.harness import GROUP_KEY, LWSHarness, P, labels
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature

Obj = dict[str, Any]
EXCLUSIVE = P + "exclusive-topology"
SUBGROUP_EXCLUSIVE = P + "subgroup-exclusive-topology"
SUBGROUP_KEY = P + "subgroup-key"
HOSTNAME = "kubernetes.io/hostname"
ONE_DOMAIN = "kubernetes.io/os"
"""A node label every node carries with one value: a topology with one domain (the sim's nodes and kubelets have it)."""
USER_ANTI = {"labelSelector": {"matchLabels": {"lwsconf.dev/avoid": "nothing"}},
             "topologyKey": "topology.kubernetes.io/zone"}
"""A user's required anti-affinity term that selects no pod, on another key than the exclusive one (an implementation
may skip its own term when the user's already uses the exclusive key, 4.7)."""
USER_PREFERRED = {"weight": 1, "podAffinityTerm": {"labelSelector": {"matchLabels": {"lwsconf.dev/near": "nothing"}},
                                                   "topologyKey": HOSTNAME}}


def _terms(pod: Obj, kind: str, which: str = "requiredDuringSchedulingIgnoredDuringExecution") -> list[Obj]:
    terms: list[Obj] = (((pod["spec"].get("affinity") or {}).get(kind) or {}).get(which) or [])
    return terms


def _with_user_terms(template: Obj) -> None:
    template["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [dict(USER_ANTI)]},
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [dict(USER_PREFERRED)]},
    }


def _pods_must_exist(lws: LWSHarness, name: str, want: list[str]) -> dict[str, Obj]:
    """Wait (pods_running) until every pod of `want` exists (scheduled or not); LWS `name`'s pods."""
    def pods_exist() -> dict[str, Obj]:
        pods = lws.pods(name)
        missing = [p for p in want if p not in pods]
        assert not missing, f"pods {missing} do not exist yet (have {sorted(pods)})"
        return pods
    pods: dict[str, Obj] = lws.wait(pods_exist, what=f"pods {want} to exist", within="pods_running", name=name)
    return pods


@conformance(short_name="ExclusivePlacementKeepsUserAffinity", features={Feature.EXCLUSIVE_PLACEMENT},
             description="With exclusive placement the user's own affinity terms stay on every pod, the leader gains a "
                         "required anti-affinity term on the topology key, and workers gain no pod affinity term "
                         "(4.7; upstream 'will not override other affinity terms').")
def test_exclusive_placement_keeps_user_affinity(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("aff", replicas=1, size=2, annotations={EXCLUSIVE: HOSTNAME})
    lws.create(workloads.edit_templates(manifest, _with_user_terms))
    pods = _pods_must_exist(lws, "aff", ["aff-0", "aff-0-1"])  # the worker exists once its leader is bound (4.7)
    leader, worker = pods["aff-0"], pods["aff-0-1"]
    anti = _terms(leader, "podAntiAffinity")
    assert USER_ANTI in anti, f"leader aff-0 lost the user's anti-affinity term {USER_ANTI}: its terms are {anti}"
    assert any(t.get("topologyKey") == HOSTNAME for t in anti), (
        f"leader aff-0 has no required anti-affinity term on {HOSTNAME}, the exclusive topology (4.7): {anti}")
    for name, pod in (("aff-0", leader), ("aff-0-1", worker)):
        preferred = _terms(pod, "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
        assert preferred == [USER_PREFERRED], f"{name} preferred pod affinity {preferred}, want only the user's"
    worker_anti, worker_aff = _terms(worker, "podAntiAffinity"), _terms(worker, "podAffinity")
    assert worker_anti == [USER_ANTI], (f"worker aff-0-1 required anti-affinity {worker_anti}, want only the user's "
                                        "term: workers follow their leader by nodeSelector and get no group terms "
                                        "(4.7)")
    assert not worker_aff, f"worker aff-0-1 required pod affinity {worker_aff}, want none (4.7)"
    lws.ready("aff", replicas=1, size=2)


@conformance(short_name="NoExclusivePlacementAddsNoAffinity", features={Feature.EXCLUSIVE_PLACEMENT},
             description="Without the exclusive-topology annotation no pod (anti-)affinity term is added: leader and "
                         "workers carry exactly the user's own terms (4.7; upstream pod webhook test 'Leader pod with "
                         "exclusive placement disabled will not have pod affinity/anti-affinity').")
def test_no_exclusive_placement_adds_no_affinity(lws: LWSHarness) -> None:
    # Upstream adds its terms only when the pod carries the (subgroup-)exclusive-topology annotation (v0.9.0
    # pkg/webhooks/pod_webhook.go:122-124, :132, :153); the user's terms are there to tell kept from added.
    manifest = workloads.probe_lws("noex", replicas=2, size=2)
    lws.create(workloads.edit_templates(manifest, _with_user_terms))
    pods = _pods_must_exist(lws, "noex", ["noex-0", "noex-1", "noex-0-1", "noex-1-1"])
    for name, pod in sorted(pods.items()):
        seen = {"required podAntiAffinity": _terms(pod, "podAntiAffinity"),
                "required podAffinity": _terms(pod, "podAffinity"),
                "preferred podAffinity": _terms(pod, "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution"),
                "preferred podAntiAffinity": _terms(pod, "podAntiAffinity",
                                                    "preferredDuringSchedulingIgnoredDuringExecution")}
        want = {"required podAntiAffinity": [USER_ANTI], "required podAffinity": [],
                "preferred podAffinity": [USER_PREFERRED], "preferred podAntiAffinity": []}
        assert seen == want, (f"pod {name} of an LWS without {EXCLUSIVE} has affinity terms {seen}, want only the "
                              f"user's {want}: no exclusive-placement term without the annotation (4.7)")


def _pair(label: str, value: str, key: str) -> tuple[Obj, Obj]:
    """4.7's two terms for one group (label = group-key) or subgroup (label = subgroup-key) on topology `key`."""
    return ({"labelSelector": {"matchExpressions": [{"key": label, "operator": "In", "values": [value]}]},
             "topologyKey": key},
            {"labelSelector": {"matchExpressions": [{"key": label, "operator": "Exists"},
                                                    {"key": label, "operator": "NotIn", "values": [value]}]},
             "topologyKey": key})


def _shape(term: Obj) -> Obj:
    """A term without empty fields (a server may add empty defaults such as namespaces: []); any other field stays."""
    out = {k: v for k, v in term.items() if v not in (None, [], {})}
    selector = {k: v for k, v in (term.get("labelSelector") or {}).items() if v not in (None, [], {})}
    selector["matchExpressions"] = [{k: v for k, v in e.items() if v not in (None, [])}
                                    for e in selector.get("matchExpressions") or []]
    out["labelSelector"] = selector
    return out


def _assert_pairs(name: str, pod: Obj, pairs: list[tuple[Obj, Obj]]) -> None:
    affinity = [_shape(t) for t in _terms(pod, "podAffinity")]
    anti = [_shape(t) for t in _terms(pod, "podAntiAffinity")]
    assert affinity == [p[0] for p in pairs], (
        f"pod {name} required podAffinity terms {affinity}, want exactly {[p[0] for p in pairs]} (4.7)")
    assert anti == [p[1] for p in pairs], (
        f"pod {name} required podAntiAffinity terms {anti}, want exactly {[p[1] for p in pairs]} (4.7)")


@conformance(short_name="ExclusivePlacementAffinityTermShapes",
             features={Feature.EXCLUSIVE_PLACEMENT, Feature.EXCLUSIVE_PLACEMENT_TERMS},
             description="A leader gets exactly 4.7's pair of terms keyed on its own group-key: podAffinity In [key] "
                         "and podAntiAffinity Exists + NotIn [key] on the topology key; its workers get none "
                         "(upstream pod webhook test 'Leader pod with exclusive placement enabled ...').")
def test_exclusive_placement_affinity_term_shapes(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("shape", replicas=2, size=2, annotations={EXCLUSIVE: HOSTNAME}))
    pods = _pods_must_exist(lws, "shape", ["shape-0", "shape-1", "shape-0-1"])
    for leader in ("shape-0", "shape-1"):
        key = labels(pods[leader]).get(GROUP_KEY, "")
        assert key, f"leader {leader} has no {GROUP_KEY} label (3.1)"
        _assert_pairs(leader, pods[leader], [_pair(GROUP_KEY, key, HOSTNAME)])
    _assert_pairs("shape-0-1", pods["shape-0-1"], [])


@conformance(short_name="SubGroupExclusivePlacementAffinityTermShapes",
             features={Feature.EXCLUSIVE_PLACEMENT, Feature.EXCLUSIVE_PLACEMENT_TERMS, Feature.SUBGROUPS},
             description="With subgroup-exclusive-topology the leader carries its group's pair and its subgroup's pair "
                         "(keyed on subgroup-key), each worker only its own subgroup's pair (4.7; upstream pod webhook "
                         "tests '... exclusive placement and subgroup exclusive placement ...').")
def test_subgroup_exclusive_placement_affinity_term_shapes(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("sgx", replicas=1, size=4, subgroup={"subGroupSize": 2},
                                   annotations={EXCLUSIVE: HOSTNAME, SUBGROUP_EXCLUSIVE: ONE_DOMAIN})
    lws.create(manifest)
    names = ["sgx-0", "sgx-0-1", "sgx-0-2", "sgx-0-3"]
    pods = _pods_must_exist(lws, "sgx", names)

    def key_of(pod: str, label: str) -> str:
        value = labels(pods[pod]).get(label, "")
        assert value, f"pod {pod} has no {label} label (3.1)"
        return value
    _assert_pairs("sgx-0", pods["sgx-0"], [_pair(GROUP_KEY, key_of("sgx-0", GROUP_KEY), HOSTNAME),
                                           _pair(SUBGROUP_KEY, key_of("sgx-0", SUBGROUP_KEY), ONE_DOMAIN)])
    for worker in names[1:]:
        _assert_pairs(worker, pods[worker], [_pair(SUBGROUP_KEY, key_of(worker, SUBGROUP_KEY), ONE_DOMAIN)])
