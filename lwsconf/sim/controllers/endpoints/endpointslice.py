"""The EndpointSlice controller: a Service's selected pods, written as discovery.k8s.io/v1 EndpointSlices.

EndpointSlices are what Service traffic follows: the simulated API server's
`services/NAME:PORT/proxy` picks a ready endpoint from them, and LWS workers find their leader through
the headless Service's endpoints (docs/lws-contract.md section 2.4: those Services set
`publishNotReadyAddresses: true` so that a leader is listed before it is ready). This controller
does what kube-controller-manager's endpointslice controller does (`pkg/controller/endpointslice`,
with the reconciler in `staging/src/k8s.io/endpointslice/reconciler.go` and `utils.go`):

* For each Service with a selector, the pods it selects that have an IP and are not terminal become
  endpoints: `addresses` (the pod IPs), `conditions` (`serving` = pod Ready; `terminating` =
  deletionTimestamp set; `ready` = serving and not terminating, or always with
  `publishNotReadyAddresses`), `targetRef`, `nodeName`, and `hostname` when the pod's subdomain is the
  Service (`podToEndpoint`). Terminating pods stay listed (as not ready) until they are gone.
* Endpoints are grouped by their port mapping: each Service port resolved on that pod (`targetPort`
  as a number, or a named container port); a port the pod does not have is left out of its group's
  `ports` (`getEndpointPorts`). Each group fills slices of at most 100 endpoints.
* Slices are named `<service>-<5 random chars>` (generateName), labelled
  `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
  endpointslice-controller.k8s.io` (plus the Service's own labels, and `service.kubernetes.io/headless`
  for headless Services), and owned by the Service (controller reference), so the garbage collector
  deletes them with it. `addressType` is IPv4: the sim's pod network is IPv4 only.
* Existing slices are updated in place (endpoints keep their slice; new ones fill slices that change
  anyway, then the fullest unchanged one they fit in, then new slices), empty ones are deleted, and a
  Service with no endpoints keeps one empty placeholder slice, as upstream's `reconcileByPortMapping`
  and `finalize` do. The placeholder has no ports and no endpoints (both `null`, as the Go slices
  upstream leaves nil serialize). Updates carry the cached resourceVersion; a 409 is retried with
  backoff after the informer caught up.
* A pod naming a Node the node informer lacks is left out, unless the Service publishes not-ready
  addresses (`reconcileByAddressType`: "If the Node specified by the Pod doesn't exist we want to
  requeue the Service ... but also update the EndpointSlice without the problematic Pod"); the Service
  is synced again when a Node is added or deleted. kube-controller-manager 1.37.2 lists no endpoint for
  pods on a missing node (lwsconf fidelity controllers/ctl-endpointslices/slice-of-service).

Left out: topology hints and zones, the trigger-time annotation, dual-stack (IPv6 slices). A pod
with an IP but no `spec.nodeName` (only tests that play the kubelet make one) is listed; upstream's
node lookup of "" would leave it out.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.endpoints import service_endpoints as se

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Objs = list[Obj]
PortKey = tuple[tuple[str, int, str, str], ...]
NodeExists = Callable[[str], bool]
EndpointId = tuple[tuple[str, ...], str, str, str]

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100
"""kube-controller-manager's `--max-endpoints-per-slice` default."""
ADDRESS_TYPE = "IPv4"
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
STALE_RECHECK = 0.05
"""Seconds before looking again at a Service whose slice cache lags behind our own writes."""


# --- desired state (pure) -----------------------------------------------------------------------

def endpoint_ports(service: Obj, pod: Obj) -> Objs:
    """The slice ports of this pod: each Service port that resolves on it (`getEndpointPorts`)."""
    out: Objs = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = se.find_port(pod, port)
        if number is None:
            continue  # upstream: "Failed to find port for service", the port is left out
        entry: Obj = {"name": port.get("name") or "", "port": number, "protocol": port.get("protocol") or "TCP"}
        if port.get("appProtocol"):
            entry["appProtocol"] = port["appProtocol"]
        out.append(entry)
    return out


