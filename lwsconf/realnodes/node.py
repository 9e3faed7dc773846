"""One real node: containerd with runc, a kubelet and kube-proxy in the node's network namespace (issue 31).

What runs, in start order, each a `controlplane.process.Component` entered into the namespace with
`nsenter --net` (not `ip netns exec`, which remounts /sys and so hides the cgroup mounts the kubelet needs):

1. the API forwarder (`lwsconf.realnodes.forward`): the API server at `api_address:port` inside the node;
2. containerd (CRI, overlayfs, runc with seccomp, CNI ptp + host-local in the node's pod CIDR, pod namespaces under
   its state folder, `restrict_oom_score_adj`: this machine's bounding set lacks CAP_SYS_RESOURCE, without which
   runc cannot lower a pause container's oom_score_adj to the kubelet's -998); then the images are imported;
3. the kubelet (cgroupfs driver under the node's own cgroup root, `failCgroupV1: false`, webhook authentication
   and authorization, a serving certificate for the node address, a resolv.conf naming cluster DNS only);
4. per entry of `devices` (`nvidia.com/gpu`, `google.com/tpu`), a fake device plugin (`lwsconf.deviceplugin`) in
   registry mode: it serves its socket in `<folder>/deviceplugin/` and a registration socket in the kubelet's
   `<root-dir>/plugins_registry/`, so this node's kubelet, and no other, registers it (the device manager's own
   kubelet.sock is one fixed path for every kubelet on the host: `lwsconf.deviceplugin.plugin`'s docstring). No
   namespace: unix sockets are files;
5. kube-proxy (iptables mode, its rules in the node's namespace).

Stopping undoes all of it whatever state it is in: the components stop in reverse order, every process left in
the node's cgroups (containers, containerd's shims) is killed, every mount under the node's folder is unmounted,
the cgroups are removed, then the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lwsconf.controlplane import flags, pki
from lwsconf.controlplane.process import Component
from lwsconf.realnodes.build import NodeBinaries
from lwsconf.realnodes.network import NetworkPlan, NodeNet

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_V1_HIERARCHIES = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd")
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10"
"""The sandbox image containerd runs for every pod; built offline (`images`) and pinned so it is never pulled."""
KUBELET_PORT = 10250
SOCKET_TIMEOUT = 30.0
"""Seconds containerd has to create its socket."""


class NodeError(Exception):
    """A node part that did not start; the message names it and ends with its log tail."""


@dataclass(frozen=True)
class NodeConfig:
    """Everything a node needs that is not its own: where the parts are and how to reach the control plane."""

    binaries: NodeBinaries
    network: NetworkPlan
    api_port: int
    """The API server's port on the host's 127.0.0.1, and the forwarder's at `network.api_address` in the node."""
    ca: pki.Authority
    images: Sequence[Path] = ()
    """OCI archives imported into the node's containerd before the kubelet starts."""
    labels: Mapping[str, str] = field(default_factory=dict)
    cluster_dns: str = ""
    devices: Mapping[str, int] = field(default_factory=dict)
    """Extended resource -> fake devices its device plugin advertises; one plugin per resource, none when empty."""


DEVICE_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")
"""Compiled into the kubelet (k8s.io/kubernetes v1.37.2 pkg/kubelet/cm/devicemanager/manager.go:135 and :164): its
device manager's socket and checkpoint. Every kubelet on the host would share them, and a node would read another
node's devices from the shared checkpoint (seen: a CPU node reporting nvidia.com/gpu: 0), so each kubelet runs in a
mount namespace of its own where a folder of its node is bind-mounted over this path."""


def own_device_plugin_dir(own: Path, argv: Sequence[str]) -> list[str]:
    """`argv` in a new mount namespace (propagation unchanged: the kubelet's shared root dir keeps propagating) with
    `own` over DEVICE_PLUGIN_DIR; every step execs the next, so the pid is the kubelet's. Pure."""
    return ["unshare", "--mount", "--propagation", "unchanged", "--", "sh", "-c",
            'mkdir -p "$1" "$2" && mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", str(own),
            str(DEVICE_PLUGIN_DIR), *argv]


def cgroup_name(net: NodeNet) -> str:
    return f"/{net.netns}"


