"""Cluster DNS for process containers: the names CoreDNS would answer, written into /etc/hosts files.

The sim runs no DNS server. Instead `ClusterDNS` follows Services and Pods (all namespaces, fed by
informer handlers) and computes the A records CoreDNS's `kubernetes` plugin serves
(https://github.com/kubernetes/dns/blob/master/docs/specification.md):

* a Service with a ClusterIP: `<svc>.<ns>.svc.<domain>` -> the ClusterIP;
* a headless Service (clusterIP None) with a selector: the same name -> the IPs of its endpoints,
  i.e. the selected pods that have an IP, are not terminal and are Ready, or all of them when
  `publishNotReadyAddresses` is set (as the EndpointSlice controller decides);
* such an endpoint whose pod has `spec.hostname` and `spec.subdomain` naming that Service:
  `<hostname>.<svc>.<ns>.svc.<domain>` -> its IP. LWS relies on this: its headless Service
  publishes not-ready addresses, so `LWS_LEADER_ADDRESS` (`<N>-<i>.<N>.<ns>`) resolves early.

A pod's resolver would try its search path (`<ns>.svc.<domain> svc.<domain> <domain>`); a hosts
file cannot search, so each record is written under every name the search path makes resolvable
from that pod: the full name, without `.<domain>`, without `.svc.<domain>`, and (same namespace
only) the bare `<svc>` / `<hostname>.<svc>`.

Each running pod gets a hosts file (`open_hosts_file`) that starts with the kubelet's own managed
content (`managedHostsFileContent` in kubelet_pods.go: localhost lines, the pod's IP with its
hostname, hostAliases) and is rewritten IN PLACE (same inode) whenever its content changes, so a
bind mount of it over /etc/hosts sees every update. Writes are coalesced: many informer events in
one loop turn give one rewrite, and events that change no record rewrite nothing.

A cluster has ONE DNS (CoreDNS, a Deployment every node's pods query), and so has the sim:
`SharedClusterDNS` is that one, run by `NodeFleet` as the controller "coredns/cluster-dns" with its
own client. Its single pair of pod and service informers feeds one `ClusterDNS`, so records are
computed once per change for the whole cluster; each node's launcher (`processes.ProcessLauncher`)
registers the hosts files of its own pods with it and reads Services from its cache.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.sim.nodes import aio
from lwsconf.sim.nodes.network import podnet

log = logging.getLogger(__name__)

Obj = dict[str, Any]
CLUSTER_DOMAIN = "cluster.local"
HEADER = "# Kubernetes-managed hosts file.\n"
LOCAL_LINES = ("127.0.0.1\tlocalhost\n"
               "::1\tlocalhost ip6-localhost ip6-loopback\n"
               "fe00::0\tip6-localnet\n"
               "fe00::0\tip6-mcastprefix\n"
               "fe00::1\tip6-allnodes\n"
               "fe00::2\tip6-allrouters\n")


class _Informer(Protocol):
    def add_handler(self, handler: Any) -> None: ...


@dataclass(frozen=True)
class Record:
    """One A record: `stem` is the name below `<ns>.svc.<domain>` (`svc` or `host.svc`)."""

    stem: str
    namespace: str
    ip: str


def pod_hostname(pod: Obj) -> tuple[str, str]:
    """(hostname, subdomain) as the kubelet gives them: spec.hostname or the pod name, capped at
    63 characters without a trailing '-' or '.' (`GeneratePodHostNameAndDomain`)."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    hostname = str(spec.get("hostname") or meta.get("name") or "")
    if len(hostname) > 63:
        hostname = hostname[:63].rstrip("-.")
    return hostname, str(spec.get("subdomain") or "")


