"""Addresses of the simulated cluster: one 127.X.0.0/16 network, node IPs, pod IPs and Service IPs.

The cluster's /16 is split three ways:

* node n (0-based, at most `MAX_NODES` = 127 nodes) has InternalIP 127.X.0.(n+1);
* its pods get 127.X.(n+1).2 ... .254 from spec.podCIDR 127.X.(n+1).0/24 (127.X.1.0 ... 127.X.127.0);
* Service ClusterIPs come from the upper half, 127.X.128.0/17 (`PodNetwork.service_range`; 32,639
  ClusterIPs, as the API server skips addresses ending in .0), which `SimCluster` hands to its API
  server and the sim's kube-proxy listens on.

Everything stays in 127.0.0.0/8, so no traffic ever leaves the machine and no privileges are needed
(Linux routes all of 127/8 to `lo`).

X must differ between clusters running at the same time on one machine (parallel test workers), or
two pods with the same fixed containerPort, or two Services with the same ClusterIP and port, would
collide. `reserve_pod_network` picks a free X and holds an advisory lock file for it until released.
127.96.0.0/16 is the Service range of an API server started on its own (without `SimCluster`) and is
never handed out as a cluster network.

Pod IPs are handed out round-robin (the next free address after the last one given), as the CNI
host-local plugin does, so a deleted pod's address is not reused at once by its replacement, which
would let stale endpoints point at the wrong pod.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

SERVICE_SECOND_OCTET = 96
"""127.96.0.0/16: the Service ClusterIP range of an API server that runs without a cluster network."""
MAX_NODES = 127
"""Pod CIDRs 127.X.1.0/24 ... 127.X.127.0/24; the upper half of the /16 holds the Service range."""
_CANDIDATES = [x for x in range(16, 255) if x != SERVICE_SECOND_OCTET]


class PodNetworkExhausted(RuntimeError):
    """No free address (or no free pod network)."""


@dataclass(frozen=True)
class PodNetwork:
    """The cluster's 127.X.0.0/16 and the per-node addresses derived from it."""

    cidr: ipaddress.IPv4Network

    @classmethod
    def parse(cls, value: str | ipaddress.IPv4Network | PodNetwork) -> PodNetwork:
        """Accept "127.X.0.0/16", an IPv4Network or a PodNetwork.

        Raises:
            ValueError: not a /16 inside 127.0.0.0/8, or the Service range.
        """
        if isinstance(value, PodNetwork):
            return value
        net = ipaddress.IPv4Network(value)
        if net.prefixlen != 16 or not net.subnet_of(ipaddress.IPv4Network("127.0.0.0/8")):
            raise ValueError(f"the pod network must be a /16 inside 127.0.0.0/8 (e.g. 127.42.0.0/16), got {value}")
        if net.network_address.packed[1] in (0, SERVICE_SECOND_OCTET):
            raise ValueError(f"pod network {value} overlaps 127.0.0.0/16 or the Service range 127.96.0.0/16; "
                             "choose another second octet")
        return cls(net)

    @property
    def second_octet(self) -> int:
        return self.cidr.network_address.packed[1]

    @property
    def service_range(self) -> ipaddress.IPv4Network:
        """127.X.128.0/17: this cluster's Service ClusterIPs, clear of every node IP and pod CIDR."""
        return ipaddress.IPv4Network(f"127.{self.second_octet}.128.0/17")

    def node_ip(self, index: int) -> str:
        """InternalIP of node `index` (0-based)."""
        _check_index(index)
        return f"127.{self.second_octet}.0.{index + 1}"

    def pod_cidr(self, index: int) -> str:
        """spec.podCIDR of node `index` (0-based)."""
        _check_index(index)
        return f"127.{self.second_octet}.{index + 1}.0/24"


def _check_index(index: int) -> None:
    if not 0 <= index < MAX_NODES:
        raise ValueError(f"node index must be in 0..{MAX_NODES - 1} (the upper half of the network holds "
                         f"Service IPs), got {index}")


class IPAllocator:
    """Pod IPs from one node's /24 (.2 to .254), keyed by pod UID."""

    def __init__(self, pod_cidr: str) -> None:
        net = ipaddress.IPv4Network(pod_cidr)
        self._pool = [str(net.network_address + i) for i in range(2, 255)]
        self._by_uid: dict[str, str] = {}
        self._next = 0

    def allocate(self, uid: str) -> str:
        """The pod's address (the same one again for the same UID).

        Raises:
            PodNetworkExhausted: all 253 addresses are taken (too many pods on one node).
        """
        if uid in self._by_uid:
            return self._by_uid[uid]
        used = set(self._by_uid.values())
        for step in range(len(self._pool)):
            candidate = self._pool[(self._next + step) % len(self._pool)]
            if candidate not in used:
                self._next = (self._next + step + 1) % len(self._pool)
                self._by_uid[uid] = candidate
                return candidate
        raise PodNetworkExhausted(f"all {len(self._pool)} pod IPs of this node are in use; "
                                  "delete pods or spread them over more nodes")

    def reserve(self, uid: str, ip: str) -> bool:
        """Keep an address a pod already has (after an agent restart); False if not ours or taken."""
        if ip not in self._pool or (ip in self._by_uid.values() and self._by_uid.get(uid) != ip):
            return False
        self._by_uid[uid] = ip
        return True

    def release(self, uid: str) -> None:
        self._by_uid.pop(uid, None)

    def in_use(self) -> dict[str, str]:
        return dict(self._by_uid)


class PodNetworkReservation:
    """A pod network held for this cluster through an advisory lock file; `release()` frees it."""

    def __init__(self, network: PodNetwork, handle: IO[bytes] | None) -> None:
        self.network = network
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def reserve_pod_network(*, lock_dir: Path | None = None, rng: random.Random | None = None) -> PodNetworkReservation:
    """Pick a 127.X.0.0/16 that no other running cluster on this machine holds.

    Raises:
        PodNetworkExhausted: every candidate second octet is locked (hundreds of clusters running).
    """
    directory = lock_dir or Path(tempfile.gettempdir()) / "lwsconf-podnet"
    directory.mkdir(parents=True, exist_ok=True)
    candidates = list(_CANDIDATES)
    (rng or random.Random(os.getpid())).shuffle(candidates)
    for octet in candidates:
        handle = open(directory / f"127.{octet}.lock", "ab")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return PodNetworkReservation(PodNetwork.parse(f"127.{octet}.0.0/16"), handle)
    raise PodNetworkExhausted(f"every pod network 127.X.0.0/16 is locked in {directory}; stop other simulated "
                              "clusters or remove stale lock files there")
