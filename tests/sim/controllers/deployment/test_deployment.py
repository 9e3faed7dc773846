"""The Deployment controller over ReplicaSets (with the ReplicaSet controller) against the real API server."""

from __future__ import annotations

from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.deployment import deployment as deploy_mod
from lwsconf.sim.controllers.deployment import replicaset as rs_mod
from lwsconf.sim.controllers.deployment import rolling
from lwsconf.sim.controllers.deployment import util as du
from tests.sim.controllers import workload_sim as ws

Obj = dict[str, Any]
DEPLOYMENTS = kc.GVR("apps", "v1", "deployments")
REPLICASETS = rs_mod.REPLICASETS
NS = ws.NS
SELECTOR = "app=ctl"
NEW_IMAGE = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img:2"}]}}}}


def controllers() -> tuple[Any, Any]:
    return deploy_mod.DeploymentController, rs_mod.ReplicaSetController


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
    def matches(obj: Obj | None) -> bool:  # an absent counter reads as 0, as a Go client reads the omitempty field
        status = (obj or {}).get("status") or {}
        return all(status.get(k, 0 if isinstance(v, int) else None) == v for k, v in want.items())
    found = await ws.object_until(client, DEPLOYMENTS, "ctl", matches, f"status {want}")
    assert found is not None
    return found


async def replicasets(client: kc.Client) -> dict[str, Obj]:
    items, _ = await client.list_all(REPLICASETS, namespace=NS)
    return {r["metadata"]["name"]: r for r in items}


def condition(deploy: Obj, type_: str) -> Obj:
    return next(c for c in deploy["status"]["conditions"] if c["type"] == type_)


