"""What the EndpointSlice and Endpoints controllers share: pods as endpoints, and Service-keyed plumbing.

Both of kube-controller-manager's endpoint controllers turn "the pods a Service's selector picks"
into network addresses, with the same rules (upstream `k8s.io/endpointslice/util/controller_utils.go`
and `utils.go`, which both controllers import):

* a pod is listed once it has an IP and is not terminal (`ShouldPodBeInEndpoints`); whether a
  terminating pod (deletionTimestamp set) still counts is up to the caller;
* "ready" is the pod's `Ready` condition being `True` (`IsPodReady`);
* a Service port's `targetPort` is a number, or a container port name looked up in the pod (also in
  restartable init containers, i.e. sidecars) with the same protocol (`FindPort`);
* the endpoint gets the pod's `spec.hostname` only if the pod's `spec.subdomain` is this Service's
  name (`ShouldSetHostname`): that is how headless-Service DNS names `host.subdomain` come about.

The plumbing is the upstream controllers' too: informers on Services and Pods (plus one on what the
controller writes), a work queue of Service keys, pod events mapped to the Services whose selector
matches the pod's old or new labels, and only pod changes that can alter an endpoint
(`podEndpointsChanged`) trigger a sync. Like upstream's `--endpoint[slice]-updates-batch-period`,
pod changes are batched, but adaptively: a Service is synced at once unless its last sync was
recent, and then not before `spacing` times that sync's duration has passed, at most `MAX_PAUSE`. A
small Service reacts within milliseconds; one over 800 pods that become ready one after another is
synced a few times a second instead of back to back (each such sync rewrites 800 addresses). The cap
matters on a loaded machine: a sync's duration is wall time, waits for the event loop included, and
a 3 s sync of a 3-pod Service once held the next one back 12 s, so the leader Service kept routing
to a deleted leader's address (ServingRolloutLosesNoRequest, 9 failed requests, load 16-20).
Upstream's batch period defaults to 0 (`--endpointslice-updates-batch-period`). Workers start only
after every informer has synced, or a sync over an empty pod cache would wipe every Service's
endpoints. `WriteTracker` is upstream's `EndpointSliceTracker`/`staleEndpointsTracker`: it
remembers what this controller wrote, so a sync never acts on a cache older than its own last write
(that would create duplicates or hit 409s), and the echo of its own write does not trigger another
sync.

No API calls are made here except through the informers; subclasses do the writing.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import ipaddress
import logging
import time
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.kubeclient import shared

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ServiceKey = tuple[str, str]
"""(namespace, service name): the work queue's keys."""

ENDPOINTSLICES = kc.GVR("discovery.k8s.io", "v1", "endpointslices")
ENDPOINTS = kc.GVR("", "v1", "endpoints")
LABEL_HEADLESS = "service.kubernetes.io/headless"
"""Set (empty value) on the EndpointSlices and Endpoints of a Service without a cluster IP."""


# --- pods as endpoints (pure) -------------------------------------------------------------------

def has_selector(service: Obj) -> bool:
    """Whether the controllers manage this Service's endpoints at all.

    Upstream skips `spec.selector == nil` ("these services will receive endpoints created out-of-band")
    and `type: ExternalName`. An empty selector does not survive the API server's encoding either.
    """
    spec = service.get("spec") or {}
    return bool(spec.get("selector")) and spec.get("type") != "ExternalName"


def selects(service: Obj, labels: dict[str, str]) -> bool:
    """`labels.SelectorFromSet(spec.selector).Matches(labels)`: every selector pair is present."""
    selector = (service.get("spec") or {}).get("selector") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def is_headless(service: Obj) -> bool:
    """No cluster IP (`clusterIP: None`, or none allocated): DNS returns the endpoints themselves."""
    return (service.get("spec") or {}).get("clusterIP") in (None, "", "None")


def is_pod_ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_ipv4s(pod: Obj) -> list[str]:
    """The pod's IPv4 addresses: `status.podIPs`, or `status.podIP` when only that one is set."""
    status = pod.get("status") or {}
    ips = [p.get("ip") for p in status.get("podIPs") or []] or [status.get("podIP")]
    out: list[str] = []
    for ip in ips:
        try:
            if ip and ipaddress.ip_address(ip).version == 4:
                out.append(str(ipaddress.ip_address(ip)))  # re-stringified, as upstream does
        except ValueError:
            continue
    return out


