"""Which nodes a simulated cluster has: names, labels, capacity and taints, as plain data.

The default layout is what LWS tests need to say something about GPUs, TPUs and topology: four GPU nodes
(8 `nvidia.com/gpu` each, with the labels NVIDIA's GPU feature discovery puts on real nodes) in two
zones and two racks, plus two CPU nodes with 8 `google.com/tpu` each (for LWS's TPU env, contract 3.5).
`load_layout` reads the same shape from a YAML topology file, so `lwsconf sim up --topology FILE` can
describe other clusters:

    nodeGroups:
    - name: gpu                      # nodes gpu-0, gpu-1, ...
      count: 4
      labels: {example.com/pool: big}
      capacity: {cpu: "32", memory: 256Gi, pods: "110"}
      gpu: {count: 8, product: NVIDIA-H100-80GB-HBM3, memoryMiB: 81559}   # optional
      devices: {google.com/tpu: 4}   # optional: other extended resources served by fake device plugins
      spread:                        # optional: contiguous equal runs of nodes per value
        topology.kubernetes.io/zone: [zone-a, zone-b]
      taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]

Node order matters: the n-th node (0-based, across groups) gets InternalIP 127.X.0.(n+1) and the
pod CIDR 127.X.(n+1).0/24 (see `ipam`). No I/O here except reading the topology file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lwsconf.sim.nodes.network import ipam

GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"
SIMULATED_GPU_LABEL = "lwsconf.dev/simulated-gpu"
SIMULATED_DEVICES_LABEL = "lwsconf.dev/simulated-devices"
"""On nodes whose `devices:` come from fake device plugins: the resource names, `_`-joined (`google.com_tpu`)."""
ZONE_LABEL = "topology.kubernetes.io/zone"
RACK_LABEL = "lwsconf.dev/rack"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_NODES = ipam.MAX_NODES
"""Node n uses 127.X.(n+1).0/24 for its pods and 127.X.128.0/17 holds Service IPs: at most 127 nodes."""

_GROUP_KEYS = {"name", "count", "labels", "capacity", "taints", "gpu", "devices", "spread"}
_GPU_KEYS = {"count", "product", "memoryMiB"}
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True)
class NodeSpec:
    """One node: its name, labels, capacity (resource name to quantity string) and taints."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()

    @property
    def gpus(self) -> int:
        """How many `nvidia.com/gpu` the layout gives this node (0 for CPU-only nodes)."""
        return int(self.capacity.get(GPU_RESOURCE, "0"))

    @property
    def devices(self) -> dict[str, int]:
        """Device-plugin resources: each extended resource of the capacity (`<domain>/<name>` outside
        kubernetes.io, a whole count > 0) -> count. The fleet runs one fake device plugin per entry."""
        return {name: int(quantity) for name, quantity in self.capacity.items()
                if is_device_resource(name) and quantity.isdigit() and int(quantity) > 0}


def is_device_resource(name: str) -> bool:
    """An extended resource name a device plugin may serve: `<domain>/<name>` outside kubernetes.io."""
    domain, _, rest = name.partition("/")
    return bool(rest) and "." in domain and not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io")) \
        and not name.startswith("requests.")


class LayoutError(ValueError):
    """A topology file that cannot be used; the message names the file and the bad key."""


def gpu_labels(count: int, product: str = "NVIDIA-H100-80GB-HBM3", memory_mib: int = 81559) -> dict[str, str]:
    """The labels GPU feature discovery writes on a node with `count` GPUs of one product."""
    return {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.count": str(count), "nvidia.com/gpu.memory": str(memory_mib),
            SIMULATED_GPU_LABEL: "true"}


def base_labels(name: str) -> dict[str, str]:
    """What every kubelet labels its node with."""
    return {HOSTNAME_LABEL: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}


