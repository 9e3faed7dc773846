"""subGroupPolicy (docs/lws-contract.md section 4.8): subgroup labels, annotations and the index formula.

Subgroups are how multi-host accelerators split a group (e.g. one subgroup per host slice), so each
pod must carry the right `subgroup-index` and a `subgroup-key` (SHA-1 of "<leader pod>/<index>", no
namespace, T23). The table covers the layouts the contract works through, including the
divisibility rule that decides whether the leader joins subgroup 0 and LeaderExcluded with size 1
subgroups starting at 1. Pods are parked (never scheduled): these are admission-time labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.harness import LWSHarness, annotations_of, assert_fields, labels, sha1
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature

P = lwsapi.PREFIX
SUBGROUP_INDEX, SUBGROUP_KEY = P + "subgroup-index", P + "subgroup-key"
POLICY_TYPE = lwsapi.SUBGROUP_POLICY_TYPE


@dataclass(frozen=True)
class Layout:
    id: str
    size: int
    subgroup_size: int
    policy: str | None
    leader: int | None
    """The leader's subgroup index (None: no subgroup labels on the leader)."""
    workers: tuple[int, ...]
    """Subgroup index of workers 1..size-1."""


LAYOUTS = [
    Layout("size4-sgs2", 4, 2, None, 0, (0, 1, 1)),
    Layout("size5-sgs2-leader-joins-first", 5, 2, "LeaderWorker", 0, (0, 0, 1, 1)),
    Layout("size5-sgs2-leader-excluded", 5, 2, "LeaderExcluded", None, (0, 0, 1, 1)),
    Layout("size3-sgs1-leader-excluded", 3, 1, "LeaderExcluded", None, (1, 2)),
    Layout("size6-sgs3", 6, 3, "LeaderWorker", 0, (0, 0, 1, 1, 1)),
]


@conformance(short_name="SubGroupLabelsAndIndex", features={Feature.SUBGROUPS},
             description="Every pod gets subgroup-index by the section 4.8 formula and subgroup-key "
                         "sha1('<leader>/<index>').")
@pytest.mark.parametrize("layout", LAYOUTS, ids=[layout.id for layout in LAYOUTS])
def test_subgroup_labels_and_index(lws: LWSHarness, layout: Layout) -> None:
    name = f"sg-{layout.size}-{layout.subgroup_size}-{'x' if layout.policy == 'LeaderExcluded' else 'w'}"
    policy: dict[str, object] = {"subGroupSize": layout.subgroup_size}
    if layout.policy:
        policy["subGroupPolicyType"] = layout.policy
    lws.create(workloads.parked(workloads.probe_lws(name, replicas=1, size=layout.size, subgroup=policy)))
    want_type = layout.policy or "LeaderWorker"

    def labelled() -> None:
        pods = _all_pods(lws, name, layout.size)
        leader = pods[f"{name}-0"]
        if layout.leader is None:
            assert SUBGROUP_INDEX not in labels(leader), f"LeaderExcluded leader has {labels(leader)}"
        else:
            assert labels(leader).get(SUBGROUP_INDEX) == "0", f"{name}-0 labels {labels(leader)}"
            assert labels(leader).get(SUBGROUP_KEY) == sha1(f"{name}-0/0"), f"{name}-0 subgroup-key"
        for j, want in enumerate(layout.workers, start=1):
            worker = pods[f"{name}-0-{j}"]
            got = labels(worker).get(SUBGROUP_INDEX)
            assert got == str(want), f"{name}-0-{j}: subgroup-index {got}, want {want} ({layout.id})"
            assert labels(worker).get(SUBGROUP_KEY) == sha1(f"{name}-0/{want}"), f"{name}-0-{j} subgroup-key"
        for pod_name, pod in pods.items():
            notes = annotations_of(pod)
            assert notes.get(P + "subgroup-size") == str(layout.subgroup_size), f"{pod_name}: {notes}"
        # The pods' subgroup-policy-type annotation is SubGroupPolicyTypeOnEveryPod's (one test, so an
        # implementation without it on workers fails once, not once per layout).
    # Pods here never start; the contract only requires the labels before containers start (T1).
    lws.wait(labelled, what=f"subgroup labels on the {layout.size} pods of {name}", name=name)
    template = lws.statefulsets()[name]["spec"]["template"]["metadata"].get("annotations") or {}
    assert template.get(P + "subgroup-policy-type") == want_type and template.get(P + "subgroup-size") == str(
        layout.subgroup_size), f"leader StatefulSet template annotations {template}"