def should_be_in_endpoints(pod: Obj, *, include_terminating: bool) -> bool:
    """Not terminal (Succeeded/Failed), has an IP, and not terminating unless that is allowed."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not is_terminating(pod)


def hostname_for(pod: Obj, service: Obj) -> str | None:
    """The pod's hostname if its subdomain is this Service (same namespace), else None."""
    spec = pod.get("spec") or {}
    pod_meta, svc_meta = pod.get("metadata") or {}, service.get("metadata") or {}
    if (spec.get("hostname") and spec.get("subdomain") == svc_meta.get("name")
            and pod_meta.get("namespace") == svc_meta.get("namespace")):
        return str(spec["hostname"])
    return None


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """The port a Service port reaches on this pod, or None when the pod has no such named port."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in list(spec.get("containers") or []) + sidecars:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def target_ref(pod: Obj) -> Obj:
    meta = pod.get("metadata") or {}
    return {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
            "uid": meta.get("uid", "")}


def slim_pod(pod: Obj) -> Obj:
    """What the endpoint controllers read of a pod (the informer caches only this)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    keep_meta = ("name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp")
    keep_spec = ("nodeName", "hostname", "subdomain")

    def ports_only(containers: list[Obj]) -> list[Obj]:
        return [{k: c[k] for k in ("name", "ports", "restartPolicy") if k in c} for c in containers]

    return {
        "metadata": {k: meta[k] for k in keep_meta if k in meta},
        "spec": {**{k: spec[k] for k in keep_spec if k in spec},
                 "containers": ports_only(spec.get("containers") or []),
                 "initContainers": ports_only(spec.get("initContainers") or [])},
        "status": {"phase": status.get("phase"), "podIP": status.get("podIP"), "podIPs": status.get("podIPs"),
                   "conditions": [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]},
    }


