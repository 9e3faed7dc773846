"""The pure halves of real nodes: the network plan, the node configurations and the build plans."""

from __future__ import annotations

import ipaddress
import subprocess
import tomllib
from pathlib import Path

import pytest

from lwsconf.controlplane import versions
from lwsconf.realnodes import build, network, node


def test_a_block_holds_every_address_of_its_cluster_and_no_other_block_does() -> None:
    plans = [network.plan(b, ["a", "b", "c"]) for b in (0, 1, 15)]
    for p in plans:
        block = ipaddress.IPv4Network(p.cluster_cidr)
        inside = [p.bridge_address, p.api_address, *(n.address for n in p.nodes)]
        assert all(ipaddress.ip_address(a) in block for a in inside)
        for cidr in (p.service_cidr, p.node_subnet, *(n.pod_cidr for n in p.nodes)):
            assert ipaddress.IPv4Network(cidr).subnet_of(block)
        assert block.subnet_of(network.SPACE)
        pods = [ipaddress.ip_network(n.pod_cidr) for n in p.nodes]
        assert not any(a.overlaps(b) for i, a in enumerate(pods) for b in pods[i + 1:])
        assert not any(ipaddress.ip_network(p.service_cidr).overlaps(c) for c in pods)
    blocks = [ipaddress.ip_network(p.cluster_cidr) for p in plans]
    assert not any(a.overlaps(b) for i, a in enumerate(blocks) for b in blocks[i + 1:])


def test_names_fit_the_kernel_and_bad_sizes_are_refused() -> None:
    p = network.plan(15, [f"node-{i}" for i in range(network.MAX_NODES)])
    assert all(len(n) <= 15 for n in [p.bridge, *(x.veth_host for x in p.nodes)])
    with pytest.raises(ValueError, match="outside 0..15"):
        network.plan(16, ["a"])
    with pytest.raises(ValueError, match="1 to 10"):
        network.plan(0, [])


def test_no_route_leads_out_of_the_block() -> None:
    """Inside the nodes: other nodes' pod CIDRs via their node address, nothing else (no default route). On the host:
    each pod CIDR via its node, and the whole block unreachable otherwise, so no address of the block takes the
    host's default route; the host never forwards (its bridge does not call iptables; nothing sets its ip_forward)."""
    p = network.plan(2, ["a", "b", "c"])
    cmds = network.up_commands(p)
    pods = {n.pod_cidr: n.address for n in p.nodes}
    inside = [c for c in cmds if c[:2] == ["ip", "-n"] and "route" in c]
    assert len(inside) == 6
    assert all(pods[c[c.index("add") + 1]] == c[c.index("via") + 1] for c in inside)
    host = [c for c in cmds if c[:3] == ["ip", "route", "add"]]
    assert ["ip", "route", "add", "unreachable", p.cluster_cidr] in host
    assert sorted(c[3] for c in host if c[3] != "unreachable") == sorted(pods)
    assert all(pods[c[3]] == c[c.index("via") + 1] and c[-1] == p.bridge for c in host if c[3] != "unreachable")
    assert not any("default" in c for c in cmds)
    sysctls = [c for c in cmds if "sysctl" in c]
    assert sysctls and all(c[:3] == ["ip", "netns", "exec"] for c in sysctls)
    assert "nf_call_iptables" in cmds[0] and cmds[0][cmds[0].index("nf_call_iptables") + 1] == "0"
    down = network.down_commands(p)
    assert ["ip", "link", "delete", p.bridge] in down
    assert ["ip", "route", "delete", "unreachable", p.cluster_cidr] in down


def test_the_host_forward_chain_accepts_the_bridge_to_itself_and_nothing_else() -> None:
    """Where br_netfilter sends bridged frames through the host's FORWARD chain (a Docker host: policy DROP), the run
    accepts frames from its bridge to its bridge, first in FORWARD, in a chain of its own that `down` removes."""
    p = network.plan(3, ["a", "b"])
    chain = network.forward_chain(p)
    ipt = [c[3:] for c in network.up_commands(p) if c[:3] == list(network.IPTABLES)]
    assert ipt[0] == ["-N", chain] and ipt[1] == ["-A", chain, "-j", "ACCEPT"]
    jump = ipt[2]
    assert jump[:3] == ["-I", "FORWARD", "1"] and jump[-2:] == ["-j", chain]
    assert jump[jump.index("-i") + 1] == jump[jump.index("-o") + 1] == p.bridge   # in and out: the bridge itself
    assert len(ipt) == 3 and chain == "LWSCONF-B3-FWD" and chain != network.forward_chain(network.plan(4, ["a"]))
    down = [c[3:] for c in network.down_commands(p) if c[:3] == list(network.IPTABLES)]
    assert down == [["-D", "FORWARD", *jump[3:]], ["-F", chain], ["-X", chain]]


def test_a_host_without_a_filter_table_gets_no_forward_rule_and_loses_nothing_else() -> None:
    """No filter table: nothing filters FORWARD, and a rule would create the table (left behind after the run). Every
    other command is the same; `down` still tries the removals (a block reused after a host that had one)."""
    p = network.plan(1, ["a", "b"])
    without = network.up_commands(p, host_filters=False)
    assert not any(c[:3] == list(network.IPTABLES) for c in without)
    assert without == [c for c in network.up_commands(p) if c[:3] != list(network.IPTABLES)]


