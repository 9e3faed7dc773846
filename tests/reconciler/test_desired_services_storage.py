"""Headless Services (2.4, 4.9), PVC templates (4.10), leader exclusive placement (4.7), leader updates.

The last tests run the sim API server's own validators (pure functions) over every desired object, so a
desired object Kubernetes would refuse is caught here rather than at the first reconcile.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lwsconf.reconciler import desired, labels, revision
from lwsconf.sim.apiserver.admission.validation import registry as validation
from tests.reconciler import factories as f

Obj = dict[str, Any]
N = "test-sample"
UNIQUE = {"subdomainPolicy": "UniquePerReplica"}


def test_shared_policy_has_one_headless_service_owned_by_the_lws() -> None:
    (svc,) = desired.lws_services(f.lws())
    assert svc["metadata"]["name"] == N and svc["metadata"]["labels"] == {labels.NAME: N}
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "LeaderWorkerSet"
    assert svc["spec"] == {"clusterIP": "None", "selector": {labels.NAME: N}, "publishNotReadyAddresses": True}
    assert desired.group_service(f.lws(), f.leader_pod(f.lws(), 0)) is None


def test_unique_per_replica_has_one_service_per_leader_owned_by_it() -> None:
    lws = f.with_spec(f.lws(), networkConfig=UNIQUE)
    assert desired.lws_services(lws) == []
    svc = desired.group_service(lws, f.leader_pod(lws, 3))
    assert svc is not None and svc["metadata"]["name"] == "test-sample-3"
    assert svc["spec"]["selector"] == {labels.NAME: N, labels.GROUP_INDEX: "3"}
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "test-sample-3",
                                                   "uid": "uid-test-sample-3", "controller": True,
                                                   "blockOwnerDeletion": True}]


PVC = {"metadata": {"name": "data", "labels": {"drop": "me"}, "annotations": {"drop": "me"}},
       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "volumeMode": "Filesystem",
                "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}},
                "selector": {"matchLabels": {"x": "y"}}, "dataSource": {"kind": "PersistentVolumeClaim", "name": "s"}}}
KEPT_PVC = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": f.NS},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "volumeMode": "Filesystem",
                     "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}}}}
RETENTION = {"whenDeleted": "Delete", "whenScaled": "Retain"}


def test_pvc_templates_keep_only_the_documented_fields_on_leader_and_workers() -> None:
    lws = f.lws(volumeClaimTemplates=[PVC], persistentVolumeClaimRetentionPolicy=RETENTION)
    leader = desired.leader_statefulset(lws, revision_key="k", partition=0, replicas=2)
    rev = revision.new_revision(lws, [])
    worker = desired.worker_statefulset(lws, f.leader_pod(lws, 0, key=revision.key_of(rev)), rev)
    for sts in (leader, worker):
        assert sts["spec"]["volumeClaimTemplates"] == [KEPT_PVC]
        assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == RETENTION


def test_worker_pvc_templates_come_from_the_leaders_revision() -> None:
    old = f.lws(volumeClaimTemplates=[PVC])
    rev = revision.new_revision(old, [])
    worker = desired.worker_statefulset(f.lws(), f.leader_pod(old, 0, key=revision.key_of(rev)), rev)
    assert worker["spec"]["volumeClaimTemplates"] == [KEPT_PVC]
    assert "volumeClaimTemplates" not in desired.leader_statefulset(f.lws(), revision_key="k", partition=0,
                                                                     replicas=1)["spec"]


AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "host"}]},
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": "host"}]}}


def _leader_affinity(annotations: dict[str, str], affinity: Obj | None = None) -> Obj | None:
    spec: Obj = {"containers": [f.container()]}
    if affinity is not None:
        spec["affinity"] = copy.deepcopy(affinity)
    lws = f.lws(annotations=annotations, worker={"spec": spec})
    template = desired.leader_statefulset(lws, revision_key="k", partition=0, replicas=2)["spec"]["template"]
    return template["spec"].get("affinity")


def test_exclusive_leaders_repel_other_leaders_in_the_topology_domain() -> None:
    affinity = _leader_affinity({labels.EXCLUSIVE_TOPOLOGY: "zone"})
    assert affinity == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": labels.WORKER_INDEX, "operator": "In", "values": ["0"]}]},
         "topologyKey": "zone"}]}}
    assert _leader_affinity({}) is None


def test_exclusive_placement_keeps_user_terms_and_appends_ours() -> None:
    affinity = _leader_affinity({labels.EXCLUSIVE_TOPOLOGY: "zone"}, AFFINITY)
    assert affinity is not None
    assert affinity["podAffinity"] == AFFINITY["podAffinity"]
    terms = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert [t["topologyKey"] for t in terms] == ["host", "zone"]


def test_exclusive_placement_is_not_applied_twice() -> None:
    affinity = _leader_affinity({labels.EXCLUSIVE_TOPOLOGY: "host"}, AFFINITY)
    assert affinity == AFFINITY


def _served(obj: Obj) -> Obj:
    """`obj` as an API server returns it: extra defaulted fields, canonical quantities, metadata added."""
    live = copy.deepcopy(obj)
    live["metadata"].update(uid="u", resourceVersion="7", generation=3)
    live["metadata"]["labels"]["added-by-someone"] = "x"
    live["spec"]["revisionHistoryLimit"] = 10
    container = live["spec"]["template"]["spec"]["containers"][0]
    container.update(terminationMessagePath="/dev/termination-log", imagePullPolicy="IfNotPresent")
    container["resources"]["requests"]["cpu"] = "1"
    live["status"] = {"replicas": 2}
    return live


def test_a_served_leader_statefulset_does_not_differ_from_the_desired_one() -> None:
    lws = f.lws(worker={"spec": {"containers": [f.container(resources={"requests": {"cpu": "1000m"}})]}})
    want = desired.leader_statefulset(lws, revision_key="k", partition=0, replicas=2)
    live = _served(want)
    assert not desired.differs(want, live)
    changed = desired.leader_statefulset(lws, revision_key="k", partition=1, replicas=2)
    assert desired.differs(changed, live)


def test_merged_for_update_keeps_foreign_metadata_and_replaces_our_spec_fields() -> None:
    lws = f.lws(worker={"spec": {"containers": [f.container(resources={"requests": {"cpu": "1"}})]}})
    live = _served(desired.leader_statefulset(lws, revision_key="k", partition=0, replicas=2))
    live["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"})
    want = desired.leader_statefulset(lws, revision_key="k2", partition=2, replicas=3)
    merged = desired.merged_for_update(live, want)
    assert merged["metadata"]["labels"]["added-by-someone"] == "x"
    assert merged["metadata"]["labels"][labels.TEMPLATE_REVISION_HASH] == "k2"
    assert [r["kind"] for r in merged["metadata"]["ownerReferences"]] == ["LeaderWorkerSet", "ConfigMap"]
    assert merged["metadata"]["resourceVersion"] == "7", "PUT keeps the optimistic-concurrency precondition"
    assert merged["spec"]["template"] == want["spec"]["template"] and merged["spec"]["replicas"] == 3
    assert not desired.differs(want, merged)


# --- every desired object is valid for the API server --------------------------------------------------


def _full_lws() -> Obj:
    return f.lws(size=5, subGroupPolicy={"subGroupSize": 2}, volumeClaimTemplates=[PVC],
                 persistentVolumeClaimRetentionPolicy=RETENTION,
                 leader={"spec": {"containers": [f.container("leader")]}},
                 annotations={labels.EXCLUSIVE_TOPOLOGY: "zone"},
                 worker={"spec": {"containers": [f.container(env=[{"name": "X", "value": "$(LWS_LEADER_ADDRESS)"}])],
                                  "initContainers": [f.container("init")]}})


@pytest.mark.parametrize("network", [None, UNIQUE], ids=["shared", "unique"])
def test_desired_objects_pass_api_server_validation(network: Obj | None) -> None:
    lws = _full_lws() if network is None else f.with_spec(_full_lws(), networkConfig=network)
    rev = revision.new_revision(lws, [])
    pod = f.leader_pod(lws, 0, key=revision.key_of(rev))
    objects = [(("apps", "statefulsets"), desired.leader_statefulset(lws, revision_key=revision.key_of(rev),
                                                                     partition=0, replicas=2)),
               (("apps", "statefulsets"), desired.worker_statefulset(lws, pod, rev, topology_value="z1")),
               (("apps", "controllerrevisions"), rev)]
    objects += [(("", "services"), s) for s in [*desired.lws_services(lws), desired.group_service(lws, pod)] if s]
    for key, obj in objects:
        assert validation.validate_builtin(key, obj, None) == [], (key, obj["metadata"]["name"])
