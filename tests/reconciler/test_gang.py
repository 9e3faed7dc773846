"""The reference's Volcano gang scheduling core (lwsconf/reconciler/gang.py; contract 4.13)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from lwsconf import lwsapi, workloads
from lwsconf.reconciler import gang, groups

Obj = dict[str, Any]


def _leader(name: str = "demo-1", *, rev: str = "abc123", uid: str = "u-1", deleting: bool = False) -> Obj:
    meta: Obj = {"name": name, "namespace": "ns", "uid": uid,
                 "labels": {lwsapi.NAME: "demo", lwsapi.WORKER_INDEX: "0", lwsapi.TEMPLATE_REVISION_HASH: rev},
                 "annotations": {lwsapi.SIZE: "3"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {}}


def _lws(**kw: Any) -> Obj:
    lws = workloads.probe_lws("demo", replicas=2, size=3, **kw)
    lws["metadata"]["namespace"] = "ns"
    lws["metadata"]["uid"] = "lws-uid"
    return lws


def test_podgroup_of_a_leader_created_group() -> None:
    pg = gang.pod_group(_lws(annotations={lwsapi.PODGROUP_QUEUE_NAME: "q", "volcano.sh/x": "1", "other/y": "2"}),
                        _leader())
    assert pg is not None
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1" and pg["kind"] == "PodGroup"
    assert pg["metadata"]["name"] == "demo-1-abc123"
    assert pg["metadata"]["labels"] == {lwsapi.NAME: "demo", lwsapi.GROUP_INDEX: "1",
                                        lwsapi.TEMPLATE_REVISION_HASH: "abc123"}
    assert pg["metadata"]["annotations"] == {"volcano.sh/x": "1"}
    assert pg["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "demo-1", "uid": "u-1",
                                                  "controller": True, "blockOwnerDeletion": True}]
    # the probe asks for 10m and 32Mi: three pods
    assert pg["spec"] == {"minMember": 3, "queue": "q", "minResources": {"cpu": "30m", "memory": str(3 * 32 * 2**20)}}


def test_leader_ready_podgroup_lets_the_leader_start_alone_but_needs_the_whole_group() -> None:
    pg = gang.pod_group(_lws(startup_policy="LeaderReady"), _leader())
    assert pg is not None
    assert pg["spec"]["minMember"] == 1
    assert pg["spec"]["minResources"]["cpu"] == "30m"
    assert "annotations" not in pg["metadata"] and "queue" not in pg["spec"]


def test_min_resources_use_the_worker_template_for_a_missing_leader_template() -> None:
    lws = _lws(separate_leader=False, resources={"requests": {"cpu": "1", "nvidia.com/gpu": 2}})
    assert gang.min_resources(lws) == {"cpu": "3", "nvidia.com/gpu": "6"}


def test_pod_requests_count_sidecars_init_containers_pod_level_and_overhead() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}],
            "initContainers": [
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                {"resources": {"requests": {"cpu": "500m", "memory": "100Mi"}}},
            ],
            "overhead": {"cpu": "10m"}}
    # containers + sidecar = 150m; the init container runs beside the sidecar: 550m; the peak wins, + overhead
    assert gang.pod_requests(spec) == {"cpu": Fraction(56, 100), "memory": Fraction(2**30)}
    assert gang.pod_requests({**spec, "resources": {"requests": {"memory": "4Gi", "ephemeral-storage": "1"}}})[
        "memory"] == 4 * 2**30


def test_format_quantity_is_exact() -> None:
    assert [gang.format_quantity(v) for v in (Fraction(3), Fraction(3, 100), Fraction(1, 3 * 10**6))] == \
        ["3", "30m", "333n"]


def test_annotation_patch_names_the_group_of_leaders_and_workers() -> None:
    assert gang.annotation_patch(_leader()) == {lwsapi.PODGROUP_GROUP_NAME: "demo-1-abc123"}
    worker = {"metadata": {"name": "demo-1-2", "labels": {lwsapi.NAME: "demo", lwsapi.GROUP_INDEX: "1",
                                                          lwsapi.WORKER_INDEX: "2",
                                                          lwsapi.TEMPLATE_REVISION_HASH: "abc123"},
                           "annotations": {lwsapi.PODGROUP_GROUP_NAME: "demo-1-abc123"}}}
    assert gang.annotation_patch(worker) == {}
    assert gang.annotation_patch({"metadata": {"name": "x", "labels": {}}}) == {}


def test_group_plan_has_the_podgroup_before_every_gate_but_not_for_a_deleting_leader() -> None:
    lws = _lws(startup_policy="LeaderReady")
    planned = groups.plan(lws, _leader(), revisions=[], node=None, gang_scheduling=True)
    assert planned.worker_statefulset is None and planned.wait  # LeaderReady gate: leader not ready
    assert planned.pod_group is not None and planned.pod_group["metadata"]["name"] == "demo-1-abc123"
    assert groups.plan(lws, _leader(), revisions=[], node=None).pod_group is None
    assert groups.plan(lws, _leader(deleting=True), revisions=[], node=None, gang_scheduling=True).pod_group is None


def test_owned_by_compares_the_leader_uid() -> None:
    pg = gang.pod_group(_lws(), _leader(uid="old"))
    assert pg is not None
    assert gang.owned_by(pg, _leader(uid="old")) and not gang.owned_by(pg, _leader(uid="new"))


def test_only_volcano_is_a_provider() -> None:
    assert gang.check_provider(None) is None and gang.check_provider("volcano") == "volcano"
    with pytest.raises(ValueError, match="unsupported gang-scheduling provider 'kueue'; supported: volcano"):
        gang.check_provider("kueue")
