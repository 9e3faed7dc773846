"""The DaemonSet controller against the real API server: placement, pinning, status and updates.

Nodes are plain Node objects (no node agent runs), and no scheduler binds the pods, so each pod's
node is the one its `metadata.name` node-affinity pin names.
"""

from __future__ import annotations

from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.daemonset import daemonset as ds_mod
from lwsconf.sim.controllers.daemonset import nodes as nodes_mod
from tests.sim.controllers import workload_sim as ws

Obj = dict[str, Any]
DAEMONSETS = kc.GVR("apps", "v1", "daemonsets")
NODES = kc.GVR("", "v1", "nodes", namespaced=False)
NS = ws.NS


def controller(client: kc.Client) -> ds_mod.DaemonSetController:
    return ds_mod.DaemonSetController(client)


async def add_node(client: kc.Client, name: str, *, labels: dict[str, str] | None = None,
                   taints: list[Obj] | None = None, ready: bool = True, cordoned: bool = False) -> None:
    """A Node object, made Ready (or not) through `nodes/NAME/status` as a node agent would."""
    await client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": name, "labels": labels or {}},
                                "spec": {"taints": taints or [], "unschedulable": cordoned}})
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    await client.patch(NODES, name, {"status": status}, subresource="status")
    if ready:  # the node lifecycle controller lifts TaintNodesByCondition's not-ready taint once Ready
        await client.patch(NODES, name, {"spec": {"taints": taints or None}})


def daemonset(*, image: str = "img:1", **pod_spec: Any) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [ws.container(image)], **pod_spec}}}}


def by_node(found: dict[str, Obj]) -> dict[str, str]:
    """node name -> pod name (assumes one pod per node)."""
    return {str(nodes_mod.target_node(p)): n for n, p in found.items() if not p["metadata"].get("deletionTimestamp")}


async def status_until(client: kc.Client, want: dict[str, Any]) -> Obj:
    def matches(obj: Obj | None) -> bool:
        status = (obj or {}).get("status") or {}
        return all(status.get(k) == v for k, v in want.items())
    found = await ws.object_until(client, DAEMONSETS, "agent", matches, f"status {want}")
    assert found is not None
    return found


def test_one_pinned_pod_per_matching_node_that_tolerates_the_taints() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            taint = {"key": "dedicated", "value": "infer", "effect": "NoSchedule"}
            await add_node(client, "n0", labels={"gpu": "true"})
            await add_node(client, "n1", labels={"gpu": "true"}, taints=[taint])
            await add_node(client, "n2")
            await client.create(DAEMONSETS,
                                daemonset(nodeSelector={"gpu": "true"}))
            found = await ws.pods_until(client, lambda p: set(by_node(p)) == {"n0"}, "a pod on n0 only")
            [(name, pod)] = found.items()
            assert name.startswith("agent-") and len(name) == len("agent-") + 5
            terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert terms == {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n0"]}]}]}
            assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"} in \
                pod["spec"]["tolerations"]
            labels = pod["metadata"]["labels"]
            assert labels["app"] == "agent" and labels["pod-template-generation"] == "1"
            assert "controller-revision-hash" in labels
            await ws.pods_stay(client, lambda p: len(p) == 1, "no pod for the tainted or unlabelled node")
            await status_until(client, {"desiredNumberScheduled": 1, "currentNumberScheduled": 1,
                                        "numberReady": 0, "numberAvailable": 0, "numberUnavailable": 1})
    ws.run(scenario)


def test_cordoned_nodes_get_daemon_pods_but_not_ready_nodes_only_with_a_toleration() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await add_node(client, "cordoned", cordoned=True)
            await add_node(client, "down", ready=False)
            await client.create(DAEMONSETS, daemonset())
            await ws.pods_until(client, lambda p: set(by_node(p)) == {"cordoned"}, "a pod on the cordoned node")
            await ws.pods_stay(client, lambda p: "down" not in by_node(p), "none on the not-ready node")
            patch = {"spec": {"template": {"spec": {"tolerations": [{"operator": "Exists"}]}}}}
            await client.patch(DAEMONSETS, "agent", patch, namespace=NS)
            await ws.pods_until(client, lambda p: set(by_node(p)) == {"cordoned", "down"},
                                "a pod on the not-ready node once the template tolerates everything")
    ws.run(scenario)


def test_pods_follow_nodes_as_they_appear_change_and_go() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await add_node(client, "n0")
            await client.create(DAEMONSETS, daemonset())
            await ws.pods_until(client, lambda p: set(by_node(p)) == {"n0"}, "a pod on n0")
            await add_node(client, "n1")
            await ws.pods_until(client, lambda p: set(by_node(p)) == {"n0", "n1"}, "a pod on the new node n1")
            taint = [{"key": "maintenance", "effect": "NoExecute"}]
            await client.patch(NODES, "n1", {"spec": {"taints": taint}})
            await ws.pods_until(client, lambda p: set(by_node(p)) == {"n0"}, "n1's pod removed after NoExecute taint")
            await client.delete(NODES, "n0")
            await ws.pods_until(client, lambda p: not p, "n0's pod removed with the node")
            await status_until(client, {"desiredNumberScheduled": 0, "currentNumberScheduled": 0})
    ws.run(scenario)


def test_status_counts_ready_pods_and_failed_pods_are_replaced() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            for name in ("n0", "n1"):
                await add_node(client, name)
            await client.create(DAEMONSETS, daemonset())
            found = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await ws.make_ready(client, *found)
            await status_until(client, {"desiredNumberScheduled": 2, "numberReady": 2, "numberAvailable": 2,
                                        "updatedNumberScheduled": 2, "numberUnavailable": 0, "observedGeneration": 1})
            failed = sorted(found)[0]
            await ws.set_pod_status(client, failed, phase="Failed", ready=False)
            await ws.pods_until(client, lambda p: len(p) == 2 and failed not in p, "the failed pod replaced")
    ws.run(scenario)


def test_rolling_update_replaces_one_node_at_a_time() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            for name in ("n0", "n1", "n2"):
                await add_node(client, name)
            await client.create(DAEMONSETS, daemonset())
            old = await ws.pods_until(client, lambda p: len(p) == 3, "3 pods")
            await ws.make_ready(client, *old)
            await status_until(client, {"numberAvailable": 3})
            patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img:2"}]}}}}
            await client.patch(DAEMONSETS, "agent", patch, namespace=NS, patch_type="strategic")
            found = await ws.pods_until(client, lambda p: len(set(p) - set(old)) == 1, "one replaced pod")
            await ws.pods_stay(client, lambda p: len(set(old) & set(p)) == 2, "one node at a time")
            for left in (1, 0):  # readying the replacement lets exactly one more old pod go
                await ws.make_ready(client, *(set(found) - set(old)))
                found = await ws.pods_until(client, lambda p, n=left: len(p) == 3 and len(set(old) & set(p)) == n,
                                            f"{left} old pods left")
            await ws.make_ready(client, *found)
            ds = await status_until(client, {"updatedNumberScheduled": 3, "numberAvailable": 3})
            assert ds["status"]["observedGeneration"] == 2
            assert not set(old) & set(await ws.pods(client))
    ws.run(scenario)
