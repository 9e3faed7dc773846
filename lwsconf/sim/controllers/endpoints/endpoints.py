"""The Endpoints controller: the legacy core/v1 `Endpoints` object of each selector Service.

Endpoints (deprecated since Kubernetes 1.33 in favour of EndpointSlices, but still written by
kube-controller-manager and still read by older clients and `kubectl describe service`) hold one
object per Service, named like it, listing pod addresses in `subsets`. This controller does what
upstream's `pkg/controller/endpoint/endpoints_controller.go` (`syncService`) does:

* Pods selected by the Service that have an IP and are not terminal are listed; terminating pods
  only with `publishNotReadyAddresses` (`ShouldPodBeInEndpoints(pod, publishNotReadyAddresses)`).
* Each pod address (`ip`, `nodeName`, `targetRef`, and `hostname` when the pod's subdomain is the
  Service) goes into `addresses` if the pod is Ready or the Service publishes not-ready addresses,
  else into `notReadyAddresses` (`addEndpointSubset`), once per Service port that resolves on the pod
  (a named `targetPort` the pod lacks is skipped). A headless Service without ports lists addresses
  with no ports.
* The result is packed into canonical subsets, addresses grouped by the exact set of ports they
  offer, sorted (`RepackSubsets`, `pkg/api/v1/endpoints/util.go`).
* Labels are the Service's, plus `service.kubernetes.io/headless` for headless Services. The object
  is written only when subsets or labels differ, with its cached resourceVersion (409: retried with
  backoff once the cache caught up).
* A deleted Service's Endpoints are deleted. At start, Endpoints whose Service is gone are cleaned up
  too (`checkLeftoverEndpoints`); later Endpoints without a Service are left alone, as upstream does,
  since a selectorless Service's hand-made Endpoints may be created before the Service.

Left out: the 1000-address truncation (`endpoints.kubernetes.io/over-capacity`) and the
last-change-trigger-time annotation.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.endpoints import service_endpoints as se

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Objs = list[Obj]
AddressKey = tuple[str, str]
"""(ip, pod uid): how RepackSubsets de-duplicates addresses."""

LEADER_ELECTION_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
"""Endpoints used as a leader-election lock have no Service and must never be cleaned up."""
STALE_RECHECK = 0.05


# --- desired state (pure) -----------------------------------------------------------------------

def endpoint_address(pod: Obj, service: Obj) -> Obj | None:
    """The pod's `EndpointAddress` for this Service (`podToEndpointAddressForService`), or None."""
    ips = se.pod_ipv4s(pod)
    if not ips:
        return None
    address: Obj = {"ip": ips[0], "targetRef": se.target_ref(pod)}
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        address["nodeName"] = node
    hostname = se.hostname_for(pod, service)
    if hostname is not None:
        address["hostname"] = hostname
    return address


def endpoint_port(service_port: Obj, number: int) -> Obj:
    port: Obj = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


