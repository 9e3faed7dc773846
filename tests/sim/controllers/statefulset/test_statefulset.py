"""The StatefulSet controller against the real in-process API server.

Each test starts an API server and a `StatefulSetController`, creates a StatefulSet and plays the
kubelet by patching pod status where readiness matters (`workload_sim.make_ready`). The behaviours
are the ones LeaderWorkerSet relies on (docs/lws-contract.md sections 2 and 4.4, traps T28 and T32).
"""

from __future__ import annotations

from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.lifecycle import garbage_collector as gc_mod
from lwsconf.sim.controllers.statefulset import statefulset as sts_mod
from tests.sim.controllers import workload_sim as ws

Obj = dict[str, Any]
STS = kc.STATEFULSETS
REVISIONS = kc.GVR("apps", "v1", "controllerrevisions")
PVCS = kc.GVR("", "v1", "persistentvolumeclaims")
NS = ws.NS


def controller(client: kc.Client) -> sts_mod.StatefulSetController:
    return sts_mod.StatefulSetController(client)


class Collector:
    """The garbage collector with the `wait_synced` the scaffolding expects."""

    def __init__(self, client: kc.Client) -> None:
        self.gc = gc_mod.GarbageCollector(client, rediscover_interval=0.2)

    async def run(self, stop: Any) -> None:
        await self.gc.run(stop)

    async def wait_synced(self, timeout: float | None = None) -> None:
        await self.gc.informers.wait_synced(timeout=timeout)


def statefulset(name: str = "web", *, replicas: int = 3, policy: str = "Parallel", image: str = "img:1",
                **spec: Any) -> Obj:
    labels = {"app": name}
    body: Obj = {"replicas": replicas, "serviceName": f"{name}-svc", "podManagementPolicy": policy,
                 "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": {**labels, "tier": "x"}, "annotations": {"note": "kept"}},
                              "spec": {"containers": [ws.container(image)]}}}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": NS},
            "spec": body}


def names(found: dict[str, Obj]) -> set[str]:
    return set(found)


def live(found: dict[str, Obj]) -> dict[str, Obj]:
    return {n: p for n, p in found.items() if not p["metadata"].get("deletionTimestamp")}


def revision_of(pod: Obj) -> str:
    return str(pod["metadata"]["labels"]["controller-revision-hash"])


async def set_image(client: kc.Client, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}}
    await client.patch(STS, name, patch, namespace=NS, patch_type="strategic")


async def status_until(client: kc.Client, name: str, want: dict[str, Any], *, timeout: float = 10.0) -> Obj:
    def matches(obj: Obj | None) -> bool:
        # a counter at 0 is absent (StatefulSetStatus fields are omitempty, as kube-apiserver answers them)
        status = (obj or {}).get("status") or {}
        return all(status.get(k, 0 if isinstance(v, int) else None) == v for k, v in want.items())
    found = await ws.object_until(client, STS, name, matches, f"status {want}", timeout=timeout)
    assert found is not None
    return found


# --- creation ---------------------------------------------------------------------------------------

