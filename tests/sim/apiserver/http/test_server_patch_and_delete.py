"""PATCH flavours and DELETE semantics (finalizers, grace, preconditions) through the official client."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.conftest import SimAPI
from tests.sim.apiserver.http.test_server_objects import pod


@pytest.fixture
def core(sim_api: SimAPI) -> client.CoreV1Api:
    api = client.CoreV1Api(sim_api.api)
    body = pod("p")
    body.spec.containers[0].env = [client.V1EnvVar(name="A", value="1"), client.V1EnvVar(name="B", value="2")]
    api.create_namespaced_pod("default", body)
    return api


def test_strategic_merge_patch_merges_containers_and_env_by_name(sim_api: SimAPI) -> None:
    apps = client.AppsV1Api(sim_api.api)
    template = client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels={"app": "x"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36", env=[
            client.V1EnvVar(name="A", value="1"), client.V1EnvVar(name="B", value="2")])]))
    apps.create_namespaced_stateful_set("default", client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="x"),
        spec=client.V1StatefulSetSpec(service_name="x", selector=client.V1LabelSelector(match_labels={"app": "x"}),
                                      template=template)))
    apps.patch_namespaced_stateful_set("x", "default", {"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "busybox:1.37", "env": [{"name": "B", "value": "two"}]}]}}}})
    got = apps.read_namespaced_stateful_set("x", "default").spec.template.spec.containers
    assert len(got) == 1 and got[0].image == "busybox:1.37"
    assert [(e.name, e.value) for e in got[0].env] == [("A", "1"), ("B", "two")]


def test_pod_spec_is_immutable_except_images(core: client.CoreV1Api) -> None:
    core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}})
    assert core.read_namespaced_pod("p", "default").spec.containers[0].image == "busybox:1.37"
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("p", "default", {"spec": {"containers": [
            {"name": "main", "env": [{"name": "B", "value": "two"}]}]}})
    assert err.value.status == 422 and "pod updates may not change fields" in err.value.body


def test_json_patch_applies_operations_in_order(core: client.CoreV1Api) -> None:
    core.patch_namespaced_pod("p", "default", [
        {"op": "add", "path": "/metadata/labels", "value": {"x": "1"}},
        {"op": "replace", "path": "/metadata/labels/x", "value": "2"}])
    assert core.read_namespaced_pod("p", "default").metadata.labels == {"x": "2"}


def test_failing_json_patch_test_op_changes_nothing(core: client.CoreV1Api) -> None:
    before = core.read_namespaced_pod("p", "default").metadata.resource_version
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("p", "default", [{"op": "test", "path": "/metadata/name", "value": "q"},
                                                   {"op": "add", "path": "/metadata/labels", "value": {"y": "1"}}])
    assert err.value.status == 422
    assert core.read_namespaced_pod("p", "default").metadata.resource_version == before


def test_merge_patch_with_null_removes_a_key(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"),
                                                                    data={"a": "1", "b": "2"}))
    reply = sim_api.request("PATCH", "/api/v1/namespaces/default/configmaps/c", data='{"data":{"a":null}}',
                            headers={"Content-Type": "application/merge-patch+json"})
    assert reply.status_code == 200, reply.text
    assert core.read_namespaced_config_map("c", "default").data == {"b": "2"}


def test_server_side_apply_creates_then_updates_with_managed_fields(sim_api: SimAPI) -> None:
    body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"k":"v1"}}'
    path = "/api/v1/namespaces/default/configmaps/ssa?fieldManager=tester"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    assert sim_api.request("PATCH", path, data=body, headers=headers).status_code == 201
    reply = sim_api.request("PATCH", path, data=body.replace('"k":"v1"', '"k":"v2"'), headers=headers)
    assert reply.status_code == 200 and reply.json()["data"] == {"k": "v2"}
    managers = {m["manager"] for m in reply.json()["metadata"]["managedFields"]}
    assert managers == {"tester"}


def test_unsupported_patch_type_is_415(core: client.CoreV1Api, sim_api: SimAPI) -> None:
    reply = sim_api.request("PATCH", "/api/v1/namespaces/default/pods/p", data="{}",
                            headers={"Content-Type": "text/plain"})
    assert reply.status_code == 415 and reply.json()["reason"] == "UnsupportedMediaType"


def test_finalizers_hold_an_object_until_removed(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="f", finalizers=["example.com/hold"])))
    core.delete_namespaced_config_map("f", "default")
    held = core.read_namespaced_config_map("f", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(client.exceptions.NotFoundException):
        core.read_namespaced_config_map("f", "default")


def test_foreground_delete_adds_the_foreground_finalizer(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="fg")))
    core.delete_namespaced_config_map("fg", "default", propagation_policy="Foreground")
    got = core.read_namespaced_config_map("fg", "default")
    assert got.metadata.finalizers == ["foregroundDeletion"] and got.metadata.deletion_timestamp


def test_pod_on_a_node_terminates_gracefully_until_grace_zero(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    bound = pod("g")
    bound.spec.node_name = "node-1"
    core.create_namespaced_pod("default", bound)
    core.delete_namespaced_pod("g", "default")
    terminating = core.read_namespaced_pod("g", "default")
    assert terminating.metadata.deletion_grace_period_seconds == 30
    core.delete_namespaced_pod("g", "default", grace_period_seconds=0)
    with pytest.raises(client.exceptions.NotFoundException):
        core.read_namespaced_pod("g", "default")


def test_delete_precondition_on_uid_conflicts(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod("p", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="not-the-uid")))
    assert err.value.status == 409


def test_binding_sets_node_name_once(core: client.CoreV1Api, sim_api: SimAPI) -> None:
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    assert sim_api.request("POST", "/api/v1/namespaces/default/pods/p/binding", json=binding).status_code == 201
    bound = core.read_namespaced_pod("p", "default")
    assert bound.spec.node_name == "node-1"
    assert {c.type: c.status for c in bound.status.conditions}["PodScheduled"] == "True"
    # a binding bypasses the pod strategy: the generation stays (kube-apiserver 1.37: storage.go:230-271)
    assert bound.metadata.generation == 1
    again = sim_api.request("POST", "/api/v1/namespaces/default/pods/p/binding", json=binding)
    assert again.status_code == 409


def test_terminating_namespace_refuses_new_content(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="doomed")))
    core.delete_namespace("doomed")
    assert core.read_namespace("doomed").status.phase == "Terminating"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("doomed", pod("late"))
    assert err.value.status == 403


def test_patch_carrying_a_stale_resource_version_is_409(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    created = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    core.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("c", "default",
                                         {"metadata": {"resourceVersion": created.metadata.resource_version},
                                          "data": {"a": "2"}})
    assert err.value.status == 409
    assert core.read_namespaced_config_map("c", "default").data == {"a": "1"}


def test_kubectl_server_side_apply_after_client_side_apply_takes_over_what_the_annotation_recorded(
        sim_api: SimAPI) -> None:
    """apimachinery managedfields lastAppliedManager and lastAppliedUpdater (1.37.2): an apply by manager
    `kubectl` may take over conflicting fields whose live values the client-side last-applied-configuration
    recorded, and refreshes that annotation; another manager still conflicts (held-out corpus, issue 33:
    `kubectl apply --server-side` after `kubectl apply` answered 409 on the sim, 200 on kube-apiserver)."""
    last = '{"apiVersion":"v1","data":{"mode":"fast"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"s"}}\n'
    created = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"mode": "fast"}, "metadata": {
        "name": "s", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last}}}
    path = "/api/v1/namespaces/default/configmaps"
    assert sim_api.request("POST", f"{path}?fieldManager=kubectl-client-side-apply", json=created).status_code == 201
    config = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"data":{"mode":"slow"}}'
    headers = {"Content-Type": "application/apply-patch+yaml"}
    other = sim_api.request("PATCH", f"{path}/s?fieldManager=someone", data=config, headers=headers)
    assert other.status_code == 409, other.text
    reply = sim_api.request("PATCH", f"{path}/s?fieldManager=kubectl", data=config, headers=headers)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["data"] == {"mode": "slow"}
    assert body["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == \
        '{"apiVersion":"v1","data":{"mode":"slow"},"kind":"ConfigMap","metadata":{"name":"s"}}\n'
    owners = {m["manager"]: m["fieldsV1"] for m in body["metadata"]["managedFields"]}
    assert owners["kubectl"] == {"f:data": {"f:mode": {}}}
    assert owners["kubectl-client-side-apply"]["f:data"] == {}  # the map it made stays its own, not the key
