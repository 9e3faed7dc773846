"""Node layouts: the default GPU/CPU cluster, topology files, and their validation errors; pod network addresses."""

from __future__ import annotations

import ipaddress
import random
from pathlib import Path

import pytest

from lwsconf.sim.nodes import layout
from lwsconf.sim.nodes.network import ipam


def test_default_layout_has_four_gpu_nodes_in_two_zones_and_two_cpu_nodes() -> None:
    nodes = layout.default_layout()
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3", "cpu-0", "cpu-1"]
    gpus = [n for n in nodes if n.gpus]
    assert [n.labels[layout.ZONE_LABEL] for n in gpus] == ["zone-a", "zone-a", "zone-b", "zone-b"]
    assert [n.labels[layout.RACK_LABEL] for n in gpus] == ["rack-a", "rack-a", "rack-b", "rack-b"]
    for node in gpus:
        assert node.capacity["nvidia.com/gpu"] == "8" and node.capacity["cpu"] == "32"
        assert node.capacity["memory"] == "256Gi" and node.capacity["pods"] == "110"
        assert node.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert node.labels["nvidia.com/gpu.count"] == "8" and node.labels["nvidia.com/gpu.memory"] == "81559"
        assert node.labels["nvidia.com/gpu.present"] == "true" and node.labels["lwsconf.dev/simulated-gpu"] == "true"
        assert node.labels["kubernetes.io/hostname"] == node.name and node.labels["kubernetes.io/os"] == "linux"
    cpus = [n for n in nodes if not n.gpus]
    assert [(n.capacity["cpu"], n.capacity["memory"]) for n in cpus] == [("16", "64Gi")] * 2
    assert all("nvidia.com/gpu.present" not in n.labels for n in cpus)
    assert [n.labels[layout.ZONE_LABEL] for n in cpus] == ["zone-a", "zone-b"]
    assert [n.devices for n in cpus] == [{"google.com/tpu": 8}] * 2
    assert [n.devices for n in gpus] == [{"nvidia.com/gpu": 8}] * 4


def test_topology_file_expands_groups_with_spread_gpu_and_taints(tmp_path: Path) -> None:
    path = tmp_path / "topology.yaml"
    path.write_text("""
nodeGroups:
- name: a100
  count: 3
  gpu: {count: 4, product: NVIDIA-A100-SXM4-40GB, memoryMiB: 40960}
  labels: {pool: train}
  capacity: {cpu: "64", memory: 512Gi}
  spread: {topology.kubernetes.io/zone: [z1, z2, z3]}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
- name: small
""")
    nodes = layout.load_layout(path)
    assert [n.name for n in nodes] == ["a100-0", "a100-1", "a100-2", "small-0"]
    assert [n.labels[layout.ZONE_LABEL] for n in nodes[:3]] == ["z1", "z2", "z3"]
    assert nodes[0].capacity == {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "4"}
    assert nodes[0].labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB" and nodes[0].labels["pool"] == "train"
    assert nodes[0].taints == ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)
    assert nodes[3].gpus == 0 and nodes[3].capacity["cpu"] == "8"


def test_topology_devices_add_capacity_served_by_fake_plugins(tmp_path: Path) -> None:
    path = tmp_path / "topology.yaml"
    path.write_text("- {name: tpu, count: 2, devices: {google.com/tpu: 4, example.com/fpga: 1}}\n")
    nodes = layout.load_layout(path)
    assert nodes[0].capacity["google.com/tpu"] == "4" and nodes[0].capacity["example.com/fpga"] == "1"
    assert nodes[0].devices == {"google.com/tpu": 4, "example.com/fpga": 1} and nodes[0].gpus == 0
    assert nodes[1].labels[layout.SIMULATED_DEVICES_LABEL] == "google.com_tpu_example.com_fpga"


@pytest.mark.parametrize(("text", "message"), [
    ("nodeGroups: []", "non-empty list"),
    ("nodes: []", "unknown top-level key"),
    ("- {name: a, cuont: 2}", r"nodeGroups\[0\]: unknown key\(s\) \['cuont'\]"),
    ("- {name: a, devices: {tpu: 4}}", r"nodeGroups\[0\].devices.tpu: not an extended resource name"),
    ("- {name: a, devices: {google.com/tpu: 0}}", r"nodeGroups\[0\].devices.google.com/tpu: must be a positive"),
    ("- {name: a, devices: {nvidia.com/gpu: 2}}", r"use the gpu key"),
    ("- {name: Big_Node}", r"nodeGroups\[0\].name: must be a lowercase DNS label"),
    ("- {name: a, count: 0}", r"nodeGroups\[0\].count: must be a positive integer"),
    ("- {name: a, capacity: {cpu: 8}}\n- {name: b, capacity: {cpu: [1]}}", r"nodeGroups\[1\].capacity.cpu"),
    ("- {name: a, taints: [{key: k, effect: Sometimes}]}", r"taints\[0\].effect: must be one of"),
    ("- {name: a, gpu: {count: 8, vram: 1}}", r"nodeGroups\[0\].gpu: unknown key"),
    ("- {name: a}\n- {name: a}", "node names must be unique"),
    ("- {name: a, spread: {zone: []}}", r"spread.zone: must be a non-empty list"),
    (": : :", "cannot read the topology file"),
])
def test_bad_topology_files_name_the_bad_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(layout.LayoutError, match=message):
        layout.load_layout(path)