def test_parallel_creates_all_pods_at_once_with_identity_labels_and_owner() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            sts = await client.create(STS, statefulset(replicas=3))
            found = await ws.pods_until(client, lambda p: names(p) == {"web-0", "web-1", "web-2"}, "3 pods")
            for ordinal in range(3):
                pod = found[f"web-{ordinal}"]
                labels, spec = pod["metadata"]["labels"], pod["spec"]
                assert labels["app"] == "web" and labels["tier"] == "x"
                assert labels["statefulset.kubernetes.io/pod-name"] == f"web-{ordinal}"
                assert labels["apps.kubernetes.io/pod-index"] == str(ordinal)
                assert labels["controller-revision-hash"].startswith("web-")
                assert pod["metadata"]["annotations"]["note"] == "kept"
                assert (spec["hostname"], spec["subdomain"]) == (f"web-{ordinal}", "web-svc")
                [ref] = pod["metadata"]["ownerReferences"]
                assert ref == {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                               "uid": sts["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
            await status_until(client, "web", {"replicas": 3, "readyReplicas": 0, "observedGeneration": 1})
    ws.run(scenario)


def test_a_set_larger_than_the_sim_can_run_is_left_alone_with_a_warning_until_scaled_down() -> None:
    """1000001 replicas (what upstream LWS v0.9.0 admits, V3) must not stall the shared event loop: no pod,
    one Warning, the API server still answers at once; scaled back down, the set is served as usual."""
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset(replicas=1_000_001))
            [message] = await ws.events_until(client, "web", sts_mod.TOO_MANY_REPLICAS, 1)
            assert message.startswith(f"spec.replicas 1000001 is more than the {sts_mod.MAX_SIMULATED_REPLICAS} "), \
                message
            await ws.pods_stay(client, lambda p: not p, "no pod for a set the sim declines")
            await client.patch(STS, "web", {"spec": {"replicas": 2}}, namespace=NS, subresource="scale")
            await ws.pods_until(client, lambda p: names(p) == {"web-0", "web-1"}, "2 pods once scaled down")
            await status_until(client, "web", {"replicas": 2, "observedGeneration": 2})
    ws.run(scenario, timeout=30)


def test_ordered_ready_creates_the_next_pod_only_after_the_previous_is_running_and_ready() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset(replicas=3, policy="OrderedReady"))
            await ws.pods_until(client, lambda p: names(p) == {"web-0"}, "only web-0")
            await ws.pods_stay(client, lambda p: names(p) == {"web-0"}, "web-1 waiting for web-0 to be ready")
            await ws.set_pod_status(client, "web-0", ready=False)
            await ws.pods_stay(client, lambda p: names(p) == {"web-0"}, "Running but not Ready still blocks")
            await ws.make_ready(client, "web-0")
            await ws.pods_until(client, lambda p: names(p) == {"web-0", "web-1"}, "web-1 after web-0 is ready")
            await ws.make_ready(client, "web-1")
            await ws.pods_until(client, lambda p: names(p) == {"web-0", "web-1", "web-2"}, "web-2 last")
    ws.run(scenario)


def test_ordinals_start_shifts_pod_names_as_for_lws_worker_sets() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset("grp-0", replicas=3, ordinals={"start": 1}))
            found = await ws.pods_until(client, lambda p: names(p) == {"grp-0-1", "grp-0-2", "grp-0-3"},
                                        "ordinals 1..3")
            assert found["grp-0-1"]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
            await ws.make_ready(client, "grp-0-1", "grp-0-2", "grp-0-3")
            sts = await status_until(client, "grp-0", {"readyReplicas": 3, "availableReplicas": 3})
            assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"]
    ws.run(scenario)


def test_minready_seconds_delays_available_replicas() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            # minReadySeconds 5, not 1: the first status with readyReplicas 1 must be seen inside the window, and a
            # fresh-clone .ci/run at load ~3 once saw it only after 1 s had passed (availableReplicas already 1)
            await client.create(STS, statefulset(replicas=1, minReadySeconds=5))
            await ws.pods_until(client, lambda p: names(p) == {"web-0"}, "web-0")
            await ws.make_ready(client, "web-0")
            sts = await status_until(client, "web", {"readyReplicas": 1})
            assert sts["status"]["availableReplicas"] == 0, sts["status"]
            await status_until(client, "web", {"availableReplicas": 1}, timeout=15)
    ws.run(scenario)


# --- scaling and recreation -------------------------------------------------------------------------

def test_scale_down_through_the_scale_subresource_removes_the_highest_ordinals() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset(replicas=4))
            await ws.pods_until(client, lambda p: len(p) == 4, "4 pods")
            await client.patch(STS, "web", {"spec": {"replicas": 2}}, namespace=NS, subresource="scale")
            await ws.pods_until(client, lambda p: names(p) == {"web-0", "web-1"}, "web-3 and web-2 gone")
            await status_until(client, "web", {"replicas": 2, "observedGeneration": 2})
    ws.run(scenario)


def test_ordered_ready_scale_down_waits_for_healthy_pods_then_deletes_highest_first() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset(replicas=3, policy="OrderedReady"))
            for ordinal in range(3):
                await ws.pods_until(client, lambda p, o=ordinal: f"web-{o}" in p, f"web-{ordinal}")
                await ws.make_ready(client, f"web-{ordinal}")
            await status_until(client, "web", {"readyReplicas": 3})
            await ws.set_pod_status(client, "web-0", ready=False)
            await client.patch(STS, "web", {"spec": {"replicas": 1}}, namespace=NS)
            await ws.pods_stay(client, lambda p: len(p) == 3, "no deletion while web-0 is unready")
            await ws.make_ready(client, "web-0")
            await ws.pods_until(client, lambda p: names(p) == {"web-0"}, "web-2 and web-1 deleted")
            deletions = await ws.events_until(client, "web", "SuccessfulDelete", 2)
            assert deletions == ["delete Pod web-2 in StatefulSet web successful",
                                 "delete Pod web-1 in StatefulSet web successful"], deletions
    ws.run(scenario)


