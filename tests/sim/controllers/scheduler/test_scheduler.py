"""The scheduler against the real in-process API server: placement, reasons, events and retries.

Each test starts an API server and a `Scheduler` (with its own client, as in `lwsconf sim up`),
creates Node objects itself (capacity, allocatable and a Ready condition written through
nodes/NAME/status, as a kubelet would) and pods, then polls the pods with a bounded timeout.
Failures print every pod's node or PodScheduled message.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.scheduler import decision as sd
from lwsconf.sim.controllers.scheduler import scheduler as sched_mod

Obj = dict[str, Any]
NS = "default"
PODS, NODES, EVENTS = kc.PODS, sched_mod.NODES, kc.GVR("", "v1", "events")
GPU = "nvidia.com/gpu"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


@contextlib.asynccontextmanager
async def sim_with_scheduler(*, retry_interval: float = 0.3) -> AsyncIterator[kc.Client]:
    """An API server plus a running scheduler; yields the test's own client."""
    server = app.APIServer()
    await server.start()
    sched_client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="default-scheduler")
    scheduler = sched_mod.Scheduler(sched_client, retry_interval=retry_interval)
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run(stop))
    client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="test")
    try:
        await scheduler.wait_synced(timeout=10)
        yield client
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await sched_client.close()
        await client.close()
        await server.stop()


