"""Real nodes end to end: real kubelets, containerd and kube-proxy under the real control plane (issue 31).

One cluster of 3 real nodes for the module, checked with the official Python client only:
- every node is Ready and says what it runs (kubelet v<release>, containerd 2.4.2);
- a DaemonSet's pods (one per node) answer through their Service's ClusterIP from a pod, every node's pod among
  the answers: real pod IPs, routed between node namespaces, load-balanced by the real kube-proxy;
- logs and exec reach the real kubelets through the API server;
- pods resolve names through the cluster's DNS (CoreDNS behind kube-dns, `lwsconf.realnodes.dns`): a Service's
  name to its ClusterIP, a headless Service's pod by `<hostname>.<subdomain>.<namespace>` (LWS_LEADER_ADDRESS's
  form) to the pod's IP, and a name outside the cluster not at all;
- nothing leaves the machine: a pod's routing table holds the cluster's block only, and connecting to addresses
  outside it fails at once with "network unreachable" (TEST-NET addresses, never routed anywhere, so even a
  broken network could not send a packet off the machine);
- the run leaves nothing behind: no namespace, bridge, mount, cgroup, process or folder, the host's iptables
  rules and ip_forward are as before, and so are the host paths a kubelet writes whatever it is told
  (`hostpaths.FIXED_PATHS`; the helper-free check assumes no other real-node cluster runs beside this one).

Skips when not root or when the parts are not built (`make nodes`); LWSCONF_REQUIRE_REAL_NODES=1 (.ci/run) fails
instead, so CI cannot skip it silently.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import ipaddress
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.stream import stream

from lwsconf import workloads
from lwsconf.controlplane import build as cpbuild
from lwsconf.controlplane import versions
from lwsconf.realnodes import build, dns, hostpaths
from lwsconf.realnodes.cluster import NodeSpec, RealNodeCluster
from lwsconf.waits.core import NotYet, wait_until

pytestmark = pytest.mark.xdist_group("realnodes")
"""One cluster for the module, on one worker (make unit runs --dist loadgroup): the last test stops it."""
RELEASE = versions.DEFAULT
TPUS = 4
"""Fake google.com/tpu on the CPU node (its second device plugin kind)."""
GPUS = 4
"""Fake GPUs per GPU node, from the device plugin each GPU node runs, registered with its own kubelet."""
PODS_READY = 120.0
"""Seconds the DaemonSet's and the client's pods may take to be Ready on 3 real nodes (a loaded machine)."""
SERVER = ("import http.server, socket\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        self.send_response(200); self.end_headers(); self.wfile.write(socket.gethostname().encode())\n"
          "    def log_message(self, *args):\n"
          "        print('served', flush=True)\n"
          "http.server.HTTPServer(('', 8080), H).serve_forever()\n")


def _require_built() -> None:
    why = ("real nodes need root" if os.geteuid() != 0 else
           f"the node parts of {RELEASE.kubernetes} are not built (lwsconf nodes build)"
           if build.installed(RELEASE) is None else
           f"the control plane {RELEASE.kubernetes} is not built" if cpbuild.installed(RELEASE) is None else "")
    if why:
        if os.environ.get("LWSCONF_REQUIRE_REAL_NODES"):
            pytest.fail(f"{why}, and LWSCONF_REQUIRE_REAL_NODES is set (CI)")
        pytest.skip(why)


def _host_state(block: int | None = None) -> dict[str, str]:
    """What a run must leave as it found it: the host's iptables rules (kube-proxy writes only inside the nodes'
    namespaces) and ip_forward (the host never forwards for the cluster). `block`: the run's network block, whose
    chain must be gone after the stop (before the start the block is not chosen yet: every run's chain is left out)."""
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True, check=False).stdout
    # packet counters are traffic, not rules (a Docker host's FORWARD policy DROP counts what it drops); the chains of
    # other runs' blocks come and go with those runs (clusters side by side: xdist workers)
    rules = "\n".join(re.sub(r"\[\d+:\d+\]", "[0:0]", line) for line in rules.splitlines()
                      if not line.startswith("#") and not (re.search(r"LWSCONF-B\d+-FWD", line)
                                                            and f"LWSCONF-B{block}-FWD " not in f"{line} "))
    locks = Path(tempfile.gettempdir()) / "lwsconf-realnodes"
    # a path an earlier cluster of ours created (and the last one removes) counts as absent: the host's own state
    return {"iptables": rules, "ip_forward": Path("/proc/sys/net/ipv4/ip_forward").read_text().strip(),
            **{str(p): "exists" if p.exists() and not hostpaths.created_by_us(locks, p) else "absent"
               for p in hostpaths.FIXED_PATHS}}


