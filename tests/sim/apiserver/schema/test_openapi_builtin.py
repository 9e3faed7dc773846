"""Kubernetes' OpenAPI documents on the sim: filtering and caching, the pinned cache, the fetch command's errors,
and what kubectl explain/apply do with them.

Every document here is made by the test (a small apps/v1 with test-written descriptions and merge keys),
never upstream's text; the real documents are exercised by the kubectl journey and `test_openapi`'s apply
test when they are installed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lwsconf.sim.apiserver.schema import openapi, openapi_builtin, openapi_cache
from lwsconf.sim.apiserver.schema.openapi_builtin import BuiltinSpecs
from lwsconf.sim.apiserver.storage import resources
from tests.conftest import SimAPI, running_sim_api
from tests.sim.apiserver import kubectl_on_sim

APPS = "apis/apps/v1"
REPLICAS_WORDS = "How many copies to run, in this test's own words."
ROOT = Path(__file__).resolve().parents[4]


def _obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


def _ref(name: str) -> dict[str, Any]:
    return {"allOf": [{"$ref": f"#/components/schemas/{name}"}]}


def fixture_apps_doc() -> dict[str, Any]:
    """apps/v1 as the sim generates its paths, with test-made Deployment types carrying a GVK and merge keys."""
    generated = openapi.openapi_group_version(resources.Registry(), "apps", "v1")
    assert generated is not None
    gvk = {"group": "apps", "version": "v1", "kind": "Deployment"}
    schemas = dict(generated["components"]["schemas"])
    schemas.update({
        "io.k8s.api.apps.v1.Deployment": _obj(
            {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
             "metadata": _ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
             "spec": _ref("test.DeploymentSpec")},
            description="A test-made Deployment.", **{"x-kubernetes-group-version-kind": [gvk]}),
        "test.DeploymentSpec": _obj({
            "replicas": {"type": "integer", "format": "int32", "description": REPLICAS_WORDS},
            "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "template": _ref("test.PodTemplateSpec")}, description="Test-made spec."),
        "test.PodTemplateSpec": _obj({"metadata": _ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                                      "spec": _ref("test.PodSpec")}),
        "test.PodSpec": _obj({"containers": {
            "type": "array", "items": _ref("test.Container"),
            "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}}),
        "test.Container": _obj({
            "name": {"type": "string"}, "image": {"type": "string"},
            "env": {"type": "array", "items": _ref("test.EnvVar"),
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}},
            required=["name"]),
        "test.EnvVar": _obj({"name": {"type": "string"}, "value": {"type": "string"}}, required=["name"]),
    })
    return {**generated, "info": {"title": "test", "version": "test"}, "components": {"schemas": schemas}}


def fixture_specs(docs: dict[str, dict[str, Any]] | None = None) -> tuple[BuiltinSpecs, list[str]]:
    """Specs over `docs` (default: the fixture apps/v1) and the list of keys the loader was asked for."""
    docs = {APPS: fixture_apps_doc()} if docs is None else docs
    asked: list[str] = []

    def load(key: str) -> bytes | None:
        asked.append(key)
        return json.dumps(docs[key]).encode()

    return BuiltinSpecs("v9.8.7", docs, load), asked


# --- pure: names, filtering, caching, index ---------------------------------------------------------------------

@pytest.mark.parametrize(("key", "name"), [("api/v1", "api__v1_openapi.json"),
                                           ("apis/apps/v1", "apis__apps__v1_openapi.json"),
                                           ("apis/resource.k8s.io/v1beta2",
                                            "apis__resource.k8s.io__v1beta2_openapi.json")])
def test_file_names_round_trip(key: str, name: str) -> None:
    assert openapi_builtin.file_name(key) == name
    assert openapi_builtin.key_of_file(name) == key


@pytest.mark.parametrize("name", ["apis__apps_openapi.json", "api_openapi.json", "version_openapi.json",
                                  "apis_openapi.json", "README.md"])
def test_group_and_root_documents_are_not_group_versions(name: str) -> None:
    assert openapi_builtin.key_of_file(name) is None


@pytest.mark.parametrize(("key", "path", "plural"), [
    ("api/v1", "/api/v1/", None),
    ("api/v1", "/api/v1/pods", "pods"),
    ("api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/log", "pods"),
    ("api/v1", "/api/v1/namespaces/{name}/finalize", "namespaces"),
    ("api/v1", "/api/v1/namespaces", "namespaces"),
    ("apis/apps/v1", "/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}", "deployments"),
    ("apis/apps/v1", "/apis/apps/v1/watch/statefulsets", "statefulsets"),
])
def test_resource_of_path(key: str, path: str, plural: str | None) -> None:
    assert openapi_builtin.resource_of_path(key, path) == plural


def test_only_served_resources_keep_their_paths_and_components_stay_whole() -> None:
    doc = {"openapi": "3.0.0", "paths": {"/apis/apps/v1/": {}, "/apis/apps/v1/deployments": {},
                                         "/apis/apps/v1/namespaces/{namespace}/widgets/{name}": {}},
           "components": {"schemas": {"A": {}, "B": {}}}}
    kept = openapi_builtin.filter_paths("apis/apps/v1", doc, ["deployments"])
    assert list(kept["paths"]) == ["/apis/apps/v1/", "/apis/apps/v1/deployments"]
    assert kept["components"] == doc["components"] and len(doc["paths"]) == 3, "the input is not changed"


def test_media_types_nobody_serves_are_left_out() -> None:
    """The published files list CBOR for every operation; a live kube-apiserver 1.37 (and the sim) none."""
    json_and_cbor: dict[str, Any] = {"application/json": {"schema": {}}, "application/cbor": {"schema": {}},
                     "application/cbor-seq": {}, "application/apply-patch+cbor": {}, "application/yaml": {}}
    doc: dict[str, Any] = {"info": {"title": "T", "version": "unversioned"}, "paths": {"/apis/apps/v1/deployments": {
        "get": {"responses": {"200": {"content": json_and_cbor}}},
        "post": {"requestBody": {"content": json_and_cbor}, "parameters": [{"name": "content"}]}}}}
    out = openapi_builtin.served_document("apis/apps/v1", doc, ["deployments"], "v1.37.2")
    item = out["paths"]["/apis/apps/v1/deployments"]
    assert list(item["get"]["responses"]["200"]["content"]) == ["application/json", "application/yaml"]
    assert list(item["post"]["requestBody"]["content"]) == ["application/json", "application/yaml"]
    assert item["post"]["parameters"] == [{"name": "content"}]
    assert out["info"] == {"title": "T", "version": "1.37"}
    assert "application/cbor" in doc["paths"]["/apis/apps/v1/deployments"]["get"]["responses"]["200"]["content"]


def test_served_bytes_are_cached_and_hashed_as_sent() -> None:
    specs, asked = fixture_specs()
    body, digest = specs.body_and_hash(APPS, ["deployments"]) or (b"", "")
    assert digest == hashlib.sha512(body).hexdigest().upper()
    assert specs.body_and_hash(APPS, ["deployments"]) == (body, digest)
    assert asked == [APPS], "parsed once per set of served resources"
    assert specs.body_and_hash("apis/batch/v1", ["jobs"]) is None and asked == [APPS], "no document: no read"


def test_index_and_documents_use_upstream_for_built_ins_and_generate_the_rest() -> None:
    registry = resources.Registry()
    specs, _ = fixture_specs()
    index = openapi.openapi_index(registry, specs)["paths"]
    served = [i.plural for i in registry.in_group_version("apps", "v1")]
    _, apps_hash = specs.body_and_hash(APPS, served) or (b"", "")
    assert index[APPS]["serverRelativeURL"] == f"/openapi/v3/{APPS}?hash={apps_hash}"
    assert index["api/v1"] == openapi.openapi_index(registry)["paths"]["api/v1"], "no document: generated"
    doc = openapi.openapi_group_version(registry, "apps", "v1", specs)
    assert doc is not None and doc["info"] == {"title": "test", "version": "9.8"}, "major.minor, as a live server"
    deployment = doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [{"group": "apps", "version": "v1", "kind": "Deployment"}]
    assert openapi.openapi_group_version_body(registry, "apps", "v1", specs) == json.dumps(
        doc, separators=(",", ":")).encode()
    assert openapi.openapi_group_version(registry, "apps", "v1beta1", specs) is None


# --- the cache: pin, install, load, first start -------------------------------------------------------------------

def make_module_zip(path: Path, docs: dict[str, dict[str, Any]], prefix: str) -> str:
    """A module zip holding `docs` under api/openapi-spec/v3 plus an unrelated file; returns its h1 hash."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{prefix}go.mod", "module k8s.io/kubernetes\n")
        archive.writestr(f"{prefix}api/openapi-spec/v3/apis__apps_openapi.json", "{}")
        for key, doc in docs.items():
            archive.writestr(f"{prefix}api/openapi-spec/v3/{openapi_builtin.file_name(key)}", json.dumps(doc))
    return openapi_cache.zip_hash(path)