def test_deleted_and_failed_pods_are_recreated_with_new_uids() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset(replicas=2))
            first = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await client.delete(ws.PODS, "web-0", namespace=NS)
            await ws.set_pod_status(client, "web-1", phase="Failed", ready=False)
            uids = {n: p["metadata"]["uid"] for n, p in first.items()}
            await ws.pods_until(client, lambda p: len(p) == 2 and all(
                p[n]["metadata"]["uid"] != uids[n] and p[n]["status"]["phase"] == "Pending" for n in uids),
                "web-0 and web-1 recreated")
            creations = await ws.events_until(client, "web", "SuccessfulCreate", 4)
            assert "create Pod web-0 in StatefulSet web successful" in creations, creations
            assert "delete Pod web-1 in StatefulSet web successful" in await ws.events_until(
                client, "web", "SuccessfulDelete", 1)
    ws.run(scenario)


# --- rolling updates --------------------------------------------------------------------------------

async def rolled(client: kc.Client, *, replicas: int, **rolling: Any) -> tuple[str, str]:
    """Create web with `replicas` ready pods, change its image; returns (old, new) revision names."""
    sts = statefulset(replicas=replicas, updateStrategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    await client.create(STS, sts)
    await ws.pods_until(client, lambda p: len(p) == replicas, f"{replicas} pods")
    await ws.make_ready(client, *(f"web-{i}" for i in range(replicas)))
    old = (await status_until(client, "web", {"readyReplicas": replicas}))["status"]["updateRevision"]
    await set_image(client, "web", "img:2")
    new = await ws.object_until(client, STS, "web",
                                lambda o: (o or {}).get("status", {}).get("updateRevision") not in (None, old),
                                "a new updateRevision")
    assert new is not None
    return old, new["status"]["updateRevision"]


def test_rolling_update_with_partition_replaces_only_upper_ordinals_highest_first() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            old, new = await rolled(client, replicas=4, partition=2)
            found = await ws.pods_until(client, lambda p: revision_of(p.get("web-3", {"metadata": {"labels": {
                "controller-revision-hash": old}}})) == new, "web-3 on the new revision")
            assert revision_of(found["web-2"]) == old, "web-2 must wait until web-3 is ready"
            assert found["web-3"]["spec"]["containers"][0]["image"] == "img:2"
            await ws.pods_stay(client, lambda p: revision_of(p["web-2"]) == old, "web-2 untouched")
            await ws.make_ready(client, "web-3")
            await ws.pods_until(client, lambda p: "web-2" in p and revision_of(p["web-2"]) == new, "web-2 next")
            await ws.make_ready(client, "web-2")
            sts = await status_until(client, "web", {"updatedReplicas": 2, "readyReplicas": 4})
            found = await ws.pods(client)
            assert [revision_of(found[f"web-{i}"]) for i in range(4)] == [old, old, new, new]
            assert sts["status"]["currentRevision"] == old and sts["status"]["currentReplicas"] == 2
            assert await ws.events_until(client, "web", "SuccessfulDelete", 2) == [
                "delete Pod web-3 in StatefulSet web successful", "delete Pod web-2 in StatefulSet web successful"]
    ws.run(scenario)


def test_rolling_update_with_max_unavailable_two_replaces_two_pods_at_once() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            old, new = await rolled(client, replicas=4, maxUnavailable=2)
            found = await ws.pods_until(client, lambda p: all(
                n in p and revision_of(p[n]) == new for n in ("web-3", "web-2")), "web-3 and web-2 replaced")
            assert revision_of(found["web-1"]) == old and revision_of(found["web-0"]) == old
            await ws.pods_stay(client, lambda p: revision_of(p["web-1"]) == old, "two unavailable pods block more")
            await ws.make_ready(client, "web-3", "web-2")
            await ws.pods_until(client, lambda p: len(live(p)) == 4 and all(
                revision_of(x) == new for x in p.values()), "web-1 and web-0 replaced together")
            await ws.make_ready(client, "web-1", "web-0")
            sts = await status_until(client, "web", {"updatedReplicas": 4, "readyReplicas": 4,
                                                     "currentReplicas": 4, "availableReplicas": 4})
            assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"] == new
    ws.run(scenario)


def test_pod_below_the_partition_deleted_mid_update_comes_back_on_the_current_revision() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            old, new = await rolled(client, replicas=3, partition=2)
            await ws.pods_until(client, lambda p: "web-2" in p and revision_of(p["web-2"]) == new, "web-2 updated")
            before = (await ws.pods(client))["web-0"]["metadata"]["uid"]
            await client.delete(ws.PODS, "web-0", namespace=NS)
            found = await ws.pods_until(client, lambda p: "web-0" in p and p["web-0"]["metadata"]["uid"] != before,
                                        "web-0 recreated")
            assert revision_of(found["web-0"]) == old, ws.pod_table(found)
            assert found["web-0"]["spec"]["containers"][0]["image"] == "img:1"
    ws.run(scenario)


def test_on_delete_replaces_a_pod_only_when_it_is_deleted() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset(replicas=2, updateStrategy={"type": "OnDelete"}))
            await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await ws.make_ready(client, "web-0", "web-1")
            old = (await status_until(client, "web", {"readyReplicas": 2}))["status"]["updateRevision"]
            await set_image(client, "web", "img:2")
            sts = await ws.object_until(client, STS, "web", lambda o: (o or {})["status"]["updateRevision"] != old,
                                        "new updateRevision")
            new = (sts or {})["status"]["updateRevision"]
            await ws.pods_stay(client, lambda p: all(revision_of(x) == old for x in p.values()), "no replacement")
            await client.delete(ws.PODS, "web-1", namespace=NS)
            found = await ws.pods_until(client, lambda p: "web-1" in p and revision_of(p["web-1"]) == new,
                                        "web-1 recreated from the update revision")
            assert revision_of(found["web-0"]) == old
    ws.run(scenario)


