"""CustomResourceDefinitions: turning a CRD object into served resource types, and its status.

When a CRD is written the server (a) checks that it can serve it (names, one storage version,
structural schemas, CEL rules that compile), (b) registers one `ResourceInfo` per served version so
discovery, OpenAPI and routing see it at once, and (c) reports `Established` and `NamesAccepted`
conditions as the apiextensions controllers do. No I/O here.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, objects
from lwsconf.sim.apiserver.schema import cel, schema_check
from lwsconf.sim.apiserver.storage import resources

CUSTOM_RESOURCE_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
"""A custom resource's verbs in the order its discovery lists them (apiextensions-apiserver
pkg/apiserver/customresource_discovery_controller.go), unlike built-ins' sorted ones."""


def resource_infos(crd: dict[str, Any]) -> list[resources.ResourceInfo]:
    """One ResourceInfo per served version of the CRD."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subs = version.get("subresources") or {}
        scale = subs.get("scale")
        out.append(resources.ResourceInfo(
            group=spec["group"], version=version["name"], plural=names["plural"], kind=names["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            has_status="status" in subs,
            scale=None if scale is None else resources.ScaleSpec(
                spec_replicas_path=scale.get("specReplicasPath", ".spec.replicas"),
                status_replicas_path=scale.get("statusReplicasPath", ".status.replicas"),
                label_selector_path=scale.get("labelSelectorPath")),
            list_kind=names.get("listKind") or names["kind"] + "List",
            crd_name=crd["metadata"]["name"],
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            tracks_generation=True,
            verbs=CUSTOM_RESOURCE_VERBS,
        ))
    return out


def check(crd: dict[str, Any]) -> list[errors.Cause]:
    """Problems that stop the server from serving this CRD, as 422 causes."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[errors.Cause] = []
    group, plural = spec.get("group", ""), names.get("plural", "")
    if crd["metadata"].get("name") != f"{plural}.{group}":
        causes.append(errors.Cause("metadata.name", f'must be spec.names.plural+"."+spec.group: "{plural}.{group}"'))
    versions = spec.get("versions") or []
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(errors.Cause("spec.versions", "must have exactly one version marked as storage version"))
    for i, version in enumerate(versions):
        root = (version.get("schema") or {}).get("openAPIV3Schema")
        if root is None:
            causes.append(errors.Cause(f"spec.versions[{i}].schema.openAPIV3Schema", "Required value",
                                       "FieldValueRequired"))
            continue
        for cause in schema_check.validate_crd_schema(root):
            causes.append(errors.Cause(f"spec.versions[{i}].schema.openAPIV3Schema{_join(cause.field)}",
                                       cause.message, cause.reason))
        for cause in cel.check_rules(root):
            causes.append(errors.Cause(f"spec.versions[{i}].schema.openAPIV3Schema{_join(cause.field)}",
                                       cause.message, cause.reason))
    return causes


def _join(path: str) -> str:
    return "" if not path else ("." + path if not path.startswith(("[", ".")) else path)


def conflicts(registry: resources.Registry, crd: dict[str, Any]) -> list[errors.Cause]:
    """A CRD may not take over a built-in resource name."""
    spec = crd.get("spec") or {}
    plural = (spec.get("names") or {}).get("plural", "")
    for version in spec.get("versions") or []:
        existing = registry.lookup(spec.get("group", ""), version.get("name", ""), plural)
        if existing is not None and existing.crd_name != crd["metadata"]["name"]:
            return [errors.Cause("spec.names.plural", f"{plural} is already served in that group/version")]
    return []


def initial_status(crd: dict[str, Any]) -> dict[str, Any]:
    """The status a CRD is stored with, before any controller wrote it: the strategy's stored versions, Go's
    empty accepted names and no conditions (null)."""
    stored = [v["name"] for v in (crd.get("spec") or {}).get("versions") or [] if v.get("storage")]
    return {"acceptedNames": {"plural": "", "kind": ""}, "conditions": None, "storedVersions": stored}


def established_status(crd: dict[str, Any]) -> dict[str, Any]:
    """The status the apiextensions controllers converge to for an accepted CRD."""
    spec = crd["spec"]
    now = objects.now_rfc3339()
    names = dict(spec["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    old = crd.get("status") or {}
    return {
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "storedVersions": sorted(set(old.get("storedVersions") or []) | set(stored)),
    }
