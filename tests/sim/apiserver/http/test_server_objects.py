"""Object semantics of the simulated API server, exercised through the official typed client (v37)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.conftest import SimAPI, start_sim_api


def pod(name: str, labels: dict[str, str] | None = None, image: str = "busybox:1.36") -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image=image)]),
    )


def status_of(exc: ApiException) -> dict[str, object]:
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["status"] == "Failure", body
    return body  # type: ignore[no-any-return]


def test_create_returns_201_with_system_metadata(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    _, code, _ = core.create_namespaced_pod_with_http_info("default", pod("p1"))
    assert code == 201
    got = core.read_namespaced_pod("p1", "default")
    assert got.metadata.uid and re.fullmatch(r"\d+", got.metadata.resource_version)
    assert got.metadata.creation_timestamp is not None
    assert got.metadata.generation == 1
    assert got.status.phase == "Pending"
    assert got.spec.restart_policy == "Always", "pod defaults are applied on create"


def test_resource_versions_increase_globally(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    a = core.create_namespaced_pod("default", pod("a"))
    cm = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    b = core.create_namespaced_pod("default", pod("b"))
    rvs = [int(x.metadata.resource_version) for x in (a, cm, b)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


def test_generate_name_gives_a_unique_suffix(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    names = {core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(generate_name="cfg-"))).metadata.name for _ in range(5)}
    assert len(names) == 5 and all(re.fullmatch(r"cfg-[a-z0-9]{5}", n) for n in names)


def test_duplicate_create_is_409_already_exists(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    core.create_namespaced_pod("default", pod("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", pod("dup"))
    assert err.value.status == 409 and status_of(err.value)["reason"] == "AlreadyExists"


def test_missing_object_is_404_status(sim_api: SimAPI) -> None:
    with pytest.raises(client.exceptions.NotFoundException) as err:
        client.CoreV1Api(sim_api.api).read_namespaced_pod("nope", "default")
    body = status_of(err.value)
    assert body["reason"] == "NotFound" and body["message"] == 'pods "nope" not found'


def test_update_with_stale_resource_version_is_409_conflict(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    created = core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm"), data={"a": "1"}))
    created.data = {"a": "2"}
    core.replace_namespaced_config_map("cm", "default", created)
    created.data = {"a": "3"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("cm", "default", created)
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("cm", "default").data == {"a": "2"}


def test_invalid_name_is_422_with_field_cause(sim_api: SimAPI) -> None:
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(sim_api.api).create_namespaced_pod("default", pod("Bad_Name"))
    body = status_of(err.value)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    causes = body["details"]["causes"]  # type: ignore[index]
    assert any(c["field"] == "metadata.name" for c in causes), causes


def test_generation_bumps_on_spec_changes_only(sim_api: SimAPI) -> None:
    apps = client.AppsV1Api(sim_api.api)
    sts = client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1StatefulSetSpec(
            service_name="web", replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "web"}),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "web"}),
                                              spec=client.V1PodSpec(containers=[client.V1Container(
                                                  name="c", image="busybox")]))))
    apps.create_namespaced_stateful_set("default", sts)
    apps.patch_namespaced_stateful_set("web", "default", {"metadata": {"labels": {"x": "y"}}})
    assert apps.read_namespaced_stateful_set("web", "default").metadata.generation == 1
    apps.patch_namespaced_stateful_set("web", "default", {"spec": {"replicas": 3}})
    assert apps.read_namespaced_stateful_set("web", "default").metadata.generation == 2


def test_status_subresource_isolates_spec_and_status(sim_api: SimAPI) -> None:
    apps = client.AppsV1Api(sim_api.api)
    test_generation_bumps_on_spec_changes_only(sim_api)
    apps.patch_namespaced_stateful_set("web", "default", {"status": {"replicas": 7}})
    assert (apps.read_namespaced_stateful_set("web", "default").status.replicas or 0) == 0, \
        "a main-resource write must not change status"
    apps.patch_namespaced_stateful_set_status("web", "default", {"status": {"replicas": 2},
                                                                  "spec": {"replicas": 9}})
    got = apps.read_namespaced_stateful_set("web", "default")
    assert got.status.replicas == 2 and got.spec.replicas == 3 and got.metadata.generation == 2


def test_dry_run_validates_without_storing(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    core.create_namespaced_pod("default", pod("dry"), dry_run="All")
    with pytest.raises(client.exceptions.NotFoundException):
        core.read_namespaced_pod("dry", "default")


def test_create_in_missing_namespace_is_404(sim_api: SimAPI) -> None:
    with pytest.raises(client.exceptions.NotFoundException) as err:
        client.CoreV1Api(sim_api.api).create_namespaced_pod("ghost", pod("p"))
    assert status_of(err.value)["message"] == 'namespaces "ghost" not found'


def test_namespace_mismatch_between_body_and_url_is_400(sim_api: SimAPI) -> None:
    body = pod("p")
    body.metadata.namespace = "kube-system"
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(sim_api.api).create_namespaced_pod("default", body)
    assert err.value.status == 400


def test_requests_without_the_bearer_token_are_401(sim_api: SimAPI) -> None:
    reply = sim_api.request("GET", "/api/v1/namespaces", headers={"Authorization": ""})
    assert reply.status_code == 401 and reply.json()["kind"] == "Status"
    wrong = sim_api.request("GET", "/api/v1/namespaces", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401


def test_service_gets_a_loopback_cluster_ip(sim_api: SimAPI) -> None:
    core = client.CoreV1Api(sim_api.api)
    svc = core.create_namespaced_service("default", client.V1Service(
        metadata=client.V1ObjectMeta(name="s"),
        spec=client.V1ServiceSpec(selector={"app": "x"}, ports=[client.V1ServicePort(port=80)])))
    assert svc.spec.cluster_ip.startswith("127."), svc.spec.cluster_ip
    headless = core.create_namespaced_service("default", client.V1Service(
        metadata=client.V1ObjectMeta(name="h"), spec=client.V1ServiceSpec(cluster_ip="None", selector={"a": "b"})))
    assert headless.spec.cluster_ip == "None"


def test_cluster_ips_come_from_the_service_range_the_server_was_given(tmp_path: Path) -> None:
    sim, loop = start_sim_api(tmp_path, service_range="127.42.128.0/17")
    try:
        core = client.CoreV1Api(sim.api)
        svc = core.create_namespaced_service("default", client.V1Service(
            metadata=client.V1ObjectMeta(name="s"), spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)])))
        assert svc.spec.cluster_ip == "127.42.128.1"
        with pytest.raises(ApiException) as err:
            core.create_namespaced_service("default", client.V1Service(
                metadata=client.V1ObjectMeta(name="t"),
                spec=client.V1ServiceSpec(cluster_ip="127.96.0.7", ports=[client.V1ServicePort(port=80)])))
        assert err.value.status == 422 and "The range of valid IPs is 127.42.128.0/17" in err.value.body
    finally:
        sim.api.close()
        loop.run(sim.server.stop())
        loop.stop()


def test_every_builtin_kind_round_trips_through_the_typed_client(sim_api: SimAPI) -> None:
    core, apps = client.CoreV1Api(sim_api.api), client.AppsV1Api(sim_api.api)
    core.create_namespaced_secret("default", client.V1Secret(metadata=client.V1ObjectMeta(name="s"),
                                                             string_data={"k": "v"}))
    core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="sa")))
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1")))
    apps.create_namespaced_controller_revision("default", client.V1ControllerRevision(
        metadata=client.V1ObjectMeta(name="rev-1"), revision=1, data={"spec": {}}))
    client.CoordinationV1Api(sim_api.api).create_namespaced_lease("default", client.V1Lease(
        metadata=client.V1ObjectMeta(name="l"), spec=client.V1LeaseSpec(holder_identity="me")))
    client.DiscoveryV1Api(sim_api.api).create_namespaced_endpoint_slice("default", client.V1EndpointSlice(
        metadata=client.V1ObjectMeta(name="es"), address_type="IPv4",
        endpoints=[client.V1Endpoint(addresses=["127.0.0.9"])]))
    # Typed reads raise if anything the server returns does not deserialize.
    assert core.list_namespaced_secret("default").items[0].metadata.name == "s"
    assert core.list_node().items[0].metadata.name == "n1"
    assert apps.list_namespaced_controller_revision("default").items[0].revision == 1
    assert client.CoordinationV1Api(sim_api.api).list_namespaced_lease("default").items[0].spec.holder_identity == "me"
    assert client.DiscoveryV1Api(sim_api.api).list_namespaced_endpoint_slice("default").items[0].address_type == "IPv4"
    assert {n.metadata.name for n in core.list_namespace().items} >= {"default", "kube-system"}


def test_a_long_generate_name_is_cut_so_the_name_has_63_characters(sim_api: SimAPI) -> None:
    """names.SimpleNameGenerator: the prefix is cut to 58 characters before the 5 random ones (issue 33's probe:
    the sim answered a 75-character name for a 70-character prefix)."""
    prefix = "x" * 70
    reply = sim_api.request("POST", "/api/v1/namespaces/default/configmaps",
                            json={"metadata": {"generateName": prefix}})
    assert reply.status_code == 201, reply.text
    meta = reply.json()["metadata"]
    assert len(meta["name"]) == 63 and meta["name"].startswith("x" * 58) and meta["generateName"] == prefix


def test_proxying_to_a_pod_without_an_address_is_a_bad_request(sim_api: SimAPI) -> None:
    """pod strategy ResourceLocation (1.37.2): a pod with no parseable IP answers 400 "address not allowed"
    (the held-out corpus: the sim said 503 "has no IP address yet")."""
    pod = {"metadata": {"name": "early"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
    assert sim_api.request("POST", "/api/v1/namespaces/default/pods", json=pod).status_code == 201
    reply = sim_api.request("GET", "/api/v1/namespaces/default/pods/early:8080/proxy/")
    assert reply.status_code == 400 and reply.json()["message"] == "address not allowed", reply.text


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                  "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_a_put_omitting_defaulted_fields_does_not_bump_generation(sim_api: SimAPI) -> None:
    """crud/crud-deployments/replace: the spec is compared once defaults are applied, so re-sending
    the created body with a new label keeps generation 1; a real spec change bumps it."""
    path = "/apis/apps/v1/namespaces/default/deployments"
    created = sim_api.request("POST", path, json=DEPLOYMENT).json()
    relabelled = {**DEPLOYMENT, "metadata": {"name": "d", "labels": {"x": "y"},
                                             "resourceVersion": created["metadata"]["resourceVersion"]}}
    updated = sim_api.request("PUT", f"{path}/d", json=relabelled).json()
    assert updated["metadata"]["generation"] == 1 and updated["metadata"]["labels"] == {"x": "y"}
    scaled = sim_api.request("PATCH", f"{path}/d", json={"spec": {"replicas": 3}},
                             headers={"Content-Type": "application/merge-patch+json"}).json()
    assert scaled["metadata"]["generation"] == 2