def test_status_counts_converge_and_current_revision_follows_a_finished_update() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            old, new = await rolled(client, replicas=2)
            for name in ("web-1", "web-0"):
                await ws.pods_until(client, lambda p, n=name: n in p and revision_of(p[n]) == new, f"{name} updated")
                await ws.make_ready(client, name)
            sts = await status_until(client, "web", {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2,
                                                     "updatedReplicas": 2, "currentReplicas": 2})
            status = sts["status"]
            assert status["currentRevision"] == status["updateRevision"] == new != old
            assert status["observedGeneration"] == sts["metadata"]["generation"] == 2
            assert status["collisionCount"] == 0
    ws.run(scenario)


# --- revisions and claims ---------------------------------------------------------------------------

def test_controller_revisions_are_owned_numbered_and_trimmed_to_the_history_limit() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            sts = await client.create(STS, statefulset(replicas=1, revisionHistoryLimit=1))
            first = (await status_until(client, "web", {"replicas": 1}))["status"]["updateRevision"]
            rev = await client.get(REVISIONS, first, namespace=NS)
            hash_ = rev["metadata"]["labels"]["controller.kubernetes.io/hash"]  # pkg/controller/history, 1.37.2
            assert first == f"web-{hash_}" and rev["revision"] == 1
            assert rev["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
            assert rev["data"]["spec"]["template"]["$patch"] == "replace"
            await ws.make_ready(client, "web-0")
            for image in ("img:2", "img:3"):
                await set_image(client, "web", image)
                await ws.pods_until(client, lambda p, i=image: p.get("web-0", {}).get("spec", {}).get(
                    "containers", [{}])[0].get("image") == i, f"web-0 on {image}")
                await ws.make_ready(client, "web-0")
            await status_until(client, "web", {"readyReplicas": 1, "updatedReplicas": 1})
            await ws.until(lambda: revision_count(client, 2), lambda: revision_names(client),
                           "history trimmed to current + 1 old revision")
            numbers = sorted(r["revision"] for r in (await client.list(REVISIONS, namespace=NS))["items"])
            assert numbers == [2, 3]
    ws.run(scenario)


async def revision_names(client: kc.Client) -> str:
    return str(sorted((r["metadata"]["name"], r["revision"])
                      for r in (await client.list(REVISIONS, namespace=NS))["items"]))


async def revision_count(client: kc.Client, count: int) -> bool:
    return len((await client.list(REVISIONS, namespace=NS))["items"]) == count


def claim_template(name: str = "data") -> Obj:
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def test_volume_claim_templates_create_bound_claims_and_pod_volumes() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            sts = await client.create(STS, statefulset(replicas=2, volumeClaimTemplates=[claim_template()],
                                                       persistentVolumeClaimRetentionPolicy={
                                                           "whenDeleted": "Delete", "whenScaled": "Retain"}))
            found = await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            volumes = {v["name"]: v for v in found["web-1"]["spec"]["volumes"]}
            assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "data-web-1"
            for name in ("data-web-0", "data-web-1"):
                claim = await ws.object_until(client, PVCS, name, lambda c: (c or {}).get("status", {}).get(
                    "phase") == "Bound", "Bound")
                assert claim is not None
                assert claim["metadata"]["labels"] == {"app": "web"}
                assert [r["uid"] for r in claim["metadata"]["ownerReferences"]] == [sts["metadata"]["uid"]]
                assert claim["status"]["capacity"] == {"storage": "1Gi"}
    ws.run(scenario)


def test_when_scaled_delete_removes_claims_of_scaled_down_ordinals() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller, Collector) as client:
            await client.create(STS, statefulset(replicas=2, volumeClaimTemplates=[claim_template()],
                                                 persistentVolumeClaimRetentionPolicy={
                                                     "whenDeleted": "Retain", "whenScaled": "Delete"}))
            await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            claim = await ws.object_until(client, PVCS, "data-web-1", lambda c: c is not None, "created")
            assert not (claim or {})["metadata"].get("ownerReferences"), "Retain on delete: no set owner"
            await client.patch(STS, "web", {"spec": {"replicas": 1}}, namespace=NS)
            await ws.object_until(client, PVCS, "data-web-1", lambda c: c is None, "deleted with its pod")
            assert await ws.get_or_none(client, PVCS, "data-web-0") is not None
    ws.run(scenario)


