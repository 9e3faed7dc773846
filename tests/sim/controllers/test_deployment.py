"""The Deployment controller (pods owned directly, no ReplicaSets) against the real API server."""

from __future__ import annotations

from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers import deployment as deploy_mod
from tests.sim.controllers import workload_sim as ws

Obj = dict[str, Any]
DEPLOYMENTS = kc.GVR("apps", "v1", "deployments")
NS = ws.NS
SELECTOR = "app=ctl"


def controller(client: kc.Client) -> deploy_mod.DeploymentController:
    return deploy_mod.DeploymentController(client)


def deployment(*, replicas: int = 2, image: str = "img:1", **spec: Any) -> Obj:
    body: Obj = {"replicas": replicas, "selector": {"matchLabels": {"app": "ctl"}},
                 "template": {"metadata": {"labels": {"app": "ctl"}},
                              "spec": {"containers": [ws.container(image)]}}}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ctl", "namespace": NS},
            "spec": body}


def hashes(found: dict[str, Obj]) -> set[str]:
    return {p["metadata"]["labels"]["pod-template-hash"] for p in found.values()}


async def ready_all(client: kc.Client, found: dict[str, Obj]) -> None:
    await ws.make_ready(client, *found)


async def status_until(client: kc.Client, want: dict[str, Any]) -> Obj:
    def matches(obj: Obj | None) -> bool:
        status = (obj or {}).get("status") or {}
        return all(status.get(k) == v for k, v in want.items())
    found = await ws.object_until(client, DEPLOYMENTS, "ctl", matches, f"status {want}")
    assert found is not None
    return found


def condition(deploy: Obj, type_: str) -> Obj:
    return next(c for c in deploy["status"]["conditions"] if c["type"] == type_)


def test_creates_replicas_named_like_replicaset_pods_and_reports_available() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            created = await client.create(DEPLOYMENTS, deployment(replicas=3))
            found = await ws.pods_until(client, lambda p: len(p) == 3, "3 pods")
            [hash_] = hashes(found)
            for name, pod in found.items():
                assert name.startswith(f"ctl-{hash_}-") and len(name) == len(f"ctl-{hash_}-") + 5, name
                [ref] = pod["metadata"]["ownerReferences"]
                assert (ref["kind"], ref["uid"], ref["controller"]) == ("Deployment", created["metadata"]["uid"], True)
            await ws.pods_stay(client, lambda p: len(p) == 3, "no extra pods from a stale cache")
            created_events = await ws.events_until(client, "ctl", "SuccessfulCreate", 3)
            assert sorted(created_events) == sorted(f"Created pod: {n}" for n in found), created_events
            deploy = await status_until(client, {"replicas": 3, "updatedReplicas": 3, "availableReplicas": 0})
            assert condition(deploy, "Available")["status"] == "False"
            await ready_all(client, found)
            deploy = await status_until(client, {"readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1})
            assert condition(deploy, "Available")["reason"] == "MinimumReplicasAvailable"
            assert condition(deploy, "Progressing")["reason"] == "NewReplicaSetAvailable"
    ws.run(scenario)


def test_scales_up_and_down_and_replaces_deleted_pods() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=2))
            found = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            victim = sorted(found)[0]
            await client.delete(ws.PODS, victim, namespace=NS)
            await ws.pods_until(client, lambda p: len(p) == 2 and victim not in p, "a replacement pod")
            await client.patch(DEPLOYMENTS, "ctl", {"spec": {"replicas": 4}}, namespace=NS)
            await ws.pods_until(client, lambda p: len(p) == 4, "scaled up to 4")
            await client.patch(DEPLOYMENTS, "ctl", {"spec": {"replicas": 1}}, namespace=NS)
            await ws.pods_until(client, lambda p: len(p) == 1, "scaled down to 1")
            await status_until(client, {"replicas": 1, "observedGeneration": 3})
    ws.run(scenario)


