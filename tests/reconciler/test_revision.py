"""ControllerRevision snapshot, key, semantic equality and lifecycle (contract 2.5, 4.4.1, traps T6, T18)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lwsconf.reconciler import labels, revision
from tests.reconciler import factories as f

Obj = dict[str, Any]

# Published 32-bit test vectors (FNV reference test suite): FNV-1 and FNV-1a differ for every non-empty input.
FNV1 = {b"": 0x811C9DC5, b"a": 0x050C5D7E, b"foobar": 0x31F0B262}
FNV1A = {b"a": 0xE40C292C, b"foobar": 0xBF9CF968}


@pytest.mark.parametrize("data", list(FNV1), ids=repr)
def test_fnv1_matches_published_vectors(data: bytes) -> None:
    assert revision.fnv1_32(data) == FNV1[data]


@pytest.mark.parametrize("data", list(FNV1A), ids=repr)
def test_fnv1_is_not_fnv1a(data: bytes) -> None:
    assert revision.fnv1_32(data) != FNV1A[data]


def test_safe_encode_maps_each_byte_mod_27_into_the_alphabet() -> None:
    assert revision.safe_encode("0123456789") == "456789bcdf"
    assert revision.safe_encode("a") == revision.ALPHABET[ord("a") % 27]


def test_key_is_the_safe_encoded_decimal_fnv1() -> None:
    assert revision.key_of_bytes(b"a") == revision.safe_encode(str(0x050C5D7E))
    key = revision.snapshot_key(f.lws())
    assert 1 <= len(key) <= 10 and set(key) <= set("456789bcdf")


def test_go_json_sorts_keys_compacts_and_escapes_html() -> None:
    assert revision.go_json({"b": 1, "a": {"d": "<&>", "c": [1, "é"]}}) == \
        '{"a":{"c":[1,"é"],"d":"\\u003c\\u0026\\u003e"},"b":1}'.encode()


def test_snapshot_holds_only_the_template_and_network_config_marked_replace() -> None:
    lws = f.with_spec(f.lws(), startupPolicy="LeaderReady", rolloutStrategy=f.rollout_config())
    data = revision.snapshot(lws)
    assert set(data) == {"spec"}
    assert set(data["spec"]) == {"leaderWorkerTemplate", "networkConfig"}
    assert data["spec"]["leaderWorkerTemplate"]["$patch"] == "replace"
    assert data["spec"]["networkConfig"] == {"subdomainPolicy": "Shared", "$patch": "replace"}
    assert "$patch" not in lws["spec"]["leaderWorkerTemplate"], "the input must not be modified"


def _key_after(edit: Any) -> str:
    lws = f.lws()
    edit(lws)
    return revision.snapshot_key(lws)


BASE_KEY = revision.snapshot_key(f.lws())
ROLLS = {
    "worker image": lambda o: o["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    .update(image="other:2"),
    "size": lambda o: o["spec"]["leaderWorkerTemplate"].update(size=3),
    "restartPolicy": lambda o: o["spec"]["leaderWorkerTemplate"].update(restartPolicy="None"),
    "template metadata": lambda o: o["spec"]["leaderWorkerTemplate"]["workerTemplate"].update(
        metadata={"labels": {"a": "b"}}),
    "subdomainPolicy": lambda o: o["spec"].update(networkConfig={"subdomainPolicy": "UniquePerReplica"}),
    "volumeClaimTemplates": lambda o: o["spec"]["leaderWorkerTemplate"].update(
        volumeClaimTemplates=[{"metadata": {"name": "d"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]),
}
DOES_NOT_ROLL = {
    "replicas": lambda o: o["spec"].update(replicas=7),
    "rolloutStrategy": lambda o: o["spec"].update(rolloutStrategy=f.rollout_config(max_surge=3, partition=1)),
    "startupPolicy": lambda o: o["spec"].update(startupPolicy="LeaderReady"),
    "LWS metadata": lambda o: o["metadata"].update(labels={"x": "y"}, annotations={
        labels.EXCLUSIVE_TOPOLOGY: "zone"}),
    "nil networkConfig -> Shared": lambda o: o["spec"].update(networkConfig={"subdomainPolicy": "Shared"}),
    "empty networkConfig": lambda o: o["spec"].update(networkConfig={}),
}


@pytest.mark.parametrize("name", list(ROLLS))
def test_key_changes_when_the_snapshot_changes(name: str) -> None:
    assert _key_after(ROLLS[name]) != BASE_KEY


@pytest.mark.parametrize("name", list(DOES_NOT_ROLL))
def test_key_is_unchanged_by_fields_outside_the_snapshot(name: str) -> None:
    assert _key_after(DOES_NOT_ROLL[name]) == BASE_KEY


def _revision_of(lws: Obj, mutate_data: Any = None) -> Obj:
    rev = revision.new_revision(lws, [])
    if mutate_data is not None:
        text = json.dumps(rev["data"])
        rev["data"] = json.loads(mutate_data(text))
    return rev


DRIFT = {
    "creationTimestamp null (old client-go)": lambda t: t.replace(
        '"spec": {"containers"', '"metadata": {"creationTimestamp": null}, "spec": {"containers"'),
    "empty resources map": lambda t: t.replace('"image": "registry.example/app:1"',
                                               '"image": "registry.example/app:1", "resources": {}'),
    "nil vs Shared subdomain": lambda t: t.replace('"subdomainPolicy": "Shared", ', ""),
    "empty env list": lambda t: t.replace('"name": "worker"', '"name": "worker", "env": []'),
}


@pytest.mark.parametrize("name", list(DRIFT))
def test_serialization_drift_is_not_an_update(name: str) -> None:
    lws = f.lws()
    rev = _revision_of(lws, DRIFT[name])
    assert rev["data"] != revision.snapshot(lws), \
        "the drifted data must differ byte-wise for this test to mean anything"
    assert revision.lws_matches(lws, rev)


def test_quantities_compare_by_value() -> None:
    lws = f.lws(worker={"spec": {"containers": [f.container(resources={"requests": {"cpu": "1000m", "memory": "1Gi"},
                                                                        "limits": {"cpu": 2}})]}})
    rev = revision.new_revision(lws, [])
    limits = rev["data"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"]
    limits["requests"] = {"cpu": "1", "memory": "1073741824"}
    limits["limits"] = {"cpu": "2000m"}
    assert revision.lws_matches(lws, rev)
    limits["requests"]["cpu"] = "1001m"
    assert not revision.lws_matches(lws, rev)


def test_a_real_spec_change_is_an_update() -> None:
    lws = f.lws()
    rev = _revision_of(lws, lambda t: t.replace('"name": "worker"', '"name": "changed"'))
    assert not revision.lws_matches(lws, rev)


def test_empty_string_and_zero_are_significant() -> None:
    lws = f.lws(worker={"spec": {"containers": [f.container()], "terminationGracePeriodSeconds": 0}})
    rev = revision.new_revision(lws, [])
    del rev["data"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["terminationGracePeriodSeconds"]
    assert not revision.lws_matches(lws, rev)


def test_parse_quantity_understands_suffixes() -> None:
    q = revision.parse_quantity
    assert q("500m") == q("0.5") == q(0.5)
    assert q("1Ki") == 1024 and q("2k") == 2000 and q("1e3") == 1000 and q("5E-1") == q("500m")
    assert q("abc") is None and q(None) is None and q(True) is None


def test_new_revision_object_shape() -> None:
    lws = f.lws()
    rev = revision.new_revision(lws, [])
    key = revision.snapshot_key(lws)
    assert rev["metadata"]["name"] == f"test-sample-{key}-1"
    assert rev["metadata"]["labels"] == {labels.NAME: "test-sample", labels.TEMPLATE_REVISION_HASH: key}
    assert rev["metadata"]["ownerReferences"] == [{
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "test-sample",
        "uid": "uid-test-sample", "controller": True, "blockOwnerDeletion": True}]
    assert rev["revision"] == 1 and rev["data"] == revision.snapshot(lws)


def test_revision_numbers_continue_after_the_highest() -> None:
    existing = [{"revision": 1}, {"revision": 4}, {"revision": 2}]
    assert revision.next_number([]) == 1
    assert revision.next_number(existing) == 5
    assert revision.new_revision(f.lws(), existing)["metadata"]["name"].endswith("-5")


def test_adopted_key_labels_the_revision_but_the_name_uses_the_hash() -> None:
    lws = f.lws()
    rev = revision.new_revision(lws, [], key="oldkey")
    assert revision.key_of(rev) == "oldkey"
    assert revision.snapshot_key(lws) in rev["metadata"]["name"]


def _rev(key: str, number: int, uid: str = "uid-test-sample", name: str = "test-sample") -> Obj:
    return {"metadata": {"name": f"{name}-{key}-{number}", "labels": {labels.NAME: name,
                                                                       labels.TEMPLATE_REVISION_HASH: key},
                         "ownerReferences": [{"uid": uid, "controller": True}]}, "revision": number}


def test_find_returns_the_highest_numbered_match_and_never_matches_empty_key() -> None:
    revs = [_rev("a", 1), _rev("b", 2), _rev("a", 3)]
    found = revision.find(revs, "a")
    assert found is not None and found["revision"] == 3
    assert revision.find(revs, "") is None and revision.find(revs, "z") is None


def test_owned_keeps_revisions_of_this_lws_or_without_controller() -> None:
    lws = f.lws()
    orphan = _rev("c", 4)
    orphan["metadata"]["ownerReferences"] = []
    revs = [_rev("a", 1), _rev("b", 2, uid="someone-else"), _rev("x", 1, name="other"), orphan]
    assert [r["revision"] for r in revision.owned(revs, lws)] == [1, 4]


def test_old_revisions_are_deleted_only_when_the_update_is_done() -> None:
    revs = [_rev("a", 1), _rev("b", 2), _rev("c", 3)]
    assert revision.to_delete(revs, "c", update_done=False) == []
    assert [r["revision"] for r in revision.to_delete(revs, "c", update_done=True)] == [1, 2]


def test_apply_revision_restores_template_and_network_without_patch_markers() -> None:
    old = f.lws(size=4)
    rev = revision.new_revision(old, [])
    live = f.with_spec(f.lws(size=2), replicas=9, networkConfig={"subdomainPolicy": "UniquePerReplica"})
    restored = revision.apply_revision(live, rev)
    assert restored["spec"]["leaderWorkerTemplate"] == old["spec"]["leaderWorkerTemplate"]
    assert restored["spec"]["networkConfig"] == {"subdomainPolicy": "Shared"}
    assert restored["spec"]["replicas"] == 9
    assert live["spec"]["leaderWorkerTemplate"]["size"] == 2, "the live object must not be modified"


def test_data_given_as_json_text_is_read() -> None:
    lws = f.lws()
    rev = revision.new_revision(lws, [])
    rev["data"] = json.dumps(rev["data"])
    assert revision.lws_matches(lws, rev)


# --- plan: which revision a reconcile works with -------------------------------------------------------


def _sts(key: str | None) -> Obj:
    return {"metadata": {"name": "test-sample", "labels": {} if key is None else {labels.TEMPLATE_REVISION_HASH: key}}}


def test_plan_for_a_new_lws_creates_revision_1_with_a_creation_event() -> None:
    lws = f.lws()
    plan = revision.plan(lws, None, [])
    assert plan.create is not None and plan.create["revision"] == 1
    assert plan.current_key == revision.snapshot_key(lws) and not plan.updated_now
    assert plan.event is not None and plan.event.note == \
        f"Creating revision with key {plan.current_key} for a newly created LeaderWorkerSet"


def test_plan_reuses_the_revision_the_leader_statefulset_points_at() -> None:
    lws = f.lws()
    rev = revision.new_revision(lws, [])
    plan = revision.plan(lws, _sts(revision.key_of(rev)), [rev])
    assert plan == revision.RevisionPlan(revision.key_of(rev), None, False, None)


def test_plan_adopts_a_missing_revision_with_the_statefulset_key_without_rolling() -> None:
    lws = f.lws()
    plan = revision.plan(lws, _sts("legacykey"), [])
    assert plan.create is not None and revision.key_of(plan.create) == "legacykey"
    assert plan.current_key == "legacykey" and not plan.updated_now
    assert plan.event is not None and plan.event.note == \
        "Creating missing revision with key legacykey for existing LeaderWorkerSet"


def test_plan_creates_the_next_revision_on_a_spec_change() -> None:
    old = f.lws()
    rev1 = revision.new_revision(old, [])
    new = f.lws(size=3)
    plan = revision.plan(new, _sts(revision.key_of(rev1)), [rev1])
    assert plan.updated_now and plan.create is not None and plan.create["revision"] == 2
    assert plan.current_key == revision.snapshot_key(new) != revision.key_of(rev1)
    assert plan.event is not None
    assert plan.event.note == f"Creating revision with key {plan.current_key} for updated LWS"


def test_plan_ignores_drift_in_the_stored_revision() -> None:
    lws = f.lws()
    rev = _revision_of(lws, DRIFT["creationTimestamp null (old client-go)"])
    assert not revision.plan(lws, _sts(revision.key_of(rev)), [rev]).updated_now


def test_plan_reuses_a_matching_revision_when_the_leader_statefulset_was_deleted() -> None:
    lws = f.lws()
    rev = revision.new_revision(lws, [])
    plan = revision.plan(lws, None, [rev])
    assert plan.create is None and plan.current_key == revision.key_of(rev) and plan.event is None


def test_snapshot_does_not_share_structure_with_the_lws() -> None:
    lws = f.lws()
    before = copy.deepcopy(lws)
    data = revision.snapshot(lws)
    data["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "mutated"
    assert lws == before


def test_revision_history_goes_1_2_3_then_back_to_1_when_the_update_is_done() -> None:
    stored: list[Obj] = []

    def reconcile(lws: Obj, sts_key: str | None, *, done: bool) -> str:
        plan = revision.plan(lws, None if sts_key is None else _sts(sts_key), stored)
        if plan.create is not None:
            stored.append(plan.create)
        for gone in revision.to_delete(stored, plan.current_key, update_done=done):
            stored.remove(gone)
        return plan.current_key

    key1 = reconcile(f.lws(), None, done=False)
    assert len(stored) == 1
    key2 = reconcile(f.lws(size=3), key1, done=False)
    assert len(stored) == 2 and key2 != key1
    key3 = reconcile(f.lws(size=4), key2, done=False)
    assert [r["revision"] for r in stored] == [1, 2, 3]
    assert reconcile(f.lws(size=4), key3, done=True) == key3
    assert [r["revision"] for r in stored] == [3]


def test_plan_reuses_a_revision_created_before_the_leader_statefulset_moved() -> None:
    old = f.lws()
    rev1 = revision.new_revision(old, [])
    new = f.lws(size=3)
    rev2 = revision.new_revision(new, [rev1])
    plan = revision.plan(new, _sts(revision.key_of(rev1)), [rev1, rev2])
    assert plan == revision.RevisionPlan(revision.key_of(rev2), None, True, None)


def test_plan_rollback_to_an_earlier_spec_creates_a_new_revision_as_upstream() -> None:
    first = f.lws()
    rev1 = revision.new_revision(first, [])
    rev2 = revision.new_revision(f.lws(size=3), [rev1])
    plan = revision.plan(first, _sts(revision.key_of(rev2)), [rev1, rev2])
    assert plan.updated_now and plan.create is not None and plan.create["revision"] == 3
    assert plan.current_key == revision.key_of(rev1), "same spec, same key"
    assert plan.event is not None and plan.event.reason == "CreatingRevision"