def containerd_config(folder: Path, net: NodeNet, binaries: NodeBinaries) -> str:
    """containerd's config (version 3) for this node: every socket and state path lies in the node's folder. NRI's
    defaults are host-wide (/var/run/nri/nri.sock, which containerd removes and binds again at start: two nodes
    starting at once failed with `bind: address already in use`, and a later node silently took an earlier one's
    socket; /opt/nri/plugins would launch the host's plugins). Pure."""
    return f'''version = 3
root = "{folder}/containerd/root"
state = "{folder}/containerd/state"
[grpc]
  address = "{folder}/containerd.sock"
[ttrpc]
  address = "{folder}/containerd.sock.ttrpc"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{SANDBOX_IMAGE}"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "{binaries.path("runc")}"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{binaries.cni_dir}"]
    conf_dir = "{folder}/cni"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins."io.containerd.nri.v1.nri"]
  socket_path = "{folder}/nri/nri.sock"
  plugin_path = "{folder}/nri/plugins"
  plugin_config_path = "{folder}/nri/conf.d"
'''


def cni_config(folder: Path, net: NodeNet, network: NetworkPlan) -> dict[str, object]:
    """ptp (a veth per pod, routed by the node: no bridge, no masquerade) with host-local addresses from the node's
    pod CIDR; the pod's only route is the cluster's block, so a pod has no way to any other address. Pure."""
    return {"cniVersion": "1.0.0", "name": "lwsconf", "plugins": [
        {"type": "ptp", "ipMasq": False, "mtu": 1500,
         "ipam": {"type": "host-local", "dataDir": str(folder / "ipam"), "ranges": [[{"subnet": net.pod_cidr}]],
                  "routes": [{"dst": network.cluster_cidr}]}},
        {"type": "portmap", "capabilities": {"portMappings": True}, "snat": False}]}


def kubelet_config(folder: Path, net: NodeNet, config: NodeConfig, serving: pki.Pair) -> dict[str, object]:
    """The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) of this node. Pure."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "failCgroupV1": False, "failSwapOn": False, "cgroupDriver": "cgroupfs", "cgroupRoot": cgroup_name(net),
        "address": net.address, "port": KUBELET_PORT, "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
        "readOnlyPort": 0,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(config.ca.pair.cert)}},
        "authorization": {"mode": "Webhook"},
        "clusterDNS": [config.cluster_dns] if config.cluster_dns else [], "clusterDomain": "cluster.local",
        "containerRuntimeEndpoint": f"unix://{folder}/containerd.sock",
        "tlsCertFile": str(serving.cert), "tlsPrivateKeyFile": str(serving.key),
        "resolvConf": str(folder / "resolv.conf"), "podLogsDir": str(folder / "pod-logs"),
        # the machine's disk and memory are shared by every node: no node evicts for what another uses
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "protectKernelDefaults": False, "localStorageCapacityIsolation": False,
        "serializeImagePulls": False, "podCIDR": net.pod_cidr,
    }


def kube_proxy_config(folder: Path, net: NodeNet, network: NetworkPlan) -> dict[str, object]:
    """The KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) of this node. Pure."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "mode": "iptables", "hostnameOverride": net.name, "clusterCIDR": network.cluster_cidr,
        "clientConnection": {"kubeconfig": str(folder / "kube-proxy.kubeconfig")},
        "bindAddress": net.address, "healthzBindAddress": "127.0.0.1:10256", "metricsBindAddress": "127.0.0.1:10249",
        # conntrack sysctls are the host's: leave them as they are
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": None, "tcpCloseWaitTimeout": None},
        "iptables": {"masqueradeAll": False, "localhostNodePorts": False},
    }


def device_plugin_argv(folder: Path, net: NodeNet, resource: str, count: int) -> list[str]:
    """The command of the node's fake device plugin for `resource`, registered through this node's kubelet only
    (its socket is named after the resource, so a node's plugins never share one). Pure."""
    return [sys.executable, "-m", "lwsconf.deviceplugin.cli", "--registration", "registry",
            "--registry-dir", str(folder / "kubelet" / "plugins_registry"),
            "--socket-dir", str(folder / "deviceplugin"), "--count", str(count), "--resource", resource,
            "--node-name", net.name]


