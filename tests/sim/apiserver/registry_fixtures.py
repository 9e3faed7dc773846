"""A small LeaderWorkerSet-like CRD, and the registry entry it becomes, for discovery/OpenAPI/Table tests.

The pure unit tests feed `LWS` (or `registry_with_lws()`) straight to the document builders; the
kubectl tests create `lws_crd()` on the real server. `LWS` is derived from `lws_crd()` by the
server's own CRD code, so both kinds of test see the same resource. It is deliberately smaller than
`manifests/crd/leaderworkersets.yaml`: a few typed fields, a priority-1 printer column, and a
condition column, which is what the documents under test care about.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.schema import crds
from lwsconf.sim.apiserver.storage import resources

LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "leaderWorkerTemplate": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
LWS_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
    {"name": "Available", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Available")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Size", "type": "integer", "jsonPath": ".spec.leaderWorkerTemplate.size", "priority": 1},
)


def lws_crd() -> dict[str, Any]:
    """The CustomResourceDefinition (schema and columns shared by reference, never copied)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"leaderworkersets.{LWS_GROUP}"},
        "spec": {
            "group": LWS_GROUP, "scope": "Namespaced",
            "names": {"plural": "leaderworkersets", "singular": "leaderworkerset", "kind": "LeaderWorkerSet",
                      "listKind": "LeaderWorkerSetList", "shortNames": ["lws"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": LWS_SCHEMA},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                         "statusReplicasPath": ".status.replicas",
                                                         "labelSelectorPath": ".status.hpaPodSelector"}},
                "additionalPrinterColumns": list(LWS_COLUMNS),
            }],
        },
    }


(LWS,) = crds.resource_infos(lws_crd())


def registry_with_lws() -> resources.Registry:
    """The built-ins plus `LWS`, as the server's registry looks once the CRD is created."""
    registry = resources.Registry()
    registry.add(LWS)
    return registry


def lookup(registry: resources.Registry, plural: str, group: str = "", version: str = "v1") -> resources.ResourceInfo:
    found = registry.lookup(group, version, plural)
    assert found is not None, (group, version, plural)
    return found
