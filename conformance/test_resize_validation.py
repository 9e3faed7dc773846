"""Resizing a subgrouped LWS: the subGroupSize rules hold on update too (docs/lws-contract.md section 5.1).

Size is mutable (5.1: "updating `size`" is accepted, v0.7.0+) and subGroupSize is not (V20), so a resize is where
V15-V17 can break on an existing object: "the validating webhook re-runs every create rule on UPDATE" (section 5).
Upstream's webhook does so through generalValidate -> validateUpdateSubGroupPolicy on every create and update
(sigs.k8s.io/lws@v0.9.0 pkg/webhooks/leaderworkerset_webhook.go:176-177, :238-257); its webhook integration tests
cover the rules on create and "size update succeeds" (contract 6.3), this covers the update that breaks them. A
refused resize changes nothing: the stored spec and generation stay as they were. The pods are parked (they need
not run: only admission is under test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from conformance.harness import LWSHarness, is_rejected
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature

Obj = dict[str, Any]


@dataclass(frozen=True)
class Resize:
    id: str
    size: int
    subgroup: Obj
    update: Obj
    rule: str


REFUSED = [
    Resize("V16-size-6-to-8-sgs-3", 6, {"subGroupSize": 3}, {"leaderWorkerTemplate": {"size": 8}},
           "V16: neither 8 nor 7 is divisible by subGroupSize 3"),
    Resize("V15-size-6-to-2-sgs-3", 6, {"subGroupSize": 3}, {"leaderWorkerTemplate": {"size": 2}},
           "V15: subGroupSize 3 larger than size 2"),
    Resize("V17-leader-excluded-size-5-to-6-sgs-2", 5, {"subGroupSize": 2, "subGroupPolicyType": "LeaderExcluded"},
           {"leaderWorkerTemplate": {"size": 6}}, "V17: LeaderExcluded needs size-1 = 5 divisible by 2"),
    Resize("V16-replicas-and-size-together", 6, {"subGroupSize": 3},
           {"replicas": 3, "leaderWorkerTemplate": {"size": 8}},
           "V16 on size 8; the replicas change in the same update must not be applied either"),
]
ACCEPTED = [
    Resize("size-6-to-7-sgs-3", 6, {"subGroupSize": 3}, {"leaderWorkerTemplate": {"size": 7}},
           "size - 1 = 6 is divisible by 3 (V16's other branch)"),
    Resize("leader-excluded-size-5-to-7-sgs-2", 5, {"subGroupSize": 2, "subGroupPolicyType": "LeaderExcluded"},
           {"leaderWorkerTemplate": {"size": 7}}, "size - 1 = 6 is divisible by 2"),
]


def _create(lws: LWSHarness, name: str, case: Resize) -> Obj:
    return lws.create(workloads.parked(workloads.probe_lws(name, replicas=1, size=case.size, subgroup=case.subgroup)))


def _sizes(obj: Obj) -> tuple[int, int, int]:
    return (obj["spec"]["replicas"], obj["spec"]["leaderWorkerTemplate"]["size"], obj["metadata"]["generation"])


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
@conformance(short_name="ResizeBreakingSubGroupDivisibilityIsRejected",
             features={Feature.VALIDATION, Feature.SUBGROUPS},
             description="An update of size (alone or with replicas) that breaks V15-V17 for the LWS's subGroupSize is "
                         "refused with a 4xx and leaves the stored spec and generation unchanged (5, 5.1).")
def test_resize_breaking_subgroup_divisibility_is_rejected(lws: LWSHarness, case: Resize) -> None:
    created = _create(lws, "rsz", case)
    before = _sizes(created)
    try:
        lws.patch("rsz", {"spec": case.update})
    except client.ApiException as exc:
        assert is_rejected(exc), (f"resize {case.update} refused, but with HTTP {exc.status} (want 400/403/422): "
                                  f"{exc.body}")
    else:
        raise AssertionError(f"resize {case.update} of an LWS with size {case.size} and subGroupPolicy {case.subgroup} "
                             f"was accepted; the contract refuses it ({case.rule}): every create rule also holds on "
                             "update (5)")
    after = _sizes(lws.get("rsz"))
    assert after == before, (f"(replicas, size, generation) is {after} after the refused resize, want {before} "
                             "unchanged: a refused update stores nothing")


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
@conformance(short_name="ResizeKeepingSubGroupDivisibilityIsAccepted",
             features={Feature.VALIDATION, Feature.SUBGROUPS},
             description="A size update that keeps size or size-1 divisible by subGroupSize is accepted and stored "
                         "(5.1: updating size is accepted; V16/V17 hold).")
def test_resize_keeping_subgroup_divisibility_is_accepted(lws: LWSHarness, case: Resize) -> None:
    created = _create(lws, "rsz", case)
    replicas, _, generation = _sizes(created)
    try:
        stored = lws.patch("rsz", {"spec": case.update})
    except client.ApiException as exc:
        raise AssertionError(f"resize {case.update} refused with HTTP {exc.status}: {exc.body}; the contract accepts "
                             f"it ({case.rule})") from None
    want = case.update["leaderWorkerTemplate"]["size"]
    assert _sizes(stored)[:2] == (replicas, want), \
        f"stored (replicas, size) {_sizes(stored)[:2]}, want {(replicas, want)}"
    assert _sizes(stored)[2] > generation, \
        f"generation {_sizes(stored)[2]} did not move from {generation} on a spec change"
