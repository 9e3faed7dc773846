"""The sim's kube-proxy: a Service's ClusterIP and port accept TCP connections and reach its endpoints.

Pods in the sim are processes on the host network, and ClusterIPs are loopback addresses from the
cluster's own 127.X.128.0/17 (`ipam.PodNetwork.service_range`), so a plain listening socket on
(ClusterIP, port) does what kube-proxy's rules do on a real node. Like kube-proxy, this controller
is an API client with two informers, and it follows upstream's rules for what to proxy
(`cmd/kube-proxy/app/server.go`, `pkg/proxy/endpointslicecache.go`, `pkg/proxy/topology.go`):

* Both informers skip objects labelled `service.kubernetes.io/service-proxy-name` (another proxy
  owns them), and the slice informer skips `service.kubernetes.io/headless` slices.
* A Service is proxied when it has a ClusterIP (not headless, not ExternalName); each of its TCP
  ports gets a listener on (clusterIP, port). Slices are joined to the Service by the
  `kubernetes.io/service-name` label and to a Service port by port name and protocol; the slice's
  port number is the target. An endpoint is its first address; duplicates across slices count once.
* Usable endpoints are the ready ones (`ready` unset counts as true); when there are none, the
  serving-and-terminating ones (`CategorizeEndpoints`' fallback, so a rolling restart drains).
* A port without usable endpoints has no listener, so a client is refused at once: iptables-mode
  kube-proxy installs a REJECT rule ("has no endpoints", icmp-port-unreachable) for such a port.
* `sessionAffinity: ClientIP` keeps a client IP on its endpoint for
  `sessionAffinityConfig.clientIP.timeoutSeconds` (default 10800). Pods in the sim connect from
  127.0.0.1 unless they bind a source address, so in practice all clients share one affinity.

Choosing endpoints and moving bytes is `forward`. Left out: UDP and SCTP ports (no
listener; the sim's pods use TCP), NodePort, LoadBalancer and externalIPs (nothing outside the
machine can reach the sim), `internalTrafficPolicy: Local` and topology hints (a client process
belongs to no node), and IPv6.

A listener that cannot be bound (another process holds the address: for instance two bare API
servers, which both allocate from 127.96.0.0/16) is logged once as a warning and retried every
`bind_retry` seconds; the controller never crashes over it. A ClusterIP freed by one Service and at
once given to another is handed over: the listener is retargeted, whichever Service syncs first.
Idle cost: two watches and one waiting worker; no socket is bound while no Service has an endpoint.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Callable
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.controllers.endpoints import service_endpoints as se
from lwsconf.sim.controllers.kubeproxy import forward as fwd

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ServiceKey = tuple[str, str]

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_SERVICE_PROXY_NAME = "service.kubernetes.io/service-proxy-name"
DEFAULT_AFFINITY_SECONDS = 10800.0
"""`v1.DefaultClientIPServiceAffinitySeconds`: three hours."""
BIND_RETRY = 5.0
"""Seconds between tries to bind a listener whose address was taken."""
LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


# --- what to proxy (pure) ------------------------------------------------------------------------

def cluster_ip(service: Obj) -> str | None:
    """The address to listen on, or None: headless, ExternalName, or (logged) not a loopback IPv4."""
    spec = service.get("spec") or {}
    ip = spec.get("clusterIP")
    if spec.get("type") == "ExternalName" or ip in (None, "", "None"):
        return None
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return None
    if parsed not in LOOPBACK:
        meta = service.get("metadata") or {}
        log.warning("kube-proxy: Service %s/%s has clusterIP %s outside 127.0.0.0/8; the sim proxies only "
                    "loopback addresses, so it is not proxied", meta.get("namespace"), meta.get("name"), ip)
        return None
    return str(parsed)


def affinity_timeout(service: Obj) -> float | None:
    spec = service.get("spec") or {}
    if spec.get("sessionAffinity") != "ClientIP":
        return None
    seconds = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds")
    return float(seconds) if seconds else DEFAULT_AFFINITY_SECONDS


def usable_endpoints(slices: list[Obj], port_name: str, protocol: str = "TCP",
                     to_loopback: Callable[[str], str] = str) -> tuple[fwd.Backend, ...]:
    """The endpoints a Service port forwards to: ready ones, else serving-and-terminating ones.

    `to_loopback` turns an endpoint address into the one to dial (`podnet`: on `--cluster=local` the API
    lists 198.18 addresses, which stand for the pods' loopback ones).
    """
    ready: set[fwd.Backend] = set()
    draining: set[fwd.Backend] = set()
    for slice_ in slices:
        if slice_.get("addressType", "IPv4") != "IPv4":
            continue
        number = next((p.get("port") for p in slice_.get("ports") or []
                       if (p.get("name") or "") == port_name and (p.get("protocol") or "TCP") == protocol), None)
        if not number:
            continue  # this slice does not serve the port (or has no number for it)
        for endpoint in slice_.get("endpoints") or []:
            addresses = endpoint.get("addresses") or []
            if not addresses:
                continue
            conditions = endpoint.get("conditions") or {}
            backend = (to_loopback(str(addresses[0])), int(number))
            if conditions.get("ready") is not False:
                ready.add(backend)
            elif conditions.get("serving") is not False and conditions.get("terminating") is True:
                draining.add(backend)
    return fwd.sorted_backends(ready or draining)


def desired(service: Obj, slices: list[Obj],
            to_loopback: Callable[[str], str] = str) -> dict[fwd.Address, fwd.PortRule]:
    """Listener address -> what it forwards, for every TCP port of the Service with a usable endpoint."""
    ip = cluster_ip(service)
    if ip is None:
        return {}
    meta, spec = service.get("metadata") or {}, service.get("spec") or {}
    affinity = affinity_timeout(service)
    out: dict[fwd.Address, fwd.PortRule] = {}
    for port in spec.get("ports") or []:
        protocol = port.get("protocol") or "TCP"
        if protocol != "TCP" or not port.get("port"):
            continue  # UDP and SCTP are not proxied by the sim
        name = port.get("name") or ""
        backends = usable_endpoints(slices, name, protocol, to_loopback)
        if backends:
            label = f"{meta.get('namespace')}/{meta.get('name')}:{name or port['port']}"
            out[(ip, int(port["port"]))] = fwd.PortRule(label, backends, affinity)
    return out


def slim_slice(slice_: Obj) -> Obj:
    """What kube-proxy reads of an EndpointSlice (the informer caches only this)."""
    meta = slice_.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "labels") if k in meta},
            "addressType": slice_.get("addressType"), "ports": slice_.get("ports") or [],
            "endpoints": [{"addresses": e.get("addresses") or [], "conditions": e.get("conditions") or {}}
                          for e in slice_.get("endpoints") or []]}


# --- the controller ------------------------------------------------------------------------------

class KubeProxy:
    """Keeps one listener per proxied (ClusterIP, port) in line with Services and EndpointSlices.

    Args:
        client: an API client for this controller alone.
        static_slices: EndpointSlices per Service that the API does not hold (see the attribute).
        bind_retry: seconds between tries to bind an address that was taken.
        dial_timeouts: seconds for each successive try to reach an endpoint for one connection.
        to_loopback: endpoint address -> the address to dial (default: as listed).

    Start it with `await KubeProxy(client).run(stop)`; it returns after `stop` is set, with every
    listener closed and every forwarded connection ended.
    """

    def __init__(self, client: kc.Client, *, bind_retry: float = BIND_RETRY,
                 dial_timeouts: tuple[float, ...] = fwd.DIAL_TIMEOUTS,
                 static_slices: dict[ServiceKey, list[Obj]] | None = None,
                 to_loopback: Callable[[str], str] = str) -> None:
        self.client = client
        self.to_loopback = to_loopback
        """Endpoint address -> the address to dial (`podnet.PodAddressMap.to_loopback` on `--cluster=local`)."""
        self.static_slices = dict(static_slices or {})
        """(namespace, name) -> EndpointSlices taken as if the API served them: for a Service whose
        endpoints the API server cannot hold (the real kube-apiserver refuses loopback endpoint addresses,
        so `lwsconf.localcluster` gives `default/kubernetes` its API server's 127.0.0.1 port this way)."""
        self.bind_retry = bind_retry
        self.services = kubeclient.Informer(client, kc.SERVICES, label_selector=f"!{LABEL_SERVICE_PROXY_NAME}")
        self.slices = kubeclient.Informer(client, se.ENDPOINTSLICES, transform=slim_slice,
                                          label_selector=f"!{se.LABEL_HEADLESS},!{LABEL_SERVICE_PROXY_NAME}")
        self.services.add_handler(self._on_service)
        self.slices.add_handler(self._on_slice)
        self.queue: kubeclient.WorkQueue[ServiceKey] = kubeclient.WorkQueue(name="kube-proxy")
        self.forwarder = fwd.Forwarder(dial_timeouts=dial_timeouts)
        self._slices: dict[ServiceKey, dict[str, Obj]] = {}
        """Service -> its slices by name (an index the informer does not keep)."""
        self._owned: dict[ServiceKey, set[fwd.Address]] = {}
        self._owner: dict[fwd.Address, ServiceKey] = {}
        self._unbindable: set[fwd.Address] = set()
        """Addresses whose bind failed (warned once until it works or is no longer wanted)."""
        self.bind_failures = 0
        """Failed binds so far, retries included (tests and diagnostics read it)."""

    async def run(self, stop: asyncio.Event) -> None:
        """Proxy until `stop` is set; then close every listener and connection."""
        if self.queue.shutting_down:  # run again after a crash: start afresh
            self.queue = kubeclient.WorkQueue(name=self.queue.name)
        for informer in (self.services, self.slices):
            informer.start()
        try:
            # One worker: listeners change one Service at a time, so a handover never races.
            await kubeclient.run_workers(self.queue, self.sync, stop, workers=1)
        finally:
            for informer in (self.services, self.slices):
                informer.stop()
            await self.forwarder.close()
            self._owned.clear()
            self._owner.clear()
            for informer in (self.services, self.slices):
                await informer.join()

    async def sync(self, key: ServiceKey) -> float | None:
        """Bring the listeners of Service `key` in line with the caches; a retry delay if a bind failed."""
        service = self.services.get(key[1], key[0])
        slices = list(self._slices.get(key, {}).values()) + self.static_slices.get(key, [])
        want = {} if service is None else desired(service, slices, self.to_loopback)
        for address in self._owned.get(key, set()) - set(want):
            if self._owner.get(address) == key:  # else another Service took this address over
                del self._owner[address]
                self._unbindable.discard(address)
                self.forwarder.stop_serving(address)
        retry = False
        for address, rule in want.items():
            self._owner[address] = key
            retry |= not await self._serve(address, rule)
        if want:
            self._owned[key] = set(want)
        else:
            self._owned.pop(key, None)
        return self.bind_retry if retry else None

    async def _serve(self, address: fwd.Address, rule: fwd.PortRule) -> bool:
        try:
            await self.forwarder.serve(address, rule)
        except OSError as exc:
            self.bind_failures += 1
            if address not in self._unbindable:
                self._unbindable.add(address)
                log.warning("kube-proxy: cannot listen on %s:%d for Service port %s: %s. Another process holds "
                            "the address (a second simulated cluster on the same Service range, such as two "
                            "API servers started without SimCluster, which share 127.96.0.0/16?); connections "
                            "to it are refused until it is free; retrying every %.0f s",
                            *address, rule.name, exc, self.bind_retry)
            return False
        if address in self._unbindable:
            self._unbindable.discard(address)
            log.info("kube-proxy: listening on %s:%d for %s after all", *address, rule.name)
        return True

    # --- triggers (informer callbacks: quick, no I/O) --------------------------------------------

    def _on_service(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        if event_type == informer_mod.MODIFIED and old is not None and old.get("spec") == obj.get("spec"):
            return  # only the spec decides what is proxied
        meta = obj["metadata"]
        self.queue.add((meta.get("namespace", ""), meta["name"]))

    def _on_slice(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        previous = ((old or {}).get("metadata") or {}).get("labels") or {}
        for labels, gone in ((previous, True), (meta.get("labels") or {}, event_type == informer_mod.DELETED)):
            service = labels.get(LABEL_SERVICE_NAME)
            if not service:
                continue
            key = (meta.get("namespace", ""), service)
            by_name = self._slices.setdefault(key, {})
            if gone:
                by_name.pop(meta["name"], None)
            else:
                by_name[meta["name"]] = obj
            if not by_name:
                del self._slices[key]
            self.queue.add(key)