def port_key(ports: Objs) -> PortKey:
    return tuple(sorted((p.get("name") or "", int(p.get("port") or 0), p.get("protocol") or "TCP",
                         p.get("appProtocol") or "") for p in ports))


def pod_to_endpoint(pod: Obj, service: Obj) -> Obj:
    serving = se.is_pod_ready(pod)
    terminating = se.is_terminating(pod)
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoint: Obj = {
        "addresses": se.pod_ipv4s(pod),
        # "ready should never be true if a pod is terminating, unless publishNotReadyAddresses was set"
        "conditions": {"ready": publish or (serving and not terminating), "serving": serving,
                       "terminating": terminating},
        "targetRef": se.target_ref(pod),
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    hostname = se.hostname_for(pod, service)
    if hostname is not None:
        endpoint["hostname"] = hostname
    return endpoint


def endpoint_id(endpoint: Obj) -> EndpointId:
    """Upstream's endpoint hash: addresses, hostname and the target's namespace/name."""
    ref = endpoint.get("targetRef") or {}
    return (tuple(sorted(endpoint.get("addresses") or [])), endpoint.get("hostname") or "",
            ref.get("namespace") or "", ref.get("name") or "")


def slice_labels(service: Obj) -> dict[str, str]:
    """The Service's labels minus the reserved ones, plus service-name, managed-by and headless."""
    reserved = {LABEL_SERVICE_NAME, LABEL_MANAGED_BY, se.LABEL_HEADLESS}
    labels = {k: v for k, v in ((service.get("metadata") or {}).get("labels") or {}).items() if k not in reserved}
    if se.is_headless(service):
        labels[se.LABEL_HEADLESS] = ""
    labels[LABEL_SERVICE_NAME] = service["metadata"]["name"]
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    return labels


def owned_by(slice_: Obj, service: Obj) -> bool:
    uid = service["metadata"].get("uid")
    return any(r.get("uid") == uid and r.get("kind") == "Service" and r.get("apiVersion") == "v1"
               for r in (slice_.get("metadata") or {}).get("ownerReferences") or [])


def new_slice(service: Obj, ports: Objs | None) -> Obj:
    """A slice to create; `ports` None is the placeholder's nil ports (and its endpoints are nil too)."""
    meta = service["metadata"]
    owner = {"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta.get("uid", ""),
             "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": f"{meta['name']}-", "namespace": meta["namespace"],
                         "labels": slice_labels(service), "ownerReferences": [owner]},
            "addressType": ADDRESS_TYPE, "ports": copy.deepcopy(ports),
            "endpoints": [] if ports is not None else None}


@dataclass
class Plan:
    """What one sync writes: slices to POST, to PUT (with their resourceVersion) and to DELETE."""

    create: Objs = field(default_factory=list)
    update: Objs = field(default_factory=list)
    delete: Objs = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.create or self.update or self.delete)


def plan(service: Obj, pods: Objs, existing: Objs, *, max_endpoints: int = MAX_ENDPOINTS_PER_SLICE,
         node_exists: NodeExists | None = None) -> Plan:
    """The writes that make `existing` (this Service's managed slices) represent `pods` (`Reconcile`);
    with `node_exists`, pods on a missing Node are left out (see the module docstring)."""
    result = Plan()
    by_key: dict[PortKey, Objs] = {}
    for slice_ in sorted(existing, key=lambda s: s["metadata"]["name"]):
        if slice_.get("addressType") == ADDRESS_TYPE and owned_by(slice_, service):
            by_key.setdefault(port_key(slice_.get("ports") or []), []).append(slice_)
        else:
            result.delete.append(slice_)  # another address type, or left over from an older Service
    desired = _desired(service, pods, node_exists)
    for key, (ports, endpoints) in desired.items():
        _by_port_mapping(service, ports, by_key.get(key, []), endpoints, max_endpoints, result)
    for key, slices in by_key.items():
        if key not in desired:
            result.delete.extend(slices)
    if len(result.delete) == len(existing) and not result.create:
        _placeholder(service, result)
    _reuse_deleted(service, result)
    if (service.get("metadata") or {}).get("deletionTimestamp"):
        result.create = []  # upstream: do not race the garbage collector
    return result