POLICY_TYPES = {"sgt-w": (4, None, "LeaderWorker"), "sgt-x": (5, "LeaderExcluded", "LeaderExcluded")}
"""LWS name: (size, subGroupPolicyType given, the type its pods carry); subGroupSize 2. No type given is the
schema's default, LeaderWorker (1.3)."""


@conformance(short_name="SubGroupPolicyTypeOnEveryPod", features={Feature.SUBGROUPS},
             description="With subGroupPolicy, the leader and every worker pod carry the subgroup-policy-type "
                         "annotation, from both StatefulSets' pod templates (2.2, 2.3, 3.2, 4.8).")
def test_subgroup_policy_type_on_every_pod(lws: LWSHarness) -> None:
    # Workers need it as much as leaders: what reads a pod's subgroup layout (the pod webhook, TPU
    # environment, schedulers) reads its own annotations.
    for name, (size, given, _) in POLICY_TYPES.items():
        policy: dict[str, object] = {"subGroupSize": 2}
        if given:
            policy["subGroupPolicyType"] = given
        lws.create(workloads.parked(workloads.probe_lws(name, replicas=1, size=size, subgroup=policy)))
    for name, (size, _, want) in POLICY_TYPES.items():
        _policy_type_must_be_everywhere(lws, name, size, want)


def _policy_type_must_be_everywhere(lws: LWSHarness, name: str, size: int, want: str) -> None:
    """Wait (lws_available) until both StatefulSets' pod templates and all `size` pods of LWS `name` carry
    subgroup-policy-type `want`."""
    def annotated() -> None:
        sets = lws.statefulsets()
        for sts_name in (name, f"{name}-0"):
            what = f"{'leader' if sts_name == name else 'worker'} StatefulSet {sts_name}"
            assert sts_name in sets, f"no {what} yet (StatefulSets {sorted(sets)})"
            assert_fields(f"{what} spec.template annotations", {POLICY_TYPE: want},
                          sets[sts_name]["spec"]["template"]["metadata"].get("annotations"),
                          why={POLICY_TYPE: "the LWS's subGroupPolicyType, 2.2, 2.3"})
        for pod_name, pod in sorted(_all_pods(lws, name, size).items()):
            assert_fields(f"pod {pod_name} annotations", {POLICY_TYPE: want}, annotations_of(pod),
                          why={POLICY_TYPE: "the LWS's subGroupPolicyType on every pod, 3.2, 4.8"})
    lws.wait(annotated, what=f"subgroup-policy-type {want} on both pod templates and the {size} pods of {name}",
             name=name)


def _all_pods(lws: LWSHarness, name: str, size: int) -> dict[str, dict[str, object]]:
    pods = lws.pods(name)
    assert len(pods) == size, f"{len(pods)}/{size} pods: {sorted(pods)}"
    return pods


@conformance(short_name="SubGroupsRunAndReady", features={Feature.SUBGROUPS},
             description="A subgrouped LWS runs like any other: all groups Ready and Available (4.8).")
def test_subgroups_run_and_ready(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("sgrun", replicas=1, size=4, subgroup={"subGroupSize": 2}))
    group = lws.ready("sgrun", replicas=1, size=4)[0]
    indices = {labels(p).get(SUBGROUP_INDEX) for p in group.pods.values()}
    assert indices == {"0", "1"}, f"subgroup indices {indices}"