def _names_of_block(block: int) -> list[str]:
    """The links and namespaces of one network block that exist now (another run may hold another block)."""
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True, check=False).stdout.split("\n")
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout.split("\n")
    names = [line.split()[0].split("@")[0] for line in links + netns if line.strip()]
    return [n for n in names if n in (f"lwsbr{block}",) or n.startswith((f"lwsb{block}n", f"lwsconf-b{block}-"))]


@pytest.fixture(scope="module")
def real_cluster() -> Iterator[tuple[RealNodeCluster, dict[str, str]]]:
    _require_built()
    before = _host_state()
    gpu, tpu = {"nvidia.com/gpu": GPUS}, {"google.com/tpu": TPUS}
    started = RealNodeCluster(RELEASE, [NodeSpec("gpu-0", devices=gpu), NodeSpec("gpu-1", devices=gpu),
                                        NodeSpec("cpu-0", devices=tpu)])
    started.start()
    try:
        yield started, before
    finally:
        problems = started.stop()
        assert problems == [], problems


@pytest.fixture(scope="module")
def core(real_cluster: tuple[RealNodeCluster, dict[str, str]]) -> Any:
    return client.CoreV1Api(config.new_client_from_config(str(real_cluster[0].kubeconfig)))  # type: ignore[no-untyped-call]


def _pods_ready(api: Any, selector: str, count: int) -> list[Any]:
    pods = api.list_namespaced_pod("default", label_selector=selector).items
    ready = [p for p in pods if any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]
    if len(ready) < count:
        raise NotYet(f"{len(ready)} of {count} pods {selector} Ready: "
                     + "; ".join(f"{p.metadata.name} {p.status.phase} on {p.spec.node_name}" for p in pods))
    return ready


def _exec(api: Any, pod: str, code: str) -> str:
    # `python`, as the suite's workloads call it (the official python images have it; ours links it to python3)
    return str(stream(api.connect_get_namespaced_pod_exec, pod, "default", command=["python", "-c", code],
                      stderr=True, stdin=False, stdout=True, tty=False))


@pytest.fixture(scope="module")
def served(real_cluster: tuple[RealNodeCluster, dict[str, str]], core: Any) -> tuple[str, list[Any]]:
    """A DaemonSet serving its pod's name on every node, its Service, and a client pod; (client pod, servers)."""
    apps: Any = client.AppsV1Api(core.api_client)
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {
        "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "web", "image": "python:3.12-slim", "command": ["python3", "-c", SERVER],
                        "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}}]}}
    apps.create_namespaced_daemon_set("default", {"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                  "metadata": {"name": "web"},
                                                  "spec": {"selector": {"matchLabels": {"app": "web"}},
                                                           "template": template}})
    core.create_namespaced_service("default", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                               "spec": {"selector": {"app": "web"},
                                                        "ports": [{"port": 80, "targetPort": 8080}]}})
    core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                           "metadata": {"name": "client", "labels": {"app": "client"}},
                                           "spec": {"automountServiceAccountToken": False,
                                                    "terminationGracePeriodSeconds": 1,
                                                    "containers": [{"name": "c", "image": "python:3.12-slim",
                                                                    "command": ["sleep", "3600"]}]}})
    servers = wait_until(lambda: _pods_ready(core, "app=web", 3), what="the DaemonSet's 3 pods to be Ready",
                         timeout=PODS_READY, poll=0.5)
    wait_until(lambda: _pods_ready(core, "app=client", 1), what="the client pod to be Ready", timeout=PODS_READY,
               poll=0.5)
    return "client", servers


