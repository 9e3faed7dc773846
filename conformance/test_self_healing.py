"""What an implementation repairs when a user removes what it made (docs/lws-contract.md §2.1, 2.7, 4.5).

Two cases upstream's controller integration tests cover (contract 6.2) and the rest of the suite does not:

* "leader statefulset deleted will be recreated": the leader StatefulSet `N` is re-applied on every reconcile
  (2.1: "server-side apply ... on every reconcile"), so deleting it brings back a new one, and with it the
  groups: the garbage collector removes the old leader pods (their owner is gone, 2.7) and with them their
  worker StatefulSets; the new StatefulSet recreates the leaders, and the leaders get new worker StatefulSets.
* "Test default progressing state": a status write that clears `status.conditions` is repaired (4.5:
  "Clearing `status.conditions` by hand is repaired"): the conditions that hold are written again.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from conformance.harness import LWSHarness, controller_of
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import lws as lws_waits
from lwsconf.waits import observe

Obj = dict[str, Any]


@conformance(short_name="DeletedLeaderStatefulSetIsRecreated", features={Feature.OBJECT_MODEL},
             description="A deleted leader StatefulSet comes back owned by the LWS with R replicas, and every group is "
                         "recreated under it and ready again (2.1, 2.7; upstream 'leader statefulset deleted will be "
                         "recreated').")
def test_deleted_leader_statefulset_is_recreated(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("lsts", replicas=2, size=2))
    lws.ready("lsts", replicas=2, size=2)
    lws_uid = lws.get("lsts")["metadata"]["uid"]
    old = lws.statefulsets()["lsts"]["metadata"]["uid"]
    # The API's default propagation for apps/v1 (background), as `kubectl delete statefulset` does: the garbage
    # collector then removes the old leader pods, and the worker StatefulSets they own (2.7).
    lws.apps.delete_namespaced_stateful_set("lsts", lws.namespace)

    def recreated() -> Obj:
        sts = lws.statefulsets().get("lsts")
        assert sts is not None, "no leader StatefulSet lsts yet"
        assert sts["metadata"]["uid"] != old, "leader StatefulSet lsts is still the deleted one (same uid)"
        owner = controller_of(sts) or {}
        assert (owner.get("kind"), owner.get("name"), owner.get("uid")) == ("LeaderWorkerSet", "lsts", lws_uid), (
            f"new leader StatefulSet lsts is controlled by {owner}, want the LeaderWorkerSet lsts (2.2, 2.7)")
        replicas = sts["spec"].get("replicas")
        assert replicas == 2, f"new leader StatefulSet lsts has spec.replicas {replicas}, want 2 (R, 2.2)"
        return sts
    new = lws.wait(recreated, what="a new leader StatefulSet lsts owned by the LWS", within="group_recreated",
                   name="lsts")

    def groups_under_new_set() -> None:
        pods = lws.pods("lsts")
        for i in range(2):
            leader = pods.get(f"lsts-{i}")
            assert leader is not None, f"leader pod lsts-{i} does not exist (yet)"
            ref = (controller_of(leader) or {}).get("uid")
            assert ref == new["metadata"]["uid"], (
                f"leader pod lsts-{i} is controlled by {ref}, not by the new leader StatefulSet "
                f"{new['metadata']['uid']}: the group was not recreated under it")
    lws.wait(groups_under_new_set, what="both leaders recreated by the new leader StatefulSet",
             within="group_recreated", name="lsts")
    lws.ready("lsts", replicas=2, size=2)
    pods, sets = lws.pods("lsts"), lws.statefulsets()
    for i in range(2):
        worker_set = sets.get(f"lsts-{i}")
        assert worker_set is not None, f"worker StatefulSet lsts-{i} missing after the groups came back"
        owner = (controller_of(worker_set) or {}).get("uid")
        assert owner == pods[f"lsts-{i}"]["metadata"]["uid"], (
            f"worker StatefulSet lsts-{i} is controlled by {owner}, want its current leader pod "
            f"{pods[f'lsts-{i}']['metadata']['uid']} (2.3, 2.7)")


@pytest.mark.parametrize(("ready", "want", "not_true"), [
    (True, "Available", ("Progressing", "UpdateInProgress")),
    (False, "Progressing", ("Available", "UpdateInProgress")),
], ids=["ready-Available", "unready-Progressing"])
@conformance(short_name="ClearedConditionsAreRestored", features={Feature.STATUS_CONDITIONS},
             description="A status write clearing status.conditions is repaired: the condition that holds (Available "
                         "when every group is ready, Progressing while a leader is unready) is written back for the "
                         "current generation (4.5; upstream 'Test default progressing state').")
def test_cleared_conditions_are_restored(lws: LWSHarness, ready: bool, want: str, not_true: tuple[str, ...]) -> None:
    manifest = workloads.probe_lws("clr", replicas=1, size=2)
    lws.create(manifest if ready else workloads.start_unready(manifest))
    if ready:
        lws.ready("clr", replicas=1, size=2)
    else:
        lws.probe_json("clr-0")  # running, held unready by the probe

    def holds() -> Obj:
        lws_obj = lws.get("clr")
        status, generation = lws_obj.get("status") or {}, lws_obj["metadata"].get("generation")
        conds = lws_waits.conditions(lws_obj)
        assert conds.get(want) == "True", f"conditions {conds}, want {want} True"
        assert all(conds.get(c) != "True" for c in not_true), f"conditions {conds}, want {list(not_true)} not True"
        assert status.get("observedGeneration") == generation, (
            f"status.observedGeneration {status.get('observedGeneration')}, want {generation}")
        return lws_obj
    lws.wait(holds, what=f"{want} before the conditions are cleared", name="clr")
    try:
        cleared = observe.raw(lws.custom.patch_namespaced_custom_object_status(
            workloads.GROUP, workloads.VERSION, lws.namespace, workloads.PLURAL, "clr",
            {"status": {"conditions": []}}, _content_type="application/merge-patch+json", _preload_content=False))
    except client.ApiException as exc:
        raise AssertionError(f"a status write clearing the conditions was refused: HTTP {exc.status} {exc.body}; "
                             "status is the controller's, but the API lets a user write it (4.5)") from None
    left = lws_waits.conditions(cleared)
    assert not left, f"the status write answered conditions {left}, want none: the clear did not take effect"
    lws.wait(holds, what=f"{want} written back after the conditions were cleared", name="clr")