async def make_node(client: kc.Client, name: str, *, labels: dict[str, str] | None = None, gpus: int = 8,
                    cpu: str = "32", memory: str = "256Gi", pods: int = 110, ready: bool = True,
                    taints: Sequence[Obj] = (), unschedulable: bool = False) -> Obj:
    """A Node, then its status as a kubelet writes it: capacity = allocatable, and Ready."""
    spec: Obj = {"taints": list(taints)} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    await client.create(NODES, {"apiVersion": "v1", "kind": "Node", "spec": spec,
                                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                                      **(labels or {})}}})
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), GPU: str(gpus)}
    status = {"capacity": resources, "allocatable": resources,
              "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                              "reason": "KubeletReady" if ready else "KubeletNotReady"}]}
    node = await client.patch(NODES, name, {"status": status}, subresource="status")
    if ready:  # the node lifecycle controller lifts TaintNodesByCondition's not-ready taint once Ready
        node = await client.patch(NODES, name, {"spec": {"taints": list(taints) or None}})
    return node


async def make_pod(client: kc.Client, name: str, *, requests: dict[str, str] | None = None,
                   labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    container: Obj = {"name": "main", "image": "busybox:1.36"}
    if requests:
        container["resources"] = {"requests": dict(requests), "limits": dict(requests)}
    return await client.create(PODS, {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
                                      "spec": {"containers": [container], **spec}})


async def placements(client: kc.Client) -> dict[str, str]:
    """Every pod: its node, or `Pending: <PodScheduled message>`."""
    out = {}
    for pod in (await client.list(PODS, namespace=NS))["items"]:
        node = pod["spec"].get("nodeName")
        cond = sched_mod.pod_condition(pod, "PodScheduled") or {}
        out[pod["metadata"]["name"]] = node or f"Pending: {cond.get('message', '(no condition)')}"
    return out


async def until(client: kc.Client, check: Callable[[dict[str, str]], bool], what: str, *,
                timeout: float = 10.0) -> dict[str, str]:
    """Poll the placements until `check` holds; fail with everything observed."""
    deadline = time.monotonic() + timeout
    while True:
        seen = await placements(client)
        if check(seen):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {what} within {timeout}s; observed {seen}")
        await asyncio.sleep(0.02)


def bound(*names: str) -> Callable[[dict[str, str]], bool]:
    return lambda seen: all(n in seen and not seen[n].startswith("Pending") for n in names)


def pending_with(name: str, message: str) -> Callable[[dict[str, str]], bool]:
    return lambda seen: seen.get(name) == f"Pending: {message}"


def pending(*names: str) -> Callable[[dict[str, str]], bool]:
    return lambda seen: all(seen.get(n, "").startswith("Pending") for n in names)


def all_of(*checks: Callable[[dict[str, str]], bool]) -> Callable[[dict[str, str]], bool]:
    return lambda seen: all(check(seen) for check in checks)


async def events_for(client: kc.Client, pod: str, reason: str) -> list[Obj]:
    items = (await client.list(EVENTS, namespace=NS))["items"]
    return [e for e in items if e["involvedObject"]["name"] == pod and e["reason"] == reason]


# --- resources ----------------------------------------------------------------------------------

def test_pod_wanting_more_gpus_than_any_node_has_stays_pending_with_reason_and_one_event() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler(retry_interval=0.1) as client:
            await make_node(client, "gpu-0")
            await make_node(client, "gpu-1")
            await make_pod(client, "greedy", requests={GPU: "9"})
            message = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
            await until(client, pending_with("greedy", message), "greedy pending for lack of GPUs")
            pod = await client.get(PODS, "greedy", namespace=NS)
            cond = sched_mod.pod_condition(pod, "PodScheduled")
            assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable"), cond
            # KEP 5067 (kube-scheduler 1.37.2 in lwsconf fidelity controllers/ctl-statefulset/first-pod)
            assert cond["observedGeneration"] == pod["metadata"]["generation"], cond
            await asyncio.sleep(0.5)  # several retries happen meanwhile; none may add an event
            events = await events_for(client, "greedy", "FailedScheduling")
            assert [(e["type"], e["message"]) for e in events] == [("Warning", message)], events
            # written through events.k8s.io/v1 as kube-scheduler's recorder does (held-out fidelity corpus, issue 33)
            [event] = events
            assert event["eventTime"] and event["firstTimestamp"] is None and "count" not in event, event
            assert event["reportingInstance"] == f"default-scheduler-{socket.gethostname()}"
            assert (await client.get(PODS, "greedy", namespace=NS))["spec"].get("nodeName") is None
    run(scenario)


def test_cpu_and_memory_requests_must_fit_what_is_left_on_the_node() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler() as client:
            await make_node(client, "small", cpu="2", memory="4Gi")
            await make_pod(client, "first", requests={"cpu": "1500m", "memory": "1Gi"})
            await make_pod(client, "fits", requests={"cpu": "500m", "memory": "1Gi"})
            await until(client, bound("first", "fits"), "first and fits bound")
            await make_pod(client, "too-much-cpu", requests={"cpu": "100m", "memory": "1Gi"})
            await make_pod(client, "too-much-memory", requests={"memory": "2049Mi"})
            await make_pod(client, "asks-nothing")
            seen = await until(client, all_of(
                bound("asks-nothing"), pending_with("too-much-cpu", "0/1 nodes are available: 1 Insufficient cpu."),
                pending_with("too-much-memory", "0/1 nodes are available: 1 Insufficient memory.")),
                "a pod without requests bound, the others pending for cpu and memory")
            assert seen["fits"] == seen["asks-nothing"] == "small"
    run(scenario)


def test_two_pods_racing_for_the_last_gpus_never_both_get_them() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler() as client:
            await make_node(client, "gpu-0")
            await asyncio.gather(*(make_pod(client, f"racer-{i}", requests={GPU: "8"}) for i in range(3)))
            message = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
            seen = await until(client, lambda s: sum(v == "gpu-0" for v in s.values()) == 1
                               and sum(v == f"Pending: {message}" for v in s.values()) == 2,
                               "exactly one racer on gpu-0")
            await asyncio.sleep(0.3)
            assert await placements(client) == seen
    run(scenario)


def test_a_pod_just_bound_counts_on_its_node_before_the_informer_shows_it_bound() -> None:
    """The assume cache: with the pod informer frozen, the second 8-GPU pod must not get gpu-0 too."""
    async def scenario() -> None:
        server = app.APIServer()
        await server.start()
        client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="test")
        scheduler = sched_mod.Scheduler(client)
        try:
            await make_node(client, "gpu-0")
            for name in ("one", "two"):
                await make_pod(client, name, requests={GPU: "8"})
            for informer in scheduler.informers:
                informer.start()
            await scheduler.wait_synced(timeout=10)
            scheduler.pods.stop()  # the cache keeps both pods unbound from here on
            await scheduler.pods.join()
            await scheduler.schedule_one((NS, "one"))
            await scheduler.schedule_one((NS, "two"))
            seen = await placements(client)
            assert seen == {"one": "gpu-0",
                            "two": "Pending: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}, seen
        finally:
            for informer in scheduler.informers:
                informer.stop()
                await informer.join()
            await client.close()
            await server.stop()
    run(scenario)


def test_pending_pod_is_bound_once_a_node_is_added() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler(retry_interval=30) as client:
            await make_pod(client, "waiting", requests={GPU: "4"})
            await until(client, pending_with("waiting", sd.NO_NODES), "waiting pending without nodes")
            await make_node(client, "late")
            seen = await until(client, bound("waiting"), "waiting bound to the new node")
            assert seen["waiting"] == "late"
            assert await events_for(client, "waiting", "Scheduled"), "no Scheduled event"
    run(scenario)


def test_deleting_a_bound_pod_lets_a_pending_one_take_its_gpus() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler(retry_interval=30) as client:
            await make_node(client, "gpu-0")
            await make_pod(client, "holder", requests={GPU: "8"})
            await until(client, bound("holder"), "holder bound")
            await make_pod(client, "next", requests={GPU: "8"})
            await until(client, lambda s: s["next"].startswith("Pending: 0/1"), "next pending")
            await client.delete(PODS, "holder", namespace=NS)  # graceful: the kubelet finishes it
            await client.request("DELETE", PODS.object_path("holder", NS), body={"gracePeriodSeconds": 0})
            seen = await until(client, bound("next"), "next bound after holder is gone")
            assert seen == {"next": "gpu-0"}
    run(scenario)


# --- node selection -----------------------------------------------------------------------------

def test_node_selector_and_required_node_affinity_choose_among_labelled_nodes() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler() as client:
            await make_node(client, "a100", labels={"gpu": "a100", "generation": "3"})
            await make_node(client, "h100", labels={"gpu": "h100", "generation": "4"})
            await make_pod(client, "wants-h100", nodeSelector={"gpu": "h100"})
            newer = {"key": "generation", "operator": "Gt", "values": ["3"]}
            older = {"key": "gpu", "operator": "NotIn", "values": ["h100", "b200"]}
            await make_pod(client, "wants-a100", affinity={"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [older]}]}}})
            await make_pod(client, "newer-or-older", affinity={"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [newer, older]}, {"matchExpressions": [newer]}]}}})
            await make_pod(client, "wants-b200", nodeSelector={"gpu": "b200"})
            seen = await until(client, all_of(
                bound("wants-h100", "wants-a100", "newer-or-older"),
                pending_with("wants-b200", "0/2 nodes are available: 2 node(s) didn't match Pod's node "
                                           "affinity/selector.")), "selected nodes, b200 pending")
            assert (seen["wants-h100"], seen["wants-a100"], seen["newer-or-older"]) == ("h100", "a100", "h100")
    run(scenario)


def test_taints_cordons_and_not_ready_nodes_repel_pods_without_tolerations() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler() as client:
            await make_node(client, "dedicated", taints=[{"key": "dedicated", "value": "infer",
                                                          "effect": "NoSchedule"}])
            await make_node(client, "broken", ready=False)
            await make_node(client, "cordoned", unschedulable=True)
            await make_node(client, "soft", taints=[{"key": "x", "effect": "PreferNoSchedule"}],
                            labels={"soft": "yes"})
            await make_pod(client, "plain", nodeSelector={"kubernetes.io/hostname": "dedicated"})
            await make_pod(client, "tolerant", tolerations=[{"key": "dedicated", "operator": "Equal",
                                                             "value": "infer", "effect": "NoSchedule"}],
                           nodeSelector={"kubernetes.io/hostname": "dedicated"})
            await make_pod(client, "on-soft", nodeSelector={"soft": "yes"})
            await make_pod(client, "anywhere", tolerations=[{"operator": "Exists"}],
                           nodeSelector={"kubernetes.io/hostname": "broken"})
            await make_pod(client, "nowhere", requests={GPU: "1"}, nodeSelector={"absent": "label"},
                           tolerations=[{"key": "dedicated", "operator": "Exists"}])
            seen = await until(client, all_of(bound("tolerant", "on-soft", "anywhere"), pending("plain", "nowhere")),
                               "tolerant pods bound, the others pending")
            assert (seen["tolerant"], seen["on-soft"], seen["anywhere"]) == ("dedicated", "soft", "broken")
            assert seen["plain"] == ("Pending: 0/4 nodes are available: 1 node(s) didn't match Pod's node "
                                     "affinity/selector, 1 node(s) had untolerated taint {dedicated: infer}, "
                                     "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
                                     "1 node(s) were unschedulable."), seen["plain"]
    run(scenario)


# --- inter-pod affinity --------------------------------------------------------------------------

def anti_affinity_on(key: str, selector: Obj) -> Obj:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": selector, "topologyKey": key}]}}


def test_required_anti_affinity_on_zone_puts_pods_in_different_zones() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler() as client:
            for zone in ("zone-a", "zone-b"):
                for i in range(2):
                    await make_node(client, f"{zone}-{i}", labels={ZONE: zone})
            affinity = anti_affinity_on(ZONE, {"matchLabels": {"app": "web"}})
            zone_of = {f"{z}-{i}": z for z in ("zone-a", "zone-b") for i in range(2)}
            for i in range(3):
                await make_pod(client, f"web-{i}", labels={"app": "web"}, affinity=affinity)
            seen = await until(client, lambda s: sum(not v.startswith("Pending") for v in s.values()) == 2
                               and len(s) == 3, "two web pods bound")
            zones = sorted(zone_of[seen[p]] for p in seen if not seen[p].startswith("Pending"))
            assert zones == ["zone-a", "zone-b"], seen
            waiting = next(p for p in seen if seen[p].startswith("Pending"))
            await until(client, pending_with(waiting, "0/4 nodes are available: 4 node(s) didn't match pod "
                                                      "anti-affinity rules."), "the third pod pending")
    run(scenario)


def lws_group_affinity(group: str) -> Obj:
    """What the LWS pod webhook adds with the exclusive-topology annotation (docs/lws-contract.md 4.7)."""
    return {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchExpressions": [{"key": GROUP_KEY, "operator": "In", "values": [group]}]},
            "topologyKey": RACK}]},
        **anti_affinity_on(RACK, {"matchExpressions": [
            {"key": GROUP_KEY, "operator": "Exists"},
            {"key": GROUP_KEY, "operator": "NotIn", "values": [group]}]}),
    }


def test_exclusive_placement_puts_one_group_per_rack_and_a_third_group_waits() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler() as client:
            rack_of = {}
            for rack in ("rack-a", "rack-b"):
                for i in range(2):
                    await make_node(client, f"{rack}-{i}", labels={RACK: rack})
                    rack_of[f"{rack}-{i}"] = rack
            for group in ("g0", "g1", "g2"):
                for member in ("leader", "worker"):
                    await make_pod(client, f"{group}-{member}", labels={GROUP_KEY: group},
                                   requests={GPU: "2"}, affinity=lws_group_affinity(group))
            seen = await until(client, bound("g0-leader", "g0-worker", "g1-leader", "g1-worker"),
                               "groups g0 and g1 placed")
            racks = {g: {rack_of[seen[f"{g}-{m}"]] for m in ("leader", "worker")} for g in ("g0", "g1")}
            assert len(racks["g0"]) == 1 and len(racks["g1"]) == 1 and racks["g0"] != racks["g1"], (racks, seen)
            message = "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules."
            await until(client, all_of(pending_with("g2-leader", message), pending_with("g2-worker", message)),
                        "group g2 pending")
            await client.delete(PODS, "g1-leader", namespace=NS)
            await client.delete(PODS, "g1-worker", namespace=NS)
            for name in ("g1-leader", "g1-worker"):
                await client.request("DELETE", PODS.object_path(name, NS), body={"gracePeriodSeconds": 0})
            seen = await until(client, bound("g2-leader", "g2-worker"), "group g2 placed once g1 is gone")
            assert {rack_of[seen["g2-leader"]], rack_of[seen["g2-worker"]]} == racks["g1"], seen
    run(scenario)


def test_pods_for_another_scheduler_are_left_alone() -> None:
    async def scenario() -> None:
        async with sim_with_scheduler() as client:
            await make_node(client, "node-0")
            await make_pod(client, "volcano-pod", schedulerName="volcano")
            await make_pod(client, "ours")
            await until(client, bound("ours"), "our pod bound")
            await asyncio.sleep(0.3)
            pod = await client.get(PODS, "volcano-pod", namespace=NS)
            assert pod["spec"].get("nodeName") is None and sched_mod.pod_condition(pod, "PodScheduled") is None, pod
    run(scenario)
