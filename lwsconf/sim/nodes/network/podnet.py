"""Pod addresses as the API shows them and as the pods' processes use them, on `--cluster=local`.

Why two: every pod of our simulated nodes runs on this machine's loopback (127.X.a.b, see `ipam`), but
the real kube-apiserver refuses loopback addresses in Endpoints and EndpointSlices (ValidateEndpointIP:
"may not be in the loopback range") and will not proxy to them (`pods/<pod>/proxy` answers "address not
allowed" unless the pod IP is global unicast), so a Service could never list our pods there. On a
`LocalCluster` the API therefore sees each pod under an address of RFC 2544's benchmarking range
198.18.0.0/15, which the API server accepts and which is never meant to be routed: 127.X.a.b <->
198.18.a.b, one to one for the cluster's own 127.X.0.0/16 (its lower half, node and pod addresses; the
upper half holds ClusterIPs, which stay loopback). X is implicit, so the mapping is per cluster and
reversible.

Nothing is ever sent to a 198.18 address: the data plane stays loopback. The process binds its loopback
address, the downward API's `status.podIP`, /etc/hosts (`dns`) and the agent's probes use it; what reads
a pod address from the API (`dns`, our kube-proxy, the agent adopting a pod, kube-apiserver's egress
through `lwsconf.localcluster.egress`) turns it back with `to_loopback` first.

The plain sim keeps loopback pod IPs: its `IDENTITY` map changes nothing. Pure, no I/O.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

CLUSTER_RANGE = ipaddress.IPv4Network("198.18.0.0/15")
"""RFC 2544's benchmarking range: valid for kube-apiserver, never routed to anything of ours."""
CLUSTER_NETWORK = ipaddress.IPv4Network("198.18.0.0/17")
"""What a cluster's node and pod addresses map to (127.X.0.0/17 <-> 198.18.0.0/17)."""
_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


def _ipv4(ip: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(ip)
    except ValueError:
        return None


@dataclass(frozen=True)
class PodAddressMap:
    """127.X.a.b <-> 198.18.a.b for one cluster's 127.X.0.0/16 (a < 128), or nothing (`loopback` None).

    Addresses outside the mapped halves pass through unchanged in both directions (ClusterIPs, the API
    server's 127.0.0.1, another cluster's addresses), so callers can map every address they read.
    """

    loopback: ipaddress.IPv4Network | None = None
    """The cluster's 127.X.0.0/16; None: the identity (the sim)."""

    @classmethod
    def for_network(cls, network: str | ipaddress.IPv4Network) -> PodAddressMap:
        """The map of a cluster's pod network, "127.X.0.0/16".

        Raises:
            ValueError: not a /16 inside 127.0.0.0/8.
        """
        net = ipaddress.IPv4Network(network)
        if net.prefixlen != 16 or not net.subnet_of(_LOOPBACK):
            raise ValueError(f"a pod address map needs the cluster's 127.X.0.0/16, got {network}")
        return cls(net)

    @property
    def mapped(self) -> bool:
        return self.loopback is not None

    def _local_half(self) -> ipaddress.IPv4Network:
        assert self.loopback is not None
        return ipaddress.IPv4Network((self.loopback.network_address, 17))

    def to_cluster(self, ip: str) -> str:
        """The address the API shows for loopback `ip` (127.X.a.b -> 198.18.a.b); others unchanged."""
        addr = _ipv4(ip)
        if self.loopback is None or addr is None or addr not in self._local_half():
            return ip
        return str(CLUSTER_NETWORK.network_address + (int(addr) - int(self.loopback.network_address)))

    def is_cluster_address(self, ip: str) -> bool:
        """True for an address `to_cluster` hands out (198.18.0.0/17 of a mapped cluster)."""
        addr = _ipv4(ip)
        return self.loopback is not None and addr is not None and addr in CLUSTER_NETWORK

    def to_loopback(self, ip: str) -> str:
        """The loopback address behind an API address (198.18.a.b -> 127.X.a.b); others unchanged."""
        if not self.is_cluster_address(ip):
            return ip
        assert self.loopback is not None
        offset = int(ipaddress.IPv4Address(ip)) - int(CLUSTER_NETWORK.network_address)
        return str(self.loopback.network_address + offset)


IDENTITY = PodAddressMap()
"""The sim's map: pod IPs are loopback in the API too."""


def is_loopback(ip: str) -> bool:
    addr = _ipv4(ip)
    return addr is not None and addr in _LOOPBACK
