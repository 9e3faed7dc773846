"""The network of a real-node cluster: one network namespace per node on a bridge of the run's own, no way out.

Why namespaces: a kubelet refuses a loopback node IP (k8s.io/kubernetes v1.37.2 pkg/kubelet/kubelet_node_status.go
validateNodeIP), and each node needs its own iptables for its kube-proxy, as on separate machines. So each node is
a network namespace the run creates (`ip netns add`), joined by a veth pair to a bridge the run creates in the
host's namespace. Every address of the cluster lives in 198.19.0.0/16 (RFC 2544 benchmarking space, never routed
on the Internet), in a /20 block the run holds a lock on (two runs side by side never share one):

    198.19.B.0/24        the node subnet on the bridge: node i at .i, the host's end of the bridge at .254
    198.19.B+1+i.0/24    node i's pod CIDR (its pods' addresses, given by host-local IPAM in the CNI config)
    198.19.B+12.0/22     the Service ClusterIP range (kube-apiserver's --service-cluster-ip-range)
    198.19.B.253         the API address every node holds on its loopback (`forward`): in-pod clients reach the
                         API server through the `kubernetes` Service, whose endpoint this is

Nothing leaves the machine: no namespace has a default route (each knows the node subnet, the other nodes' pod
CIDRs via their node addresses, and nothing else), the host never forwards (its ip_forward stays as it was), and no
masquerade rule exists anywhere.

The host's firewall still sees the bridge's frames where br_netfilter is loaded: its global
net.bridge.bridge-nf-call-iptables (1 by default) sends every bridged frame through the host's FORWARD chain whatever
the bridge's own nf_call_iptables says (Linux net/bridge/br_netfilter_hooks.c, br_nf_pre_routing: the global switch
or the bridge's). Docker's default set-up loads br_netfilter and sets FORWARD's policy to DROP; on this project's
machine, after a Docker daemon had run there, both held, every packet between two nodes was dropped, and ClusterIPs
and cluster DNS timed out (a fresh-clone `.ci/run`, 3 tests of tests/realnodes). The run therefore accepts its own
bridge's traffic, bridge to bridge and nothing else, from a chain of its own (`forward_chain`) that FORWARD jumps to
first; `down` removes both. A host with no iptables filter table filters nothing on FORWARD, and there the run adds
no rule: inserting one would create the table (iptables-nft makes `ip filter` and its base chains on first use), and
removing our chain later would leave that empty table behind (a fresh machine's `.ci/run`: the host was not left as
it was found, tests/realnodes/test_cluster.py).

The host routes each pod CIDR through its node and holds an `unreachable` route for the whole block, so no address
of the block can ever take the host's default route. Everything the run adds (the bridge, the veths, the namespaces
and the rules kube-proxy writes inside them, the FORWARD chain) goes with `down`, which is safe to run on a
half-built or already-removed network.

`plan` is pure; `up` and `down` run `ip` (iproute2) and `iptables` commands.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lwsconf.realnodes import netns

SPACE = ipaddress.IPv4Network("198.19.0.0/16")
BLOCKS = 16
"""/20 blocks in SPACE: how many real-node clusters can run side by side on one machine."""
MAX_NODES = 10
COMMAND_TIMEOUT = 30.0
IPTABLES = ("iptables", "-w", "5")
"""The host's iptables, waiting up to 5 s for the xtables lock that kube-proxy or Docker may hold."""
GONE = ("No such file", "Cannot find device", "does not exist", "No such process", "No chain/target/match",
        "Bad rule (does a matching rule exist")
"""The words of a removal whose object is already gone (`ip` and `iptables`)."""


class NetworkError(Exception):
    """The network cannot be built or removed; the message names the command and what to do."""


@dataclass(frozen=True)
class NodeNet:
    """One node's place in the network."""

    name: str
    netns: str
    veth_host: str
    """The host's end of the node's veth pair (on the bridge); the node's end is `eth0` in its namespace."""
    address: str
    pod_cidr: str

    @property
    def netns_path(self) -> Path:
        return netns.NETNS_DIR / self.netns


@dataclass(frozen=True)
class NetworkPlan:
    block: int
    bridge: str
    bridge_address: str
    node_subnet: str
    api_address: str
    service_cidr: str
    cluster_cidr: str
    """Every pod CIDR of the cluster (the block's pod /24s), for routes and kube-proxy's --cluster-cidr."""
    nodes: tuple[NodeNet, ...]