def default_layout(gpu_nodes: int = 4, cpu_nodes: int = 2) -> list[NodeSpec]:
    """4 GPU nodes (8 H100s each) in zone-a/rack-a and zone-b/rack-b, then 2 CPU nodes with 8 fake TPUs each.

    Other counts keep the same shape (each kind split into a zone-a half and a zone-b half), which
    is what `lwsconf sim up --nodes N` uses.

    Raises:
        LayoutError: a negative count, or more nodes than one pod network holds.
    """
    if gpu_nodes < 0 or cpu_nodes < 0:
        raise LayoutError(f"node counts must be >= 0, got {gpu_nodes} GPU and {cpu_nodes} CPU nodes")
    spread = {ZONE_LABEL: ["zone-a", "zone-b"], RACK_LABEL: ["rack-a", "rack-b"]}
    groups: list[dict[str, Any]] = []
    if gpu_nodes:
        groups.append({"name": "gpu", "count": gpu_nodes, "gpu": {"count": 8}, "spread": spread,
                       "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}})
    if cpu_nodes:
        groups.append({"name": "cpu", "count": cpu_nodes, "spread": spread, "devices": {TPU_RESOURCE: 8},
                       "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "512Gi"}})
    return expand_groups(groups, where="default layout")


def load_layout(path: str | Path) -> list[NodeSpec]:
    """Read a topology file (a `nodeGroups:` mapping or a bare list of groups).

    Raises:
        LayoutError: unreadable YAML, an unknown key, or a bad value; the message names the key.
    """
    where = str(path)
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise LayoutError(f"{where}: cannot read the topology file: {exc}") from None
    if isinstance(doc, dict):
        unknown = set(doc) - {"nodeGroups"}
        if unknown:
            raise LayoutError(f"{where}: unknown top-level key(s) {sorted(unknown)}; expected nodeGroups")
        doc = doc.get("nodeGroups")
    if not isinstance(doc, list) or not doc:
        raise LayoutError(f"{where}: nodeGroups must be a non-empty list of node groups")
    return expand_groups(doc, where=where)


def expand_groups(groups: Sequence[Any], *, where: str) -> list[NodeSpec]:
    """Turn node-group mappings into NodeSpecs, validating every key."""
    nodes: list[NodeSpec] = []
    for i, group in enumerate(groups):
        nodes.extend(_expand_group(group, f"{where}: nodeGroups[{i}]"))
    names = [n.name for n in nodes]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise LayoutError(f"{where}: node names must be unique, got duplicates {duplicates}; rename a group")
    if len(nodes) > MAX_NODES:
        raise LayoutError(f"{where}: {len(nodes)} nodes, at most {MAX_NODES} fit one pod network")
    return nodes


def _expand_group(group: Any, at: str) -> list[NodeSpec]:
    if not isinstance(group, dict):
        raise LayoutError(f"{at}: must be a mapping with name/count/labels/capacity/taints/gpu/spread")
    unknown = set(group) - _GROUP_KEYS
    if unknown:
        raise LayoutError(f"{at}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_GROUP_KEYS)}")
    name = group.get("name")
    if not isinstance(name, str) or not _dns_label(name):
        raise LayoutError(f"{at}.name: must be a lowercase DNS label (a-z, 0-9, '-'), got {name!r}")
    count = group.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise LayoutError(f"{at}.count: must be a positive integer, got {count!r}")
    labels = _str_map(group.get("labels", {}), f"{at}.labels")
    capacity = _str_map(group.get("capacity", {}), f"{at}.capacity")
    for key in ("cpu", "memory", "pods"):
        capacity.setdefault(key, {"cpu": "8", "memory": "32Gi", "pods": "110"}[key])
    if "gpu" in group:
        gpu_count, gpu_label_map = _gpu(group["gpu"], f"{at}.gpu")
        capacity[GPU_RESOURCE] = str(gpu_count)
        labels = {**gpu_label_map, **labels}
    if "devices" in group:
        devices = _devices(group["devices"], f"{at}.devices")
        capacity.update({name: str(count) for name, count in devices.items()})
        labels = {SIMULATED_DEVICES_LABEL: "_".join(n.replace("/", "_") for n in devices), **labels}
    taints = _taints(group.get("taints", []), f"{at}.taints")
    spread = _spread(group.get("spread", {}), f"{at}.spread")
    nodes = []
    for index in range(count):
        node_name = f"{name}-{index}"
        node_labels = {**base_labels(node_name), **labels}
        for key, values in spread.items():
            node_labels[key] = values[index * len(values) // count]
        nodes.append(NodeSpec(node_name, node_labels, dict(capacity), taints))
    return nodes


def _dns_label(value: str) -> bool:
    return 0 < len(value) <= 50 and value[0].isalnum() and value[-1].isalnum() and all(
        c.islower() or c.isdigit() or c == "-" for c in value)


def _str_map(value: Any, at: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise LayoutError(f"{at}: must be a mapping of strings, got {type(value).__name__}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or isinstance(item, (dict, list)) or item is None or isinstance(item, bool):
            raise LayoutError(f"{at}.{key}: must be a string (quote numbers like \"8\"), got {item!r}")
        out[key] = str(item)
    return out


def _gpu(value: Any, at: str) -> tuple[int, dict[str, str]]:
    if not isinstance(value, dict):
        raise LayoutError(f"{at}: must be a mapping with count/product/memoryMiB")
    unknown = set(value) - _GPU_KEYS
    if unknown:
        raise LayoutError(f"{at}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_GPU_KEYS)}")
    count = value.get("count", 8)
    memory = value.get("memoryMiB", 81559)
    product = value.get("product", "NVIDIA-H100-80GB-HBM3")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise LayoutError(f"{at}.count: must be a positive integer, got {count!r}")
    if not isinstance(memory, int) or isinstance(memory, bool) or memory < 1:
        raise LayoutError(f"{at}.memoryMiB: must be a positive integer, got {memory!r}")
    if not isinstance(product, str) or not product:
        raise LayoutError(f"{at}.product: must be a non-empty string, got {product!r}")
    return count, gpu_labels(count, product, memory)


def _devices(value: Any, at: str) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        raise LayoutError(f"{at}: must map extended resource names to device counts, e.g. {{google.com/tpu: 4}}")
    out: dict[str, int] = {}
    for name, count in value.items():
        if not isinstance(name, str) or not is_device_resource(name):
            raise LayoutError(f"{at}.{name}: not an extended resource name (want <domain>/<name> outside "
                              "kubernetes.io, e.g. google.com/tpu)")
        if name == GPU_RESOURCE:
            raise LayoutError(f"{at}.{name}: use the gpu key for {GPU_RESOURCE} (it adds the GPU labels)")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise LayoutError(f"{at}.{name}: must be a positive integer, got {count!r}")
        out[name] = count
    return out


def _taints(value: Any, at: str) -> tuple[dict[str, str], ...]:
    if not isinstance(value, list):
        raise LayoutError(f"{at}: must be a list of {{key, value, effect}}")
    taints = []
    for i, taint in enumerate(value):
        item = _str_map(taint, f"{at}[{i}]")
        unknown = set(item) - {"key", "value", "effect"}
        if unknown:
            raise LayoutError(f"{at}[{i}]: unknown key(s) {sorted(unknown)}; allowed: key, value, effect")
        if not item.get("key"):
            raise LayoutError(f"{at}[{i}].key: required")
        if item.get("effect") not in _TAINT_EFFECTS:
            raise LayoutError(f"{at}[{i}].effect: must be one of {list(_TAINT_EFFECTS)}, got {item.get('effect')!r}")
        taints.append(item)
    return tuple(taints)


def _spread(value: Any, at: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise LayoutError(f"{at}: must map a label key to a list of values")
    out: dict[str, list[str]] = {}
    for key, values in value.items():
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
            raise LayoutError(f"{at}.{key}: must be a non-empty list of label values, got {values!r}")
        out[str(key)] = list(values)
    return out