@pytest.fixture
def pinned_zip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A test-made module zip in a Go module cache layout, pinned as the module (GOMODCACHE points at it)."""
    modcache = tmp_path / "gomodcache"
    folder = modcache / "cache" / "download" / openapi_cache.MODULE / "@v"
    folder.mkdir(parents=True)
    zip_path = folder / f"{openapi_cache.VERSION}.zip"
    digest = make_module_zip(zip_path, {APPS: fixture_apps_doc()},
                             f"{openapi_cache.MODULE}@{openapi_cache.VERSION}/")
    monkeypatch.setattr(openapi_cache, "ZIP_HASH", digest)
    monkeypatch.setenv("GOMODCACHE", str(modcache))
    yield zip_path


def test_pin_is_the_control_planes_go_sum_line() -> None:
    go_sum = (ROOT / "controlplane" / "k8s-1.37" / "go.sum").read_text().splitlines()
    assert f"{openapi_cache.MODULE} {openapi_cache.VERSION} {openapi_cache.ZIP_HASH}" in go_sum


def test_zip_hash_is_gos_h1_over_the_files(tmp_path: Path) -> None:
    """dirhash.Hash1: SHA-256 of the sorted 'sha256hex  name' lines, base64, prefixed h1:."""
    path = tmp_path / "m.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("m@v1/b.txt", "bee")
        archive.writestr("m@v1/a.txt", "ay")
    lines = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n"
                    for name, data in (("m@v1/a.txt", b"ay"), ("m@v1/b.txt", b"bee")))
    assert openapi_cache.zip_hash(path) == "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def test_real_module_zip_hash_matches_go_when_in_the_module_cache() -> None:
    found = openapi_cache.module_cache_zip()
    if found is None:
        pytest.skip(f"{openapi_cache.MODULE}@{openapi_cache.VERSION} is not in the Go module cache")
    assert openapi_cache.zip_hash(found) == openapi_cache.ZIP_HASH
    assert found.with_suffix(".ziphash").read_text().strip() == openapi_cache.ZIP_HASH


def test_install_writes_documents_and_manifest_and_loads_them(pinned_zip: Path, tmp_path: Path) -> None:
    dest = openapi_cache.install_from_zip(pinned_zip, tmp_path / "cache")
    assert sorted(p.name for p in dest.iterdir()) == ["apis__apps__v1_openapi.json", "manifest.json"]
    specs = openapi_cache.installed(dest)
    assert specs is not None and specs.keys == {APPS}
    assert openapi_cache.installed(dest) is specs, "one instance per folder and process"
    doc = specs.document(APPS, ["deployments"])
    assert doc is not None and "io.k8s.api.apps.v1.Deployment" in doc["components"]["schemas"]


def test_install_replaces_a_folder_without_a_valid_manifest(pinned_zip: Path, tmp_path: Path) -> None:
    """A folder left half-written by an interrupted older version, or a manifest of another pin, is replaced;
    a valid one (another sim won the race) is kept."""
    dest = tmp_path / "cache"
    dest.mkdir()
    (dest / "manifest.json").write_text('{"module": "k8s.io/kubernetes", "version": "v0.0.1"}')
    openapi_cache.install_from_zip(pinned_zip, dest)
    specs = openapi_cache.installed(dest)
    assert specs is not None and specs.keys == {APPS}
    before = (dest / "manifest.json").stat().st_mtime_ns
    openapi_cache.install_from_zip(pinned_zip, dest)
    assert (dest / "manifest.json").stat().st_mtime_ns == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [], "no scratch folder left"


def test_a_zip_that_is_not_the_pinned_one_is_refused(pinned_zip: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openapi_cache, "ZIP_HASH", "h1:somethingelse=")
    with pytest.raises(openapi_cache.FetchError, match=r"not the pinned h1:somethingelse= .*lwsconf sim openapi fetch"):
        openapi_cache.install_from_zip(pinned_zip, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_changed_document_is_not_served(pinned_zip: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    dest = openapi_cache.install_from_zip(pinned_zip, tmp_path / "cache")
    (dest / "apis__apps__v1_openapi.json").write_text('{"openapi": "3.0.0", "paths": {}}')
    specs = openapi_cache.installed(dest)
    assert specs is not None
    with caplog.at_level(logging.ERROR):
        assert specs.body_and_hash(APPS, ["deployments"]) is None
    assert "does not match its manifest" in caplog.text and "lwsconf sim openapi fetch" in caplog.text
    assert openapi.openapi_group_version(resources.Registry(), "apps", "v1", specs) == openapi.openapi_group_version(
        resources.Registry(), "apps", "v1"), "the generated document instead"


def test_sim_start_installs_from_a_warm_go_module_cache(pinned_zip: Path, tmp_path: Path) -> None:
    specs = openapi_cache.for_sim_start(tmp_path / "cache")
    assert specs is not None and specs.keys == {APPS}
    assert (tmp_path / "cache" / "manifest.json").is_file()


def test_sim_start_without_documents_says_once_what_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "empty"))
    monkeypatch.setattr(openapi_cache, "_warned", False)
    with caplog.at_level(logging.WARNING):
        assert openapi_cache.for_sim_start(tmp_path / "cache") is None
        assert openapi_cache.for_sim_start(tmp_path / "cache") is None
    lines = [r.getMessage() for r in caplog.records if r.name == "lwsconf.sim.apiserver.schema.openapi"]
    assert len(lines) == 1, lines
    assert "`kubectl explain` of them fails; run `lwsconf sim openapi fetch`" in lines[0]


# --- the fetch command: Go's answers ------------------------------------------------------------------------------

def fake_go(folder: Path, download_stdout: str, code: int) -> Path:
    """A `go` that reports Go 1.26 and answers `go mod download -json` with `download_stdout` (no ') and `code`."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "go"
    script.write_text("#!/bin/sh\n"
                      'if [ "$1" = env ]; then echo go1.26.0; exit 0; fi\n'
                      f"printf '%s\\n' '{download_stdout}'\n"  # a builtin: PATH may hold nothing else
                      f"exit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture
def no_module_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "empty-modcache"))