def test_a_pod_on_a_real_node_is_routed_inside_the_block_only() -> None:
    p = network.plan(0, ["a"])
    cni = node.cni_config(Path("/f"), p.nodes[0], p)
    ptp = cni["plugins"][0]  # type: ignore[index]
    assert ptp["type"] == "ptp" and ptp["ipMasq"] is False
    assert ptp["ipam"]["routes"] == [{"dst": p.cluster_cidr}]
    assert ptp["ipam"]["ranges"] == [[{"subnet": p.nodes[0].pod_cidr}]]


def test_the_runtime_is_pinned_to_our_images_and_runc() -> None:
    binaries = build.NodeBinaries(paths={"runc": Path("/c/runc")}, cni_dir=Path("/c/cni"),
                                  containerd_dir=Path("/c/containerd"))
    p = network.plan(0, ["a"])
    text = node.containerd_config(Path("/f"), p.nodes[0], binaries)
    assert f'sandbox = "{node.SANDBOX_IMAGE}"' in text
    assert 'BinaryName = "/c/runc"' in text and 'bin_dirs = ["/c/cni"]' in text
    assert "restrict_oom_score_adj = true" in text and "netns_mounts_under_state_dir = true" in text


def test_every_path_the_runtime_is_told_lies_in_the_node_folder_or_our_build() -> None:
    """NRI included: left to its defaults it binds the host-wide /var/run/nri/nri.sock (tests/realnodes/test_cluster.py
    checks the sockets a running containerd listens on)."""
    binaries = build.NodeBinaries(paths={"runc": Path("/c/runc")}, cni_dir=Path("/c/cni"),
                                  containerd_dir=Path("/c/containerd"))
    config = tomllib.loads(node.containerd_config(Path("/f"), network.plan(0, ["a"]).nodes[0], binaries))

    def paths(value: object) -> list[str]:
        if isinstance(value, dict):
            return [p for v in value.values() for p in paths(v)]
        if isinstance(value, list):
            return [p for v in value for p in paths(v)]
        return [value] if isinstance(value, str) and value.startswith("/") else []

    found = paths(config)
    assert config["plugins"]["io.containerd.nri.v1.nri"]["socket_path"] == "/f/nri/nri.sock"
    assert [p for p in found if not p.startswith(("/f/", "/c/"))] == [], found


def test_every_pinned_release_has_a_node_module_pinning_its_own_kubernetes() -> None:
    """`--kubernetes-version 1.36.3 --nodes=real` runs kubelets of the control plane's release, never the newest."""
    for release in versions.RELEASES:
        plan = build.plans(release, go="go", go_version="go1.26.8")[0]
        text = (plan.module / "go.mod").read_text()
        assert plan.module.name == f"k8s-{release.minor}" and (plan.module / "go.sum").is_file()
        assert f"k8s.io/kubernetes v{release.kubernetes}" in text, release
        staging = {line.split()[-1] for line in text.splitlines()
                   if line.strip().startswith("k8s.io/") and "=>" in line}
        assert staging == {f"v0.{release.kubernetes.split('.', 1)[1]}"}, (release, staging)


def test_every_part_builds_from_its_own_module_and_runc_alone_with_cgo() -> None:
    release = versions.DEFAULT
    plans = build.plans(release, go="go", go_version="go1.26.8")
    assert [p.title.split()[-1] for p in plans] == ["kubernetes", "containerd", "runc", "cni", "pause",
                                                    "coredns"]
    assert all((p.module / "go.mod").is_file() for p in plans)
    assert all((p.module / "go.sum").is_file() for p in plans if not p.title.endswith("pause"))  # pause: stdlib only
    cgo = {p.title.split()[-1]: p.env["CGO_ENABLED"] for p in plans}
    assert cgo == {"kubernetes": "0", "containerd": "0", "runc": "1", "cni": "0", "pause": "0",
                   "coredns": "0"}
    runc = next(p for p in plans if p.title.endswith("runc"))
    assert "seccomp" in runc.steps[0].argv
    kubelet = plans[0].steps[0]
    assert kubelet.output.name == "kubelet" and f"gitVersion=v{release.kubernetes}" in " ".join(kubelet.argv)


def test_the_filter_table_check_reads_every_table_as_iptables_save_lists_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """`*filter` among the tables: True; only other tables, or none: False; iptables-save failing: an error."""
    outputs = {"nat only": (0, "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"), "none": (0, ""),
               "filter": (0, "# Generated\n*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\nCOMMIT\n")}
    seen: list[bool] = []
    for name in ("nat only", "none", "filter"):
        code, out = outputs[name]
        monkeypatch.setattr(network, "_run", lambda argv, c=code, o=out: subprocess.CompletedProcess(argv, c, o, ""))
        seen.append(network.host_has_filter_table())
    assert seen == [False, False, True]
    monkeypatch.setattr(network, "_run", lambda argv: subprocess.CompletedProcess(argv, 1, "", "no permission"))
    with pytest.raises(network.NetworkError, match="no permission"):
        network.host_has_filter_table()
