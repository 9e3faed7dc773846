"""OpenAPI v3 documents: the checks kubectl runs on them, hashing, CRD schemas, and real `kubectl apply`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from lwsconf.sim.apiserver.schema import openapi, openapi_cache
from lwsconf.sim.apiserver.storage import resources
from tests.conftest import SimAPI, running_sim_api
from tests.sim.apiserver import kubectl_on_sim, registry_fixtures

LWS_GROUP = registry_fixtures.LWS_GROUP
SMP = "application/strategic-merge-patch+json"


@pytest.fixture
def registry() -> resources.Registry:
    return registry_fixtures.registry_with_lws()


def all_docs(registry: resources.Registry) -> Iterator[tuple[str, dict[str, Any]]]:
    for key in openapi.openapi_index(registry)["paths"]:
        gv = openapi.parse_gv_path(key)
        assert gv is not None
        doc = openapi.openapi_group_version(registry, *gv)
        assert doc is not None
        yield key, doc


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method in ("get", "put", "post", "patch", "delete"):
            if method in item:
                yield path, method, item[method]


def test_index_points_at_every_group_version_with_its_hash(registry: resources.Registry) -> None:
    paths = openapi.openapi_index(registry)["paths"]
    assert list(paths)[0] == "api/v1"
    assert {"apis/apps/v1", f"apis/{LWS_GROUP}/v1", "apis/apiextensions.k8s.io/v1"} <= set(paths)
    doc = openapi.openapi_group_version(registry, "apps", "v1")
    assert paths["apis/apps/v1"]["serverRelativeURL"] == f"/openapi/v3/apis/apps/v1?hash={openapi.document_hash(doc)}"


def test_hash_changes_only_for_the_group_version_that_changed(registry: resources.Registry) -> None:
    before = openapi.openapi_index(registry)["paths"]
    registry.add(resources.ResourceInfo(group=LWS_GROUP, version="v1", plural="widgets", kind="Widget",
                                        namespaced=True, crd_name="widgets." + LWS_GROUP, schema={"type": "object"}))
    after = openapi.openapi_index(registry)["paths"]
    assert after[f"apis/{LWS_GROUP}/v1"] != before[f"apis/{LWS_GROUP}/v1"]
    assert after["api/v1"] == before["api/v1"] and after["apis/apps/v1"] == before["apis/apps/v1"]
    assert openapi.openapi_index(registry) == openapi.openapi_index(registry)


def test_unknown_group_version_has_no_document(registry: resources.Registry) -> None:
    assert openapi.openapi_group_version(registry, "apps", "v1beta1") is None


@pytest.mark.parametrize(("path", "gv"), [("api/v1", ("", "v1")), ("apis/apps/v1", ("apps", "v1")),
                                          ("/apis/x.io/v2/", ("x.io", "v2")), ("apis/apps", None),
                                          ("version", None), ("api/v1/pods", None)])
def test_parse_gv_path(path: str, gv: tuple[str, str] | None) -> None:
    assert openapi.parse_gv_path(path) == gv
    if gv is not None:
        assert openapi.parse_gv_path(openapi.gv_path(*gv)) == gv


def test_every_write_operation_has_gvk_and_field_validation(registry: resources.Registry) -> None:
    """What kubectl's QueryParamVerifierV3 needs to skip client-side validation (wire facts 3a)."""
    for key, doc in all_docs(registry):
        for path, method, op in operations(doc):
            assert set(op["x-kubernetes-group-version-kind"]) == {"group", "version", "kind"}, (key, path)
            if method in ("post", "put", "patch"):
                query = {p["name"] for p in op["parameters"] if p["in"] == "query"}
                assert "fieldValidation" in query, (key, path, method)


def test_patch_media_types_agree_per_kind(registry: resources.Registry) -> None:
    """kubectl reads the first PATCH it finds for a GVK, in map order, so all must agree."""
    for _, doc in all_docs(registry):
        seen: dict[str, set[str]] = {}
        for _, method, op in operations(doc):
            if method == "patch":
                gvk = json.dumps(op["x-kubernetes-group-version-kind"], sort_keys=True)
                media = set(op["requestBody"]["content"])
                assert seen.setdefault(gvk, media) == media


