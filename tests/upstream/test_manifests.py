"""Upstream's CRDs and webhook configurations as lwsconf installs them, from a small LWS-shaped tree and
(when the Go module cache holds it) from the real v0.9.0 module."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from lwsconf.upstream import install, manifests

HOOKS = """---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- name: mlws.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-lws}
  rules: [{apiGroups: [leaderworkerset.x-k8s.io], apiVersions: [v1], operations: [CREATE], \
resources: [leaderworkersets]}]
- name: mpod.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- name: vlws.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-lws}
"""
PATCH = """- op: add
  path: /webhooks/1/objectSelector
  value: {matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]}
"""
KUSTOMIZATION = """resources: [manifests.yaml]
patches:
- path: mutating-patch.yaml
  target: {group: admissionregistration.k8s.io, version: v1, kind: MutatingWebhookConfiguration,
           name: mutating-webhook-configuration}
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    hooks = tmp_path / "config" / "webhook"
    hooks.mkdir(parents=True)
    (hooks / "manifests.yaml").write_text(HOOKS)
    (hooks / "mutating-patch.yaml").write_text(PATCH)
    (hooks / "kustomization.yaml").write_text(KUSTOMIZATION)
    bases = tmp_path / "config" / "crd" / "bases"
    bases.mkdir(parents=True)
    (bases / "lws.yaml").write_text(yaml.safe_dump({"apiVersion": "apiextensions.k8s.io/v1",
                                                    "kind": "CustomResourceDefinition",
                                                    "metadata": {"name": install.LWS_CRD}}))
    return tmp_path


def test_webhooks_are_patched_as_upstream_kustomizes_them_and_pointed_at_us(tree: Path) -> None:
    docs = manifests.webhook_configurations(tree, "https://127.0.0.1:4443/", b"PEM")
    assert [d["metadata"] for d in docs] == [{"name": "lws-mutating-webhook-configuration"},
                                             {"name": "lws-validating-webhook-configuration"}]
    hooks = {h["name"]: h for d in docs for h in d["webhooks"]}
    assert hooks["mpod.kb.io"]["objectSelector"] == {"matchExpressions": [
        {"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]}
    assert "objectSelector" not in hooks["mlws.kb.io"]
    assert hooks["vlws.kb.io"]["clientConfig"] == {"url": "https://127.0.0.1:4443/validate-lws",
                                                   "caBundle": base64.b64encode(b"PEM").decode()}
    assert all("service" not in h["clientConfig"] for h in hooks.values())


def test_a_tree_without_the_lws_crd_is_refused_naming_the_folder(tree: Path) -> None:
    (tree / "config" / "crd" / "bases" / "lws.yaml").unlink()
    with pytest.raises(manifests.ManifestError, match=r"no LeaderWorkerSet CRD in .*config/crd/bases"):
        manifests.crds(tree)


def test_a_tree_without_webhooks_is_refused(tree: Path) -> None:
    (tree / "config" / "webhook" / "manifests.yaml").write_text("---\n")
    with pytest.raises(manifests.ManifestError, match="no webhook configuration in"):
        manifests.webhook_configurations(tree, "https://127.0.0.1:1", b"")


V090 = Path.home() / "go" / "pkg" / "mod" / "sigs.k8s.io" / "lws@v0.9.0"


@pytest.mark.skipif(not (V090 / "config").is_dir(), reason=f"no {V090} in the Go module cache")
def test_the_real_v0_9_0_files() -> None:
    assert sorted(c["metadata"]["name"] for c in manifests.crds(V090)) == [
        "disaggregatedsets.disaggregatedset.x-k8s.io", install.LWS_CRD]
    docs = manifests.webhook_configurations(V090, "https://127.0.0.1:9", b"x")
    pods = [h for d in docs for h in d["webhooks"] if h["name"] in ("mpod.kb.io", "vpod.kb.io")]
    assert len(pods) == 2
    assert all(h["objectSelector"]["matchExpressions"][0]["key"] == "leaderworkerset.sigs.k8s.io/name" for h in pods)


def test_the_protobuf_probe_is_kubernetes_wire_form() -> None:
    body = install.protobuf_config_map("ab")
    # magic, Unknown.typeMeta{apiVersion "v1", kind "ConfigMap"}, Unknown.raw = ConfigMap{metadata{name "ab"}}
    assert body == (b"k8s\x00" + b"\x0a\x0f" + b"\x0a\x02v1" + b"\x12\x09ConfigMap"
                    + b"\x12\x06" + b"\x0a\x04" + b"\x0a\x02ab")
