"""CRUD of core, apps and coordination objects: create, read, list, replace, duplicate create,
delete, read after delete; the same seven interactions for each kind."""

from __future__ import annotations

from typing import Any

from lwsconf.fidelity.corpus._build import (
    APPS,
    CORE,
    configmap,
    create,
    daemonset,
    delete,
    deployment,
    get,
    lease,
    pod,
    put,
    replicaset,
    secret,
    service,
    service_account,
    statefulset,
)
from lwsconf.fidelity.model import Scenario, Step

KINDS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("configmaps", f"{CORE}/configmaps", configmap("c1", {"k": "v"})),
    ("secrets", f"{CORE}/secrets", secret("s1")),
    ("services", f"{CORE}/services", service("svc1")),
    ("pods", f"{CORE}/pods", pod("p1", {"app": "p1"})),
    ("serviceaccounts", f"{CORE}/serviceaccounts", service_account("sa1")),
    ("deployments", f"{APPS}/deployments", deployment("d1")),
    ("replicasets", f"{APPS}/replicasets", replicaset("rs1")),
    ("statefulsets", f"{APPS}/statefulsets", statefulset("ss1")),
    ("daemonsets", f"{APPS}/daemonsets", daemonset("ds1")),
    ("leases", "/apis/coordination.k8s.io/v1/namespaces/${ns}/leases", lease("l1")),
)


def _relabelled(obj: dict[str, Any]) -> dict[str, Any]:
    out = {**obj, "metadata": {**obj["metadata"], "labels": {"changed": "yes"}, "resourceVersion": "${rv}"}}
    return out


def crud(plural: str, collection: str, obj: dict[str, Any]) -> Scenario:
    item = f"{collection}/{obj['metadata']['name']}"
    steps = (
        create("create", collection, obj, save={"rv": "metadata.resourceVersion", "uid": "metadata.uid"}),
        get("get", item),
        get("list", collection),
        put("replace", item, _relabelled(obj)),
        create("create-again", collection, obj),
        delete("delete", item),
        get("get-deleted", item),
    )
    return Scenario("crud", f"crud-{plural}", steps)


SCENARIOS: tuple[Scenario, ...] = (
    *(crud(*kind) for kind in KINDS),
    Scenario("crud", "crud-cluster-scoped", (
        get("namespace-default", "/api/v1/namespaces/default"),
        get("namespace-missing", "/api/v1/namespaces/nope"),
        Step("namespace-create-generate", "POST", "/api/v1/namespaces",
             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "gen-"}}),
        get("list-default-configmaps-by-name", "/api/v1/namespaces/${ns}/configmaps",
            query={"fieldSelector": "metadata.name=nothing"}),
        create("generate-name-configmap", f"{CORE}/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cfg-"}}),
        get("namespace-of-scenario", "/api/v1/namespaces/${ns}"),
    )),
)