def _desired(service: Obj, pods: Objs,
             node_exists: NodeExists | None) -> dict[PortKey, tuple[Objs, dict[EndpointId, Obj]]]:
    out: dict[PortKey, tuple[Objs, dict[EndpointId, Obj]]] = {}
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        if not se.should_be_in_endpoints(pod, include_terminating=True):
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        if node and node_exists is not None and not publish and not node_exists(node):
            continue
        endpoint = pod_to_endpoint(pod, service)
        if not endpoint["addresses"]:
            continue
        ports = endpoint_ports(service, pod)
        group = out.setdefault(port_key(ports), (ports, {}))
        group[1][endpoint_id(endpoint)] = endpoint
    return out


def _by_port_mapping(service: Obj, ports: Objs, existing: Objs, wanted: dict[EndpointId, Obj],
                     max_endpoints: int, result: Plan) -> None:
    """Keep endpoints where they are, drop the unwanted, place the new (`reconcileByPortMapping`)."""
    labels = slice_labels(service)
    unchanged: Objs = []
    updated: Objs = []
    for slice_ in existing:
        current = slice_.get("endpoints") or []
        kept = [wanted.pop(endpoint_id(e)) for e in current if endpoint_id(e) in wanted]
        if kept != current:
            if kept:
                updated.append(_revised(slice_, kept, labels))
            else:
                result.delete.append(slice_)
        elif (slice_.get("metadata") or {}).get("labels") != labels:
            updated.append(_revised(slice_, kept, labels))
        else:
            unchanged.append(slice_)
    pending = list(wanted.values())
    for slice_ in sorted(updated, key=lambda s: -len(s["endpoints"])):  # fill the fullest first
        pending = _fill(slice_, pending, max_endpoints)
    while pending:
        target = _closest_fit(unchanged, len(pending), max_endpoints) if len(pending) < max_endpoints else None
        if target is None:
            target = new_slice(service, ports)
            result.create.append(target)
        else:
            unchanged.remove(target)
            target = _revised(target, list(target.get("endpoints") or []), labels)
            if target.get("ports") is None:  # the placeholder (nil ports) now carries this group's endpoints
                target["ports"] = copy.deepcopy(ports)
            updated.append(target)
        pending = _fill(target, pending, max_endpoints)
    result.update.extend(updated)


def _revised(slice_: Obj, endpoints: Objs, labels: dict[str, str]) -> Obj:
    out = copy.deepcopy(slice_)
    out["endpoints"] = endpoints
    out["metadata"]["labels"] = dict(labels)
    return out


def _fill(slice_: Obj, pending: Objs, max_endpoints: int) -> Objs:
    room = max(0, max_endpoints - len(slice_["endpoints"]))
    slice_["endpoints"] = slice_["endpoints"] + pending[:room]
    return pending[room:]


def _closest_fit(slices: Objs, count: int, max_endpoints: int) -> Obj | None:
    """The slice that ends closest to full with `count` more endpoints (`getSliceToFill`)."""
    fitting = [s for s in slices if len(s.get("endpoints") or []) + count <= max_endpoints]
    return max(fitting, key=lambda s: len(s.get("endpoints") or []), default=None)


def _placeholder(service: Obj, result: Plan) -> None:
    """A Service without endpoints keeps one empty slice; an equal one about to be deleted is kept."""
    placeholder = new_slice(service, None)
    if len(result.delete) == 1 and _same_placeholder(result.delete[0], placeholder):
        result.delete.clear()
    else:
        result.create.append(placeholder)


def _same_placeholder(slice_: Obj, placeholder: Obj) -> bool:
    meta, want = slice_.get("metadata") or {}, placeholder["metadata"]
    return (not slice_.get("ports") and not slice_.get("endpoints")
            and slice_.get("addressType") == placeholder["addressType"]
            and meta.get("labels") == want["labels"]
            and meta.get("ownerReferences") == want["ownerReferences"])