def test_rolling_update_surges_new_pods_before_deleting_old_ones() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
            await client.create(DEPLOYMENTS, deployment(replicas=2, strategy=strategy))
            old = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await ready_all(client, old)
            await status_until(client, {"availableReplicas": 2})
            [old_hash] = hashes(old)
            patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img:2"}]}}}}
            await client.patch(DEPLOYMENTS, "ctl", patch, namespace=NS, patch_type="strategic")
            surged = await ws.pods_until(client, lambda p: len(p) == 3, "one surge pod")
            new = {n: p for n, p in surged.items() if n not in old}
            assert hashes(new) != {old_hash}
            await ws.pods_stay(client, lambda p: set(old) <= set(p), "old pods kept while the new one is unready")
            for _ in range(4):  # each step: make the new pods ready, then an old one goes and a new one comes
                found = await ws.pods(client)
                if hashes(found) == hashes(new) and len(found) == 2:
                    break
                assert len(found) <= 3, f"never more than replicas + maxSurge pods:\n  {ws.pod_table(found)}"
                await ready_all(client, {n: p for n, p in found.items() if n not in old})
                await ws.pods_until(client, lambda p, f=found: set(p) != set(f), "rollout progress")
            else:
                raise AssertionError(f"rollout did not finish:\n  {ws.pod_table(await ws.pods(client))}")
            deploy = await status_until(client, {"updatedReplicas": 2, "replicas": 2})
            assert condition(deploy, "Progressing")["message"].startswith(f'ReplicaSet "ctl-{hashes(new).pop()}"')
    ws.run(scenario)


def test_recreate_deletes_old_pods_before_creating_new_ones() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=2, strategy={"type": "Recreate"}))
            old = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img:2"}]}}}}
            await client.patch(DEPLOYMENTS, "ctl", patch, namespace=NS, patch_type="strategic")
            found = await ws.pods_until(client, lambda p: len(p) == 2 and not set(p) & set(old), "2 new pods")
            assert len(hashes(found)) == 1 and hashes(found) != hashes(old)
    ws.run(scenario)


# --- the rollout arithmetic (no server) -------------------------------------------------------------

def pod(name: str, hash_: str, *, ready: bool = True) -> Obj:
    return {"metadata": {"name": name, "uid": name, "labels": {"pod-template-hash": hash_},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {}, "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


def rollout(replicas: int, old: int, new: int, *, new_ready: bool = True, **rolling: Any) -> deploy_mod.Rollout:
    body = deployment(replicas=replicas, strategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    body["metadata"].update(uid="u", generation=1)
    current = deploy_mod.Rollout(body, []).hash
    pods = [pod(f"old-{i}", "old") for i in range(old)] + [pod(f"new-{i}", current, ready=new_ready)
                                                           for i in range(new)]
    return deploy_mod.Rollout(body, pods)


def test_fenceposts_round_surge_up_and_unavailable_down_and_never_both_zero() -> None:
    assert rollout(3, 0, 0, maxSurge="25%", maxUnavailable="25%").fenceposts() == (1, 0)
    assert rollout(3, 0, 0, maxSurge=0, maxUnavailable="10%").fenceposts() == (0, 1)
    assert rollout(10, 0, 0, maxSurge="50%", maxUnavailable=3).fenceposts() == (5, 3)


def test_rollout_plan_surges_first_then_deletes_old_pods_within_max_unavailable() -> None:
    assert rollout(4, 4, 0, maxSurge=1, maxUnavailable=1).plan().create == 1
    unready_new = rollout(4, 4, 1, new_ready=False, maxSurge=1, maxUnavailable=1).plan()
    assert [p["metadata"]["name"] for p in unready_new.delete] == ["old-0"]
    assert rollout(4, 4, 1, new_ready=False, maxSurge=1, maxUnavailable=0).plan().delete == []
    done = rollout(4, 0, 5, maxSurge=1, maxUnavailable=0).plan()
    assert (done.create, len(done.delete)) == (0, 1)
