"""The object model of docs/lws-contract.md §2: leader StatefulSet, worker StatefulSets, headless Services.

Env vars are checked the way a container observes them (`factories.expand_env` resolves fieldRefs and
`$(VAR)` like the kubelet), since without a webhook the leader's values are not literals in the spec.
"""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.reconciler import desired, labels, revision
from tests.reconciler import factories as f

Obj = dict[str, Any]
N = "test-sample"
LWS_ENV = ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]


def leader_sts(lws: Obj, *, partition: int = 0, replicas: int | None = None) -> Obj:
    return desired.leader_statefulset(lws, revision_key="k1", partition=partition,
                                      replicas=lws["spec"].get("replicas", 1) if replicas is None else replicas)


def as_pod(template: Obj, name: str, **extra_labels: str) -> Obj:
    """A pod the StatefulSet controller would create from `template` (it adds pod-name and pod-index labels)."""
    index = name.rsplit("-", 1)[1]
    meta = {"name": name, "namespace": f.NS,
            "labels": {**template["metadata"]["labels"], labels.STS_POD_NAME: name, labels.STS_POD_INDEX: index,
                       **extra_labels}}
    return {"metadata": meta, "spec": template["spec"]}


# --- leader StatefulSet (2.2) --------------------------------------------------------------------------


def test_leader_statefulset_shape() -> None:
    lws = f.lws(replicas=3, obj_labels={"team": "a"}, annotations={"note": "x"})
    sts = leader_sts(lws, partition=1, replicas=4)
    assert sts["metadata"]["name"] == N and sts["metadata"]["namespace"] == f.NS
    assert sts["metadata"]["labels"] == {"team": "a", labels.NAME: N, labels.TEMPLATE_REVISION_HASH: "k1"}
    assert sts["metadata"]["annotations"] == {"note": "x", labels.REPLICAS: "3"}, "the desired count, not surge"
    assert sts["metadata"]["ownerReferences"] == [{"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                                   "kind": "LeaderWorkerSet", "name": N, "uid": f"uid-{N}",
                                                   "controller": True, "blockOwnerDeletion": True}]
    spec = sts["spec"]
    assert (spec["replicas"], spec["serviceName"], spec["podManagementPolicy"]) == (4, N, "Parallel")
    assert spec["selector"] == {"matchLabels": {labels.NAME: N, labels.WORKER_INDEX: "0"}}
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 1, "maxUnavailable": 1}}
    assert "ordinals" not in spec and "minReadySeconds" not in spec and "volumeClaimTemplates" not in spec


