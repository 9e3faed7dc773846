"""Legacy (non-aggregated) API discovery documents, rendered from the `Registry`.

kubectl 1.37 and the official client find out what the server offers before any real request:
`/version`, `/api` (`APIVersions`), `/apis` (`APIGroupList`), then one `APIResourceList` per
group-version (`/api/v1`, `/apis/G/V`). kubectl asks for aggregated discovery v2 first but falls back
to these documents when the reply is plain `application/json`, so aggregated discovery is not
implemented (seen with kubectl 1.37 at -v=6). Each resource lists its subresources
(`pods/status`, `statefulsets/scale`, ...) with the kinds and verbs kube-apiserver reports, because
kubectl and the client resolve `--subresource`, `scale` and `/status` writes through them.

Pure functions returning JSON-ready dicts: no I/O, no aiohttp here. The handlers serialize them.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.storage import resources

KUBE_MAJOR = "1"
KUBE_MINOR = "37"
GIT_VERSION = "v1.37.0-lwsconf-sim"

_STATUS_VERBS = ("get", "patch", "update")
_PROXY_VERBS = ("create", "delete", "get", "patch", "update")


@dataclass(frozen=True)
class _Sub:
    """How kube-apiserver advertises one subresource; `kind=""` means the parent's kind."""

    verbs: tuple[str, ...]
    kind: str = ""
    group: str | None = None
    version: str | None = None


_SUBRESOURCES: dict[str, _Sub] = {
    "status": _Sub(_STATUS_VERBS),
    "scale": _Sub(_STATUS_VERBS, kind="Scale", group="autoscaling", version="v1"),
    "log": _Sub(("get",)),
    "binding": _Sub(("create",), kind="Binding"),
    "eviction": _Sub(("create",), kind="Eviction", group="policy", version="v1"),
    "proxy": _Sub(_PROXY_VERBS),
    "finalize": _Sub(("update",)),
    "exec": _Sub(("create", "get"), kind="PodExecOptions"),
    "attach": _Sub(("create", "get"), kind="PodAttachOptions"),
    "portforward": _Sub(("create", "get"), kind="PodPortForwardOptions"),
}
_UNKNOWN_SUB = _Sub(("get",))


def version_info() -> dict[str, str]:
    """The `/version` document (`version.Info`); every field is a string, as kubectl expects.

    Returns:
        A dict that the typed client deserializes as `VersionInfo`.
    """
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": str(int(KUBE_MINOR) - 1),
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions(port: int) -> dict[str, Any]:
    """The `/api` document (`APIVersions`): the legacy core group serves only `v1`.

    Args:
        port: the loopback port the simulator listens on, echoed in `serverAddressByClientCIDRs`.
    """
    return {
        "kind": "APIVersions",
        "apiVersion": "v1",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}],
    }


def api_group_list(registry: resources.Registry) -> dict[str, Any]:
    """The `/apis` document (`APIGroupList`) covering every non-core group in the registry."""
    groups = [_group_doc(name, versions) for name, versions in registry.group_versions().items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: resources.Registry, group: str) -> dict[str, Any] | None:
    """The `/apis/G` document (`APIGroup`), or None when no resource of that group is served."""
    versions = registry.group_versions().get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def api_resource_list(registry: resources.Registry, group: str, version: str) -> dict[str, Any] | None:
    """The `/api/v1` or `/apis/G/V` document (`APIResourceList`), with subresource entries.

    Args:
        registry: the served resource types.
        group: "" for the core group.
        version: the version, e.g. "v1".

    Returns:
        The document, or None when the group-version is not served (the handler answers 404).
    """
    infos = registry.in_group_version(group, version)
    if not infos:
        return None
    entries: list[dict[str, Any]] = []
    for info in infos:
        entries.append(_resource_entry(info))
        entries.extend(_subresource_entry(info, sub) for sub in info.subresources)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": infos[0].group_version,
        "resources": entries,
    }


def storage_version_hash(info: resources.ResourceInfo) -> str:
    """A stable, opaque hash of the resource's storage group/version/kind (clients only compare it).

    Resources sharing storage (core and events.k8s.io events) share the hash: kube-apiserver hashes
    the storage group/version/kind (k8s.io/apiserver `pkg/endpoints/installer.go`,
    `discovery.StorageVersionHash(gvk.Group, gvk.Version, gvk.Kind)` of the storage versioner's GVK).
    """
    group, version = info.stored_as[:2] if info.stored_as is not None else (info.group, info.version)
    digest = hashlib.sha256(f"{group}/{version}/{info.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode("ascii")


def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def _resource_entry(info: resources.ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": info.plural,
        "singularName": info.singular_name,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": list(info.verbs),
        "storageVersionHash": storage_version_hash(info),
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    return entry


def _subresource_entry(info: resources.ResourceInfo, sub: str) -> dict[str, Any]:
    spec = _SUBRESOURCES.get(sub, _UNKNOWN_SUB)
    kind = spec.kind
    if sub == "proxy":
        kind = f"{info.kind}ProxyOptions"
    entry: dict[str, Any] = {
        "name": f"{info.plural}/{sub}",
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": kind or info.kind,
        "verbs": list(spec.verbs),
    }
    if spec.group is not None:
        entry["group"] = spec.group
    if spec.version is not None:
        entry["version"] = spec.version
    return entry