def test_creates_a_replicaset_whose_pods_it_owns_and_reports_available() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
            created = await client.create(DEPLOYMENTS, deployment(replicas=3))
            found = await ws.pods_until(client, lambda p: len(p) == 3, "3 pods")
            [hash_] = hashes(found)
            [rs] = (await replicasets(client)).values()
            assert rs["metadata"]["name"] == f"ctl-{hash_}"
            [ref] = rs["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["uid"], ref["controller"]) == ("Deployment", created["metadata"]["uid"], True)
            assert rs["spec"]["selector"]["matchLabels"] == {"app": "ctl", "pod-template-hash": hash_}
            assert rs["metadata"]["annotations"][du.REVISION] == "1"
            assert rs["metadata"]["annotations"][du.DESIRED_REPLICAS] == "3"
            for name, pod in found.items():
                assert name.startswith(f"ctl-{hash_}-") and len(name) == len(f"ctl-{hash_}-") + 5, name
                [ref] = pod["metadata"]["ownerReferences"]
                assert (ref["kind"], ref["name"], ref["controller"]) == ("ReplicaSet", rs["metadata"]["name"], True)
            await ws.pods_stay(client, lambda p: len(p) == 3, "no extra pods from a stale cache")
            created_events = await ws.events_until(client, f"ctl-{hash_}", "SuccessfulCreate", 3)
            assert sorted(created_events) == sorted(f"Created pod: {n}" for n in found), created_events
            scaled = await ws.events_until(client, "ctl", "ScalingReplicaSet", 1)
            assert scaled == [f"Scaled up replica set ctl-{hash_} from 0 to 3"]
            deploy = await status_until(client, {"replicas": 3, "updatedReplicas": 3, "availableReplicas": 0})
            assert condition(deploy, "Available")["status"] == "False"
            assert deploy["metadata"]["annotations"][du.REVISION] == "1"
            await ready_all(client, found)
            deploy = await status_until(client, {"readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1})
            assert condition(deploy, "Available")["reason"] == "MinimumReplicasAvailable"
            progressing = condition(deploy, "Progressing")
            assert (progressing["reason"], progressing["message"]) == (
                "NewReplicaSetAvailable", f'ReplicaSet "ctl-{hash_}" has successfully progressed.')
    ws.run(scenario)


def test_scales_up_and_down_and_replaces_deleted_pods() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
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
            [rs_name] = await replicasets(client)
            assert (await ws.events_until(client, "ctl", "ScalingReplicaSet", 3))[1:] == [
                f"Scaled up replica set {rs_name} from 2 to 4", f"Scaled down replica set {rs_name} from 4 to 1"]
    ws.run(scenario)


def test_rolling_update_surges_new_pods_before_deleting_old_ones_then_rolls_back() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
            strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
            await client.create(DEPLOYMENTS, deployment(replicas=2, strategy=strategy))
            old = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await ready_all(client, old)
            await status_until(client, {"availableReplicas": 2})
            [old_hash] = hashes(old)
            await client.patch(DEPLOYMENTS, "ctl", NEW_IMAGE, namespace=NS, patch_type="strategic")
            surged = await ws.pods_until(client, lambda p: len(p) == 3, "one surge pod")
            new = {n: p for n, p in surged.items() if n not in old}
            assert hashes(new) != {old_hash}
            await ws.pods_stay(client, lambda p: set(old) <= set(p), "old pods kept while the new one is unready")
            for _ in range(6):  # each step: make the new pods ready, then an old one goes and a new one comes
                found = await ws.pods(client)
                if hashes(found) == hashes(new) and len(found) == 2:
                    break
                assert len(found) <= 3, f"never more than replicas + maxSurge pods:\n  {ws.pod_table(found)}"
                await ready_all(client, {n: p for n, p in found.items() if n not in old})
                before = set(found)
                await ws.pods_until(client, lambda p: set(p) != before, "rollout progress")  # noqa: B023
            else:
                raise AssertionError(f"rollout did not finish:\n  {ws.pod_table(await ws.pods(client))}")
            new_hash = hashes(new).pop()
            deploy = await status_until(client, {"updatedReplicas": 2, "replicas": 2})
            assert condition(deploy, "Progressing")["message"].startswith(f'ReplicaSet "ctl-{new_hash}"')
            rss = await replicasets(client)
            assert {n: (r["spec"]["replicas"], r["metadata"]["annotations"][du.REVISION]) for n, r in rss.items()} \
                == {f"ctl-{old_hash}": (0, "1"), f"ctl-{new_hash}": (2, "2")}
            # rollout undo, as kubectl does it: the old ReplicaSet's template (hash label dropped) back on the
            # Deployment
            template = du.without_hash(rss[f"ctl-{old_hash}"]["spec"]["template"])
            await client.patch(DEPLOYMENTS, "ctl", [{"op": "replace", "path": "/spec/template", "value": template}],
                               namespace=NS, patch_type="json")
            await ws.pods_until(client, lambda p: hashes(p) == {old_hash, new_hash}, "the old template's pods back")

            def reused(obj: Obj | None) -> bool:
                return bool(((obj or {}).get("metadata") or {}).get("annotations", {}).get(du.REVISION) == "3")
            back = await ws.object_until(client, REPLICASETS, f"ctl-{old_hash}", reused, "revision 3")
            assert back is not None and back["metadata"]["annotations"][du.REVISION_HISTORY] == "1"
            assert len(await replicasets(client)) == 2, "no third ReplicaSet for a template seen before"
    ws.run(scenario)


def test_recreate_scales_old_replicaset_to_zero_before_the_new_one_comes_up() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=2, strategy={"type": "Recreate"}))
            old = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await client.patch(DEPLOYMENTS, "ctl", NEW_IMAGE, namespace=NS, patch_type="strategic")
            found = await ws.pods_until(client, lambda p: len(p) == 2 and not set(p) & set(old), "2 new pods")
            assert len(hashes(found)) == 1 and hashes(found) != hashes(old)
            [old_rs] = [f"ctl-{h}" for h in hashes(old)]
            scaled = await ws.events_until(client, "ctl", "ScalingReplicaSet", 3)
            assert scaled[1] == f"Scaled down replica set {old_rs} from 2 to 0", scaled
            assert scaled[2].startswith("Scaled up replica set ctl-") and scaled[2].endswith("from 0 to 2"), scaled
    ws.run(scenario)


def test_revision_history_limit_deletes_old_replicasets_at_zero() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=1, revisionHistoryLimit=0,
                                                        strategy={"type": "Recreate"}))
            await ws.pods_until(client, lambda p: len(p) == 1, "1 pod")
            await client.patch(DEPLOYMENTS, "ctl", NEW_IMAGE, namespace=NS, patch_type="strategic")
            found = await ws.pods_until(client, lambda p: len(p) == 1 and "img:2" in str(p), "the new pod")
            await ready_all(client, found)
            await status_until(client, {"availableReplicas": 1, "updatedReplicas": 1})

            async def one_left() -> bool:
                return len(await replicasets(client)) == 1

            async def describe() -> str:
                return str(sorted(await replicasets(client)))
            await ws.until(one_left, describe, "the old ReplicaSet deleted (revisionHistoryLimit 0)")
    ws.run(scenario)


