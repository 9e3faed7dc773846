"""The reference's DisaggregatedSet and DisaggregatedSetRoleScaler CustomResourceDefinitions, built from our LWS
CRD (contract sections 1.1-1.4 and 5). Pure: the LWS CRD as a dict in, the two CRDs out;
`lwsconf.disaggcrds` writes them to manifests/crd/.

Why built, not written by hand: a role's `spec` is an LWS spec, so its schema is the LWS CRD's, kept in step by
construction. Its CEL rules are left out (the DisaggregatedSet applies none of LWS's webhook rules to a role,
contract 1.2 and trap DT14); the set's own rules are CEL on the set (`RULES`), since the reference runs no
webhook. Rules not expressed yet (D-V16-D-V19, D-V21, D-V22, the External warning D-V25) are listed in
`NOT_YET` and belong to issue 34.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from lwsconf import disaggapi, lwsapi

Obj = dict[str, Any]
LABELS = {"app.kubernetes.io/name": "lwsconf-reference"}
ROLE_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
RULES: tuple[Obj, ...] = (
    {"rule": "self.roles.all(r, has(r.scaling) && r.scaling.mode == 'External') || "
             "self.roles.filter(r, !(has(r.scaling) && r.scaling.mode == 'External'))"
             ".all(r, has(r.spec) && has(r.spec.replicas) && r.spec.replicas == 0) || "
             "self.roles.filter(r, !(has(r.scaling) && r.scaling.mode == 'External'))"
             ".all(r, !has(r.spec) || !has(r.spec.replicas) || r.spec.replicas > 0)",
     "message": "replicas must be zero for all non-External roles or non-zero for all non-External roles"},  # D-V10
    {"rule": "self.roles.all(r, !has(r.spec) || !has(r.spec.rolloutStrategy) || "
             "!has(r.spec.rolloutStrategy.rollingUpdateConfiguration) || "
             "!has(r.spec.rolloutStrategy.rollingUpdateConfiguration.partition) || "
             "r.spec.rolloutStrategy.rollingUpdateConfiguration.partition == 0)",
     "message": "partition is not supported by DisaggregatedSet; rolling updates are managed across roles by the "
                "DisaggregatedSet controller"},  # D-V14
    {"rule": "!has(self.slices) || self.slices <= 1 || "
             "!self.roles.exists(r, has(r.scaling) && r.scaling.mode == 'External')",
     "message": "spec.slices > 1 is not supported while any role has scaling.mode: External (alpha restriction)",
     "fieldPath": ".slices"},  # D-V20
    {"rule": "!has(self.placementPolicy) || self.placementPolicy.type == 'None' || "
             "(has(self.placementPolicy.topology) && self.placementPolicy.topology != '')",
     "message": "topology is required when type is not None", "fieldPath": ".placementPolicy.topology"},  # D-V23
    {"rule": "!has(self.placementPolicy) || self.placementPolicy.type == 'None' || self.roles.all(r, "
             f"['{lwsapi.EXCLUSIVE_TOPOLOGY}', '{lwsapi.SUBGROUP_EXCLUSIVE_TOPOLOGY}'].all(k, "
             "!(has(r.metadata) && has(r.metadata.annotations) && k in r.metadata.annotations) && "
             "!(has(r.spec) && has(r.spec.leaderWorkerTemplate.workerTemplate.metadata) && "
             "has(r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations) && "
             "k in r.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations) && "
             "!(has(r.spec) && has(r.spec.leaderWorkerTemplate.leaderTemplate) && "
             "has(r.spec.leaderWorkerTemplate.leaderTemplate.metadata) && "
             "has(r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations) && "
             "k in r.spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations)))",
     "message": "a non-None spec.placementPolicy.type places the pods itself: no role may also carry the LWS "
                "exclusive-topology or subgroup-exclusive-topology annotation (role metadata, leader or worker "
                "template)"},  # D-V24
)
"""The set's own validation rules, CEL on `spec` (the contract's D-V numbers in the comments)."""
WEBHOOK_DEFAULTED = (("rolloutStrategy",), ("rolloutStrategy", "rollingUpdateConfiguration"), ("networkConfig",))
"""Objects our LWS CRD defaults in its schema (the reference has no LWS defaulting webhook) that upstream's LWS
webhook defaults instead, so a DisaggregatedSet role leaves them unset: a role naming no rolloutStrategy rolls with
the planner's own 1/0 (contract DT5), and the child LWS is defaulted as it is created. Found by
DisaggregatedSetRollsRolesTogether against upstream v0.9.0 (its schema: no default on these objects)."""
NOT_YET = ("D-V16", "D-V17", "D-V18", "D-V19", "D-V21", "D-V22", "D-V25")


def _without_cel(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_cel(v) for k, v in schema.items() if k != "x-kubernetes-validations"}
    if isinstance(schema, list):
        return [_without_cel(v) for v in schema]
    return schema


def _conditions(lws_crd: Mapping[str, Any]) -> Obj:
    status = lws_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    out: Obj = copy.deepcopy(status["properties"]["conditions"])
    out.pop("description", None)
    return out


def _crd(plural: str, kind: str, schema: Obj, subresources: Obj, columns: list[Obj] | None = None,
         short: list[str] | None = None) -> Obj:
    names: Obj = {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": kind.lower()}
    if short:
        names["shortNames"] = short
    version: Obj = {"name": disaggapi.VERSION, "served": True, "storage": True, "subresources": subresources,
                    "schema": {"openAPIV3Schema": schema}}
    if columns:
        version["additionalPrinterColumns"] = columns
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{disaggapi.GROUP}", "labels": dict(LABELS)},
            "spec": {"group": disaggapi.GROUP, "scope": "Namespaced", "names": names, "versions": [version]}}


def disaggregatedset(lws_crd: Mapping[str, Any]) -> Obj:
    """The DisaggregatedSet CRD (1.1-1.4): roles 2..10 keyed by name, each an LWS spec; slices; placement."""
    lws_spec = _without_cel(lws_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    lws_spec.pop("description", None)
    for path in WEBHOOK_DEFAULTED:  # contract 1.2-1.3: upstream's schema has no default for these objects
        node = lws_spec
        for key in path:
            node = node["properties"][key]
        node.pop("default", None)
    role = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 63, "pattern": ROLE_NAME_PATTERN},
        "scaling": {"type": "object", "properties": {"mode": {
            "type": "string", "enum": [disaggapi.SCALING_STATIC, disaggapi.SCALING_EXTERNAL],
            "default": disaggapi.SCALING_STATIC}}},
        "metadata": {"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "name": {"type": "string"}, "namespace": {"type": "string"},
            "finalizers": {"type": "array", "items": {"type": "string"}}}},
        "spec": lws_spec}}
    spec = {"type": "object", "required": ["roles"], "x-kubernetes-validations": [dict(r) for r in RULES],
            "properties": {
                "roles": {"type": "array", "minItems": 2, "maxItems": 10, "items": role,
                          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
                "slices": {"type": "integer", "format": "int32", "default": 1, "minimum": 1, "maximum": 100},
                "placementPolicy": {"type": "object", "properties": {
                    "type": {"type": "string", "default": disaggapi.PLACEMENT_NONE,
                             "enum": [disaggapi.PLACEMENT_NONE, disaggapi.PLACEMENT_EXCLUSIVE_SLICE,
                                      disaggapi.PLACEMENT_EXCLUSIVE_TOPOLOGY]},
                    "topology": {"type": "string"}}}}}
    count = {"type": "integer", "format": "int32"}
    status = {"type": "object", "properties": {
        "observedGeneration": {"type": "integer", "format": "int64"},
        "roleStatuses": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "object", "required": ["name"], "properties": {
                             "name": {"type": "string"}, "replicas": count, "readyReplicas": count,
                             "updatedReplicas": count}}},
        "conditions": _conditions(lws_crd)}}
    schema = {"type": "object", "required": ["spec"], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": spec, "status": status}}
    return _crd(disaggapi.PLURAL, disaggapi.KIND, schema, {"status": {}})


def rolescaler(lws_crd: Mapping[str, Any]) -> Obj:
    """The DisaggregatedSetRoleScaler CRD (1.1, 1.4): spec.replicas behind a scale subresource an HPA drives."""
    schema = {"type": "object", "required": ["spec"], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["replicas"], "properties": {
            "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 0}}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer", "format": "int32"}, "selector": {"type": "string"},
            "observedGeneration": {"type": "integer", "format": "int64"}, "conditions": _conditions(lws_crd)}}}}
    columns = [{"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
               {"name": "Current", "type": "integer", "jsonPath": ".status.replicas"},
               {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return _crd(disaggapi.SCALER_PLURAL, disaggapi.SCALER_KIND, schema,
                {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                                         "labelSelectorPath": ".status.selector"}},
                columns, short=["dsrs"])