def _reuse_deleted(service: Obj, result: Plan) -> None:
    """Turn creates into updates of owned slices that would be deleted (`finalize`)."""
    reusable = [s for s in result.delete if s.get("addressType") == ADDRESS_TYPE and owned_by(s, service)]
    while result.create and reusable:
        fresh, old = result.create.pop(), reusable.pop()
        result.delete.remove(old)
        reused = copy.deepcopy(old)
        reused["metadata"]["labels"] = fresh["metadata"]["labels"]
        reused["ports"], reused["endpoints"] = fresh["ports"], fresh["endpoints"]
        result.update.append(reused)


# --- the controller -----------------------------------------------------------------------------

class EndpointSliceController(se.ServiceEndpointsController):
    """Keeps every selector Service's EndpointSlices in line with its pods.

    Args:
        client: an API client for this controller alone.
        workers: Services synced concurrently.
        max_endpoints_per_slice: endpoints per slice before another slice is started.

    Start it with `await EndpointSliceController(client).run(stop)`; it returns after `stop` is set.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None, workers: int = 4,
                 max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> None:
        super().__init__(client, informers=informers, name="endpointslice", workers=workers)
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.slices = shared.informer(informers, client, se.ENDPOINTSLICES,
                                            label_selector=f"{LABEL_MANAGED_BY}={CONTROLLER_NAME}")
        self.slices.add_handler(self._on_slice)
        self.add_informer(self.slices)
        self.nodes = shared.informer(informers, client, NODES, transform=_node_name_only)
        self.nodes.add_handler(self._on_node)
        self.add_informer(self.nodes)

    def _on_node(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        """A Node added or deleted may add or drop the endpoints of pods naming it: resync every Service."""
        if event_type == informer_mod.MODIFIED:
            return
        for service in self.services.list():
            meta = service["metadata"]
            self.queue.add((meta.get("namespace", ""), meta["name"]))

    def node_exists(self, name: str) -> bool:
        return self.nodes.get(name) is not None

    def _on_slice(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        service = (meta.get("labels") or {}).get(LABEL_SERVICE_NAME)
        if not service:
            return
        key = (meta.get("namespace", ""), service)
        if self.observe_written(key, event_type, obj):
            self.queue.add(key)  # someone else changed or removed one of our slices

    def managed_slices(self, key: se.ServiceKey) -> Objs:
        return [s for s in self.slices.list(key[0])
                if (s["metadata"].get("labels") or {}).get(LABEL_SERVICE_NAME) == key[1]]

    async def sync(self, key: se.ServiceKey, service: Obj | None) -> float | None:
        if service is None or not se.has_selector(service):
            return None  # deleted: the garbage collector removes its slices; selectorless: not ours
        existing = self.managed_slices(key)
        if self.cache_is_stale(key, {s["metadata"]["name"]: s for s in existing}):
            return STALE_RECHECK
        live = [s for s in existing if not s["metadata"].get("deletionTimestamp")]
        todo = plan(service, self.selected_pods(service), live, max_endpoints=self.max_endpoints_per_slice,
                    node_exists=self.node_exists)
        if todo:
            await self._apply(key, todo)
        return None

    async def _apply(self, key: se.ServiceKey, todo: Plan) -> None:
        """Create, update, then delete, as upstream's `finalize`; every write is recorded in the tracker."""
        for slice_ in todo.create:
            try:
                self.tracker.wrote(key, await self.client.create(se.ENDPOINTSLICES, slice_))
            except errors.ApiError as exc:
                if exc.status in (403, 404):  # the namespace is terminating or gone: nothing to serve
                    log.debug("service %s/%s: not creating a slice: %s", *key, exc)
                    return
                raise
        for slice_ in todo.update:
            self.tracker.wrote(key, await self.client.replace(se.ENDPOINTSLICES, slice_))
        for slice_ in todo.delete:
            meta = slice_["metadata"]
            try:
                await self.client.delete(se.ENDPOINTSLICES, meta["name"], namespace=meta["namespace"])
            except errors.ApiError as exc:
                if not exc.is_not_found:
                    raise
            self.tracker.deleted(key, meta["name"])
        log.debug("service %s/%s: %d slices created, %d updated, %d deleted", *key,
                  len(todo.create), len(todo.update), len(todo.delete))


def _node_name_only(node: Obj) -> Obj:
    """All the controller reads of a Node is that it exists."""
    meta = node.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "uid", "resourceVersion") if k in meta}}