def test_paused_deployment_does_not_roll_out_and_says_so() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=1, paused=True))

            def paused(obj: Obj | None) -> bool:
                conds = ((obj or {}).get("status") or {}).get("conditions") or []
                return any(c["type"] == "Progressing" and c["reason"] == "DeploymentPaused" for c in conds)
            await ws.object_until(client, DEPLOYMENTS, "ctl", paused, "Progressing DeploymentPaused")
            await ws.pods_stay(client, lambda p: not p, "no ReplicaSet, no pods while paused")
            await client.patch(DEPLOYMENTS, "ctl", {"spec": {"paused": False}}, namespace=NS)
            await ws.pods_until(client, lambda p: len(p) == 1, "the pod once resumed")
    ws.run(scenario)


# --- the rollout arithmetic (no server) -------------------------------------------------------------

def rolling_deployment(replicas: int, **rolling_update: Any) -> Obj:
    body = deployment(replicas=replicas, strategy={"type": "RollingUpdate", "rollingUpdate": rolling_update})
    body["metadata"].update(uid="u", generation=1)
    return body


def rs(name: str, replicas: int, available: int, created: str = "2026-01-01T00:00:00Z", revision: int = 1) -> Obj:
    return {"metadata": {"name": name, "creationTimestamp": created, "generation": 1,
                         "annotations": {du.REVISION: str(revision)}},
            "spec": {"replicas": replicas}, "status": {"replicas": replicas, "availableReplicas": available,
                                                       "observedGeneration": 1}}


def test_fenceposts_round_surge_up_and_unavailable_down_and_never_both_zero() -> None:
    assert du.fenceposts(rolling_deployment(3, maxSurge="25%", maxUnavailable="25%")) == (1, 0)
    assert du.fenceposts(rolling_deployment(3, maxSurge=0, maxUnavailable="10%")) == (0, 1)
    assert du.fenceposts(rolling_deployment(10, maxSurge="50%", maxUnavailable=3)) == (5, 3)


def test_new_replicaset_grows_within_max_surge() -> None:
    """NewRSNewReplicas: replicas + maxSurge pods in all, never more than replicas in the new one."""
    d = rolling_deployment(4, maxSurge=1, maxUnavailable=1)
    old = rs("old", 4, 4)
    new = rs("new", 0, 0, created="2026-01-02T00:00:00Z")
    assert rolling.reconcile_new(d, [old, new], new) == 1
    assert rolling.reconcile_new(d, [rs("old", 3, 3), rs("new", 1, 0)], rs("new", 1, 0)) == 2
    assert rolling.reconcile_new(d, [rs("old", 0, 0), rs("new", 5, 5)], rs("new", 5, 5)) == 4
    assert rolling.reconcile_new(d, [old, rs("new", 1, 0)], rs("new", 1, 0)) is None


def test_old_replicasets_shrink_unhealthy_first_then_within_max_unavailable() -> None:
    d = rolling_deployment(4, maxSurge=1, maxUnavailable=1)
    new = rs("new", 1, 0, created="2026-01-02T00:00:00Z")
    # 5 pods, 3 must stay available, the new one is not: one old pod may go
    assert rolling.reconcile_old(d, [rs("old", 4, 4), new], [rs("old", 4, 4)], new) == {"old": 3}
    # with maxUnavailable 0 nothing goes until the new pod is available
    strict = rolling_deployment(4, maxSurge=1, maxUnavailable=0)
    assert rolling.reconcile_old(strict, [rs("old", 4, 4), new], [rs("old", 4, 4)], new) == {}
    # unavailable old pods go first, as far as replicas + maxSurge - minAvailable lets (5 - 4 = 1), even though
    # only 3 pods are available: removing an unavailable pod costs no availability
    sick = rs("old", 4, 2)
    assert rolling.reconcile_old(strict, [sick, rs("new", 1, 1)], [sick], rs("new", 1, 1)) == {"old": 3}


