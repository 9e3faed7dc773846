"""Builders for the pure reconciler tests: LeaderWorkerSets, leader pods, worker StatefulSets as plain dicts.

Every builder returns a fresh dict shaped like what the API serves; keyword arguments say only what
differs from the defaults (`test-sample`, namespace `default`, R=2, S=2, as upstream's test wrapper).
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf.reconciler import labels, revision

Obj = dict[str, Any]
NS = "default"
NAME = "test-sample"


def container(name: str = "worker", image: str = "registry.example/app:1", **extra: Any) -> Obj:
    return {"name": name, "image": image, **extra}


def lws(*, name: str = NAME, replicas: int | None = 2, size: int | None = 2, leader: Obj | None = None,
        worker: Obj | None = None, annotations: dict[str, str] | None = None,
        obj_labels: dict[str, str] | None = None, generation: int = 1, **lwt: Any) -> Obj:
    """A LeaderWorkerSet; extra keywords go into `spec.leaderWorkerTemplate` (e.g. restartPolicy=...)."""
    template: Obj = {"workerTemplate": worker or {"spec": {"containers": [container()]}}}
    if size is not None:
        template["size"] = size
    if leader is not None:
        template["leaderTemplate"] = leader
    template.update(lwt)
    spec: Obj = {"leaderWorkerTemplate": template}
    if replicas is not None:
        spec["replicas"] = replicas
    meta: Obj = {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": generation}
    if annotations:
        meta["annotations"] = dict(annotations)
    if obj_labels:
        meta["labels"] = dict(obj_labels)
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta, "spec": spec}


def with_spec(obj: Obj, **fields: Any) -> Obj:
    """A copy with top-level spec fields replaced (replicas=..., rolloutStrategy=..., networkConfig=...)."""
    out = copy.deepcopy(obj)
    out["spec"].update(copy.deepcopy(fields))
    return out


def rollout_config(*, max_unavailable: Any = 1, max_surge: Any = 0, partition: int = 0) -> Obj:
    return {"type": "RollingUpdate", "rollingUpdateConfiguration": {
        "maxUnavailable": max_unavailable, "maxSurge": max_surge, "partition": partition}}


def leader_pod(lws_obj: Obj, index: int, *, key: str | None = None, phase: str = "Running", ready: bool = True,
               extra_labels: dict[str, str] | None = None, deleting: bool = False, node: str | None = None,
               annotations: dict[str, str] | None = None) -> Obj:
    """Leader pod `N-i` as the StatefulSet controller would create it (no webhook labels unless given)."""
    name = lws_obj["metadata"]["name"]
    pod_labels = {labels.NAME: name, labels.WORKER_INDEX: "0",
                  labels.TEMPLATE_REVISION_HASH: key if key is not None else revision.snapshot_key(lws_obj)}
    pod_labels.update(extra_labels or {})
    meta: Obj = {"name": f"{name}-{index}", "namespace": NS, "uid": f"uid-{name}-{index}", "labels": pod_labels,
                 "annotations": {labels.SIZE: str(lws_obj["spec"]["leaderWorkerTemplate"].get("size", 1)),
                                 **(annotations or {})}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: Obj = {"containers": [container()]}
    if node:
        spec["nodeName"] = node
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase, "conditions": conditions}}


def worker_sts(lws_obj: Obj, index: int, *, key: str | None = None, ready: bool = True,
               replicas: int | None = None) -> Obj:
    """Worker StatefulSet `N-i` with a status that is ready (available == replicas, revisions equal) or not."""
    name = lws_obj["metadata"]["name"]
    size = lws_obj["spec"]["leaderWorkerTemplate"].get("size", 1)
    count = size - 1 if replicas is None else replicas
    sts_labels = {labels.NAME: name, labels.GROUP_INDEX: str(index),
                  labels.TEMPLATE_REVISION_HASH: key if key is not None else revision.snapshot_key(lws_obj)}
    status = {"replicas": count, "availableReplicas": count if ready else 0,
              "currentRevision": "r1", "updateRevision": "r1" if ready else "r2"}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": f"{name}-{index}", "namespace": NS, "uid": f"uid-sts-{name}-{index}",
                         "labels": sts_labels},
            "spec": {"replicas": count}, "status": status}


def expand_env(env: list[Obj], pod: Obj) -> dict[str, str]:
    """What a container observes: the kubelet's env resolution (fieldRef, `$(VAR)` against earlier entries).

    Kubernetes semantics: entries are resolved in order; `$(NAME)` expands to a variable defined earlier in
    the list (later definitions of a name replace earlier ones), `$$` escapes, unknown references stay as
    written. Only the fieldRef paths the reconciler uses are supported.
    """
    resolved: dict[str, str] = {}
    for entry in env:
        if "valueFrom" in entry:
            resolved[entry["name"]] = _field(pod, entry["valueFrom"]["fieldRef"]["fieldPath"])
        else:
            resolved[entry["name"]] = expand(entry.get("value", ""), resolved)
    return resolved


def _field(pod: Obj, path: str) -> str:
    if path == "metadata.name":
        return str(pod["metadata"]["name"])
    prefix = "metadata.labels['"
    if path.startswith(prefix):
        return str(pod["metadata"].get("labels", {}).get(path[len(prefix):-2], ""))
    raise AssertionError(f"fieldRef {path} is not modelled by this test helper")


def expand(text: str, env: dict[str, str]) -> str:
    """Expand `$(VAR)` in `text` against `env` (as the kubelet does for later env values, command and args)."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and ")" in text[i:]:
            end = text.index(")", i)
            name = text[i + 2:end]
            out.append(env.get(name, text[i:end + 1]))
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