def desired_subsets(service: Obj, pods: Objs) -> Objs:
    """The Service's `subsets` for these (already selected) pods, packed canonically."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    entries: list[tuple[Obj, bool, Obj | None]] = []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        if not se.should_be_in_endpoints(pod, include_terminating=publish):
            continue
        address = endpoint_address(pod, service)
        if address is None:
            continue
        ready = publish or se.is_pod_ready(pod)
        ports = spec.get("ports") or []
        if not ports:
            if se.is_headless(service):  # "Allow headless service not to have ports."
                entries.append((address, ready, None))
            continue
        for service_port in ports:
            number = se.find_port(pod, service_port)
            if number is not None:
                entries.append((address, ready, endpoint_port(service_port, number)))
    return repack(entries)


def _address_key(address: Obj) -> AddressKey:
    return (address["ip"], (address.get("targetRef") or {}).get("uid") or "")


def _canonical(obj: Obj) -> str:
    return json.dumps(obj, sort_keys=True)


def repack(entries: list[tuple[Obj, bool, Obj | None]]) -> Objs:
    """(address, ready, port or None) triples as subsets: addresses grouped by the ports they offer.

    As `RepackSubsets`: one address appears once per port; not ready wins over ready for the same
    address and port; ports whose address sets (with readiness) are equal share a subset; addresses
    are sorted by IP then uid, ports and subsets in a stable order.
    """
    addresses: dict[AddressKey, Obj] = {}
    by_port: dict[str, dict[AddressKey, bool]] = {}
    ports: dict[str, Obj | None] = {}
    for address, ready, port in entries:
        key = _address_key(address)
        addresses.setdefault(key, address)
        port_id = _canonical(port) if port is not None else ""  # "": upstream's port -1 sentinel
        ports[port_id] = port
        readiness = by_port.setdefault(port_id, {})
        readiness[key] = readiness.get(key, True) and ready
    groups: dict[frozenset[tuple[AddressKey, bool]], list[str]] = {}
    for port_id, readiness in by_port.items():
        groups.setdefault(frozenset(readiness.items()), []).append(port_id)
    subsets: Objs = []
    for members, port_ids in groups.items():
        subset: Obj = {}
        ready_keys = sorted(k for k, r in members if r)
        not_ready = sorted(k for k, r in members if not r)
        if ready_keys:
            subset["addresses"] = [addresses[k] for k in ready_keys]
        if not_ready:
            subset["notReadyAddresses"] = [addresses[k] for k in not_ready]
        real_ports = [ports[p] for p in sorted(port_ids) if ports[p] is not None]
        if real_ports:
            subset["ports"] = real_ports
        subsets.append(subset)
    return sorted(subsets, key=_canonical)


def desired_labels(service: Obj) -> dict[str, str]:
    labels = dict((service.get("metadata") or {}).get("labels") or {})
    labels.pop(se.LABEL_HEADLESS, None)
    if se.is_headless(service):
        labels[se.LABEL_HEADLESS] = ""
    return labels


def desired_endpoints(service: Obj, pods: Objs, current: Obj | None) -> Obj | None:
    """The Endpoints object to write, or None when `current` already says the same."""
    subsets = desired_subsets(service, pods)
    labels = desired_labels(service)
    if current is not None:
        meta = current.get("metadata") or {}
        if (current.get("subsets") or []) == subsets and (meta.get("labels") or {}) == labels:
            return None
        out = copy.deepcopy(current)
    else:
        meta = service["metadata"]
        out = {"apiVersion": "v1", "kind": "Endpoints",
               "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
    out["metadata"]["labels"] = labels
    out["subsets"] = subsets
    return out


# --- the controller -----------------------------------------------------------------------------

class EndpointsController(se.ServiceEndpointsController):
    """Keeps every selector Service's `Endpoints` object in line with its pods.

    Args:
        client: an API client for this controller alone.
        workers: Services synced concurrently.

    Start it with `await EndpointsController(client).run(stop)`; it returns after `stop` is set.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 4) -> None:
        super().__init__(client, informers=informers, name="endpoints", workers=workers)
        self.endpoints = shared.informer(informers, client, se.ENDPOINTS)
        self.endpoints.add_handler(self._on_endpoints)
        self.add_informer(self.endpoints)

    def on_synced(self) -> None:
        """`checkLeftoverEndpoints`: queue Endpoints whose Service is gone, so they get deleted."""
        for ep in self.endpoints.list():
            meta = ep["metadata"]
            if LEADER_ELECTION_ANNOTATION in (meta.get("annotations") or {}):
                continue
            if self.services.get(meta["name"], meta.get("namespace")) is None:
                self.queue.add((meta.get("namespace", ""), meta["name"]))

    def _on_endpoints(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        news = self.observe_written(key, event_type, obj)
        if news and event_type != informer_mod.ADDED and self.services.get(key[1], key[0]) is not None:
            self.queue.add(key)  # someone else changed or deleted the Endpoints of a Service we serve

    async def sync(self, key: se.ServiceKey, service: Obj | None) -> float | None:
        if service is None:
            await self._delete(key)
            return None
        if not se.has_selector(service):
            return None  # "these services will receive the endpoints that are created out-of-band"
        current = self.endpoints.get(key[1], key[0])
        if self.cache_is_stale(key, {} if current is None else {key[1]: current}):
            return STALE_RECHECK
        wanted = desired_endpoints(service, self.selected_pods(service), current)
        if wanted is None:
            return None
        if current is None:
            try:
                written = await self.client.create(se.ENDPOINTS, wanted)
            except errors.ApiError as exc:
                if exc.status in (403, 404):  # the namespace is terminating or gone
                    return None
                raise
        else:
            written = await self.client.replace(se.ENDPOINTS, wanted)
        self.tracker.wrote(key, written)
        return None

    async def _delete(self, key: se.ServiceKey) -> None:
        try:
            await self.client.delete(se.ENDPOINTS, key[1], namespace=key[0])
        except errors.ApiError as exc:
            if not exc.is_not_found:
                raise
            return
        self.tracker.deleted(key, key[1])