def test_every_node_is_a_ready_kubelet_on_containerd(real_cluster: tuple[RealNodeCluster, dict[str, str]],
                                                     core: Any) -> None:
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert sorted(nodes) == ["cpu-0", "gpu-0", "gpu-1"]
    for node in nodes.values():
        info = node.status.node_info
        assert info.kubelet_version == f"v{RELEASE.kubernetes}"
        assert info.container_runtime_version.startswith("containerd://2.4.2"), info.container_runtime_version
        internal = [a.address for a in node.status.addresses if a.type == "InternalIP"]
        assert internal and internal[0].startswith("198.19."), internal


def _listening_unix_sockets(pid: int) -> list[str]:
    """The paths of the Unix sockets process `pid` listens on: its socket descriptors matched by inode against its
    network namespace's /proc/<pid>/net/unix, flag __SO_ACCEPTCON (0x10000) set."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # a descriptor closed while listed
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    rows = [line.split() for line in Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]]
    return [r[7] for r in rows if len(r) >= 8 and r[6] in inodes and int(r[3], 16) & 0x10000]


def test_each_nodes_containerd_listens_only_in_the_runs_folder(
        real_cluster: tuple[RealNodeCluster, dict[str, str]]) -> None:
    """Two clusters run side by side (xdist workers): a socket at a host-wide default is one both containerds remove
    and bind again. CI failed so with NRI's /var/run/nri/nri.sock (`bind: address already in use`, stop 39)."""
    started = real_cluster[0]
    for node in started.nodes:
        containerd = next(c for c in node.components if c.name == "containerd")
        paths = _listening_unix_sockets(containerd.proc.pid)
        assert any(p.endswith("/containerd.sock") for p in paths), paths  # the check sees what it should
        outside = [p for p in paths if not p.startswith(f"{started.folder}/")]
        assert outside == [], f"containerd of {node.name} listens outside {started.folder}: {outside}"