def test_pod_network_gives_node_ips_pod_cidrs_and_refuses_other_ranges() -> None:
    net = ipam.PodNetwork.parse("127.42.0.0/16")
    assert (net.node_ip(0), net.pod_cidr(0), net.node_ip(3)) == ("127.42.0.1", "127.42.1.0/24", "127.42.0.4")
    for bad in ("10.0.0.0/16", "127.42.0.0/24", "127.96.0.0/16", "127.0.0.0/16"):
        with pytest.raises(ValueError):
            ipam.PodNetwork.parse(bad)


def test_the_service_range_is_the_upper_half_clear_of_every_node_ip_and_pod_cidr() -> None:
    net = ipam.PodNetwork.parse("127.42.0.0/16")
    services = net.service_range
    assert str(services) == "127.42.128.0/17" and services.num_addresses == 32768
    last = layout.MAX_NODES - 1
    assert (net.node_ip(last), net.pod_cidr(last)) == ("127.42.0.127", "127.42.127.0/24")
    for index in range(layout.MAX_NODES):
        assert not ipaddress.ip_network(net.pod_cidr(index)).overlaps(services)
        assert ipaddress.ip_address(net.node_ip(index)) not in services
    with pytest.raises(ValueError, match="0..126"):
        net.pod_cidr(layout.MAX_NODES)


def test_a_layout_with_more_nodes_than_fit_beside_the_service_range_is_refused() -> None:
    assert layout.default_layout(gpu_nodes=layout.MAX_NODES, cpu_nodes=0)[-1].name == f"gpu-{layout.MAX_NODES - 1}"
    with pytest.raises(layout.LayoutError, match="at most 127 fit"):
        layout.default_layout(gpu_nodes=layout.MAX_NODES, cpu_nodes=1)


def test_pod_ips_are_unique_round_robin_and_reserved_on_adoption() -> None:
    ips = ipam.IPAllocator("127.42.1.0/24")
    first, second = ips.allocate("a"), ips.allocate("b")
    assert (first, second) == ("127.42.1.2", "127.42.1.3") and ips.allocate("a") == first
    ips.release("a")
    assert ips.allocate("c") == "127.42.1.4"  # a freed address is not handed out again at once
    assert ips.reserve("d", "127.42.1.9") and not ips.reserve("e", "127.42.1.9") and not ips.reserve("f", "10.0.0.1")
    for n in range(253 - 3):  # b, c and d hold three
        ips.allocate(f"x{n}")
    with pytest.raises(ipam.PodNetworkExhausted, match="all 253 pod IPs"):
        ips.allocate("one-too-many")


def test_reserved_pod_networks_do_not_collide_until_released(tmp_path: Path) -> None:
    first = ipam.reserve_pod_network(lock_dir=tmp_path, rng=random.Random(0))
    second = ipam.reserve_pod_network(lock_dir=tmp_path, rng=random.Random(0))
    assert first.network != second.network
    octet = first.network.second_octet
    first.release()
    third = ipam.reserve_pod_network(lock_dir=tmp_path, rng=random.Random(0))
    assert third.network.second_octet == octet
    second.release()
    third.release()


def test_default_layout_scales_keeping_its_zone_split() -> None:
    nodes = layout.default_layout(gpu_nodes=3, cpu_nodes=0)
    assert [(n.name, n.labels[layout.ZONE_LABEL]) for n in nodes] == [
        ("gpu-0", "zone-a"), ("gpu-1", "zone-a"), ("gpu-2", "zone-b")]
    assert layout.default_layout(0, 0) == []
    with pytest.raises(layout.LayoutError, match="must be >= 0"):
        layout.default_layout(-1)


def test_the_fleet_runs_one_fake_plugin_per_device_resource_of_a_node(tmp_path: Path) -> None:
    from lwsconf.sim.nodes import fleet as fleet_mod

    fleet = fleet_mod.NodeFleet(layout.default_layout(gpu_nodes=1, cpu_nodes=1), workdir=tmp_path, processes=False)
    try:
        names = [name for name, _ in fleet.controllers()]
        assert names == ["kubelet/gpu-0", "nvidia-device-plugin/gpu-0",
                         "kubelet/cpu-0", "google-tpu-device-plugin/cpu-0"]
    finally:
        fleet.close()
    assert fleet_mod.plugin_name("example.com/fpga.v2") == "example-fpga-v2-device-plugin"
