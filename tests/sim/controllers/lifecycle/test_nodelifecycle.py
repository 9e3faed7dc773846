"""The node lifecycle controller: pure decisions, then against the real API server with fake nodes.

No kubelet runs in the API-level tests: the test plays it (a Node with a Ready condition and a Lease
it renews or not), so every heartbeat is explicit.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
from typing import Any

import pytest

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.controllers.lifecycle import nodelifecycle as nl
from lwsconf.sim.controllers.lifecycle import taint_eviction as te
from tests.sim.controllers import workload_sim as ws

Obj = dict[str, Any]
NODES = nl.NODES
LEASES = nl.LEASES
NOW = "2030-01-01T00:00:00Z"


def node(name: str = "n", ready: str | None = "True", *, zone: str = "zone-a", taints: list[Obj] | None = None,
         unschedulable: bool = False) -> Obj:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready, "lastHeartbeatTime": NOW}]
    return {"metadata": {"name": name, "labels": {nl.ZONE_LABEL: zone}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable}, "status": {"conditions": conditions}}


def keys(taints: list[Obj]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in taints}


# --- pure decisions --------------------------------------------------------------------------------

@pytest.mark.parametrize(("statuses", "state"), [
    (["True", "True"], nl.NORMAL),
    (["Unknown"], nl.FULL),
    (["False", "Unknown"], nl.FULL),
    (["True", "False", "Unknown"], nl.NORMAL),                 # 2 not ready: never partial
    (["True", "False", "Unknown", "Unknown"], nl.PARTIAL),     # 3 of 4 >= 55 %
    (["True", "True", "False", "Unknown", "Unknown", "True", "True"], nl.NORMAL),  # 3 of 7 < 55 %
])
def test_zone_state_follows_compute_zone_state(statuses: list[str], state: str) -> None:
    assert nl.zone_state(statuses, 0.55) == state


def test_unknown_node_gets_unreachable_taints_with_time_added() -> None:
    got = nl.desired_taints(node(ready="Unknown"), no_execute="taint", now=NOW)
    assert keys(got) == {(nl.UNREACHABLE, "NoSchedule"), (nl.UNREACHABLE, "NoExecute")}
    assert next(t for t in got if t["effect"] == "NoExecute")["timeAdded"] == NOW


def test_not_ready_node_swaps_unreachable_for_not_ready() -> None:
    before = node(ready="False", taints=[{"key": nl.UNREACHABLE, "effect": "NoExecute", "timeAdded": "x"},
                                         {"key": nl.UNREACHABLE, "effect": "NoSchedule"}])
    got = nl.desired_taints(before, no_execute="hold", now=NOW)
    assert keys(got) == {(nl.NOT_READY, "NoSchedule"), (nl.NOT_READY, "NoExecute")}


def test_ready_node_keeps_only_taints_the_controller_does_not_own() -> None:
    own = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    before = node(ready="True", taints=[own, {"key": nl.UNREACHABLE, "effect": "NoExecute"},
                                        {"key": nl.NOT_READY, "effect": "NoSchedule"}])
    assert nl.desired_taints(before, no_execute="taint", now=NOW) == [own]


def test_held_or_cleared_zones_get_no_new_no_execute_taint() -> None:
    assert keys(nl.desired_taints(node(ready="Unknown"), no_execute="hold", now=NOW)) == \
        {(nl.UNREACHABLE, "NoSchedule")}
    tainted = node(ready="Unknown", taints=[{"key": nl.UNREACHABLE, "effect": "NoExecute", "timeAdded": "x"}])
    assert (nl.UNREACHABLE, "NoExecute") in keys(nl.desired_taints(tainted, no_execute="hold", now=NOW))
    assert keys(nl.desired_taints(tainted, no_execute="clear", now=NOW)) == {(nl.UNREACHABLE, "NoSchedule")}


def test_cordoned_node_is_tainted_unschedulable() -> None:
    assert keys(nl.desired_taints(node(unschedulable=True), no_execute="taint", now=NOW)) == \
        {(nl.UNSCHEDULABLE, "NoSchedule")}


def test_mark_unknown_sets_every_condition_and_fills_missing_ones() -> None:
    status = copy.deepcopy(node(ready="True")["status"])
    assert nl.mark_unknown(status, now=NOW, created="then")
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["Ready"]["reason"] == "NodeStatusUnknown" and by_type["Ready"]["lastHeartbeatTime"] == NOW
    assert by_type["DiskPressure"]["reason"] == "NodeStatusNeverUpdated"
    assert {c["status"] for c in status["conditions"]} == {"Unknown"}
    assert not nl.mark_unknown(status, now=NOW, created="then"), "nothing changes a second time"


def toleration(key: str | None, seconds: int | None = None, effect: str = "NoExecute") -> Obj:
    out: Obj = {"operator": "Exists", "effect": effect}
    if key:
        out["key"] = key
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


UNREACHABLE_TAINT = {"key": nl.UNREACHABLE, "effect": "NoExecute"}
NOT_READY_TAINT = {"key": nl.NOT_READY, "effect": "NoExecute"}


@pytest.mark.parametrize(("tolerations", "delay"), [
    ([], 0.0),                                                          # untolerated: at once
    ([toleration(nl.UNREACHABLE)], None),                               # no seconds: forever
    ([toleration(nl.UNREACHABLE, 30)], 30.0),
    ([toleration(nl.UNREACHABLE, -5)], 0.0),
    ([toleration(None, 7), toleration(nl.UNREACHABLE, 2)], 7.0),        # the first match is used
    ([toleration(nl.UNREACHABLE, 3, effect="NoSchedule")], 0.0),       # wrong effect
])
def test_eviction_delay_follows_the_tolerations_used(tolerations: list[Obj], delay: float | None) -> None:
    assert te.eviction_delay({"spec": {"tolerations": tolerations}}, [UNREACHABLE_TAINT]) == delay


def test_eviction_delay_is_the_shortest_over_all_taints_and_needs_all_tolerated() -> None:
    both = [UNREACHABLE_TAINT, NOT_READY_TAINT]
    pod = {"spec": {"tolerations": [toleration(nl.UNREACHABLE, 9), toleration(nl.NOT_READY, 4)]}}
    assert te.eviction_delay(pod, both) == 4.0
    assert te.eviction_delay({"spec": {"tolerations": [toleration(nl.UNREACHABLE, 9)]}}, both) == 0.0


# --- against the API server --------------------------------------------------------------------------

def stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def add_node(client: kc.Client, name: str, *, zone: str = "zone-a") -> None:
    """Register a node as a kubelet would: the Node, Ready=True, and a fresh Lease."""
    await client.create(NODES, {"metadata": {"name": name, "labels": {nl.ZONE_LABEL: zone}}})
    await set_ready(client, name, "True")
    await renew(client, name)


async def set_ready(client: kc.Client, name: str, status: str) -> None:
    cond = {"type": "Ready", "status": status, "reason": "KubeletReady", "lastHeartbeatTime": stamp()[:19] + "Z",
            "lastTransitionTime": stamp()[:19] + "Z"}
    await client.patch(NODES, name, {"status": {"conditions": [cond]}}, subresource="status")


async def renew(client: kc.Client, name: str) -> None:
    body = {"metadata": {"name": name, "namespace": nl.LEASE_NAMESPACE},
            "spec": {"holderIdentity": name, "renewTime": stamp()}}
    try:
        await client.create(LEASES, body, namespace=nl.LEASE_NAMESPACE)
    except errors.ApiError as exc:
        if not exc.is_already_exists:
            raise
        await client.patch(LEASES, name, {"spec": {"renewTime": stamp()}}, namespace=nl.LEASE_NAMESPACE)


async def node_until(client: kc.Client, name: str, predicate: Any, what: str) -> Obj:
    seen: Obj = {}

    async def check() -> bool:
        nonlocal seen
        seen = await client.get(NODES, name)
        return bool(predicate(seen))

    async def describe() -> str:
        status, spec = seen.get("status") or {}, seen.get("spec") or {}
        return f"node {name}: conditions={status.get('conditions')} taints={spec.get('taints')}"
    await ws.until(check, describe, what, timeout=10)
    return seen


def ready_of(n: Obj) -> str:
    return nl.ready_status(n)


def controller(client: kc.Client) -> nl.NodeLifecycleController:
    return nl.NodeLifecycleController(client, monitor_period=0.05, grace_period=0.6, orphan_quarantine=0.2)


async def keep_renewing(client: kc.Client, name: str, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await renew(client, name)
        await asyncio.sleep(0.1)


def test_silent_node_goes_unknown_tainted_and_its_pods_not_ready_then_recovers() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await add_node(client, "quiet", zone="zone-a")
            await add_node(client, "alive", zone="zone-b")
            stop = asyncio.Event()
            heart = asyncio.create_task(keep_renewing(client, "alive", stop))
            await client.create(kc.PODS, {"metadata": {"name": "p"}, "spec": {
                "nodeName": "quiet", "containers": [{"name": "c", "image": "pause"}],
                "tolerations": [toleration(nl.UNREACHABLE)]}}, namespace=ws.NS)
            await ws.set_pod_status(client, "p")
            got = await node_until(client, "quiet", lambda n: keys(n.get("spec", {}).get("taints") or []) == {
                (nl.UNREACHABLE, "NoSchedule"), (nl.UNREACHABLE, "NoExecute")}, "quiet tainted unreachable")
            assert ready_of(got) == "Unknown"
            await ws.pods_until(client, lambda pods: ws.pod_table(pods).count("ready=False") == 1,
                                "the pod marked NotReady")
            alive = await client.get(NODES, "alive")
            assert ready_of(alive) == "True" and not alive.get("spec", {}).get("taints"), \
                "a renewing node stays healthy"
            await set_ready(client, "quiet", "True")
            await renew(client, "quiet")
            heart_quiet = asyncio.create_task(keep_renewing(client, "quiet", stop))
            await node_until(client, "quiet", lambda n: not n.get("spec", {}).get("taints"), "quiet untainted")
            pod = await client.get(kc.PODS, "p", namespace=ws.NS)
            assert not pod["metadata"].get("deletionTimestamp"), "a pod tolerating forever is never evicted"
            stop.set()
            await asyncio.gather(heart, heart_quiet)
    ws.run(scenario)


def test_when_every_zone_is_down_nothing_gets_a_no_execute_taint() -> None:
    def down_without_no_execute(n: Obj) -> bool:
        found = keys(n.get("spec", {}).get("taints") or [])
        return ready_of(n) == "Unknown" and (nl.UNREACHABLE, "NoSchedule") in found and \
            (nl.UNREACHABLE, "NoExecute") not in found

    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await add_node(client, "a", zone="zone-a")
            await add_node(client, "b", zone="zone-b")
            for name in ("a", "b"):
                await node_until(client, name, down_without_no_execute, f"{name} Unknown without NoExecute taint")
            deadline = asyncio.get_running_loop().time() + 0.5  # ten passes: the taint never comes back
            while asyncio.get_running_loop().time() < deadline:
                for name in ("a", "b"):
                    got = await client.get(NODES, name)
                    assert down_without_no_execute(got), got["spec"]
                await asyncio.sleep(0.05)
    ws.run(scenario)


def test_untolerating_pod_is_evicted_and_orphans_of_a_missing_node_are_force_deleted() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await add_node(client, "a", zone="zone-a")
            await add_node(client, "b", zone="zone-b")
            stop = asyncio.Event()
            heart = asyncio.create_task(keep_renewing(client, "b", stop))
            spec = {"containers": [{"name": "c", "image": "pause"}]}
            await client.create(kc.PODS, {"metadata": {"name": "evict-me"}, "spec": {
                **spec, "nodeName": "a", "tolerations": [toleration(nl.UNREACHABLE, 0)]}}, namespace=ws.NS)
            await client.create(kc.PODS, {"metadata": {"name": "orphan"}, "spec": {**spec, "nodeName": "ghost"}},
                                namespace=ws.NS)
            await ws.set_pod_status(client, "orphan")
            found = await ws.pods_until(client, lambda pods: "orphan" not in pods and "deleting=True" in
                                        ws.pod_table({k: v for k, v in pods.items() if k == "evict-me"}),
                                        "evict-me deleting and orphan gone")
            conditions = {c["type"]: c for c in found["evict-me"]["status"]["conditions"]}
            assert conditions["DisruptionTarget"]["reason"] == te.DISRUPTION_REASON
            stop.set()
            await heart
    ws.run(scenario)