def test_each_gpu_node_has_the_gpus_its_plugin_registered_with_its_own_kubelet(
        real_cluster: tuple[RealNodeCluster, dict[str, str]], core: Any) -> None:
    """The device manager's socket and checkpoint are compiled into the kubelet (node.DEVICE_PLUGIN_DIR): each
    kubelet has its own in its mount namespace, so a node never shows a device count read from another's; the CPU
    node's TPU plugin (a second resource, its own socket) registers beside nothing else."""
    def devices() -> dict[str, tuple[str | None, ...]]:
        seen = {n.metadata.name: tuple(getattr(n.status, field).get(resource) for field in ("capacity", "allocatable")
                                       for resource in ("nvidia.com/gpu", "google.com/tpu"))
                for n in core.list_node().items}
        gpu, tpu = (str(GPUS), str(GPUS)), (str(TPUS), str(TPUS))
        if seen.get("gpu-0", ())[::2] != gpu or seen.get("gpu-1", ())[::2] != gpu or seen.get("cpu-0", ())[1::2] != tpu:
            raise NotYet(f"(gpu, tpu capacity, gpu, tpu allocatable) per node: {seen}")
        return seen

    seen = wait_until(devices, what="both GPU nodes to show their GPUs, the CPU node its TPUs", timeout=60.0, poll=0.5)
    assert seen["cpu-0"][::2] == (None, None) and seen["gpu-0"][1::2] == seen["gpu-1"][1::2] == (None, None), seen
    core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                           "metadata": {"name": "gpus", "labels": {"app": "gpus"}},
                                           "spec": {"automountServiceAccountToken": False,
                                                    "terminationGracePeriodSeconds": 1, "containers": [{
                                                        "name": "c", "image": "python:3.12-slim",
                                                        "command": ["sleep", "3600"],
                                                        "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}})
    pod = wait_until(lambda: _pods_ready(core, "app=gpus", 1)[0], what="the GPU pod to be Ready", timeout=PODS_READY,
                     poll=0.5)
    assert pod.spec.node_name in ("gpu-0", "gpu-1"), pod.spec.node_name
    env = _exec(core, "gpus", "import os; print(os.environ.get('MOCK_NVIDIA_VISIBLE_DEVICES', ''))").strip()
    assert len(env.split(",")) == 2, env


def test_a_cluster_ip_reaches_the_pods_of_every_node_through_kube_proxy(
        served: tuple[str, list[Any]], core: Any) -> None:
    client_pod, servers = served
    service = core.read_namespaced_service("web", "default")
    assert {p.spec.node_name for p in servers} == {"gpu-0", "gpu-1", "cpu-0"}

    def every_pod_answers() -> collections.Counter[str]:
        out = _exec(core, client_pod, "import urllib.request\n"
                                      "for _ in range(30):\n"
                                      f"    print(urllib.request.urlopen('http://{service.spec.cluster_ip}', "
                                      "timeout=5).read().decode())\n")
        seen = collections.Counter(line for line in out.splitlines() if line.strip())
        if set(seen) != {p.metadata.name for p in servers}:
            raise NotYet(f"answers from {dict(seen)}; servers {[p.metadata.name for p in servers]}")
        return seen

    # kube-proxy programs a new Service within its sync period: poll until every node's pod has answered
    seen = wait_until(every_pod_answers, what="every server pod to answer through the ClusterIP", timeout=60.0,
                      poll=1.0)
    assert sum(seen.values()) == 30


def test_the_api_server_reaches_every_nodes_pods_through_the_bridge_only(
        real_cluster: tuple[RealNodeCluster, dict[str, str]], served: tuple[str, list[Any]], core: Any) -> None:
    """kube-apiserver's pods/proxy dials a pod's address from the host: the host routes each pod CIDR through its
    node (seen without it: the dial took the default route, off the machine, and the suite's probes got a 403 from
    outside). `ip route get` must name the run's bridge for every pod, and an unused address of the block must be
    unreachable, never the default route."""
    started, _ = real_cluster
    assert started.network is not None
    _, servers = served
    for pod in servers:
        answer = core.connect_get_namespaced_pod_proxy_with_path(f"{pod.metadata.name}:8080", "default", "")
        assert answer == pod.metadata.name, answer
        route = subprocess.run(["ip", "route", "get", pod.status.pod_ip], capture_output=True, text=True,
                               check=False).stdout
        assert f"dev {started.network.bridge}" in route, route
    outside_any_block = "198.19.255.200"  # the last block, which no test run holds: the whole space is guarded
    lookup = subprocess.run(["ip", "route", "get", outside_any_block], capture_output=True, text=True, check=False)
    assert lookup.returncode != 0 and "no route to host" in lookup.stderr.lower(), (lookup.stdout, lookup.stderr)
    unused = str(ipaddress.IPv4Network(started.network.service_cidr).network_address + 200)
    lookup = subprocess.run(["ip", "route", "get", unused], capture_output=True, text=True, check=False)
    # the kernel's answer for an `unreachable` route: EHOSTUNREACH
    assert lookup.returncode != 0 and "no route to host" in lookup.stderr.lower(), (lookup.stdout, lookup.stderr)


def test_logs_and_exec_reach_the_real_kubelets(served: tuple[str, list[Any]], core: Any) -> None:
    client_pod, servers = served
    assert _exec(core, client_pod, "import socket; print(socket.gethostname())").strip() == client_pod
    logs = core.read_namespaced_pod_log(servers[0].metadata.name, "default")
    assert "served" in logs, logs


def test_a_pod_has_no_route_out_of_the_cluster_block(real_cluster: tuple[RealNodeCluster, dict[str, str]],
                                                    served: tuple[str, list[Any]], core: Any) -> None:
    started, _ = real_cluster
    assert started.network is not None
    client_pod, _ = served
    out = _exec(core, client_pod, "import socket, struct\n"
                                  "for line in open('/proc/net/route').readlines()[1:]:\n"
                                  "    f = line.split()\n"
                                  "    dst = socket.inet_ntoa(struct.pack('<I', int(f[1], 16)))\n"
                                  "    mask = bin(int(f[7], 16)).count('1')\n"
                                  "    print('route', f'{dst}/{mask}')\n"
                                  "for addr in ('192.0.2.1', '198.51.100.1', '203.0.113.1'):\n"
                                  "    s = socket.socket(); s.settimeout(5)\n"
                                  "    try:\n"
                                  "        s.connect((addr, 80)); print('connected', addr)\n"
                                  "    except OSError as e:\n"
                                  "        print('refused', addr, e.errno)\n")
    routes = {line.split()[1] for line in out.splitlines() if line.startswith("route ")}
    assert "0.0.0.0/0" not in routes, out
    block = started.network.cluster_cidr
    assert block in routes, out
    assert all(ipaddress.IPv4Network(r).subnet_of(ipaddress.IPv4Network(block)) for r in routes), out
    assert "connected" not in out, out
    assert out.count("refused") == 3 and all(f" {errno.ENETUNREACH}" in line for line in out.splitlines()
                                             if line.startswith("refused")), out


def test_pods_resolve_cluster_names_through_coredns_and_nothing_outside(
        real_cluster: tuple[RealNodeCluster, dict[str, str]], served: tuple[str, list[Any]], core: Any) -> None:
    started, _ = real_cluster
    assert started.network is not None
    client_pod, _ = served
    web_ip = core.read_namespaced_service("web", "default").spec.cluster_ip
    # a headless Service and a pod naming it as subdomain, as LWS makes them for its leaders
    core.create_namespaced_service("default", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "peers"},
                                               "spec": {"clusterIP": "None", "selector": {"app": "peer"},
                                                        "publishNotReadyAddresses": True,
                                                        "ports": [{"port": 8080}]}})
    core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                           "metadata": {"name": "peers-0", "labels": {"app": "peer"}},
                                           "spec": {"hostname": "peers-0", "subdomain": "peers",
                                                    "automountServiceAccountToken": False,
                                                    "terminationGracePeriodSeconds": 1,
                                                    "containers": [{"name": "c", "image": "python:3.12-slim",
                                                                    "command": ["sleep", "3600"]}]}})
    peer = wait_until(lambda: _pods_ready(core, "app=peer", 1)[0], what="the headless Service's pod to be Ready",
                      timeout=PODS_READY, poll=0.5)
    expected = {"web.default.svc.cluster.local": web_ip, "web": web_ip, "peers-0.peers.default": peer.status.pod_ip}
    code = ("import json, socket\n"
            "out = {'resolv.conf': open('/etc/resolv.conf').read()}\n"
            f"for name in {[*expected, 'example.com']!r}:\n"
            "    try:\n"
            "        out[name] = socket.gethostbyname(name)\n"
            "    except OSError as e:\n"
            "        out[name] = f'error: {e}'\n"
            "print(json.dumps(out))\n")

    def cluster_names_resolve() -> dict[str, str]:
        out: dict[str, str] = json.loads(_exec(core, client_pod, code))
        if any(out[name] != ip for name, ip in expected.items()):
            raise NotYet(f"resolved {out}; expected {expected}")
        return out

    # kube-proxy programs the new endpoints within its sync period and CoreDNS sees them by its watch: poll
    out = wait_until(cluster_names_resolve, what="the client pod to resolve cluster names", timeout=60.0, poll=1.0)
    assert f"nameserver {dns.service_ip(started.network)}" in out["resolv.conf"].splitlines(), out["resolv.conf"]
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in out["resolv.conf"], out
    assert out["example.com"].startswith("error"), f"a name outside the cluster resolved: {out}"