class RealNode:
    """One node; `start()` brings it up (NodeError on failure, having stopped what started), `stop()` removes it."""

    def __init__(self, net: NodeNet, config: NodeConfig, folder: Path) -> None:
        self.net, self.config, self.folder = net, config, folder
        self.components: list[Component] = []

    @property
    def name(self) -> str:
        return self.net.name

    def _nsenter(self, argv: Sequence[str]) -> list[str]:
        return ["nsenter", f"--net={self.net.netns_path}", *argv]

    def _launch(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Component:
        component = Component(name, argv, self.folder / f"{name}.log", cwd=self.folder, env=env)
        self.components.append(component)
        return component

    def start(self) -> RealNode:
        """The whole node, one step after the other (`RealNodeCluster` runs the three steps itself, the image
        import of every node at once)."""
        self.start_runtime()
        self._or_stop(self.import_images)
        self.start_agents()
        return self

    def start_runtime(self) -> None:
        """The API forwarder and containerd, its socket answering. Call from the thread that outlives the node:
        its processes die with the thread that started them (PR_SET_PDEATHSIG, `controlplane.process`)."""
        self._or_stop(self._start_runtime)

    def import_images(self) -> None:
        """Every image of the catalogue into this node's containerd (`ctr images import`, which unpacks it: most of a
        node's start). Starts no lasting process, so it may run on a worker thread, beside other nodes' imports.
        A failure leaves the node as it is: the caller stops it (`start`, or the cluster's stop)."""
        for archive in self.config.images:
            self._import(archive)

    def start_agents(self) -> None:
        """The kubelet, the device plugins and kube-proxy (same thread rule as `start_runtime`)."""
        self._or_stop(self._start_agents)

    def _or_stop(self, step: Callable[[], None]) -> None:
        """`step`, or on any failure the node stopped (nothing it started is left) and the failure raised."""
        try:
            step()
        except BaseException:
            self.stop()
            raise

    def _start_runtime(self) -> None:
        f, net, cfg = self.folder, self.net, self.config
        f.mkdir(parents=True, exist_ok=True)
        (f / "cni").mkdir(exist_ok=True)
        self._make_cgroups()
        self._launch("forward", [sys.executable, "-m", "lwsconf.realnodes.forward", "--netns", str(net.netns_path),
                                 "--listen", f"{cfg.network.api_address}:{cfg.api_port}", "--to", str(cfg.api_port)])
        (f / "cni" / "10-lwsconf.conflist").write_text(json.dumps(cni_config(f, net, cfg.network), indent=2))
        (f / "containerd.toml").write_text(containerd_config(f, net, cfg.binaries))
        path = f"{cfg.binaries.containerd_dir}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"
        containerd = self._launch("containerd", self._nsenter(
            [str(cfg.binaries.path("containerd")), "--config", str(f / "containerd.toml")]), env={"PATH": path})
        self._enter_cgroup(containerd.pid, "runtime")
        self._wait_for_socket(containerd, f / "containerd.sock")

    def _start_agents(self) -> None:
        f, net, cfg = self.folder, self.net, self.config
        api = f"https://{cfg.network.api_address}:{cfg.api_port}"
        node_user = cfg.ca.issue(f"node-{net.name}", f"system:node:{net.name}", org="system:nodes")
        serving = cfg.ca.issue(f"kubelet-{net.name}", net.name, server_names=(net.name,), server_ips=(net.address,))
        (f / "kubeconfig").write_text(yaml.safe_dump(
            flags.kubeconfig(api, cfg.ca.pair, node_user, f"system:node:{net.name}")))
        (f / "resolv.conf").write_text(f"nameserver {cfg.cluster_dns}\n" if cfg.cluster_dns else "")
        (f / "kubelet.yaml").write_text(yaml.safe_dump(kubelet_config(f, net, cfg, serving)))
        labels = ",".join(f"{k}={v}" for k, v in sorted(cfg.labels.items()))
        self._share_root_dir(f / "kubelet")
        kubelet = self._launch("kubelet", own_device_plugin_dir(f / "device-plugins", self._nsenter([
            str(cfg.binaries.path("kubelet")), f"--config={f}/kubelet.yaml", f"--kubeconfig={f}/kubeconfig",
            f"--root-dir={f}/kubelet", f"--cert-dir={f}/pki", f"--hostname-override={net.name}",
            f"--node-ip={net.address}", *([f"--node-labels={labels}"] if labels else []), "--v=2"])))
        self._enter_cgroup(kubelet.pid, "kubelet")
        for resource, count in sorted(cfg.devices.items()):
            self._launch(f"deviceplugin-{resource.replace('/', '_')}", device_plugin_argv(f, net, resource, count))
        proxy_user = cfg.ca.issue(f"kube-proxy-{net.name}", "system:kube-proxy")
        (f / "kube-proxy.kubeconfig").write_text(yaml.safe_dump(
            flags.kubeconfig(api, cfg.ca.pair, proxy_user, "system:kube-proxy")))
        (f / "kube-proxy.yaml").write_text(yaml.safe_dump(kube_proxy_config(f, net, cfg.network)))
        self._launch("kube-proxy", self._nsenter([str(cfg.binaries.path("kube-proxy")),
                                                  f"--config={f}/kube-proxy.yaml", "--v=2"]))

    def _share_root_dir(self, root: Path) -> None:
        """The kubelet's root dir as a shared mount of its own, before the kubelet gets its mount namespace: the
        volumes it mounts there (secrets, projected tokens) then propagate back to the host's namespace, where
        containerd and runc look for them (the host's / is private on these machines)."""
        root.mkdir(parents=True, exist_ok=True)
        for argv in (["mount", "--bind", str(root), str(root)], ["mount", "--make-shared", str(root)]):
            result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
            if result.returncode != 0:
                raise NodeError(f"node {self.name}: `{' '.join(argv)}` failed: {result.stderr.strip()}")

    def _wait_for_socket(self, containerd: Component, sock: Path) -> None:
        deadline = time.monotonic() + SOCKET_TIMEOUT
        while not sock.exists():
            if containerd.exited() is not None or time.monotonic() > deadline:
                raise NodeError(f"containerd of node {self.name} did not create {sock} within {SOCKET_TIMEOUT:g}s "
                                f"(LWSCONF_REALNODES_SOCKET_TIMEOUT raises it):\n{containerd.describe()}")
            time.sleep(0.1)

    def _import(self, archive: Path) -> None:
        argv = [str(self.config.binaries.path("ctr")), "--address", str(self.folder / "containerd.sock"),
                "--namespace", "k8s.io", "images", "import", str(archive)]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise NodeError(f"importing {archive} into node {self.name} failed: {result.stderr.strip()[-600:]}")

    # cgroups -------------------------------------------------------------------------------------------------
    def _cgroup_dirs(self) -> list[Path]:
        return [CGROUP_ROOT / h / cgroup_name(self.net).lstrip("/") for h in CGROUP_V1_HIERARCHIES
                if (CGROUP_ROOT / h).is_dir()]

    def _make_cgroups(self) -> None:
        """The node's cgroup root in every v1 hierarchy (the kubelet requires it to exist); cpuset children start
        with no CPUs or memory nodes, so they are given the parent's."""
        for d in self._cgroup_dirs():
            for sub in (d, d / "runtime", d / "kubelet"):
                sub.mkdir(exist_ok=True)
                if d.parent.name == "cpuset":
                    for key in ("cpuset.cpus", "cpuset.mems"):
                        (sub / key).write_text((d.parent / key).read_text())

    def _enter_cgroup(self, pid: int, leaf: str) -> None:
        for d in self._cgroup_dirs():
            with contextlib.suppress(OSError):
                (d / leaf / "cgroup.procs").write_text(str(pid))

    def _cgroup_pids(self) -> set[int]:
        pids: set[int] = set()
        for d in self._cgroup_dirs():
            for procs in d.rglob("cgroup.procs") if d.is_dir() else ():
                with contextlib.suppress(OSError, ValueError):
                    pids.update(int(p) for p in procs.read_text().split())
        return pids

    def stop(self) -> list[str]:
        """Remove the node: components, every process left in its cgroups, mounts, cgroups, folder. Returns what
        could not be removed (empty when all went)."""
        problems: list[str] = []
        for component in reversed(self.components):
            component.stop()
        for _ in range(50):
            pids = self._cgroup_pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        else:
            problems.append(f"node {self.name}: processes {sorted(self._cgroup_pids())} outlived SIGKILL")
        problems += unmount_under(self.folder)
        for d in self._cgroup_dirs():
            for sub in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [d]:
                with contextlib.suppress(FileNotFoundError):
                    try:
                        sub.rmdir()
                    except OSError as exc:
                        problems.append(f"cgroup {sub}: {exc.strerror}")
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.folder.exists():
            problems.append(f"folder {self.folder} is left")
        return problems


def mounts_under(folder: Path) -> list[str]:
    """Mount points at or under `folder` in this mount namespace, deepest first (the order to unmount them)."""
    prefix = str(folder.resolve())
    points = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: (-p.count("/"), p))


def unmount_under(folder: Path) -> list[str]:
    """Unmount everything at or under `folder` (lazily, as a busy mount must not keep the run from ending)."""
    problems = []
    for _ in range(3):
        points = mounts_under(folder)
        if not points:
            return []
        for point in points:
            result = subprocess.run(["umount", "--lazy", point], capture_output=True, text=True, check=False)
            if result.returncode != 0 and "not mounted" not in result.stderr:
                problems.append(f"umount {point}: {result.stderr.strip()}")
    return problems + [f"still mounted: {p}" for p in mounts_under(folder)]
