"""Controller scenarios, compared on outcomes and event sequences rather than timing: StatefulSet
create, ordered start, scale down, pod deletion and recreation; garbage collection (background,
orphan, foreground); EndpointSlices of a selector Service and a headless one with ready and not-ready
pods. No kubelet runs on either side: pod status is written through the status subresource, as
envtest-style tests do, and every wait is an `until` on an observable state."""

from __future__ import annotations

from typing import Any

from lwsconf.fidelity.corpus._build import (
    APPS,
    CORE,
    configmap,
    create,
    delete,
    get,
    patch,
    pod,
    service,
    statefulset,
)
from lwsconf.fidelity.model import MERGE, STRATEGIC, Scenario, Step, Until

PODS = f"{CORE}/pods"
CMS = f"{CORE}/configmaps"
STS = f"{APPS}/statefulsets/web"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices"


def _ready(name: str, ip: str, ready: bool = True) -> Step:
    status = {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                         "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    return patch(f"{name}-status", f"{PODS}/{name}/status", status, STRATEGIC)


def _until(name: str, path: str, at: str, value: Any) -> Step:
    return Step(name, "GET", path, until=Until(at, value, 90.0))


def _pod_events(name: str, **query: str) -> Step:
    return Step(name, "GET", PODS, query={"watch": "true", "timeoutSeconds": "2", "resourceVersion": "${start}",
                                          **query}, watch=True, events="names")


def _owned(name: str, owner: str, **extra: Any) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "${" + owner + "}", **extra}
    return configmap(name, ownerReferences=[ref])


STATEFULSET = Scenario("controllers", "ctl-statefulset", (
    get("start", PODS, save={"start": "metadata.resourceVersion"}),
    create("create", f"{APPS}/statefulsets", statefulset("web", replicas=2)),
    _until("first-pod", f"{PODS}/web-0", "code", 200),
    get("second-waits-for-first", f"{PODS}/web-1"),
    _ready("web-0", "10.9.0.1"),
    _until("second-pod", f"{PODS}/web-1", "code", 200),
    _ready("web-1", "10.9.0.2"),
    _until("ready-replicas", STS, "body.status.readyReplicas", 2),
    patch("scale-down", STS, {"spec": {"replicas": 1}}, MERGE),
    _until("web-1-removed", f"{PODS}/web-1", "code", 404),
    delete("delete-web-0", f"{PODS}/web-0"),
    _until("web-0-recreated", f"{PODS}/web-0", "body.status.phase", "Pending"),
    _pod_events("pod-events"),
    patch("partition-and-update", STS, {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
        "partition": 1, "maxUnavailable": 1}}, "template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}},
        STRATEGIC),
    _until("partition-holds-status", STS, "body.status.currentReplicas", 1),
    get("web-0-keeps-old-revision", f"{PODS}/web-0", vary=("body.metadata.labels.controller-revision-hash",)),
))

GARBAGE = Scenario("controllers", "ctl-garbage-collection", (
    create("owner", CMS, configmap("owner"), save={"owner": "metadata.uid"}),
    create("dependent", CMS, _owned("dep", "owner")),
    delete("delete-owner-background", f"{CMS}/owner"),
    _until("dependent-collected", f"{CMS}/dep", "code", 404),
    create("owner2", CMS, configmap("owner2"), save={"owner2": "metadata.uid"}),
    create("dependent2", CMS, _owned("dep2", "owner2")),
    delete("delete-owner-orphan", f"{CMS}/owner2", {"propagationPolicy": "Orphan"}),
    _until("orphaning-owner-gone", f"{CMS}/owner2", "code", 404),
    get("orphan-kept-without-reference", f"{CMS}/dep2"),
    create("owner3", CMS, configmap("owner3"), save={"owner3": "metadata.uid"}),
    create("dependent3", CMS, _owned("dep3", "owner3", blockOwnerDeletion=True)),
    delete("delete-owner-foreground", f"{CMS}/owner3", {"propagationPolicy": "Foreground"}),
    _until("foreground-owner-gone", f"{CMS}/owner3", "code", 404),
    get("foreground-dependent-gone", f"{CMS}/dep3"),
    create("dangling", CMS, {**configmap("dangling"), "metadata": {"name": "dangling", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-00000000beef"}]}}),
    _until("dangling-collected", f"{CMS}/dangling", "code", 404),
))

ENDPOINTS = Scenario("controllers", "ctl-endpointslices", (
    create("service", f"{CORE}/services", service("web")),
    create("headless", f"{CORE}/services", {**service("web-h", {"app": "web"}, headless=True)}),
    create("pod-ready", PODS, pod("ready", {"app": "web"}, nodeName="node-a")),
    create("pod-unready", PODS, pod("unready", {"app": "web"}, nodeName="node-a")),
    _ready("ready", "10.9.1.1"),
    _ready("unready", "10.9.1.2", ready=False),
    Step("slice-of-service", "GET", SLICES, query={"labelSelector": "kubernetes.io/service-name=web"},
         until=Until("body.items.0.endpoints.1.conditions.ready", False, 90.0)),
    get("slices-by-service", SLICES, query={"labelSelector": "kubernetes.io/service-name=web"}),
    get("slices-of-headless", SLICES, query={"labelSelector": "kubernetes.io/service-name=web-h"}),
    delete("delete-ready-pod", f"{PODS}/ready", {"gracePeriodSeconds": 0}),
    Step("slice-after-delete", "GET", SLICES, query={"labelSelector": "kubernetes.io/service-name=web"},
         until=Until("body.items.0.endpoints.1", None, 60.0)),
))

SCENARIOS: tuple[Scenario, ...] = tuple(
    Scenario(s.topic, s.name, s.steps, controllers=True) for s in (STATEFULSET, GARBAGE, ENDPOINTS))
