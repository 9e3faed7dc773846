"""Fault injection on a whole simulated cluster, through the Python API (`lwsconf.sim.chaos`).

Each scenario runs on a small cluster (2 GPU nodes, 1 CPU node; zones: gpu-0 and cpu-0 in zone-a,
gpu-1 in zone-b) with every default controller and the node lifecycle controller (grace period
GRACE s). Pod faults share one cluster per module; node faults get a cluster of their own, since they
change nodes for good. Waits poll with bounded timeouts and print pods, nodes and events on failure.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from kubernetes import client, config

from lwsconf.sim import chaos
from lwsconf.sim import cluster as simc
from lwsconf.sim.controllers.lifecycle import nodelifecycle
from lwsconf.sim.nodes import layout
from lwsconf.waits import core, observe

Obj = dict[str, Any]
T = TypeVar("T")
NS = "default"
GRACE = 3.0
TIMEOUT = 30.0
LIFECYCLE = "node-lifecycle-controller"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"


def controllers() -> list[tuple[str, simc.ControllerFactory]]:
    """The default controllers with the node lifecycle controller on a short grace period."""
    base = [c for c in simc.default_controllers() if c[0] != LIFECYCLE]
    return base + [(LIFECYCLE, lambda c: nodelifecycle.NodeLifecycleController(c, grace_period=GRACE).run)]


@dataclass
class Sim:
    running: simc.RunningSimCluster
    api: client.ApiClient

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def pod(self, name: str) -> Obj | None:
        found = [p for p in observe.pods(self.api, NS) if p["metadata"]["name"] == name]
        return found[0] if found else None

    def node(self, name: str) -> Obj | None:
        found = [n for n in self.nodes() if n["metadata"]["name"] == name]
        return found[0] if found else None

    def nodes(self) -> list[Obj]:
        return observe.raw(self.core.list_node(_preload_content=False))["items"]  # type: ignore[no-any-return]

    def describe(self) -> str:
        lines = ["pods:"]
        for p in observe.pods(self.api, NS):
            st = p.get("status") or {}
            conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
            restarts = [c.get("restartCount") for c in st.get("containerStatuses") or []]
            lines.append(f"  {p['metadata']['name']} uid={p['metadata']['uid'][:8]} node={p['spec'].get('nodeName')} "
                         f"phase={st.get('phase')} ready={conds.get('Ready')} restarts={restarts} "
                         f"deleting={bool(p['metadata'].get('deletionTimestamp'))}")
        lines.append("nodes:")
        for n in self.nodes():
            taints = [f"{t['key']}:{t['effect']}" for t in n["spec"].get("taints") or []]
            lines.append(f"  {n['metadata']['name']} ready={ready(n)} taints={taints} "
                         f"annotations={sorted(k for k in n['metadata'].get('annotations', {}) if 'chaos' in k)}")
        events = observe.raw(self.core.list_namespaced_event(NS, _preload_content=False))["items"]
        lines.append("events:")
        lines += [f"  {e['involvedObject'].get('name')}: {e['reason']} {e.get('message', '')}" for e in events]
        return "\n".join(lines)

    def wait(self, check: Callable[[], T], what: str, timeout: float = TIMEOUT) -> T:
        return core.wait_until(check, what=what, timeout=timeout, poll=0.05, describe=self.describe)


def ready(node: Obj) -> str | None:
    return next((c["status"] for c in node.get("status", {}).get("conditions") or [] if c["type"] == "Ready"), None)


def taints(node: Obj) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node.get("spec", {}).get("taints") or []}


@contextlib.contextmanager
def running_cluster() -> Iterator[Sim]:
    specs = layout.default_layout(gpu_nodes=2, cpu_nodes=1)
    with simc.RunningSimCluster(nodes=specs, controllers=controllers()) as running:
        api = config.new_client_from_config(config_file=str(running.kubeconfig))
        sim = Sim(running, api)
        try:
            def all_ready() -> None:
                states = {n["metadata"]["name"]: ready(n) for n in sim.nodes()}
                if set(states) != {s.name for s in specs} or set(states.values()) != {"True"}:
                    raise core.NotYet(f"nodes: {states}")
            sim.wait(all_ready, "every node to be Ready")
            yield sim
        finally:
            api.close()


@pytest.fixture(scope="module")
def shared() -> Iterator[Sim]:
    with running_cluster() as sim:
        yield sim


@pytest.fixture
def own() -> Iterator[Sim]:
    with running_cluster() as sim:
        yield sim


def pod_spec(*, restart: str = "Always", unreachable_seconds: int | None = None,
             not_ready_seconds: int | None = None, node: str | None = None,
             containers: tuple[str, ...] = ("main", "side")) -> Obj:
    spec: Obj = {"containers": [{"name": c, "image": "registry.k8s.io/pause:3.10"} for c in containers],
                 "restartPolicy": restart, "terminationGracePeriodSeconds": 1}
    tolerations = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                   for key, seconds in ((UNREACHABLE, unreachable_seconds), (NOT_READY, not_ready_seconds))
                   if seconds is not None]
    if tolerations:
        spec["tolerations"] = tolerations
    if node:
        spec["nodeName"] = node
    return spec


def create_pod(sim: Sim, name: str, **kwargs: Any) -> None:
    sim.core.create_namespaced_pod(NS, {"metadata": {"name": name}, "spec": pod_spec(**kwargs)})


def running_pod(sim: Sim, name: str, *, other_than: str | None = None) -> Obj:
    """Wait for a Running, not deleting pod `name` (with a uid other than `other_than`)."""
    def check() -> Obj:
        pod = sim.pod(name)
        if pod is None or pod["metadata"]["uid"] == other_than or pod["metadata"].get("deletionTimestamp"):
            raise core.NotYet(f"no new pod {name} yet")
        if pod["status"].get("phase") != "Running":
            raise core.NotYet(f"pod {name} is {pod['status'].get('phase')}")
        return pod
    return sim.wait(check, f"pod {name} to be Running")


def container_status(pod: Obj, name: str) -> Obj:
    return next(c for c in pod["status"].get("containerStatuses") or [] if c["name"] == name)


def deployment(name: str, **kwargs: Any) -> Obj:
    return {"metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(**kwargs)}}}


def statefulset(name: str, **kwargs: Any) -> Obj:
    return {"metadata": {"name": name},
            "spec": {"replicas": 1, "serviceName": name, "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(**kwargs)}}}


# --- pod faults ------------------------------------------------------------------------------------

def test_crashed_container_restarts_with_its_exit_code_in_last_state(shared: Sim) -> None:
    create_pod(shared, "crash-me")
    running_pod(shared, "crash-me")
    chaos.crash_container(shared.api, NS, "crash-me", "side", exit_code=3, times=2)

    def restarted_twice() -> Obj:
        pod = shared.pod("crash-me")
        assert pod is not None, "the pod is gone"
        status = container_status(pod, "side")
        if status["restartCount"] < 2 or "running" not in status["state"]:
            raise core.NotYet(f"side: restartCount {status['restartCount']}, state {status['state']}")
        return pod
    pod = shared.wait(restarted_twice, "container side to crash twice and run again")
    side = container_status(pod, "side")
    assert side["restartCount"] == 2
    assert side["lastState"]["terminated"]["exitCode"] == 3
    assert side["lastState"]["terminated"]["reason"] == "Error"
    assert container_status(pod, "main")["restartCount"] == 0, "only the named container crashes"


def test_crash_in_a_never_restarting_pod_fails_it(shared: Sim) -> None:
    create_pod(shared, "crash-once", restart="Never", containers=("main",))
    running_pod(shared, "crash-once")
    chaos.crash_container(shared.api, NS, "crash-once", None, exit_code=42)

    def failed() -> Obj:
        pod = shared.pod("crash-once")
        assert pod is not None, "the pod is gone"
        if pod["status"].get("phase") != "Failed":
            raise core.NotYet(f"phase {pod['status'].get('phase')}")
        return pod
    pod = shared.wait(failed, "the pod to fail")
    main = container_status(pod, "main")
    assert main["state"]["terminated"]["exitCode"] == 42 and main["restartCount"] == 0


def test_failed_pod_is_replaced_by_its_statefulset(shared: Sim) -> None:
    client.AppsV1Api(shared.api).create_namespaced_stateful_set(NS, statefulset("web"))
    first = running_pod(shared, "web-0")
    chaos.fail_pod(shared.api, NS, "web-0", reason="Preempted", message="made room")
    second = running_pod(shared, "web-0", other_than=first["metadata"]["uid"])
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    events = observe.raw(shared.core.list_namespaced_event(NS, _preload_content=False))["items"]
    failures = [e for e in events if e["involvedObject"].get("uid") == first["metadata"]["uid"]
                and e["reason"] == "Preempted"]
    assert failures and failures[0]["message"] == "made room", shared.describe()


def test_bad_targets_are_refused_with_what_to_do(shared: Sim) -> None:
    create_pod(shared, "target")
    with pytest.raises(chaos.ChaosError, match=r"pod default/nope not found; list pods with `kubectl get pods"):
        chaos.crash_container(shared.api, NS, "nope", "main")
    with pytest.raises(chaos.ChaosError, match=r"has no container 'web'; its containers: main, side"):
        chaos.crash_container(shared.api, NS, "target", "web")
    with pytest.raises(chaos.ChaosError, match="exit code 256 is out of range"):
        chaos.crash_container(shared.api, NS, "target", "main", exit_code=256)
    with pytest.raises(chaos.ChaosError, match="node gpu-9 not found"):
        chaos.node_not_ready(shared.api, "gpu-9")
    with pytest.raises(chaos.ChaosError, match="mode must be one of unreachable, not-ready"):
        chaos.node_not_ready(shared.api, "gpu-0", mode="down")
    with pytest.raises(chaos.ChaosError, match=">= 0"):
        chaos.slow_kubelet(shared.api, "gpu-0", -1)
    shared.core.create_node({"metadata": {"name": "real-node"}})
    with pytest.raises(chaos.ChaosError, match="node real-node is not a simulated lwsconf node"):
        chaos.delete_node(shared.api, "real-node")
    assert shared.node("real-node") is not None, "a refused fault changes nothing"
    shared.core.delete_node("real-node")


# --- node faults -----------------------------------------------------------------------------------

def test_unreachable_node_is_tainted_its_pods_evicted_and_rescheduled_then_healed(own: Sim) -> None:
    client.AppsV1Api(own.api).create_namespaced_deployment(NS, deployment("app", unreachable_seconds=1))
    pods = own.wait(lambda: _running_pods(own, "app", 1), "the deployment's pod to run")
    old = pods[0]
    node = old["spec"]["nodeName"]
    chaos.node_not_ready(own.api, node)

    def tainted() -> Obj:
        found = own.node(node)
        assert found is not None
        if ready(found) != "Unknown" or not {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")} <= taints(found):
            raise core.NotYet(f"Ready={ready(found)} taints={taints(found)}")
        return found
    own.wait(tainted, f"node {node} to be Unknown and tainted unreachable")
    replacement = own.wait(lambda: _running_pods(own, "app", 1, exclude=old["metadata"]["uid"]),
                           "a replacement pod to run elsewhere")[0]
    assert replacement["spec"]["nodeName"] != node
    evicted = own.pod(old["metadata"]["name"])
    assert evicted is not None and evicted["metadata"].get("deletionTimestamp"), \
        "a cut-off kubelet cannot finish the deletion: the pod stays Terminating"
    conditions = {c["type"]: c for c in evicted["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False", "the node lifecycle controller marks its pods NotReady"
    assert conditions["DisruptionTarget"]["reason"] == "DeletionByTaintManager"

    chaos.node_ready(own.api, node)

    def healed() -> None:
        found = own.node(node)
        assert found is not None
        if ready(found) != "True" or taints(found) & {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}:
            raise core.NotYet(f"Ready={ready(found)} taints={taints(found)}")
        if own.pod(old["metadata"]["name"]) is not None:
            raise core.NotYet("the evicted pod is still there")
    own.wait(healed, f"node {node} to be Ready and untainted, and the evicted pod removed")


def test_node_reporting_not_ready_has_its_pods_evicted_and_recreated(own: Sim) -> None:
    client.AppsV1Api(own.api).create_namespaced_stateful_set(NS, statefulset("db", not_ready_seconds=1))
    first = running_pod(own, "db-0")
    node = first["spec"]["nodeName"]
    chaos.node_not_ready(own.api, node, mode="not-ready")
    second = running_pod(own, "db-0", other_than=first["metadata"]["uid"])
    assert second["spec"]["nodeName"] != node
    found = own.node(node)
    assert found is not None and ready(found) == "False"
    assert {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")} <= taints(found)
    reasons = [c for c in found["status"]["conditions"] if c["type"] == "Ready"]
    assert reasons[0]["reason"] == "KubeletNotReady"
    chaos.node_ready(own.api, node)
    own.wait(lambda: _condition(own, node, lambda n: ready(n) == "True" and not taints(n)),
             f"node {node} to be Ready without taints")


def test_deleted_node_has_its_pods_removed_and_recreated_elsewhere(own: Sim) -> None:
    client.AppsV1Api(own.api).create_namespaced_stateful_set(NS, statefulset("cache"))
    first = running_pod(own, "cache-0")
    node = first["spec"]["nodeName"]
    chaos.delete_node(own.api, node)
    second = running_pod(own, "cache-0", other_than=first["metadata"]["uid"])
    assert second["spec"]["nodeName"] != node
    assert own.node(node) is None, "the agent of a deleted node does not register it again"
    fleet = own.running.cluster.fleet  # type: ignore[union-attr]
    assert fleet is not None and fleet.agents[node].node_gone.is_set()

    def lease_gone() -> None:
        leases = client.CoordinationV1Api(own.api).list_namespaced_lease("kube-node-lease").items
        names = [x.metadata.name for x in leases]
        if node in names:
            raise core.NotYet(f"leases: {names}")
    own.wait(lease_gone, f"the Lease of {node} to be collected with its Node")


def test_slow_kubelet_delays_pod_status_but_pods_still_start(own: Sim) -> None:
    chaos.slow_kubelet(own.api, "gpu-0", 1.5)
    own.wait(lambda: _condition(own, "gpu-0", lambda n: n["metadata"]["annotations"].get("chaos.lwsconf.dev/slow")
                                 == "1.5"), "the slow annotation")
    create_pod(own, "on-slow", node="gpu-0")
    create_pod(own, "on-fast", node="gpu-1")
    started = time.monotonic()
    seen: dict[str, float] = {}

    def both_running() -> None:
        for name in ("on-slow", "on-fast"):
            pod = own.pod(name)
            if name not in seen and pod is not None and pod["status"].get("phase") == "Running":
                seen[name] = time.monotonic() - started
        if len(seen) < 2:
            raise core.NotYet(f"running so far: {seen}")
    own.wait(both_running, "both pods to run")
    print(f"time to Running: {seen}")  # measured, not asserted (README.md, Benchmarks)
    assert seen["on-fast"] < seen["on-slow"], f"the slow node's pod should show Running last: {seen}"
    chaos.slow_kubelet(own.api, "gpu-0", 0)
    node = own.node("gpu-0")
    assert node is not None and "chaos.lwsconf.dev/slow" not in node["metadata"].get("annotations", {})


def _running_pods(sim: Sim, app: str, count: int, exclude: str | None = None) -> list[Obj]:
    pods = [p for p in observe.pods(sim.api, NS, f"app={app}") if p["metadata"]["uid"] != exclude
            and not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") == "Running"]
    if len(pods) < count:
        raise core.NotYet(f"{len(pods)} running pods of {app}")
    return pods


def _condition(sim: Sim, node: str, predicate: Callable[[Obj], bool]) -> Obj:
    found = sim.node(node)
    if found is None or not predicate(found):
        raise core.NotYet(f"node {node}: not yet")
    return found