def test_find_new_ignores_the_hash_label_and_revisions_count_up() -> None:
    d = deployment()
    d["metadata"]["uid"] = "u"
    body = du.new_replicaset(d, "abc", du.next_revision([rs("a", 0, 0, revision=4)]), 2)
    assert body["metadata"]["name"] == "ctl-abc" and body["metadata"]["annotations"][du.REVISION] == "5"
    assert body["spec"]["template"]["metadata"]["labels"] == {"app": "ctl", "pod-template-hash": "abc"}
    new, old = du.find_new(d, [rs("x", 0, 0), body])
    assert new is body and [o["metadata"]["name"] for o in old] == ["x"]
    taken_back = du.synced_annotations(d, {"metadata": {"annotations": {du.REVISION: "1"}}}, 3)
    assert (taken_back[du.REVISION], taken_back[du.REVISION_HISTORY]) == ("3", "1")


def test_cleanup_keeps_revision_history_limit_old_replicasets_at_zero() -> None:
    d = deployment(revisionHistoryLimit=1)
    old = [rs("r1", 0, 0, revision=1), rs("r2", 0, 0, revision=2), rs("r3", 1, 1, revision=3)]
    assert [r["metadata"]["name"] for r in du.cleanable(d, old)] == ["r1", "r2"]
    assert du.cleanable(deployment(revisionHistoryLimit=1), [rs("r1", 1, 1), rs("r2", 0, 0, revision=2)]) == []


def test_a_budget_expects_the_deployments_replicas_not_its_replicasets_sum() -> None:
    """The disruption controller's getPodDeployment: mid-rollout (old ReplicaSet 2, new 1) a budget over the
    Deployment's pods expects 2 pods, the Deployment's scale, not 3."""
    from lwsconf.sim.controllers.lifecycle import disruption

    class Disruption(disruption.DisruptionController):
        async def wait_synced(self, timeout: float | None = None) -> None:
            for informer in (self.pdbs, self.pods):
                await informer.wait_synced(timeout)

    async def scenario() -> None:
        async with ws.sim_with(*controllers(), Disruption) as client:
            strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
            await client.create(DEPLOYMENTS, deployment(replicas=2, strategy=strategy))
            await ready_all(client, await ws.pods_until(client, lambda p: len(p) == 2, "2 pods"))
            await status_until(client, {"availableReplicas": 2})
            await client.patch(DEPLOYMENTS, "ctl", NEW_IMAGE, namespace=NS, patch_type="strategic")
            await ws.pods_until(client, lambda p: len(p) == 3, "the surge pod")
            assert len(await replicasets(client)) == 2
            pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "ctl", "namespace": NS},
                   "spec": {"minAvailable": "100%", "selector": {"matchLabels": {"app": "ctl"}}}}
            await client.create(disruption.PDBS, pdb)

            def counted(obj: Obj | None) -> bool:
                return "observedGeneration" in ((obj or {}).get("status") or {})  # the controller wrote it
            found = await ws.object_until(client, disruption.PDBS, "ctl", counted, "the budget's status")
            assert found is not None
            assert (found["status"]["expectedPods"], found["status"]["desiredHealthy"]) == (2, 2), found["status"]
    ws.run(scenario)


def collector(client: kc.Client) -> Any:
    """The garbage collector with the `wait_synced` the scaffolding expects (its informers are discovered)."""
    from lwsconf.sim.controllers.lifecycle import garbage_collector as gc_mod

    class Collector(gc_mod.GarbageCollector):
        async def wait_synced(self, timeout: float | None = None) -> None:
            await self.informers.wait_synced(timeout=timeout)
    return Collector(client, rediscover_interval=0.2)


