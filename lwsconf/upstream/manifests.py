"""Upstream's CRDs and webhook configurations, read from the module's own files and pointed at us.

Read at run time from the module's folder (the Go module cache, or a checkout); nothing of them is in
our repo. The webhook configurations are upstream's `config/webhook/manifests.yaml` with the patches
its `config/webhook/kustomization.yaml` applies (v0.9.0: the pod webhooks gain an objectSelector on
the `leaderworkerset.sigs.k8s.io/name` label, so they see only LWS pods), the name prefix of
`config/default/kustomization.yaml` (`lws-`, so the names are the release manifest's), and, instead of
the in-cluster `webhook-service`, `clientConfig.url` = https://127.0.0.1:PORT/<the service's path> with
our CA bundle. The CRDs are `config/crd/bases/*.yaml` as they are: the release's conversion-webhook
patch (config/crd/patches/webhook_in_leaderworkersets.yaml) is left out, since each CRD serves one
version and the API server never calls a conversion webhook for a single-version CRD.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

from lwsconf import lwsapi

NAME_PREFIX = "lws-"
"""config/default/kustomization.yaml's namePrefix."""
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


class ManifestError(Exception):
    """Upstream's files are missing or not what this module expects; the message names the file."""


def _load_all(path: Path) -> list[dict[str, Any]]:
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise ManifestError(f"cannot read upstream's {path}: {exc}") from None
    return [d for d in docs if isinstance(d, dict)]


def crds(module_dir: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in config/crd/bases (LeaderWorkerSet and, in v0.9.0, DisaggregatedSet)."""
    folder = module_dir / "config" / "crd" / "bases"
    found = [d for path in sorted(folder.glob("*.yaml")) for d in _load_all(path)
             if d.get("kind") == "CustomResourceDefinition"]
    if not any(d["metadata"]["name"] == lwsapi.CRD_NAME for d in found):
        raise ManifestError(f"no LeaderWorkerSet CRD in {folder}: is {module_dir} an LWS source tree?")
    return found


def _patches(webhook_dir: Path) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(target, JSON patch) pairs of config/webhook/kustomization.yaml."""
    kustomization = _load_all(webhook_dir / "kustomization.yaml")
    out = []
    for entry in (kustomization[0].get("patches") or []) if kustomization else []:
        ops = yaml.safe_load((webhook_dir / entry["path"]).read_text())
        if not isinstance(ops, list):
            raise ManifestError(f"{webhook_dir / entry['path']} is not a JSON 6902 patch (a list of operations)")
        out.append((entry.get("target") or {}, ops))
    return out


def _matches(target: dict[str, Any], doc: dict[str, Any]) -> bool:
    return (target.get("kind") in (None, doc.get("kind"))
            and target.get("name") in (None, doc["metadata"].get("name")))


def webhook_configurations(module_dir: Path, base_url: str, ca_bundle: bytes) -> list[dict[str, Any]]:
    """Upstream's webhook configurations, patched as its kustomization does and pointed at `base_url`."""
    webhook_dir = module_dir / "config" / "webhook"
    docs = [d for d in _load_all(webhook_dir / "manifests.yaml") if d.get("kind") in WEBHOOK_KINDS]
    if not docs:
        raise ManifestError(f"no webhook configuration in {webhook_dir / 'manifests.yaml'}")
    patches = _patches(webhook_dir)
    out = []
    for doc in docs:
        for target, ops in patches:
            if _matches(target, doc):
                doc = jsonpatch.apply_patch(doc, ops)
        out.append(_pointed(doc, base_url, ca_bundle))
    return out


def _pointed(doc: dict[str, Any], base_url: str, ca_bundle: bytes) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"] = {"name": NAME_PREFIX + doc["metadata"]["name"]}
    for hook in doc.get("webhooks") or []:
        path = ((hook.get("clientConfig") or {}).get("service") or {}).get("path") or "/"
        hook["clientConfig"] = {"url": base_url.rstrip("/") + path,
                                "caBundle": base64.b64encode(ca_bundle).decode()}
    return doc