@pytest.mark.usefixtures("no_module_cache")
def test_fetch_without_go_is_one_actionable_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert openapi_cache.main(["fetch", "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("lwsconf sim openapi fetch: fetching Kubernetes' OpenAPI documents")
    assert "no `go` on PATH" in err[0] and "install it" in err[0]
    assert not (tmp_path / "cache").exists()


@pytest.mark.usefixtures("no_module_cache")
def test_fetch_refused_by_the_proxy_is_one_actionable_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    refusal = json.dumps({"Path": openapi_cache.MODULE, "Version": openapi_cache.VERSION,
                          "Error": f"{openapi_cache.MODULE}@{openapi_cache.VERSION}: reading "
                                   "http://127.0.0.1:9/k8s.io/kubernetes/@v/v1.37.2.zip: 403 Forbidden"})
    monkeypatch.setenv("PATH", str(fake_go(tmp_path / "bin", refusal, 1)))
    assert openapi_cache.main(["fetch", "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "`go mod download k8s.io/kubernetes@v1.37.2` failed: " in err[0] and "403 Forbidden" in err[0]
    assert "run `lwsconf sim openapi fetch` again once the Go module proxy (GOPROXY) serves the module" in err[0]


@pytest.mark.usefixtures("no_module_cache")
def test_fetch_when_go_prints_no_json_names_its_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(fake_go(tmp_path / "bin", "go: module cache not writable", 1)))
    with pytest.raises(openapi_cache.FetchError, match="failed: go: module cache not writable"):
        openapi_cache.fetch(dest=tmp_path / "cache")


def test_fetch_through_go_installs_the_zip_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    zip_path = tmp_path / "downloaded.zip"
    digest = make_module_zip(zip_path, {APPS: fixture_apps_doc()}, f"{openapi_cache.MODULE}@{openapi_cache.VERSION}/")
    monkeypatch.setattr(openapi_cache, "ZIP_HASH", digest)
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "empty-modcache"))
    answer = json.dumps({"Path": openapi_cache.MODULE, "Version": openapi_cache.VERSION, "Zip": str(zip_path)})
    monkeypatch.setenv("PATH", str(fake_go(tmp_path / "bin", answer, 0)) + os.pathsep + os.environ["PATH"])
    assert openapi_cache.main(["fetch", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert capsys.readouterr().out.strip() == (f"1 OpenAPI v3 documents of {openapi_cache.MODULE}@"
                                               f"{openapi_cache.VERSION} in {tmp_path / 'cache'}")
    assert openapi_cache.installed(tmp_path / "cache") is not None


# --- real kubectl against the fixture documents -------------------------------------------------------------------

@pytest.fixture
def sim_with_fixture_docs(tmp_path: Path) -> Iterator[SimAPI]:
    specs, _ = fixture_specs()
    with running_sim_api(tmp_path, openapi_specs=specs) as sim:
        yield sim


@pytest.mark.kubectl
def test_kubectl_explain_reads_the_served_schema(sim_with_fixture_docs: SimAPI, tmp_path: Path) -> None:
    box = kubectl_on_sim.KubectlOnSim(sim_with_fixture_docs, tmp_path / "home")
    kubectl_on_sim.kubectl_path()
    field = box("explain", "deployment.spec.replicas")
    assert field.returncode == 0, field.stderr
    assert "FIELD: replicas <integer>" in field.stdout and REPLICAS_WORDS in field.stdout
    versioned = box("explain", "deployments.spec.template.spec.containers.env", "--api-version=apps/v1")
    assert versioned.returncode == 0 and "FIELD: env <[]EnvVar>" in versioned.stdout, versioned.stderr
    recursive = box("explain", "deployment.spec", "--recursive")
    assert recursive.returncode == 0, recursive.stderr
    assert "template\t<PodTemplateSpec>" in recursive.stdout and "env\t<[]EnvVar>" in recursive.stdout
    core = box("explain", "pods")
    assert core.returncode == 1 and "not found in OpenAPI schema" in core.stderr, "api/v1 had no document: generated"


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


@pytest.mark.kubectl
def test_kubectl_apply_patches_by_the_served_merge_keys(sim_with_fixture_docs: SimAPI, tmp_path: Path) -> None:
    """kubectl computes the strategic merge patch from the served schema (no fallback warning) and the sim
    applies it: env B deleted by name, C (written by another client, not in last-applied) kept."""
    sim = sim_with_fixture_docs
    box = kubectl_on_sim.KubectlOnSim(sim, tmp_path / "home")
    kubectl_on_sim.kubectl_path()
    created = box("apply", "-f", "-", stdin=DEPLOYMENT)
    assert (created.returncode, created.stdout.strip(), created.stderr) == (0, "deployment.apps/web created", "")
    added = sim.request("PATCH", "/apis/apps/v1/namespaces/default/deployments/web",
                        headers={"Content-Type": "application/json-patch+json"},
                        json=[{"op": "add", "path": "/spec/template/spec/containers/0/env/-",
                               "value": {"name": "C", "value": "3"}}])
    assert added.status_code == 200, added.text
    changed = box("apply", "-f", "-", stdin=DEPLOYMENT.replace(', {name: B, value: "2"}', ""))
    assert (changed.returncode, changed.stdout.strip(), changed.stderr) == (0, "deployment.apps/web configured", "")
    (patch,) = box.sent("PATCH", "/deployments/web")
    assert patch.content_type == "application/strategic-merge-patch+json"
    got = sim.request("GET", "/apis/apps/v1/namespaces/default/deployments/web").json()
    assert [e["name"] for e in got["spec"]["template"]["spec"]["containers"][0]["env"]] == ["A", "C"]


# --- real kubectl against Kubernetes' documents, when installed -----------------------------------------------------

SMP_FIRST = """apiVersion: apps/v1
kind: Deployment
metadata: {name: smp, labels: {a: "1"}}
spec:
  replicas: 1
  selector: {matchLabels: {app: smp}}
  template:
    metadata: {labels: {app: smp}}
    spec:
      volumes: [{name: v1, emptyDir: {}}, {name: v2, emptyDir: {}}]
      tolerations: [{key: k1, operator: Exists}]
      containers:
      - {name: a, image: "img:1", ports: [{containerPort: 80, name: http}, {containerPort: 81, protocol: UDP}],
         env: [{name: E1, value: "1"}, {name: E2, value: "2"}],
         volumeMounts: [{name: v1, mountPath: /v1}, {name: v2, mountPath: /v2}]}
      - {name: b, image: "img:2", args: ["x", "y"]}
---
apiVersion: v1
kind: Service
metadata: {name: smp}
spec:
  selector: {app: smp}
  ports: [{name: p80, port: 80, targetPort: 80}, {name: p81, port: 81, protocol: UDP}]
"""
SMP_SECOND = """apiVersion: apps/v1
kind: Deployment
metadata: {name: smp, labels: {b: "2"}}
spec:
  replicas: 2
  selector: {matchLabels: {app: smp}}
  template:
    metadata: {labels: {app: smp}}
    spec:
      volumes: [{name: v2, emptyDir: {}}, {name: v3, configMap: {name: cm}}]
      tolerations: [{key: k2, operator: Exists}]
      containers:
      - {name: b, image: "img:3", args: ["z"]}
      - {name: a, image: "img:1", ports: [{containerPort: 81, protocol: UDP}, {containerPort: 82}],
         env: [{name: E2, value: "two"}, {name: E3, value: "3"}],
         volumeMounts: [{name: v2, mountPath: /v2}, {name: v3, mountPath: /v3}]}
---
apiVersion: v1
kind: Service
metadata: {name: smp}
spec:
  selector: {app: smp}
  ports: [{name: p81, port: 81, protocol: UDP}, {name: p90, port: 90, targetPort: 9090}]
"""


@pytest.fixture
def sim_with_upstream_docs(tmp_path: Path) -> Iterator[SimAPI]:
    specs = openapi_cache.installed()
    if specs is None:
        pytest.skip(f"Kubernetes' OpenAPI documents are not installed: run `{openapi_cache.FETCH_COMMAND}`")
    with running_sim_api(tmp_path, openapi_specs=specs) as sim:
        yield sim


@pytest.mark.kubectl
def test_kubectl_apply_by_kubernetes_merge_keys_ends_as_on_kube_apiserver(sim_with_upstream_docs: SimAPI,
                                                                         tmp_path: Path) -> None:
    """Two applies around another writer's strategic patch: containers reordered by name, ports keyed by
    containerPort (Service ports by port), env and volumeMounts by name/mountPath, tolerations and labels
    replaced per last-applied, the other writer's env E9 kept. The expected objects are what kube-apiserver
    1.37.2 left after the same commands with kubectl 1.37.2 (measured on the real control plane, 2026-12-03)."""
    sim = sim_with_upstream_docs
    box = kubectl_on_sim.KubectlOnSim(sim, tmp_path / "home")
    kubectl_on_sim.kubectl_path()
    first = box("apply", "-f", "-", stdin=SMP_FIRST)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    other = box("patch", "deployment", "smp", "--type=strategic", "-p", json.dumps({"spec": {"template": {"spec": {
        "containers": [{"name": "a", "env": [{"name": "E9", "value": "9"}]}],
        "tolerations": [{"key": "k9", "operator": "Exists"}]}}}}))
    assert other.returncode == 0, other.stderr
    second = box("apply", "-f", "-", stdin=SMP_SECOND)
    assert (second.returncode, second.stdout.split("\n")[:2], second.stderr) == (
        0, ["deployment.apps/smp configured", "service/smp configured"], "")

    deployment = sim.request("GET", "/apis/apps/v1/namespaces/default/deployments/smp").json()
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["metadata"]["labels"] == {"b": "2"} and deployment["spec"]["replicas"] == 2
    assert [(c["name"], c["image"]) for c in pod["containers"]] == [("b", "img:3"), ("a", "img:1")]
    b, a = pod["containers"]
    assert b["args"] == ["z"]
    assert a["env"] == [{"name": "E9", "value": "9"}, {"name": "E2", "value": "two"}, {"name": "E3", "value": "3"}]
    assert a["ports"] == [{"containerPort": 81, "protocol": "UDP"}, {"containerPort": 82, "protocol": "TCP"}]
    assert a["volumeMounts"] == [{"name": "v2", "mountPath": "/v2"}, {"name": "v3", "mountPath": "/v3"}]
    assert [v["name"] for v in pod["volumes"]] == ["v2", "v3"]
    assert pod["tolerations"] == [{"key": "k2", "operator": "Exists"}]
    service = sim.request("GET", "/api/v1/namespaces/default/services/smp").json()
    assert [(p["name"], p["port"], p["protocol"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("p81", 81, "UDP", 81), ("p90", 90, "TCP", 9090)]
