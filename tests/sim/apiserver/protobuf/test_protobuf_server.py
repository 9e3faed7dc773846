"""The sim API server speaking Kubernetes protobuf: bodies in and out, lists, errors, watches, custom resources,
and the built kubectl's everyday `create` commands (which send protobuf) against `lwsconf sim up`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from lwsconf.sim.apiserver.protobuf import envelope
from tests.conftest import SimAPI
from tests.sim.apiserver import registry_fixtures
from tests.sim.apiserver.kubectl_on_sim import kubectl_path, sim_up

PB = "application/vnd.kubernetes.protobuf"
CMS = "/api/v1/namespaces/default/configmaps"
KUBECTL_TIMEOUT_SECONDS = 60.0


def cm(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_a_protobuf_create_is_stored_and_answered_in_protobuf(sim_api: SimAPI) -> None:
    answer = sim_api.request("POST", CMS, data=envelope.encode_object(cm("a", k="v")),
                             headers={"Content-Type": PB, "Accept": f"{PB}, application/json"})
    assert answer.status_code == 201, answer.content
    assert answer.headers["Content-Type"] == PB
    created = envelope.decode_object(answer.content)
    assert created["data"] == {"k": "v"} and created["metadata"]["uid"]
    assert client.CoreV1Api(sim_api.api).read_namespaced_config_map("a", "default").data == {"k": "v"}


def test_a_get_and_a_list_answer_protobuf_only_when_protobuf_is_preferred(sim_api: SimAPI) -> None:
    sim_api.request("POST", CMS, json=cm("b", k="v"))
    got = sim_api.request("GET", f"{CMS}/b", headers={"Accept": PB})
    assert envelope.decode_object(got.content)["data"] == {"k": "v"}
    listed = envelope.decode_object(sim_api.request("GET", CMS, headers={"Accept": PB}).content)
    assert listed["kind"] == "ConfigMapList" and [i["metadata"]["name"] for i in listed["items"]] == ["b"]
    json_wins = sim_api.request("GET", f"{CMS}/b", headers={"Accept": f"{PB};q=0.5, application/json;q=0.9"})
    assert json_wins.headers["Content-Type"].startswith("application/json")
    table = sim_api.request("GET", CMS, headers={"Accept": f"application/json;as=Table;v=v1;g=meta.k8s.io, {PB}"})
    assert table.json()["kind"] == "Table", "kubectl get's Table stays JSON"


def test_errors_are_protobuf_statuses_when_protobuf_was_asked_for(sim_api: SimAPI) -> None:
    missing = sim_api.request("GET", f"{CMS}/nope", headers={"Accept": PB})
    assert missing.status_code == 404 and missing.headers["Content-Type"] == PB
    status = envelope.decode_object(missing.content)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotFound", 404)
    torn = sim_api.request("POST", CMS, data=b"k8s\x00garbage", headers={"Content-Type": PB, "Accept": PB})
    assert torn.status_code == 400
    assert "unrecognized" in envelope.decode_object(torn.content)["message"]


def test_a_protobuf_delete_options_body_is_read(sim_api: SimAPI) -> None:
    sim_api.request("POST", CMS, json=cm("d"))
    options = envelope.encode_object({"apiVersion": "v1", "kind": "DeleteOptions", "dryRun": ["All"]})
    answer = sim_api.request("DELETE", f"{CMS}/d", data=options, headers={"Content-Type": PB, "Accept": PB})
    assert answer.status_code == 200, answer.content
    assert sim_api.request("GET", f"{CMS}/d").status_code == 200, "dryRun from the protobuf body was honoured"


def test_a_watch_asked_for_protobuf_streams_length_prefixed_frames(sim_api: SimAPI) -> None:
    sim_api.request("POST", CMS, json=cm("w", k="v"))
    answer = sim_api.request("GET", f"{CMS}?watch=1&timeoutSeconds=1", headers={"Accept": f"{PB};stream=watch"})
    assert answer.headers["Content-Type"] == f"{PB};stream=watch"
    events = envelope.read_watch_frames(answer.content)
    assert [(kind, obj["metadata"]["name"]) for kind, obj in events] == [("ADDED", "w")]
    plain = sim_api.request("GET", f"{CMS}?watch=1&timeoutSeconds=1", headers={"Accept": PB})
    assert plain.headers["Content-Type"] == f"{PB};stream=watch", "protobuf without stream=watch streams too"


def test_custom_resources_stay_json_only(sim_api: SimAPI) -> None:
    client.ApiextensionsV1Api(sim_api.api).create_custom_resource_definition(registry_fixtures.lws_crd())
    lws = registry_fixtures.LWS
    path = f"/apis/{lws.group}/{lws.version}/namespaces/default/{lws.plural}"
    refused = sim_api.request("POST", path, data=envelope.encode_object(cm("x")), headers={"Content-Type": PB})
    assert refused.status_code == 415
    assert "custom resources are JSON only" in refused.json()["message"]
    fallback = sim_api.request("GET", path, headers={"Accept": f"{PB}, application/json"})
    assert fallback.status_code == 200 and fallback.json()["kind"].endswith("List")
    only_protobuf = sim_api.request("GET", path, headers={"Accept": PB})
    assert only_protobuf.status_code == 406  # as kube-apiserver: a Status, itself protobuf
    assert envelope.decode_object(only_protobuf.content)["reason"] == "NotAcceptable"
    missing = sim_api.request("GET", f"{path}/nope", headers={"Accept": f"{PB}, application/json"})
    assert missing.status_code == 404 and envelope.decode_object(missing.content)["reason"] == "NotFound"


def built_kubectl() -> Path:
    """The kubectl built with the real control plane (it sends protobuf), else the installed one."""
    built = Path.home() / ".cache/lwsconf/controlplane/1.37.2/bin/kubectl"
    return built if built.exists() else kubectl_path()


@pytest.mark.kubectl
@pytest.mark.slow
def test_kubectl_creates_and_gets_built_in_kinds_against_sim_up(tmp_path: Path) -> None:
    kubectl = built_kubectl()
    with sim_up(tmp_path) as env:
        def run(*args: str) -> subprocess.CompletedProcess[str]:
            done = subprocess.run([str(kubectl), *args], capture_output=True, text=True, env=env,
                                  timeout=KUBECTL_TIMEOUT_SECONDS, check=False)
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
            return done

        created = run("create", "namespace", "demo", "-v=8")
        assert f"Content-Type: {PB}" in created.stderr, "kubectl sent the namespace as protobuf"
        run("-n", "demo", "create", "configmap", "settings", "--from-literal=mode=fast")
        run("-n", "demo", "create", "deployment", "web", "--image=nginx", "--replicas=2")
        assert run("get", "namespace", "demo", "-o", "jsonpath={.status.phase}").stdout == "Active"
        assert run("-n", "demo", "get", "configmap", "settings", "-o", "jsonpath={.data.mode}").stdout == "fast"
        assert run("-n", "demo", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}").stdout == "2"
        assert "settings" in run("-n", "demo", "get", "configmaps").stdout