def _ready(pod: Obj) -> bool:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def _selects(selector: Obj, pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def compute_records(services: Iterable[Obj], pods: Iterable[Obj],
                    addresses: podnet.PodAddressMap = podnet.IDENTITY) -> list[Record]:
    """Every A record the cluster's Services and Pods give (see the module docstring).

    Pod IPs are read from the API and turned back into the loopback addresses the pods listen on
    (`podnet`: on `--cluster=local` the API shows 198.18 addresses nothing can reach).
    """
    by_ns: dict[str, list[Obj]] = defaultdict(list)
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("podIP") and status.get("phase") not in ("Succeeded", "Failed"):
            by_ns[(pod.get("metadata") or {}).get("namespace") or ""].append(pod)
    records: list[Record] = []
    for svc in services:
        meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
        name, ns = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if spec.get("type") == "ExternalName":
            continue
        cluster_ip = spec.get("clusterIP")
        if cluster_ip and cluster_ip != "None":
            records.append(Record(name, ns, str(cluster_ip)))
            continue
        selector = spec.get("selector")
        if cluster_ip != "None" or not selector:
            continue
        for pod in by_ns.get(ns, ()):
            if not _selects(selector, pod) or not (spec.get("publishNotReadyAddresses") or _ready(pod)):
                continue
            ip = addresses.to_loopback(str(pod["status"]["podIP"]))
            records.append(Record(name, ns, ip))
            pspec = pod.get("spec") or {}
            if pspec.get("hostname") and pspec.get("subdomain") == name:
                records.append(Record(f"{pspec['hostname']}.{name}", ns, ip))
    return records


def names_for(record: Record, namespace: str, domain: str = CLUSTER_DOMAIN) -> list[str]:
    """The names under which `record` resolves for a pod in `namespace` (its search path applied)."""
    base = f"{record.stem}.{record.namespace}"
    names = [f"{base}.svc.{domain}", f"{base}.svc", base]
    if record.namespace == namespace:
        names.append(record.stem)
    return names


def managed_hosts(pod: Obj, pod_ips: Iterable[str], domain: str = CLUSTER_DOMAIN) -> str:
    """The kubelet's managed /etc/hosts content for `pod` (before any cluster records)."""
    hostname, subdomain = pod_hostname(pod)
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    lines = [HEADER, LOCAL_LINES]
    for ip in pod_ips:
        if subdomain:
            lines.append(f"{ip}\t{hostname}.{subdomain}.{namespace}.svc.{domain}\t{hostname}\n")
        else:
            lines.append(f"{ip}\t{hostname}\n")
    aliases = (pod.get("spec") or {}).get("hostAliases") or ()
    if aliases:
        lines.append("\n# Entries added by HostAliases.\n")
        for alias in aliases:
            lines.append(f"{alias.get('ip')}\t" + "\t".join(alias.get("hostnames") or ()) + "\n")
    return "".join(lines)


def records_section(records: Iterable[Record], namespace: str, domain: str = CLUSTER_DOMAIN) -> str:
    """The cluster records part of a hosts file, as a pod in `namespace` sees them (sorted lines)."""
    lines = sorted({f"{r.ip}\t" + "\t".join(names_for(r, namespace, domain)) + "\n" for r in records})
    return "\n# Cluster DNS (lwsconf sim: what CoreDNS answers, with this pod's search path).\n" + "".join(lines)


class HostsFile:
    """A hosts file kept current for one pod; rewritten in place, never replaced."""

    def __init__(self, owner: ClusterDNS, path: Path, pod: Obj, pod_ip: str) -> None:
        self.owner, self.path, self.pod, self.pod_ip = owner, path, pod, pod_ip
        self.namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        self.head = managed_hosts(pod, [pod_ip] if pod_ip else [], owner.cluster_domain)
        """The kubelet's managed part: fixed for the pod's life."""
        self.writes = 0

    def render(self, records: Iterable[Record]) -> str:
        return self.head + records_section(records, self.namespace, self.owner.cluster_domain)

    def sync(self, records: Iterable[Record]) -> bool:
        """Write the current content if it changed (same inode); True when written."""
        return self.write(self.render(records))

    def write(self, text: str) -> bool:
        """Write `text` if the file holds something else (same inode); True when written."""
        data = text.encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            old = os.read(fd, len(data) + 1)
            if old == data:
                return False
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
        self.writes += 1
        return True

    def close(self) -> None:
        """Stop updating this file (the file stays)."""
        self.owner.close_hosts_file(self.path)


class ClusterDNS:
    """Name -> IP records of a simulated cluster, and the hosts files that publish them.

    Feed it with `attach(pods_informer, services_informer)` (all namespaces) or call `on_pod` /
    `on_service` (informer handler signature) yourself. Records are computed once per change,
    whatever the number of hosts files; a flush after events that changed no record writes nothing.
    """

    def __init__(self, *, cluster_domain: str = CLUSTER_DOMAIN, flush_delay: float = 0.02,
                 addresses: podnet.PodAddressMap = podnet.IDENTITY) -> None:
        self.cluster_domain = cluster_domain
        self.addresses = addresses
        self.flush_delay = flush_delay
        self._pods: dict[tuple[str, str], Obj] = {}
        self._services: dict[tuple[str, str], Obj] = {}
        self._files: dict[Path, HostsFile] = {}
        self._records: list[Record] | None = None
        self._flushed: frozenset[Record] | None = None
        """The records every open hosts file was last synced with (None: sync them all at the next flush)."""
        self._scheduled: asyncio.TimerHandle | None = None

    def attach(self, pods: _Informer, services: _Informer) -> None:
        """Follow these informers (add before they start to see the initial objects)."""
        pods.add_handler(self.on_pod)
        services.add_handler(self.on_service)

    def forget_objects(self) -> None:
        """Drop every pod and service seen (before informers that list them afresh are attached)."""
        self._pods.clear()
        self._services.clear()
        self._records = None

    def on_pod(self, event_type: str, obj: Obj, old: Obj | None = None) -> None:
        self._apply(self._pods, event_type, obj)

    def on_service(self, event_type: str, obj: Obj, old: Obj | None = None) -> None:
        self._apply(self._services, event_type, obj)

    def _apply(self, table: dict[tuple[str, str], Obj], event_type: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if event_type == "DELETED":
            table.pop(key, None)
        else:
            table[key] = obj
        self._records = None
        self._schedule_flush()

    def records(self) -> list[Record]:
        if self._records is None:
            self._records = compute_records(self._services.values(), self._pods.values(), self.addresses)
        return self._records

    def lookup(self, name: str, namespace: str = "") -> list[str]:
        """The IPs `name` resolves to for a pod in `namespace` (sorted; [] when unknown)."""
        name = name.rstrip(".")
        return sorted({r.ip for r in self.records() if name in names_for(r, namespace, self.cluster_domain)})

    # --- hosts files ---------------------------------------------------------------------------

    @property
    def hosts_files(self) -> int:
        """How many hosts files are kept current."""
        return len(self._files)

    def open_hosts_file(self, path: Path, pod: Obj, pod_ip: str) -> HostsFile:
        """Write `path` for `pod` now and keep it current until closed (re-opening replaces)."""
        hosts = HostsFile(self, Path(path), pod, pod_ip)
        records = self.records()
        current = frozenset(records)
        if not self._files:
            self._flushed = current
        elif self._flushed != current:
            self._flushed = None  # the others still show older records: the next flush looks at every file
        self._files[hosts.path] = hosts
        try:
            hosts.sync(records)
        except OSError:
            self._flushed = None
            raise
        return hosts

    def close_hosts_file(self, path: Path) -> None:
        self._files.pop(Path(path), None)

    def flush(self) -> int:
        """Rewrite every hosts file whose content changed now; returns how many were written."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        records = self.records()
        current = frozenset(records)
        if current == self._flushed:
            return 0  # no record changed: no file's content did (a new file was written when opened)
        sections: dict[str, str] = {}  # the records part depends only on the pod's namespace
        written, failed = 0, False
        for hosts in list(self._files.values()):
            section = sections.get(hosts.namespace)
            if section is None:
                section = sections[hosts.namespace] = records_section(records, hosts.namespace, self.cluster_domain)
            try:
                written += hosts.write(hosts.head + section)
            except OSError as exc:  # the pod directory went away under us
                failed = True
                log.warning("cannot update hosts file %s: %s", hosts.path, exc)
        self._flushed = None if failed else current
        return written

    def _schedule_flush(self) -> None:
        if not self._files:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._scheduled is None:
            self._scheduled = loop.call_later(self.flush_delay, self.flush)


class SharedClusterDNS:
    """The cluster's one DNS, as the CoreDNS Deployment every node's pods query: one `ClusterDNS` for all nodes.

    Run it as a controller, with its own client: `run(client, stop)` (`NodeFleet.controllers()` names it
    "coredns/cluster-dns"). Its pod and service informers (all namespaces) start when a launcher first
    needs them (`wait_synced`: a cluster that runs no process container opens no watch for DNS) and stop,
    joined, when `run` ends. Launchers of every node open and close their pods' hosts files on `table`.

    Args:
        addresses: how pod IPs appear in the API (`podnet`); hosts files get the loopback addresses.
        flush_delay: how long events are gathered before the hosts files are synced.
    """

    def __init__(self, *, addresses: podnet.PodAddressMap = podnet.IDENTITY, flush_delay: float = 0.02) -> None:
        self.table = ClusterDNS(addresses=addresses, flush_delay=flush_delay)
        self.pods: informer_mod.Informer | None = None
        self.services: informer_mod.Informer | None = None
        self._wanted = asyncio.Event()
        """Set by the first launcher that needs records or Services."""
        self._started = asyncio.Event()
        """Set while `run` has its informers running."""

    async def run(self, client: kc.Client, stop: asyncio.Event) -> None:
        """Serve until `stop`: start the informers once wanted, stop and join them on the way out."""
        await aio.until_any(stop, self._wanted)
        if stop.is_set():
            return
        pods = informer_mod.Informer(client, kc.PODS, watch_timeout=60.0)
        services = informer_mod.Informer(client, kc.SERVICES, watch_timeout=60.0)
        self.table.forget_objects()  # a restarted controller lists everything afresh
        self.table.attach(pods, services)
        self.pods, self.services = pods, services
        try:
            pods.start()
            services.start()
            self._started.set()
            await stop.wait()
        finally:
            self._started.clear()
            for inf in (pods, services):
                inf.stop()
            for inf in (pods, services):
                await inf.join()

    async def wait_synced(self, timeout: float = 10.0) -> None:
        """Ask for the informers (the first call starts them) and wait until both listed.

        Raises:
            TimeoutError: not synced within `timeout` seconds (is the fleet's controller running?).
        """
        self._wanted.set()
        if self._started.is_set() and self._synced():
            return
        try:
            async with asyncio.timeout(timeout):
                await self._started.wait()
                assert self.pods is not None and self.services is not None
                await asyncio.gather(self.pods.wait_synced(), self.services.wait_synced())
        except TimeoutError:
            raise TimeoutError(f"the cluster DNS did not sync within {timeout}s: is its controller running "
                               "and the API server up?") from None

    def _synced(self) -> bool:
        return self.pods is not None and self.pods.has_synced and self.services is not None \
            and self.services.has_synced

    def services_of(self, namespace: str) -> list[Obj]:
        """The cached Services of `namespace` and of "default" (for service-link env vars)."""
        if self.services is None:
            return []
        found = self.services.list(namespace)
        return found if namespace == "default" else found + self.services.list("default")


