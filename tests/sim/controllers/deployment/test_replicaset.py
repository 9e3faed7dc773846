"""The ReplicaSet controller against the real API server: pods to spec.replicas, claims, status, events."""

from __future__ import annotations

from typing import Any

from lwsconf.sim.controllers.deployment import replicaset as rs_mod
from tests.sim.controllers import workload_sim as ws

Obj = dict[str, Any]
NS = ws.NS
REPLICASETS = rs_mod.REPLICASETS


def replicaset(replicas: int = 2, **labels: str) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "rs"}},
                     "template": {"metadata": {"labels": {"app": "rs", **labels}},
                                  "spec": {"containers": [ws.container()]}}}}


def orphan(name: str, **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"containers": [ws.container()]}}


def owner_names(pod: Obj) -> list[str]:
    return [r["name"] for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")]


async def status_until(client: Any, want: dict[str, Any]) -> Obj:
    def matches(obj: Obj | None) -> bool:
        return all(((obj or {}).get("status") or {}).get(k) == v for k, v in want.items())
    found = await ws.object_until(client, REPLICASETS, "rs", matches, f"status {want}")
    assert found is not None
    return found


def test_creates_replicas_records_events_and_counts_ready_and_labelled_pods() -> None:
    async def scenario() -> None:
        async with ws.sim_with(rs_mod.ReplicaSetController) as client:
            await client.create(REPLICASETS, replicaset(3, tier="web"))
            found = await ws.pods_until(client, lambda p: len(p) == 3, "3 pods")
            assert all(n.startswith("rs-") and len(n) == len("rs-") + 5 for n in found), sorted(found)
            assert all(owner_names(p) == ["rs"] for p in found.values())
            await ws.pods_stay(client, lambda p: len(p) == 3, "no extra pods from a stale cache")
            created = await ws.events_until(client, "rs", "SuccessfulCreate", 3)
            assert sorted(created) == sorted(f"Created pod: {n}" for n in found)
            await status_until(client, {"replicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 1})
            await ws.make_ready(client, *sorted(found)[:2])
            await status_until(client, {"readyReplicas": 2, "availableReplicas": 2})
            await client.patch(REPLICASETS, "rs", {"spec": {"replicas": 1}}, namespace=NS)
            left = await ws.pods_until(client, lambda p: len(p) == 1, "scaled down to 1")
            assert set(left) <= set(sorted(found)[:2]), "the not-ready pod goes first"
            deleted = await ws.events_until(client, "rs", "SuccessfulDelete", 2)
            assert all(m.startswith("Deleted pod: rs-") for m in deleted)
    ws.run(scenario)


def test_adopts_matching_orphans_and_releases_pods_that_stop_matching() -> None:
    async def scenario() -> None:
        async with ws.sim_with(rs_mod.ReplicaSetController) as client:
            await client.create(ws.PODS, orphan("stray", app="rs"))
            await client.create(ws.PODS, orphan("other", app="else"))
            await client.create(REPLICASETS, replicaset(2))
            found = await ws.pods_until(client, lambda p: len(p) == 3 and owner_names(p["stray"]) == ["rs"],
                                        "stray adopted and one pod created")
            assert owner_names(found["other"]) == [], "a pod the selector does not match is left alone"
            await client.patch(ws.PODS, "stray", {"metadata": {"labels": {"app": "gone"}}}, namespace=NS)
            found = await ws.pods_until(client, lambda p: len(p) == 4 and owner_names(p["stray"]) == [],
                                        "stray released and replaced")
            assert sum(owner_names(p) == ["rs"] for p in found.values()) == 2
    ws.run(scenario)


def test_deletion_order_and_slow_start_batches() -> None:
    """ActivePods: unscheduled before scheduled, pending before running, not ready before ready."""
    def pod(name: str, node: str, phase: str, ready: bool) -> Obj:
        return {"metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": node},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    pods = [pod("ready", "n", "Running", True), pod("unready", "n", "Running", False),
            pod("pending", "n", "Pending", False), pod("unscheduled", "", "Pending", False)]
    assert [p["metadata"]["name"] for p in sorted(pods, key=rs_mod.deletion_order)] == [
        "unscheduled", "pending", "unready", "ready"]
    assert rs_mod.slow_start_batches(10) == [1, 2, 4, 3]
    assert rs_mod.slow_start_batches(0) == []