def test_leader_statefulset_max_unavailable_is_the_sum_of_both_budgets() -> None:
    lws = f.with_spec(f.lws(replicas=4), rolloutStrategy=f.rollout_config(max_unavailable="50%", max_surge="25%"))
    assert leader_sts(lws)["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 3


def test_leader_template_labels_are_exactly_the_lws_ones_for_an_unlabelled_template() -> None:
    template = leader_sts(f.lws())["spec"]["template"]
    assert template["metadata"]["labels"] == {labels.WORKER_INDEX: "0", labels.NAME: N,
                                              labels.TEMPLATE_REVISION_HASH: "k1"}
    assert template["metadata"]["annotations"] == {labels.SIZE: "2"}


def test_user_template_labels_are_kept_but_lws_keys_win() -> None:
    worker = {"metadata": {"labels": {"role": "x", labels.NAME: "spoof"}, "annotations": {"a": "b"}},
              "spec": {"containers": [f.container()]}}
    template = leader_sts(f.lws(worker=worker))["spec"]["template"]
    assert template["metadata"]["labels"]["role"] == "x"
    assert template["metadata"]["labels"][labels.NAME] == N
    assert template["metadata"]["annotations"] == {"a": "b", labels.SIZE: "2"}


def test_leader_template_omitted_runs_the_worker_containers() -> None:
    assert leader_sts(f.lws())["spec"]["template"]["spec"]["containers"][0]["name"] == "worker"
    leader = {"spec": {"containers": [f.container("leader")]}}
    assert leader_sts(f.lws(leader=leader))["spec"]["template"]["spec"]["containers"][0]["name"] == "leader"


def test_size_1_leader_template() -> None:
    template = leader_sts(f.lws(size=1))["spec"]["template"]
    assert template["metadata"]["annotations"][labels.SIZE] == "1"
    assert f.expand_env(template["spec"]["containers"][0]["env"], as_pod(template, "test-sample-0"))[
        "LWS_GROUP_SIZE"] == "1"


@pytest.mark.parametrize(("annotations", "lwt", "network", "expected"), [
    ({labels.EXCLUSIVE_TOPOLOGY: "zone"}, {}, None, {labels.EXCLUSIVE_TOPOLOGY: "zone"}),
    ({labels.EXCLUSIVE_TOPOLOGY: ""}, {}, None, {}),
    ({labels.SUBGROUP_EXCLUSIVE_TOPOLOGY: "rack"}, {}, None, {}),
    ({labels.SUBGROUP_EXCLUSIVE_TOPOLOGY: "rack"}, {"subGroupPolicy": {"subGroupSize": 2}}, None,
     {labels.SUBGROUP_POLICY_TYPE: "LeaderWorker", labels.SUBGROUP_SIZE: "2",
      labels.SUBGROUP_EXCLUSIVE_TOPOLOGY: "rack"}),
    ({}, {"subGroupPolicy": {"subGroupSize": 1, "subGroupPolicyType": "LeaderExcluded"}}, None,
     {labels.SUBGROUP_POLICY_TYPE: "LeaderExcluded", labels.SUBGROUP_SIZE: "1"}),
    ({}, {}, {"subdomainPolicy": "UniquePerReplica"}, {labels.SUBDOMAIN_POLICY: "UniquePerReplica"}),
    ({}, {}, {"subdomainPolicy": "Shared"}, {}),
], ids=["exclusive", "empty exclusive ignored", "subgroup topology without subgroups ignored", "subgroups",
        "leader excluded", "unique subdomain", "shared subdomain"])
def test_leader_template_annotations(annotations: dict[str, str], lwt: Obj, network: Obj | None,
                                     expected: dict[str, str]) -> None:
    lws = f.lws(annotations=annotations, size=3, **lwt)
    if network is not None:
        lws = f.with_spec(lws, networkConfig=network)
    got = leader_sts(lws)["spec"]["template"]["metadata"]["annotations"]
    assert got == {labels.SIZE: "3", **expected}


# --- env (3.3, T21): first, replacing user entries, observed values ------------------------------------


def _with_env_users() -> Obj:
    user_env = [{"name": "LWS_GROUP_SIZE", "value": "99"}, {"name": "RAY", "value": "$(LWS_LEADER_ADDRESS):6379"},
                {"name": "RAY", "value": "dup"}]
    return {"spec": {"containers": [f.container(env=user_env, args=["--addr=$(LWS_LEADER_ADDRESS)",
                                                                     "--n=$(LWS_GROUP_SIZE)"]),
                                    f.container("sidecar")],
                     "initContainers": [f.container("init")],
                     "ephemeralContainers": [f.container("debug")]}}


def test_leader_env_comes_first_in_every_container_and_init_container() -> None:
    spec = leader_sts(f.lws(worker=_with_env_users()))["spec"]["template"]["spec"]
    for container in spec["containers"] + spec["initContainers"]:
        assert container["env"][0]["name"] == "LWS_LEADER_ADDRESS", container["name"]
        assert [e["name"] for e in container["env"] if e["name"] in LWS_ENV] == [
            "LWS_LEADER_ADDRESS", "LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]
    assert "env" not in spec["ephemeralContainers"][0]


def test_leader_containers_observe_upstream_values_and_user_entries_are_replaced() -> None:
    template = leader_sts(f.lws(worker=_with_env_users()))["spec"]["template"]
    pod = as_pod(template, "test-sample-1")
    main = template["spec"]["containers"][0]
    env = f.expand_env(main["env"], pod)
    assert env["LWS_LEADER_ADDRESS"] == "test-sample-1.test-sample.default"
    assert (env["LWS_GROUP_SIZE"], env["LWS_WORKER_INDEX"]) == ("2", "0")
    assert env["RAY"] == "test-sample-1.test-sample.default:6379", "user $(LWS_LEADER_ADDRESS) expands"
    assert [e["value"] for e in main["env"] if e["name"] == "RAY"] == ["$(LWS_LEADER_ADDRESS):6379"], \
        "a duplicated user name keeps its first entry, as upstream"
    assert [f.expand(a, env) for a in main["args"]] == ["--addr=test-sample-1.test-sample.default", "--n=2"]
    init = f.expand_env(template["spec"]["initContainers"][0]["env"], pod)
    assert init == {"LWS_LEADER_ADDRESS": "test-sample-1.test-sample.default", "LWS_GROUP_SIZE": "2",
                    "LWS_WORKER_INDEX": "0"}


def test_unique_per_replica_leader_address_uses_the_group_subdomain() -> None:
    lws = f.with_spec(f.lws(), networkConfig={"subdomainPolicy": "UniquePerReplica"})
    template = leader_sts(lws)["spec"]["template"]
    env = f.expand_env(template["spec"]["containers"][0]["env"], as_pod(template, "test-sample-3"))
    assert env["LWS_LEADER_ADDRESS"] == "test-sample-3.test-sample-3.default"


# --- worker StatefulSet (2.3, T32) ---------------------------------------------------------------------


def _group(lws: Obj, index: int = 1, **pod_kw: Any) -> tuple[Obj, Obj]:
    rev = revision.new_revision(lws, [])
    return f.leader_pod(lws, index, key=revision.key_of(rev), **pod_kw), rev


def test_worker_statefulset_shape() -> None:
    lws = f.lws(size=4, obj_labels={"team": "a"}, annotations={"note": "x"})
    pod, rev = _group(lws)
    sts = desired.worker_statefulset(lws, pod, rev)
    key, gkey = revision.key_of(rev), labels.group_key(f.NS, "test-sample-1")
    identity = {labels.GROUP_INDEX: "1", labels.NAME: N, labels.GROUP_KEY: gkey}
    assert sts["metadata"]["name"] == "test-sample-1"
    assert sts["metadata"]["labels"] == {"team": "a", **identity, labels.TEMPLATE_REVISION_HASH: key}
    assert sts["metadata"]["annotations"] == {"note": "x"}
    assert sts["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "test-sample-1",
                                                   "uid": "uid-test-sample-1", "controller": True,
                                                   "blockOwnerDeletion": True}]
    spec = sts["spec"]
    assert (spec["replicas"], spec["ordinals"], spec["podManagementPolicy"]) == (3, {"start": 1}, "Parallel")
    assert spec["serviceName"] == N and spec["selector"] == {"matchLabels": identity}
    assert "updateStrategy" not in spec
    assert spec["template"]["metadata"]["labels"] == {**identity, labels.TEMPLATE_REVISION_HASH: key}
    assert spec["template"]["metadata"]["annotations"] == {labels.SIZE: "4", labels.LEADER_NAME: "test-sample-1"}


def test_worker_statefulset_is_built_from_the_leaders_revision_not_the_live_spec() -> None:
    old = f.lws(size=4, worker={"spec": {"containers": [f.container("old")]}})
    pod, rev = _group(old)
    live = f.with_spec(f.lws(size=2, worker={"spec": {"containers": [f.container("new")]}}),
                       networkConfig={"subdomainPolicy": "UniquePerReplica"})
    sts = desired.worker_statefulset(live, pod, rev)
    assert sts["spec"]["replicas"] == 3
    assert sts["spec"]["template"]["spec"]["containers"][0]["name"] == "old"
    assert sts["spec"]["template"]["metadata"]["annotations"][labels.SIZE] == "4"
    assert sts["spec"]["serviceName"] == N, "subdomain policy comes from the revision too"
    assert sts["spec"]["template"]["metadata"]["labels"][labels.TEMPLATE_REVISION_HASH] == revision.key_of(rev)


def test_worker_statefulset_subgroup_policy_type_comes_from_the_leaders_revision() -> None:
    # Upstream #963 (main 060ab4d pod_controller.go:419-424); conformance RestartBelowPartitionKeepsOldSubGroupPolicy.
    old = f.lws(size=3, subGroupPolicy={"subGroupSize": 2, "subGroupPolicyType": "LeaderWorker"})
    pod, rev = _group(old)
    live = f.lws(size=3, subGroupPolicy={"subGroupSize": 2, "subGroupPolicyType": "LeaderExcluded"})
    annotations = desired.worker_statefulset(live, pod, rev)["spec"]["template"]["metadata"]["annotations"]
    assert (annotations[labels.SUBGROUP_POLICY_TYPE], annotations[labels.SUBGROUP_SIZE]) == ("LeaderWorker", "2")


def test_worker_containers_observe_literal_address_and_their_own_index() -> None:
    lws = f.lws(size=3, worker=_with_env_users())
    pod, rev = _group(lws, 2)
    template = desired.worker_statefulset(lws, pod, rev)["spec"]["template"]
    main = template["spec"]["containers"][0]
    assert main["env"][0] == {"name": "LWS_LEADER_ADDRESS", "value": "test-sample-2.test-sample.default"}
    env = f.expand_env(main["env"], as_pod(template, "test-sample-2-2"))
    assert (env["LWS_GROUP_SIZE"], env["LWS_WORKER_INDEX"]) == ("3", "2")
    assert env["RAY"] == "test-sample-2.test-sample.default:6379"
    assert f.expand_env(template["spec"]["initContainers"][0]["env"], as_pod(template, "test-sample-2-1"))[
        "LWS_WORKER_INDEX"] == "1"


def test_unique_per_replica_worker_statefulset_uses_the_group_service() -> None:
    lws = f.with_spec(f.lws(), networkConfig={"subdomainPolicy": "UniquePerReplica"})
    pod, rev = _group(lws, 0)
    sts = desired.worker_statefulset(lws, pod, rev)
    assert sts["spec"]["serviceName"] == "test-sample-0"
    assert sts["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "test-sample-0.test-sample-0.default"


def test_leader_labels_when_present_are_copied_to_the_worker_statefulset() -> None:
    lws = f.lws()
    pod, rev = _group(lws, 1, extra_labels={labels.GROUP_INDEX: "1", labels.GROUP_KEY: "custom"})
    assert desired.worker_statefulset(lws, pod, rev)["spec"]["selector"]["matchLabels"][labels.GROUP_KEY] == "custom"


def test_exclusive_placement_pins_workers_to_the_leaders_domain() -> None:
    lws = f.lws(annotations={labels.EXCLUSIVE_TOPOLOGY: "zone"},
                worker={"spec": {"containers": [f.container()], "nodeSelector": {"zone": "user", "disk": "ssd"}}})
    pod, rev = _group(lws)
    sts = desired.worker_statefulset(lws, pod, rev, topology_value="z1")
    template = sts["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"zone": "z1", "disk": "ssd"}
    assert template["metadata"]["annotations"][labels.EXCLUSIVE_TOPOLOGY] == "zone"
    assert "affinity" not in template["spec"], "workers get no group-level affinity terms (T22)"
    with pytest.raises(ValueError, match="leader node's value"):
        desired.worker_statefulset(lws, pod, rev)


def test_worker_template_subgroup_annotations_and_tpu_flag() -> None:
    lws = f.lws(size=5, subGroupPolicy={"subGroupSize": 2}, annotations={labels.SUBGROUP_EXCLUSIVE_TOPOLOGY: "rack"})
    pod, rev = _group(lws)
    pod["spec"]["containers"][0]["resources"] = {"limits": {labels.TPU_RESOURCE: "4"}}
    annotations = desired.worker_statefulset(lws, pod, rev)["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {labels.SIZE: "5", labels.LEADER_NAME: "test-sample-1",
                           labels.SUBGROUP_POLICY_TYPE: "LeaderWorker", labels.SUBGROUP_SIZE: "2",
                           labels.SUBGROUP_EXCLUSIVE_TOPOLOGY: "rack", labels.LEADER_REQUESTS_TPUS: "true"}