def patch_media(doc: dict[str, Any] | None, path: str) -> set[str]:
    assert doc is not None
    return set(doc["paths"][path]["patch"]["requestBody"]["content"])


def test_strategic_merge_patch_only_for_built_ins(registry: resources.Registry) -> None:
    core = openapi.openapi_group_version(registry, "", "v1")
    lws = openapi.openapi_group_version(registry, LWS_GROUP, "v1")
    assert SMP in patch_media(core, "/api/v1/namespaces/{namespace}/pods/{name}")
    lws_item = f"/apis/{LWS_GROUP}/v1/namespaces/{{namespace}}/leaderworkersets/{{name}}"
    assert SMP not in patch_media(lws, lws_item)
    assert "application/merge-patch+json" in patch_media(lws, lws_item)


def test_paths_cover_collection_item_status_scale_and_cluster_forms(registry: resources.Registry) -> None:
    core = openapi.openapi_group_version(registry, "", "v1")
    lws = openapi.openapi_group_version(registry, LWS_GROUP, "v1")
    assert core is not None and lws is not None
    pods = "/api/v1/namespaces/{namespace}/pods"
    assert {pods, pods + "/{name}", pods + "/{name}/status", "/api/v1/pods"} <= set(core["paths"])
    assert {"/api/v1/nodes", "/api/v1/nodes/{name}", "/api/v1/nodes/{name}/status"} <= set(core["paths"])
    assert "/api/v1/namespaces/{namespace}/nodes" not in core["paths"]
    assert set(core["paths"]["/api/v1/pods"]) == {"parameters", "get"}
    scale = lws["paths"][f"/apis/{LWS_GROUP}/v1/namespaces/{{namespace}}/leaderworkersets/{{name}}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "version": "v1",
                                                                 "kind": "Scale"}
    assert {op["x-kubernetes-action"] for op in (core["paths"][pods][m] for m in ("get", "post", "delete"))} \
        == {"list", "post", "deletecollection"}


def test_every_ref_resolves(registry: resources.Registry) -> None:
    for key, doc in all_docs(registry):
        text = json.dumps(doc)
        refs = {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}
        assert refs and refs <= set(doc["components"]["schemas"]), key