def test_rolling_back_to_an_earlier_template_reuses_its_revision_with_the_next_number() -> None:
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            await client.create(STS, statefulset(replicas=1))
            first = (await status_until(client, "web", {"replicas": 1}))["status"]["updateRevision"]
            await set_image(client, "web", "img:2")
            await ws.object_until(client, STS, "web", lambda o: (o or {})["status"]["updateRevision"] != first,
                                  "second revision")
            await set_image(client, "web", "img:1")
            await ws.object_until(client, STS, "web", lambda o: (o or {})["status"]["updateRevision"] == first,
                                  "back on the first revision's name")
            rev = await client.get(REVISIONS, first, namespace=NS)
            assert rev["revision"] == 3, await revision_names(client)
    ws.run(scenario)


def test_parallel_rollout_replaces_a_broken_old_pod_instead_of_stalling() -> None:
    """kubernetes#137409/#137666: an unready pod on the old revision must not block its own replacement."""
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            sts = statefulset(replicas=2, podManagementPolicy="Parallel",
                              updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
            await client.create(STS, sts)
            await ws.pods_until(client, lambda p: len(p) == 2, "2 pods")
            await ws.make_ready(client, "web-0")  # web-1 stays unready: a broken first revision
            old = (await status_until(client, "web", {"readyReplicas": 1}))["status"]["updateRevision"]
            await set_image(client, "web", "img:2")
            found = await ws.pods_until(client, lambda p: "web-1" in p and revision_of(p["web-1"]) not in (None, old),
                                        "the broken web-1 replaced on the new revision")
            assert revision_of(found["web-0"]) == old, "web-0 waits: one slot of maxUnavailable was used"
    ws.run(scenario)


def test_parallel_rollout_replaces_every_unavailable_old_pod_at_once_as_kubernetes_1_37_does() -> None:
    """stateful_set_control.go 1.37.2, updateStatefulSetAfterInvariantEstablished phase 1: with Parallel pod
    management every unavailable pod still on an old revision is deleted in one pass (no maxUnavailable slot
    each), so a set whose pods never became ready rolls all of them; seen on kube-controller-manager by the
    held-out fidelity corpus (the replay has no nodes, so no pod is ever ready), where the sim replaced one."""
    async def scenario() -> None:
        async with ws.sim_with(controller) as client:
            sts = statefulset(replicas=3, podManagementPolicy="Parallel",
                              updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
            await client.create(STS, sts)
            await ws.pods_until(client, lambda p: len(p) == 3, "3 pods")
            old = (await status_until(client, "web", {"replicas": 3}))["status"]["updateRevision"]
            await set_image(client, "web", "img:2")
            await ws.pods_until(client, lambda p: len(live(p)) == 3 and all(
                revision_of(x) not in (None, old) for x in live(p).values()), "all three on the new revision")
    ws.run(scenario)