def test_a_claim_of_the_default_class_is_bound_and_its_volume_lies_in_the_run(
        real_cluster: tuple[RealNodeCluster, dict[str, str]], core: Any) -> None:
    """kube-scheduler places no pod whose claim is unbound: the provisioner (realnodes.storage) binds it, and the real
    kubelet makes the hostPath folder inside the run's own folder, which goes with the run."""
    cluster = real_cluster[0]
    core.create_namespaced_persistent_volume_claim("default", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}})
    core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                           "metadata": {"name": "writer", "labels": {"app": "writer"}},
                                           "spec": {"automountServiceAccountToken": False,
                                                    "terminationGracePeriodSeconds": 1, "containers": [{
                                                        "name": "c", "image": "python:3.12-slim",
                                                        "command": ["sh", "-c", "echo kept > /data/file; sleep 3600"],
                                                        "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
                                                    "volumes": [{"name": "d", "persistentVolumeClaim": {
                                                        "claimName": "data"}}]}})
    wait_until(lambda: _pods_ready(core, "app=writer", 1), what="the pod with a claim to be Ready", timeout=PODS_READY,
               poll=0.5)
    claim = core.read_namespaced_persistent_volume_claim("data", "default")
    assert claim.status.phase == "Bound" and claim.spec.storage_class_name == "standard", claim.status
    written = cluster.folder / "volumes" / f"pvc-{claim.metadata.uid}" / "file"
    assert written.read_text() == "kept\n"
    assert cluster.failed_services() == []


