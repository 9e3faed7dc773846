"""The vLLM example's LeaderWorkerSet shape with the probe program in place of vLLM, and LWS helpers.

Used by `test_e2e.py`. `vllm_shaped_lws()` follows upstream's `vllm_GPU_lws.yaml` (replicas 2, size 2,
RecreateGroupOnPodRestart, leader template labelled `role: leader`, 8 `nvidia.com/gpu` per pod, a
/dev/shm emptyDir of medium Memory, `$(LWS_GROUP_SIZE)` / `$(LWS_LEADER_ADDRESS)` in the command,
`HF_TOKEN: $HF_TOKEN`). The probe echoes its argv (`--tag`), so the expanded command is observable.
The leader's readiness probe is the probe's /readyz (the example uses a TCP probe), so a test can hold
a new leader unready.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from lwsconf import workloads
from lwsconf.waits import core, lws, observe
from tests import sim_e2e

Obj = dict[str, Any]
P = "leaderworkerset.sigs.k8s.io/"
NAME = "vllm"
PORT = workloads.PROBE_PORT
LEADER_TAG = "leader --ray_cluster_size=$(LWS_GROUP_SIZE)"
WORKER_TAG = "worker --ray_address=$(LWS_LEADER_ADDRESS)"


def _container(name: str, tag: str, *, leader: bool) -> Obj:
    probe = workloads.probe_container(name)
    container: Obj = {
        "name": name, "image": workloads.PROBE_IMAGE,
        "command": [*probe["command"], "--tag", tag],
        "env": [{"name": "HF_TOKEN", "value": "$HF_TOKEN"}, *probe["env"]],
        "resources": {"limits": {sim_e2e.GPU: "8", "memory": "8Gi"}, "requests": {"cpu": "1"}},
        "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}, *probe["volumeMounts"]],
    }
    if leader:
        container["ports"] = [{"containerPort": PORT}]
        container["readinessProbe"] = probe["readinessProbe"]
    return container


def _template(container: Obj, labels: dict[str, str] | None = None) -> Obj:
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "15Gi"}},
               {"name": "lwsconf-probe", "configMap": {"name": workloads.PROBE_CONFIGMAP}}]
    template: Obj = {"spec": {"containers": [container], "volumes": volumes, "terminationGracePeriodSeconds": 1}}
    if labels:
        template["metadata"] = {"labels": labels}
    return template


def vllm_shaped_lws(name: str = NAME) -> Obj:
    return {"apiVersion": workloads.API_VERSION, "kind": "LeaderWorkerSet", "metadata": {"name": name},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {
                "size": 2, "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _template(_container("vllm-leader", LEADER_TAG, leader=True), {"role": "leader"}),
                "workerTemplate": _template(_container("vllm-worker", WORKER_TAG, leader=False))}}}


def leader_service(name: str = NAME) -> Obj:
    """The example's `vllm-leader` ClusterIP Service: leaders only, through the `role: leader` label."""
    return {"metadata": {"name": f"{name}-leader"},
            "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": PORT, "targetPort": PORT}],
                     "selector": {f"{P}name": name, "role": "leader"}}}


def create_lws(sim: sim_e2e.Sim, namespace: str, body: Obj) -> None:
    client.CustomObjectsApi(sim.api).create_namespaced_custom_object(
        workloads.GROUP, workloads.VERSION, namespace, workloads.PLURAL, body)


def update_lws(sim: sim_e2e.Sim, namespace: str, change: Any) -> Obj:
    """Read the LWS, apply `change(obj) -> obj`, write it back (a template change is a rollout)."""
    live = observe.get_lws(sim.api, namespace, NAME)
    return observe.raw(client.CustomObjectsApi(sim.api).replace_namespaced_custom_object(
        workloads.GROUP, workloads.VERSION, namespace, workloads.PLURAL, NAME, change(live), _preload_content=False))


def available_vllm(sim: sim_e2e.Sim, namespace: str) -> dict[int, lws.Group]:
    create_lws(sim, namespace, vllm_shaped_lws())
    lws.lws_must_be_available(sim.api, namespace, NAME, sim.t)
    return lws.groups_must_be_ready(sim.api, namespace, NAME, replicas=2, size=2, t=sim.t)


def conditions(lws_obj: Obj) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (lws_obj.get("status") or {}).get("conditions") or []}


def lws_events(sim: sim_e2e.Sim, ns: str, reason: str) -> list[str]:
    """Notes of the events.k8s.io/v1 Events about the LWS with `reason` (waits for the first one)."""
    def check() -> list[str]:
        items = raw_get(client.EventsV1Api(sim.api).list_namespaced_event, ns)["items"]
        notes = [str(e.get("note")) for e in items
                 if e.get("reason") == reason and (e.get("regarding") or {}).get("name") == NAME]
        if not notes:
            raise core.NotYet(f"no {reason} event about LeaderWorkerSet {NAME}")
        return notes
    return core.wait_until(check, what=f"a {reason} event", timeout=sim.t.create, poll=sim.t.poll_interval,
                           describe=lambda: observe.describe_namespace(sim.api, ns, NAME))


def raw_get(call: Any, *args: Any) -> Obj:
    return observe.raw(call(*args, _preload_content=False))


def controller_ref(obj: Obj) -> Obj:
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
    assert len(refs) == 1, f"{obj['metadata']['name']}: controller references {refs}"
    return refs[0]


def lws_revisions(sim: sim_e2e.Sim, ns: str) -> list[Obj]:
    """The LWS's own ControllerRevisions (the StatefulSet controller keeps revisions of each StatefulSet too)."""
    items = raw_get(client.AppsV1Api(sim.api).list_namespaced_controller_revision, ns)["items"]
    return [r for r in items
            if any(o.get("kind") == "LeaderWorkerSet" for o in r["metadata"].get("ownerReferences") or [])]
