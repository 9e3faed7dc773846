"""TPU env (contract 3.5): upstream's per-pod values, and what the reference's templates and policy make of them.

`tpu.pod_entries` is checked against the cases of upstream's pod webhook integration tests
(test/integration/webhooks/pod_test.go, main 060ab4d: host lists and ids per pod shape; values re-derived
from tpu.go, not copied). Then the reference's output: a leader pod stamped from the leader StatefulSet's
template, and worker pods stamped from a worker StatefulSet's template with the `lwsconf.dev/tpu-env` row of
their ordinal applied (as the MutatingAdmissionPolicy does), observe through the kubelet's env resolution
exactly what `pod_entries` says upstream's webhook would have written. Last, the shipped policy itself on the
sim API server.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.implementations import bundled
from lwsconf.reconciler import desired, labels, revision, tpu
from tests.conftest import SimAPI, start_sim_api
from tests.reconciler import factories as f
from tests.reconciler.lws_api import describe

Obj = dict[str, Any]
TPU = {"limits": {"google.com/tpu": "4"}}
PODS = "/api/v1/namespaces/default/pods"


def tpu_container(name: str = "worker", **extra: Any) -> Obj:
    return f.container(name, resources=copy.deepcopy(TPU), **extra)


def spec_of(*containers: Obj, init: tuple[Obj, ...] = ()) -> Obj:
    out: Obj = {"containers": list(containers)}
    if init:
        out["initContainers"] = list(init)
    return out


def values(entries: dict[tpu.Slot, list[Obj]], slot: tpu.Slot = ("containers", 0)) -> dict[str, str]:
    return {e["name"]: e["value"] for e in entries[slot]}


def hosts(*names: str, sub: str = "default") -> str:
    return ",".join(f"{n}.{sub}" for n in names)


L = "test-sample-1"


def w(*indexes: int) -> list[str]:
    return [f"{L}-{i}" for i in indexes]


# --- upstream's per-pod values (pod_test.go cases) -----------------------------------------------------


@pytest.mark.parametrize("place, want_hosts, want_id", [
    (tpu.PodPlace(L, "default", 5, 0, True), hosts(L, *w(1, 2, 3, 4)), "0"),
    (tpu.PodPlace(L, L, 5, 0, True), hosts(L, *w(1, 2, 3, 4), sub=L), "0"),
    (tpu.PodPlace(L, "default", 5, 0, True, 5, 0), hosts(L, *w(1, 2, 3, 4)), "0"),
    (tpu.PodPlace(L, "default", 5, 3, True), hosts(L, *w(1, 2, 3, 4)), "3"),
    (tpu.PodPlace(L, "default", 10, 3, True, 5, 0), hosts(L, *w(1, 2, 3, 4)), "3"),
    (tpu.PodPlace(L, "default", 5, 3, False), hosts(*w(1, 2, 3, 4)), "2"),
    (tpu.PodPlace(L, "default", 11, 7, False, 5, 1), hosts(*w(6, 7, 8, 9, 10)), "1"),
    (tpu.PodPlace(L, "default", 2, 1, True), hosts(L, *w(1)), "1"),
    (tpu.PodPlace(L, "default", 1, 0, False), hosts(L), "0"),
    (tpu.PodPlace(L, "default", 4, 2, True, 2, 1), hosts(*w(2, 3)), "0"),
    (tpu.PodPlace(L, "default", 4, 1, True, 2, 0), hosts(L, *w(1)), "1"),
    (tpu.PodPlace(L, "default", 4, 0, True, 2, 0), hosts(L, *w(1)), "0"),
    (tpu.PodPlace(L, "default", 5, 4, False, 2, 1), hosts(*w(3, 4)), "1"),
], ids=["leader-S5", "leader-unique-subdomain", "leader-sgs5", "worker-leader-too", "worker-sgs5-leader-too",
        "worker-leader-not", "worker-S11-sgs5-leader-not", "worker-S2", "leader-S1", "worker-sg1-leader-too",
        "worker-sg0-leader-too", "leader-sgs2-id0-as-main", "worker-S5-sgs2-leader-not"])
def test_host_list_id_name_and_port_per_pod(place: tpu.PodPlace, want_hosts: str, want_id: str) -> None:
    got = values(tpu.pod_entries(spec_of(tpu_container()), place))
    assert list(got) == [tpu.HOSTNAMES, tpu.WORKER_ID, tpu.NAME, tpu.ADDRESSES, tpu.PORT]
    assert (got[tpu.HOSTNAMES], got[tpu.WORKER_ID], got[tpu.NAME]) == (want_hosts, want_id, L)
    assert got[tpu.ADDRESSES] == ",".join(f"{h}:8476" for h in want_hosts.split(","))
    assert got[tpu.PORT] == "8476"


def test_only_tpu_containers_get_entries_and_two_tpu_containers_repeat_each_host() -> None:
    pod = spec_of(tpu_container("a"), f.container("plain"), init=(tpu_container("b"),))
    entries = tpu.pod_entries(pod, tpu.PodPlace(L, "default", 2, 1, True))
    assert set(entries) == {("containers", 0), ("initContainers", 0)}
    a, b = values(entries), values(entries, ("initContainers", 0))
    assert a[tpu.HOSTNAMES] == b[tpu.HOSTNAMES] == hosts(L, L, *w(1, 1))
    assert (a[tpu.WORKER_ID], b[tpu.WORKER_ID], a[tpu.PORT], b[tpu.PORT]) == ("2", "3", "8476", "8477")
    assert a[tpu.ADDRESSES] == f"{L}.default:8476,{L}.default:8477,{L}-1.default:8476,{L}-1.default:8477"


def test_no_tpus_or_a_user_host_list_or_id_means_no_entries() -> None:
    place = tpu.PodPlace(L, "default", 3, 1, True)
    assert tpu.pod_entries(spec_of(f.container()), place) == {}
    for name in (tpu.HOSTNAMES, tpu.WORKER_ID):
        assert tpu.pod_entries(spec_of(tpu_container(env=[{"name": name, "value": "mine"}])), place) == {}


def test_user_port_is_used_and_user_name_kept() -> None:
    pod = spec_of(tpu_container(env=[{"name": tpu.PORT, "value": "9000"}, {"name": tpu.NAME, "value": "me"}]))
    got = values(tpu.pod_entries(pod, tpu.PodPlace(L, "default", 2, 0, False)))
    assert tpu.PORT not in got and tpu.NAME not in got
    assert got[tpu.ADDRESSES] == f"{L}.default:9000,{L}-1.default:9000"


# --- the reference: templates plus the policy's row ---------------------------------------------------


def _lws(size: int, *, leader_tpus: bool, subgroup: int | None = None, unique: bool = False) -> Obj:
    worker = {"spec": {"containers": [tpu_container()]}}
    leader = {"spec": {"containers": [tpu_container("leader") if leader_tpus else f.container("leader")]}}
    extra: Obj = {"subGroupPolicy": {"subGroupSize": subgroup}} if subgroup else {}
    obj = f.lws(size=size, leader=leader, worker=worker, **extra)
    if unique:
        obj = f.with_spec(obj, networkConfig={"subdomainPolicy": "UniquePerReplica"})
    return obj


def _stamp(template: Obj, name: str, ordinal: int, subdomain: str) -> Obj:
    meta = {"name": name, "namespace": f.NS, "annotations": dict(template["metadata"]["annotations"]),
            "labels": {**template["metadata"]["labels"], labels.STS_POD_INDEX: str(ordinal)}}
    return {"metadata": meta, "spec": {**copy.deepcopy(template["spec"]), "subdomain": subdomain}}


def _apply_row(pod: Obj) -> Obj:
    """What the `leaderworkerset-tpu-env` policy does at CREATE."""
    table = pod["metadata"]["annotations"].get(tpu.TABLE_ANNOTATION)
    if table is None:
        return pod
    row = table.split("|")[int(pod["metadata"]["labels"][labels.STS_POD_INDEX]) - 1]
    for op in filter(None, row.split(";")):
        path, value = op.split("=", 1)
        _, _, field, index, _, env_index, _ = path.split("/")
        pod["spec"][field][int(index)]["env"][int(env_index)]["value"] = value
    return pod


def _observed(pod: Obj) -> dict[str, str]:
    env = f.expand_env(pod["spec"]["containers"][0]["env"], pod)
    return {k: v for k, v in env.items() if k.startswith("TPU_")}


@pytest.mark.parametrize("size, leader_tpus, subgroup, unique", [
    (4, True, None, False), (4, False, None, False), (4, True, None, True),
    (4, True, 2, False), (5, False, 2, False), (1, True, None, False), (6, True, 3, True),
], ids=["S4-leader-tpus", "S4-leader-no-tpus", "S4-unique-subdomain", "S4-sgs2-leader-tpus",
        "S5-sgs2-leader-no-tpus", "S1", "S6-sgs3-unique"])
def test_every_pod_of_a_group_observes_upstreams_values(size: int, leader_tpus: bool, subgroup: int | None,
                                                        unique: bool) -> None:
    obj = _lws(size, leader_tpus=leader_tpus, subgroup=subgroup, unique=unique)
    rev = revision.new_revision(obj, [])
    leader = f.leader_pod(obj, 1, key=revision.key_of(rev))
    leader["spec"] = copy.deepcopy(obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"])
    sub = L if unique else f.NAME
    ltemplate = desired.leader_statefulset(obj, revision_key="k", partition=0, replicas=2)["spec"]["template"]
    got = _observed(_stamp(ltemplate, L, 1, sub))
    sgi = 0 if subgroup else None
    want = values(tpu.pod_entries(leader["spec"], tpu.PodPlace(L, sub, size, 0, True, subgroup, sgi))) \
        if leader_tpus else {}
    assert got == want
    if size == 1:
        assert got[tpu.HOSTNAMES] == f"{L}.{sub}" and got[tpu.WORKER_ID] == "0"
        return
    sts = desired.worker_statefulset(obj, leader, rev)
    wtemplate = sts["spec"]["template"]
    assert (wtemplate["metadata"]["annotations"].get(labels.LEADER_REQUESTS_TPUS) == "true") == leader_tpus
    user = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    ids = []
    for ordinal in range(1, size):
        pod = _apply_row(_stamp(wtemplate, f"{L}-{ordinal}", ordinal, sts["spec"]["serviceName"]))
        sgi = labels.subgroup_index(size, subgroup, ordinal, "LeaderWorker") if subgroup else None
        want = values(tpu.pod_entries(user, tpu.PodPlace(L, sub, size, ordinal, leader_tpus, subgroup, sgi)))
        assert _observed(pod) == want, ordinal
        ids.append(want[tpu.WORKER_ID])
    if subgroup is None:
        first = 1 if leader_tpus else 0
        assert ids == [str(i) for i in range(first, first + size - 1)]


def test_a_user_tpu_name_is_what_the_leader_sees_and_addresses_still_use_the_pod_name() -> None:
    obj = _lws(2, leader_tpus=True)
    obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["env"] = [
        {"name": tpu.NAME, "value": "mine"}]
    template = desired.leader_statefulset(obj, revision_key="k", partition=0, replicas=2)["spec"]["template"]
    got = _observed(_stamp(template, L, 1, f.NAME))
    assert got[tpu.NAME] == "mine"
    assert got[tpu.ADDRESSES] == f"{L}.{f.NAME}:8476,{L}-1.{f.NAME}:8476"


def test_groups_without_tpus_get_no_tpu_entries_nor_table() -> None:
    obj = f.lws(size=3)
    rev = revision.new_revision(obj, [])
    sts = desired.worker_statefulset(obj, f.leader_pod(obj, 0, key=revision.key_of(rev)), rev)
    assert tpu.TABLE_ANNOTATION not in sts["spec"]["template"]["metadata"]["annotations"]
    assert not any(e["name"].startswith("TPU_") for e in sts["spec"]["template"]["spec"]["containers"][0]["env"])


# --- the shipped policy on the sim API server ------------------------------------------------------------


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimAPI]:
    api, loop = start_sim_api(tmp_path)
    yield api
    api.api.close()
    loop.run(api.server.stop())
    loop.stop()


def test_policy_gives_each_worker_its_row_at_create(sim: SimAPI) -> None:
    assert bundled.install_mutating_policy(sim.api) == {}
    obj = _lws(5, leader_tpus=False, subgroup=2)
    rev = revision.new_revision(obj, [])
    leader = f.leader_pod(obj, 1, key=revision.key_of(rev))
    sts = desired.worker_statefulset(obj, leader, rev)
    for ordinal in range(1, 5):
        pod = _stamp(sts["spec"]["template"], f"{L}-{ordinal}", ordinal, f.NAME)
        pod["spec"]["hostname"] = pod["metadata"]["name"]
        reply = sim.request("POST", PODS, json={"apiVersion": "v1", "kind": "Pod", **pod})
        assert reply.status_code == 201, describe(reply)
        created = reply.json()
        want = _apply_row(copy.deepcopy(pod))["spec"]["containers"][0]["env"]
        assert created["spec"]["containers"][0]["env"] == want, ordinal
        assert _observed(created)[tpu.WORKER_ID] == str((ordinal - 1) % 2)