def test_deleting_a_deployment_collects_its_replicasets_then_their_pods_or_orphans_them() -> None:
    """Background: the ReplicaSet goes with the Deployment, its pods with it; Orphan: the ReplicaSet stays,
    without an owner, and its pods keep the ReplicaSet as theirs (kubectl delete --cascade=orphan)."""
    async def scenario() -> None:
        async with ws.sim_with(*controllers(), collector) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=2))
            await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await client.delete(DEPLOYMENTS, "ctl", namespace=NS, propagation_policy="Background")
            await ws.pods_until(client, lambda p: not p, "pods collected after their ReplicaSet")
            assert await replicasets(client) == {}
            await client.create(DEPLOYMENTS, deployment(replicas=2))
            pods = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods again")
            await client.delete(DEPLOYMENTS, "ctl", namespace=NS, propagation_policy="Orphan")

            async def orphaned() -> bool:
                rss = await replicasets(client)
                return len(rss) == 1 and not next(iter(rss.values()))["metadata"].get("ownerReferences") and \
                    await ws.get_or_none(client, DEPLOYMENTS, "ctl") is None

            async def describe() -> str:
                return str({n: r["metadata"].get("ownerReferences") for n, r in (await replicasets(client)).items()})
            await ws.until(orphaned, describe, "the ReplicaSet orphaned and the Deployment gone")
            await ws.pods_stay(client, lambda p: set(p) == set(pods) and all(
                [r["kind"] for r in q["metadata"]["ownerReferences"]] == ["ReplicaSet"] for q in p.values()),
                "the pods kept, still the ReplicaSet's")
    ws.run(scenario)


def test_no_progress_for_progress_deadline_seconds_is_progress_deadline_exceeded() -> None:
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=1, progressDeadlineSeconds=1))
            await ws.pods_until(client, lambda p: len(p) == 1, "1 pod, never ready")

            def exceeded(obj: Obj | None) -> bool:
                conds = ((obj or {}).get("status") or {}).get("conditions") or []
                return any(c["type"] == "Progressing" and c["reason"] == "ProgressDeadlineExceeded" for c in conds)
            found = await ws.object_until(client, DEPLOYMENTS, "ctl", exceeded, "ProgressDeadlineExceeded")
            assert found is not None
            cond = condition(found, "Progressing")
            name = next(iter(await replicasets(client)))
            assert (cond["status"], cond["message"]) == ("False", f'ReplicaSet "{name}" has timed out progressing.')
    ws.run(scenario)


def test_the_revision_annotation_is_written_through_status_and_owned_by_the_controllers_status_entry() -> None:
    """kube-controller-manager sets `deployment.kubernetes.io/revision` with UpdateStatus (sync.go getNewReplicaSet)
    and the Deployment's status strategy keeps annotations, so managedFields has one controller entry, on the status
    subresource, owning the annotation and the status (seen on kube-apiserver 1.37.2 by the held-out corpus)."""
    async def scenario() -> None:
        async with ws.sim_with(*controllers()) as client:
            await client.create(DEPLOYMENTS, deployment(replicas=1))

            def revised(obj: Obj | None) -> bool:
                return ((obj or {}).get("metadata", {}).get("annotations") or {}).get(du.REVISION) == "1"
            found = await ws.object_until(client, DEPLOYMENTS, "ctl", revised, "revision 1")
            assert found is not None
            controller = [m for m in found["metadata"]["managedFields"] if m["manager"] != "test"]
            assert [m.get("subresource") for m in controller] == ["status"], found["metadata"]["managedFields"]
            annotations = controller[0]["fieldsV1"]["f:metadata"]["f:annotations"]
            assert f"f:{du.REVISION}" in annotations
            # no pod is ready here: the omitempty counters at 0 are absent, and not owned (kube-apiserver's encoding)
            settled = await status_until(client, {"replicas": 1, "unavailableReplicas": 1})
            assert "availableReplicas" not in settled["status"] and "readyReplicas" not in settled["status"]
            [entry] = [m for m in settled["metadata"]["managedFields"] if m["manager"] != "test"]
            assert "f:availableReplicas" not in entry["fieldsV1"]["f:status"]
    ws.run(scenario)