def plan(block: int, node_names: Sequence[str]) -> NetworkPlan:
    """The network of block `block` (0..BLOCKS-1) for these nodes. Pure."""
    if not 0 <= block < BLOCKS:
        raise ValueError(f"block {block} is outside 0..{BLOCKS - 1}")
    if not 1 <= len(node_names) <= MAX_NODES:
        raise ValueError(f"{len(node_names)} nodes: a real-node cluster has 1 to {MAX_NODES}")
    base = 16 * block

    def third(offset: int) -> str:
        """The first three octets of the block's /24 number `offset`."""
        return f"198.19.{base + offset}"

    nodes = tuple(NodeNet(name=name, netns=f"lwsconf-b{block}-{name}", veth_host=f"lwsb{block}n{i}",
                          address=f"{third(0)}.{i}", pod_cidr=f"{third(1 + i)}.0/24")
                  for i, name in enumerate(node_names, start=1))
    return NetworkPlan(block=block, bridge=f"lwsbr{block}", bridge_address=f"{third(0)}.254",
                       node_subnet=f"{third(0)}.0/24", api_address=f"{third(0)}.253",
                       service_cidr=f"{third(12)}.0/22", cluster_cidr=f"{third(0)}.0/20", nodes=nodes)


def up_commands(p: NetworkPlan, *, host_filters: bool = True) -> list[list[str]]:
    """The `ip` (and `iptables`) commands that build `p`, in order. Pure.

    `host_filters`: whether the host has an iptables filter table (`host_has_filter_table`); only then can its
    FORWARD chain drop the bridge's frames, and only then does the run add its accepting chain."""
    chain = forward_chain(p)
    # frames between this run's nodes pass a host whose FORWARD drops (see the module's docstring)
    accept = [[*IPTABLES, "-N", chain],
              [*IPTABLES, "-A", chain, "-j", "ACCEPT"],
              [*IPTABLES, "-I", "FORWARD", "1", *_forward_rule(p)]] if host_filters else []
    cmds = [["ip", "link", "add", p.bridge, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0",
             "nf_call_arptables", "0"],
            *accept,
            ["ip", "addr", "add", f"{p.bridge_address}/24", "dev", p.bridge],
            ["ip", "link", "set", p.bridge, "up"],
            # the host reaches every address of the block through the bridge or not at all: without this, an address
            # of the block with no route of its own (a pod's, seen: kube-apiserver proxying to a pod) went to the
            # default route, off the machine
            ["ip", "route", "add", "unreachable", p.cluster_cidr]]
    for node in p.nodes:
        inside = ["ip", "-n", node.netns]
        cmds += [["ip", "netns", "add", node.netns],
                 ["ip", "link", "add", node.veth_host, "type", "veth", "peer", "name", "eth0", "netns", node.netns],
                 ["ip", "link", "set", node.veth_host, "master", p.bridge, "up"],
                 [*inside, "link", "set", "lo", "up"],
                 [*inside, "addr", "add", f"{node.address}/24", "dev", "eth0"],
                 [*inside, "addr", "add", f"{p.api_address}/32", "dev", "lo"],
                 [*inside, "link", "set", "eth0", "up"],
                 ["ip", "netns", "exec", node.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"]]
        for other in p.nodes:
            if other is not node:
                cmds.append([*inside, "route", "add", other.pod_cidr, "via", other.address, "dev", "eth0"])
    # the host's way to each node's pods (kube-apiserver's pods/proxy and Service proxy dial pod addresses): through
    # the node, whose namespace forwards; the host itself never forwards
    cmds += [["ip", "route", "add", n.pod_cidr, "via", n.address, "dev", p.bridge] for n in p.nodes]
    return cmds


def down_commands(p: NetworkPlan) -> list[list[str]]:
    """The commands that remove `p`. Each veth pair is deleted by its host end first: a namespace's devices go only
    when the kernel destroys the namespace, which it does asynchronously after `ip netns delete` (seen: two of three
    host ends still present right after a stop), while deleting one end of a pair removes both at once."""
    chain = forward_chain(p)
    return [*(["ip", "link", "delete", n.veth_host] for n in p.nodes),
            *(["ip", "netns", "delete", n.netns] for n in p.nodes), ["ip", "link", "delete", p.bridge],
            ["ip", "route", "delete", "unreachable", p.cluster_cidr],
            [*IPTABLES, "-D", "FORWARD", *_forward_rule(p)],
            [*IPTABLES, "-F", chain], [*IPTABLES, "-X", chain]]


def forward_chain(p: NetworkPlan) -> str:
    """The host's filter chain that accepts the frames between block `p.block`'s nodes. Pure."""
    return f"LWSCONF-B{p.block}-FWD"


def _forward_rule(p: NetworkPlan) -> list[str]:
    """FORWARD's rule that sends frames bridged from one port of the run's bridge to another (in and out are both the
    bridge) to `forward_chain`; the same words insert it and delete it."""
    return ["-i", p.bridge, "-o", p.bridge, "-m", "comment", "--comment",
            f"lwsconf real nodes: between the nodes of block {p.block}", "-j", forward_chain(p)]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetworkError(f"`{' '.join(argv)}` could not run: {exc}") from exc


def require_tools() -> None:
    """NetworkError naming what to install when `ip` is missing or the process cannot create namespaces."""
    if shutil.which("ip") is None:
        raise NetworkError("real nodes need iproute2's `ip` (apt-get install iproute2)")
    if shutil.which(IPTABLES[0]) is None:
        raise NetworkError("real nodes need `iptables` (apt-get install iptables): the run accepts its bridge's "
                           "traffic in the host's FORWARD chain, and kube-proxy writes its rules with it")
    if os.geteuid() != 0:
        raise NetworkError("real nodes create network namespaces, a bridge and cgroups: run as root "
                           "(or use --nodes=sim)")


def up(p: NetworkPlan) -> None:
    """Build the network; on any failure remove what was built and raise NetworkError with the command's words."""
    require_tools()
    down(p)  # a run killed with SIGKILL may have left this block's network behind
    for argv in up_commands(p, host_filters=host_has_filter_table()):
        result = _run(argv)
        if result.returncode != 0:
            down(p)
            raise NetworkError(f"`{' '.join(argv)}` failed: {result.stderr.strip() or result.stdout.strip()}")


def host_has_filter_table() -> bool:
    """Whether the host has an iptables filter table: `iptables-save` (all tables, as they are) lists `*filter`.

    Not `iptables -S` or `iptables-save -t filter`: both print the default chains of a table that does not exist
    (iptables v1.8.9, nf_tables), and a check must not create what it looks for either (neither does)."""
    result = _run(["iptables-save"])
    if result.returncode != 0:
        raise NetworkError(f"`iptables-save` failed: {result.stderr.strip()}")
    return any(line.strip() == "*filter" for line in result.stdout.splitlines())


def down(p: NetworkPlan) -> list[str]:
    """Remove the network, whatever of it exists; the errors other than "not there" are returned."""
    problems = []
    for argv in down_commands(p):
        result = _run(argv)
        text = result.stderr.strip()
        if result.returncode != 0 and not any(s in text for s in GONE):
            problems.append(f"`{' '.join(argv)}`: {text}")
    return problems


def guard_space() -> None:
    """An `unreachable` route for the whole SPACE on the host (kept while any of our clusters runs): an address of
    198.19.0.0/16 that no running block routes can then never take the host's default route, which is what lets the
    loopback monitor accept peers in SPACE (`fixtures.loopback`, `ClusterBackend.run_networks`)."""
    result = _run(["ip", "route", "add", "unreachable", str(SPACE)])
    if result.returncode != 0 and "File exists" not in result.stderr:
        raise NetworkError(f"`ip route add unreachable {SPACE}` failed: {result.stderr.strip()}")


def unguard_space() -> list[str]:
    """Remove the route of `guard_space` (the last cluster to stop does)."""
    result = _run(["ip", "route", "delete", "unreachable", str(SPACE)])
    if result.returncode != 0 and "No such process" not in result.stderr:
        return [f"`ip route delete unreachable {SPACE}`: {result.stderr.strip()}"]
    return []


@dataclass
class BlockLock:
    """The run's hold on one /20 block (an flock'ed file): released at stop, or by the kernel when the run dies."""

    block: int
    handle: IO[bytes]
    path: Path

    def release(self) -> None:
        self.handle.close()


def reserve_block(lock_dir: Path | None = None) -> BlockLock:
    """The first free block; NetworkError when all BLOCKS are held by running clusters."""
    directory = lock_dir or Path(tempfile.gettempdir()) / "lwsconf-realnodes"
    directory.mkdir(parents=True, exist_ok=True)
    for block in range(BLOCKS):
        handle = open(directory / f"block-{block}.lock", "ab")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return BlockLock(block, handle, directory / f"block-{block}.lock")
    raise NetworkError(f"all {BLOCKS} real-node network blocks are held by running clusters ({directory})")
