"""Controller scenarios, compared on outcomes and event sequences rather than timing: StatefulSet
create, ordered start, scale down, pod deletion and recreation; a ReplicaSet's pods, status, scale down
and orphaning; garbage collection (background,
orphan, foreground); EndpointSlices of a selector Service and a headless one with ready and not-ready
pods. No kubelet runs on either side: pod status is written through the status subresource, as
envtest-style tests do, and every wait is an `until` on an observable state. A new pod is compared
once the scheduler has judged it (its PodScheduled condition is there: no nodes, so Unschedulable on
both sides), not at whichever poll first found it. The owners' uids are saved so that the
ownerReferences of what the controllers create compare as `${name}`."""

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
    replicaset,
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


def _scheduled(name: str, path: str) -> Step:
    """The pod once the scheduler wrote its verdict (the first condition of a new, unbound pod)."""
    return _until(name, path, "body.status.conditions.0.type", "PodScheduled")


def _pod_events(name: str, **query: str) -> Step:
    return Step(name, "GET", PODS, query={"watch": "true", "timeoutSeconds": "2", "resourceVersion": "${start}",
                                          **query}, watch=True, events="names")


def _owned(name: str, owner: str, **extra: Any) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "${" + owner + "}", **extra}
    return configmap(name, ownerReferences=[ref])


STATEFULSET = Scenario("controllers", "ctl-statefulset", (
    get("start", PODS, save={"start": "metadata.resourceVersion"}),
    create("create", f"{APPS}/statefulsets", statefulset("web", replicas=2), save={"sts": "metadata.uid"}),
    _scheduled("first-pod", f"{PODS}/web-0"),
    get("second-waits-for-first", f"{PODS}/web-1"),
    _ready("web-0", "10.9.0.1"),
    _scheduled("second-pod", f"{PODS}/web-1"),
    _ready("web-1", "10.9.0.2"),
    _until("ready-replicas", STS, "body.status.readyReplicas", 2),
    patch("scale-down", STS, {"spec": {"replicas": 1}}, MERGE),
    _until("web-1-removed", f"{PODS}/web-1", "code", 404),
    delete("delete-web-0", f"{PODS}/web-0"),
    _scheduled("web-0-recreated", f"{PODS}/web-0"),
    _pod_events("pod-events"),
    patch("partition-and-update", STS, {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
        "partition": 1, "maxUnavailable": 1}}, "template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}},
        STRATEGIC),
    # observedGeneration 3: the status once the controller saw the patch (currentReplicas is 1 before it too)
    _until("partition-holds-status", STS, "body.status.observedGeneration", 3),
    get("web-0-keeps-old-revision", f"{PODS}/web-0"),
))

RS = f"{APPS}/replicasets/rs"

# A ReplicaSet on its own (a Deployment's would be named by the pod-template hash, which the sim computes
# differently): its pods (generated names), its status once they exist, a scale down, and an orphaning delete
# that leaves the pods without the reference.
REPLICASET = Scenario("controllers", "ctl-replicaset", (
    create("create", f"{APPS}/replicasets", replicaset("rs", replicas=2), save={"rs": "metadata.uid"}),
    _until("two-replicas", RS, "body.status.replicas", 2),
    Step("pods-of-rs", "GET", PODS, query={"labelSelector": "app=rs"},
         until=Until("body.items.1.status.conditions.0.type", "PodScheduled", 90.0)),
    patch("scale-down", RS, {"spec": {"replicas": 1}}, MERGE),
    _until("one-replica", RS, "body.status.replicas", 1),
    Step("one-pod-left", "GET", PODS, query={"labelSelector": "app=rs"}, until=Until("body.items.1", None, 60.0)),
    delete("delete-orphan", RS, {"propagationPolicy": "Orphan"}),
    _until("rs-gone", RS, "code", 404),
    Step("pod-orphaned", "GET", PODS, query={"labelSelector": "app=rs"},
         until=Until("body.items.0.metadata.ownerReferences", None, 60.0)),
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

_SLICE_WRITES = ("body.items.0.metadata.generation",)
"""A slice's generation counts the controller's writes to it: two pod status changes close together
are one write or two depending on when the controller syncs (kube-controller-manager's and the sim's
batching differ), which is cadence, not the slice's content; the endpoints themselves are compared."""

# The pods' Node exists: kube-controller-manager's EndpointSlice controller leaves out pods naming a
# missing Node, and its pod GC deletes them after 40 s, so without it nothing here would be listed.
ENDPOINTS = Scenario("controllers", "ctl-endpointslices", (
    create("node", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}),
    create("service", f"{CORE}/services", service("web"), save={"svc": "metadata.uid"}),
    create("headless", f"{CORE}/services", {**service("web-h", {"app": "web"}, headless=True)},
           save={"svc_h": "metadata.uid"}),
    create("pod-ready", PODS, pod("ready", {"app": "web"}, nodeName="node-a"), save={"ready": "metadata.uid"}),
    create("pod-unready", PODS, pod("unready", {"app": "web"}, nodeName="node-a"),
           save={"unready": "metadata.uid"}),
    _ready("ready", "10.9.1.1"),
    _ready("unready", "10.9.1.2", ready=False),
    Step("slice-of-service", "GET", SLICES, query={"labelSelector": "kubernetes.io/service-name=web"},
         until=Until("body.items.0.endpoints.1.conditions.ready", False, 90.0), vary=_SLICE_WRITES),
    get("slices-by-service", SLICES, query={"labelSelector": "kubernetes.io/service-name=web"}, vary=_SLICE_WRITES),
    get("slices-of-headless", SLICES, query={"labelSelector": "kubernetes.io/service-name=web-h"},
        vary=_SLICE_WRITES),
    delete("delete-ready-pod", f"{PODS}/ready", {"gracePeriodSeconds": 0}),
    Step("slice-after-delete", "GET", SLICES, query={"labelSelector": "kubernetes.io/service-name=web"},
         until=Until("body.items.0.endpoints.1", None, 60.0), vary=_SLICE_WRITES),
))

SCENARIOS: tuple[Scenario, ...] = tuple(
    Scenario(s.topic, s.name, s.steps, controllers=True) for s in (STATEFULSET, REPLICASET, GARBAGE, ENDPOINTS))