def _endpoint_relevant(pod: Obj) -> tuple[Any, ...]:
    """What of a pod can change its endpoints (`podEndpointsChanged`, plus phase and nodeName)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    return (is_terminating(pod), is_pod_ready(pod), tuple(pod_ipv4s(pod)), status.get("phase"),
            spec.get("hostname"), spec.get("subdomain"), spec.get("nodeName"),
            (pod.get("metadata") or {}).get("labels"))


def _rv(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def rv_at_least(rv: str, than: str) -> bool:
    """Whether resourceVersion `rv` is `than` or later (the sim's are decimal, like etcd revisions)."""
    if rv.isdigit() and than.isdigit():
        return int(rv) >= int(than)
    return rv == than


# --- stale-cache tracking ---------------------------------------------------------------------

class WriteTracker:
    """What this controller wrote, per Service, until its informer has caught up with it.

    For each object name the expected resourceVersion (None: we deleted it). Entries are dropped once
    the cache shows that version or later (or the deletion), and after `expiry` seconds in any case, so
    an object someone else removed while we were not watching cannot block a Service for ever.
    """

    def __init__(self, *, expiry: float = 5.0) -> None:
        self._expected: dict[ServiceKey, dict[str, tuple[str | None, float]]] = {}
        self._expiry = expiry

    def wrote(self, service: ServiceKey, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        self._expected.setdefault(service, {})[name] = (_rv(obj), time.monotonic())

    def deleted(self, service: ServiceKey, name: str) -> None:
        self._expected.setdefault(service, {})[name] = (None, time.monotonic())

    def forget(self, service: ServiceKey) -> None:
        self._expected.pop(service, None)

    def observe(self, service: ServiceKey, event_type: str, obj: Obj) -> bool:
        """Update from an informer event; True when the event is news (not the echo of our write)."""
        entries = self._expected.get(service) or {}
        name = obj["metadata"]["name"]
        if name not in entries:
            return True
        expected, _ = entries[name]
        if event_type == informer_mod.DELETED:
            entries.pop(name)
            return expected is not None
        if expected is None:
            return False  # an update from before our delete; the DELETED event follows
        if not rv_at_least(_rv(obj), expected):
            return False  # older than our write: the echo of our write is still to come
        entries.pop(name)
        return _rv(obj) != expected

    def stale(self, service: ServiceKey, cached: dict[str, Obj]) -> bool:
        """Whether the cache (name -> object) still lags behind one of our writes for this Service."""
        entries = self._expected.get(service) or {}
        now = time.monotonic()
        for name, (expected, when) in list(entries.items()):
            obj = cached.get(name)
            caught_up = obj is None if expected is None else obj is not None and rv_at_least(_rv(obj), expected)
            if caught_up or now - when > self._expiry:
                entries.pop(name)
            else:
                return True
        return False


# --- the controller skeleton -------------------------------------------------------------------

MAX_PAUSE = 1.0
"""The longest a Service's endpoints wait after a sync before pod changes sync it again (seconds)."""


def pause_after(duration: float, spacing: float) -> float:
    """How long pod changes wait after a sync that took `duration` seconds: `spacing` times it, at most
    `MAX_PAUSE` (pure)."""
    return min(spacing * duration, MAX_PAUSE)


class ServiceEndpointsController(abc.ABC):
    """Services + Pods informers and a queue of Service keys; subclasses implement `sync`.

    Args:
        client: an API client for this controller alone.
        name: the queue's name in logs.
        workers: Services synced concurrently.
        spacing: after a sync that took d seconds, pod changes wait until `spacing * d` seconds after
            it ended before the Service is synced again (0: at once, after every change).
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 name: str, workers: int = 4, spacing: float = 4.0) -> None:
        self.client = client
        self.queue: kubeclient.WorkQueue[ServiceKey] = kubeclient.WorkQueue(name=name)
        self.services = shared.informer(informers, client, kc.SERVICES)
        self.services.add_handler(self._on_service)
        self.pods = shared.informer(informers, client, kc.PODS, transform=slim_pod)
        self.pods.add_handler(self._on_pod)
        self.tracker = WriteTracker()
        self._waiting: set[ServiceKey] = set()
        """Services whose last sync found the cache behind our writes: requeued when an echo arrives."""
        self._informers = [self.services, self.pods]
        self._workers = workers
        self._spacing = spacing
        self._next_sync: dict[ServiceKey, float] = {}
        """Service -> when pod changes may sync it again (monotonic time)."""
        self._changed_during_sync: set[ServiceKey] = set()

    def add_informer(self, informer: informer_mod.Cache) -> None:
        """Another informer the workers must wait for (the one on what the subclass writes)."""
        self._informers.append(informer)

    async def run(self, stop: asyncio.Event) -> None:
        """Sync Services' endpoints until `stop` is set (may be called again after it returned)."""
        if self.queue.shutting_down:  # a restart after a crash: start afresh, every Service queued below
            self.queue = kubeclient.WorkQueue(name=self.queue.name)
        for informer in self._informers:
            informer.start()
        tasks: list[asyncio.Task[None]] = []
        try:
            if await self._wait_synced(stop):
                for service in self.services.list():
                    self._on_service(informer_mod.ADDED, service, None)
                self.on_synced()
                tasks = [asyncio.create_task(kubeclient.run_worker(self.queue, self._sync),
                                             name=f"{self.queue.name} worker {i}") for i in range(self._workers)]
                await stop.wait()
        finally:
            self.queue.shutdown()
            for informer in self._informers:
                informer.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for informer in self._informers:
                await informer.join()

    async def _wait_synced(self, stop: asyncio.Event) -> bool:
        waiters: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(asyncio.gather(*(i.wait_synced() for i in self._informers))),
            asyncio.ensure_future(stop.wait())]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in waiters:
                fut.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await fut
        return not stop.is_set()

    def on_synced(self) -> None:  # noqa: B027 (a hook: doing nothing is the default)
        """Called once every informer has synced, before the workers start."""

    async def _sync(self, key: ServiceKey) -> float | None:
        service = self.services.get(key[1], key[0])
        if service is None:
            self.tracker.forget(key)
        started = time.monotonic()
        self._next_sync[key] = float("inf")  # syncing: changes now are looked at after this sync
        try:
            return await self.sync(key, service)
        finally:
            ended = time.monotonic()
            pause = pause_after(ended - started, self._spacing)
            self._next_sync[key] = ended + pause
            if service is None:
                self._next_sync.pop(key, None)
            elif key in self._changed_during_sync:
                self.queue.add_after(key, pause)
            self._changed_during_sync.discard(key)

    @abc.abstractmethod
    async def sync(self, key: ServiceKey, service: Obj | None) -> float | None:
        """Bring the endpoints of Service `key` (None: it is gone) in line; return a requeue delay or None."""

    def cache_is_stale(self, key: ServiceKey, cached: dict[str, Obj]) -> bool:
        """Whether the cached objects (name -> object) of this Service lag behind our own writes.

        If so, the Service is synced again as soon as the informer delivers the echo of our write
        (see `observe_written`); the caller should also return a short requeue delay as a safety net.
        """
        if self.tracker.stale(key, cached):
            self._waiting.add(key)
            return True
        return False

    def observe_written(self, key: ServiceKey, event_type: str, obj: Obj) -> bool:
        """Feed an event on a written object to the tracker; True when it is news (someone else's change)."""
        news = self.tracker.observe(key, event_type, obj)
        if key in self._waiting:
            self._waiting.discard(key)
            self.queue.add(key)
        return news

    def selected_pods(self, service: Obj) -> list[Obj]:
        namespace = service["metadata"]["namespace"]
        return [p for p in self.pods.list(namespace)
                if selects(service, (p.get("metadata") or {}).get("labels") or {})]

    # --- triggers (informer callbacks: quick, no I/O) --------------------------------------------

    def _on_service(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        self.queue.add((meta.get("namespace", ""), meta["name"]))

    def _on_pod(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        if event_type == informer_mod.MODIFIED and old is not None:
            if _endpoint_relevant(old) == _endpoint_relevant(obj):
                return
            keys = self._services_for(obj) | self._services_for(old)
        else:
            keys = self._services_for(obj)
        for key in keys:
            self._queue_for_pod(key)

    def _queue_for_pod(self, key: ServiceKey) -> None:
        """Sync at once, or when the spacing after the last sync is over (an earlier deadline is kept)."""
        wait = self._next_sync.get(key, 0.0) - time.monotonic()
        if wait <= 0:
            self.queue.add(key)
        elif wait == float("inf"):
            self._changed_during_sync.add(key)  # queued when the running sync ends
        else:
            self.queue.add_after(key, wait)

    def _services_for(self, pod: Obj) -> set[ServiceKey]:
        meta = pod.get("metadata") or {}
        namespace, labels = meta.get("namespace", ""), meta.get("labels") or {}
        return {(namespace, s["metadata"]["name"]) for s in self.services.list(namespace)
                if has_selector(s) and selects(s, labels)}
