"""Discovery documents: strict typed-client deserialization, subresource entries, and real kubectl."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from lwsconf.sim.apiserver.schema import discovery
from lwsconf.sim.apiserver.storage import resources
from tests.conftest import SimAPI
from tests.sim.apiserver import kubectl_on_sim, registry_fixtures

API = client.ApiClient()


def typed(doc: dict[str, Any] | None, model: str) -> Any:
    """Deserialize as the v37 client does for a response body (pydantic-strict)."""
    assert doc is not None
    return API.deserialize(json.dumps(doc), model, "application/json")


@pytest.fixture
def registry() -> resources.Registry:
    return registry_fixtures.registry_with_lws()


def test_version_info_is_all_strings_and_parses_as_version_info() -> None:
    info = typed(discovery.version_info(), "VersionInfo")
    assert (info.major, info.minor, info.git_version) == ("1", "37", "v1.37.0-lwsconf-sim")
    assert info.platform == "linux/amd64"
    assert all(isinstance(v, str) for v in discovery.version_info().values())


def test_core_versions_advertise_v1_at_the_loopback_port() -> None:
    versions = typed(discovery.core_versions(40123), "V1APIVersions")
    assert versions.versions == ["v1"]
    assert versions.server_address_by_client_cidrs[0].server_address == "127.0.0.1:40123"
    assert versions.server_address_by_client_cidrs[0].client_cidr == "0.0.0.0/0"


def test_group_list_has_every_non_core_group_with_first_version_preferred(
    registry: resources.Registry,
) -> None:
    registry.add(resources.ResourceInfo(group="leaderworkerset.x-k8s.io", version="v2alpha1",
                                        plural="leaderworkersets", kind="LeaderWorkerSet", namespaced=True))
    groups = {g.name: g for g in typed(discovery.api_group_list(registry), "V1APIGroupList").groups}
    assert "" not in groups
    assert {"apps", "leaderworkerset.x-k8s.io", "apiextensions.k8s.io"} <= set(groups)
    lws = groups["leaderworkerset.x-k8s.io"]
    assert [v.group_version for v in lws.versions] == ["leaderworkerset.x-k8s.io/v1",
                                                       "leaderworkerset.x-k8s.io/v2alpha1"]
    assert lws.preferred_version.version == "v1"


def test_group_document_or_none(registry: resources.Registry) -> None:
    group = typed(discovery.api_group(registry, "apps"), "V1APIGroup")
    assert (group.name, group.preferred_version.group_version) == ("apps", "apps/v1")
    assert discovery.api_group(registry, "no.such.group") is None


def test_removed_crd_group_disappears(registry: resources.Registry) -> None:
    registry.remove_crd(registry_fixtures.LWS.crd_name or "")
    names = [g["name"] for g in discovery.api_group_list(registry)["groups"]]
    assert "leaderworkerset.x-k8s.io" not in names
    assert discovery.api_resource_list(registry, "leaderworkerset.x-k8s.io", "v1") is None


def test_every_resource_list_parses_strictly(registry: resources.Registry) -> None:
    gvs = [("", "v1")] + [(g, v) for g, vs in registry.group_versions().items() for v in vs]
    for group, version in gvs:
        doc = typed(discovery.api_resource_list(registry, group, version), "V1APIResourceList")
        assert doc.group_version == (f"{group}/{version}" if group else version)


def test_unknown_group_version_has_no_resource_list(registry: resources.Registry) -> None:
    assert discovery.api_resource_list(registry, "apps", "v1beta1") is None


def test_top_level_resource_entry(registry: resources.Registry) -> None:
    doc = typed(discovery.api_resource_list(registry, "", "v1"), "V1APIResourceList")
    pods = next(r for r in doc.resources if r.name == "pods")
    assert (pods.singular_name, pods.kind, pods.namespaced) == ("pod", "Pod", True)
    assert pods.short_names == ["po"] and pods.categories == ["all"]
    assert pods.verbs == list(resources.ALL_VERBS)
    assert pods.storage_version_hash == discovery.storage_version_hash(registry_fixtures.lookup(registry, "pods"))
    nodes = next(r for r in doc.resources if r.name == "nodes")
    assert nodes.namespaced is False


@dataclass(frozen=True)
class Sub:
    group: str
    name: str
    kind: str
    verbs: tuple[str, ...]
    sub_group: str | None = None
    sub_version: str | None = None


_RW = ("get", "patch", "update")
_PROXY = ("create", "delete", "get", "patch", "update")
SUBRESOURCES = [
    Sub("", "pods/status", "Pod", _RW),
    Sub("", "pods/log", "Pod", ("get",)),
    Sub("", "pods/binding", "Binding", ("create",)),
    Sub("", "pods/eviction", "Eviction", ("create",), "policy", "v1"),
    Sub("", "pods/proxy", "PodProxyOptions", _PROXY),
    Sub("", "services/proxy", "ServiceProxyOptions", _PROXY),
    Sub("", "nodes/proxy", "NodeProxyOptions", _PROXY),
    Sub("", "nodes/status", "Node", _RW),
    Sub("", "namespaces/finalize", "Namespace", ("update",)),
    Sub("", "namespaces/status", "Namespace", _RW),
    Sub("apps", "statefulsets/scale", "Scale", _RW, "autoscaling", "v1"),
    Sub("apps", "statefulsets/status", "StatefulSet", _RW),
    Sub("leaderworkerset.x-k8s.io", "leaderworkersets/scale", "Scale", _RW, "autoscaling", "v1"),
    Sub("leaderworkerset.x-k8s.io", "leaderworkersets/status", "LeaderWorkerSet", _RW),
]


@pytest.mark.parametrize("sub", SUBRESOURCES, ids=lambda s: s.name)
def test_subresource_entry(registry: resources.Registry, sub: Sub) -> None:
    doc = typed(discovery.api_resource_list(registry, sub.group, "v1"), "V1APIResourceList")
    entry = next(r for r in doc.resources if r.name == sub.name)
    assert (entry.kind, tuple(entry.verbs)) == (sub.kind, sub.verbs)
    assert (entry.group, entry.version) == (sub.sub_group, sub.sub_version)
    assert entry.singular_name == ""


def test_no_subresource_entries_for_resources_without_them(registry: resources.Registry) -> None:
    names = [r.name for r in typed(discovery.api_resource_list(registry, "", "v1"), "V1APIResourceList").resources]
    assert not [n for n in names if n.startswith(("configmaps/", "secrets/"))]


def test_storage_version_hash_is_stable_and_per_kind(registry: resources.Registry) -> None:
    pods = registry_fixtures.lookup(registry, "pods")
    sts = registry_fixtures.lookup(registry, "statefulsets", "apps")
    assert discovery.storage_version_hash(pods) == discovery.storage_version_hash(pods)
    assert discovery.storage_version_hash(pods) != discovery.storage_version_hash(sts)


@pytest.mark.kubectl
def test_kubectl_discovers_resources_and_lists_pods(sim_api: SimAPI, tmp_path: Path) -> None:
    box = kubectl_on_sim.with_lws(sim_api, tmp_path / "home")
    assert client.VersionApi(sim_api.api).get_code().git_version == discovery.GIT_VERSION
    assert client.CoreApi(sim_api.api).get_api_versions().versions == ["v1"]
    assert any(r.name == "pods/status" for r in client.CoreV1Api(sim_api.api).get_api_resources().resources)

    listed = box("api-resources")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
    assert rows["leaderworkersets"][1:] == ["lws", "leaderworkerset.x-k8s.io/v1", "true", "LeaderWorkerSet"]
    assert rows["statefulsets"][1:] == ["sts", "apps/v1", "true", "StatefulSet"]
    assert box.sent("GET", "/apis") and box.sent("GET", "/apis/leaderworkerset.x-k8s.io/v1")

    got = box("get", "pods")
    assert (got.returncode, got.stderr.strip()) == (0, "No resources found in default namespace.")
    by_short_name = box("get", "lws")
    assert (by_short_name.returncode, by_short_name.stderr.strip()) == (0, "No resources found in default namespace.")
    (lws_list,) = box.sent("GET", "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets")
    assert (lws_list.status, lws_list.namespace) == (200, "default")