def _exit_code_after_delete(api: Any, name: str) -> int | None:
    """Delete pod `name` and follow it to its end: the exit code its container last reported (None: none seen)."""
    watcher = watch.Watch()
    api.delete_namespaced_pod(name, "default")
    code = None
    for event in watcher.stream(api.list_namespaced_pod, "default", field_selector=f"metadata.name={name}",
                                timeout_seconds=int(PODS_READY)):
        for status in event["object"].status.container_statuses or []:
            if status.state.terminated is not None:
                code = status.state.terminated.exit_code
        if event["type"] == "DELETED":
            watcher.stop()
    return code


def test_the_probe_ends_on_sigterm_where_a_program_without_a_handler_waits_for_sigkill(
        real_cluster: tuple[RealNodeCluster, dict[str, str]], core: Any) -> None:
    """On a real node the command is PID 1 of its PID namespace, which drops signals it has no handler for: `sleep`
    outlives the kubelet's SIGTERM and ends by SIGKILL (137) when the grace period is over, while the suite's probe
    handles SIGTERM and exits 143 at once (a deletion then does not wait out terminationGracePeriodSeconds)."""
    core.create_namespaced_config_map("default", workloads.probe_configmap())
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "labels": {"app": "probe"}},
             **workloads.probe_pod_template()}
    sleeper = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper", "labels": {"app": "sleeper"}},
               "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "c", "image": workloads.PROBE_IMAGE, "command": ["sleep", "3600"]}]}}
    for pod in (probe, sleeper):
        core.create_namespaced_pod("default", pod)
    for app in ("probe", "sleeper"):
        wait_until(lambda app=app: _pods_ready(core, f"app={app}", 1), what=f"the {app} pod to be Ready",
                   timeout=PODS_READY, poll=0.5)
    assert _exit_code_after_delete(core, "probe") == 143
    assert _exit_code_after_delete(core, "sleeper") == 137


def test_stopping_leaves_the_host_as_it_was(real_cluster: tuple[RealNodeCluster, dict[str, str]]) -> None:
    """Runs last in this module: stops the cluster and compares the host with what it was before the start."""
    started, before = real_cluster
    assert started.network is not None
    folder, block, started_cidr = started.folder, started.network.block, started.network.cluster_cidr
    cgroups = [Path("/sys/fs/cgroup/pids") / n.netns for n in started.network.nodes]
    assert len(_names_of_block(block)) == 1 + 2 * len(cgroups), "the network to remove is not what was built"
    assert started.stop() == []
    assert _names_of_block(block) == []
    routes = subprocess.run(["ip", "route", "show", "root", started_cidr], capture_output=True, text=True,
                            check=False).stdout
    assert routes.strip() == "", f"routes of the block left on the host: {routes}"
    assert _host_state(block) == before
    assert not folder.exists()
    assert not [c for c in cgroups if c.exists()]
    left = subprocess.run(["pgrep", "-f", str(folder)], capture_output=True, text=True, check=False).stdout
    assert left.strip() == "", f"processes of the run still running: {left}"
    assert started.stop() == [], "a second stop must find nothing to remove"