def test_crd_schema_is_embedded_with_standard_fields(registry: resources.Registry) -> None:
    doc = openapi.openapi_group_version(registry, LWS_GROUP, "v1")
    assert doc is not None
    schema = doc["components"]["schemas"]["io.x-k8s.leaderworkerset.v1.LeaderWorkerSet"]
    assert schema["properties"]["spec"]["properties"]["replicas"] == {"type": "integer", "format": "int32"}
    assert schema["properties"]["kind"] == {"type": "string"}
    assert schema["properties"]["metadata"] == {"allOf": [{"$ref": "#/components/schemas/"
                                                                    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]}
    assert schema["x-kubernetes-group-version-kind"] == [{"group": LWS_GROUP, "version": "v1",
                                                          "kind": "LeaderWorkerSet"}]
    assert "apiVersion" not in registry_fixtures.LWS_SCHEMA["properties"], "the registry's schema was mutated"


def test_built_in_schema_is_permissive_without_schema_level_gvk(registry: resources.Registry) -> None:
    """With a GVK here kubectl would try our merge-key-less schema for strategic merge patches."""
    doc = openapi.openapi_group_version(registry, "apps", "v1")
    assert doc is not None
    sts = doc["components"]["schemas"]["io.k8s.api.apps.v1.StatefulSet"]
    assert sts == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


@pytest.mark.parametrize(("group", "kind", "name"), [
    ("", "Pod", "io.k8s.api.core.v1.Pod"),
    ("apps", "StatefulSet", "io.k8s.api.apps.v1.StatefulSet"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "io.x-k8s.leaderworkerset.v1.LeaderWorkerSet"),
])
def test_schema_name(group: str, kind: str, name: str) -> None:
    info = resources.ResourceInfo(group=group, version="v1", plural="x", kind=kind, namespaced=True)
    assert openapi.schema_name(info) == name


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: busybox, env: [{name: A, value: "1"}, {name: B, value: "2"}]}]
"""
LWS = f"""apiVersion: {LWS_GROUP}/v1
kind: LeaderWorkerSet
metadata: {{name: demo}}
spec: {{replicas: 2, leaderWorkerTemplate: {{size: 3}}}}
"""


def env_names(sim: SimAPI) -> list[str]:
    deployment = client.AppsV1Api(sim.api).read_namespaced_deployment("web", "default")
    return [e.name for e in deployment.spec.template.spec.containers[0].env]


@pytest.fixture(params=["generated", "upstream"])
def sim_api_docs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimAPI]:
    """A fresh API server serving built-ins the generated permissive documents, or Kubernetes' own ones
    (`lwsconf sim openapi fetch`, which `make test` runs; skipped when they are not installed)."""
    specs = None
    if request.param == "upstream":
        specs = openapi_cache.installed()
        if specs is None:
            pytest.skip(f"Kubernetes' OpenAPI documents are not installed: run `{openapi_cache.FETCH_COMMAND}`")
    with running_sim_api(tmp_path, openapi_specs=specs) as sim:
        yield sim


@pytest.mark.kubectl
def test_kubectl_apply_with_default_validation(sim_api_docs: SimAPI, tmp_path: Path) -> None:
    """kubectl validates against our OpenAPI, creates with fieldValidation=Strict, and patches built-ins
    with a strategic merge patch (keyed list items: another writer's env C survives removing B) but
    custom resources with a JSON merge patch. With Kubernetes' documents the merge keys come from them
    (no fallback warning on stderr); with the generated ones from kubectl's compiled-in types."""
    sim_api = sim_api_docs
    box = kubectl_on_sim.with_lws(sim_api, tmp_path / "home")

    def apply(manifest: str, expected: str) -> None:
        applied = box("apply", "-f", "-", stdin=manifest)
        assert (applied.returncode, applied.stdout.strip(), applied.stderr) == (0, expected, "")

    apply(DEPLOYMENT, "deployment.apps/web created")
    added = sim_api.request("PATCH", "/apis/apps/v1/namespaces/default/deployments/web",
                            headers={"Content-Type": "application/json-patch+json"},
                            json=[{"op": "add", "path": "/spec/template/spec/containers/0/env/-",
                                   "value": {"name": "C", "value": "3"}}])
    assert added.status_code == 200, added.text
    apply(DEPLOYMENT.replace(', {name: B, value: "2"}', ""), "deployment.apps/web configured")
    assert env_names(sim_api) == ["A", "C"], "B deleted by name, C (not in last-applied) kept"
    apply(LWS, "leaderworkerset.leaderworkerset.x-k8s.io/demo created")
    apply(LWS.replace("replicas: 2", "replicas: 3"), "leaderworkerset.leaderworkerset.x-k8s.io/demo configured")
    lws = client.CustomObjectsApi(sim_api.api).get_namespaced_custom_object(
        LWS_GROUP, "v1", "default", "leaderworkersets", "demo")
    assert lws["spec"] == {"replicas": 3, "leaderWorkerTemplate": {"size": 3}}

    assert box.sent("GET", "/openapi/v3") and box.sent("GET", f"/openapi/v3/apis/{LWS_GROUP}/v1")
    creates = box.sent("POST", "/deployments") + box.sent("POST", "/leaderworkersets")
    assert [kubectl_on_sim.query_of(r)["fieldValidation"] for r in creates] == ["Strict", "Strict"]
    (deployment_patch,) = box.sent("PATCH", "/deployments/web")
    assert deployment_patch.content_type == SMP
    (lws_patch,) = box.sent("PATCH", "/leaderworkersets/demo")
    assert lws_patch.content_type == "application/merge-patch+json"

    explained = box("explain", "lws.spec")
    assert explained.returncode == 0 and "replicas\t<integer>" in explained.stdout, explained.stderr
