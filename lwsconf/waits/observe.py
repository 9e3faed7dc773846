"""What a failed wait prints: the observed state of a LeaderWorkerSet's namespace, as short tables.

Used by every wait's `describe`, so a timeout reads like `kubectl get lws,sts,pods` plus recent events
instead of "timed out". Reads through the official client only.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from lwsconf import jsoncodec, lwsapi, workloads

NAME_LABEL = lwsapi.NAME
REV_LABEL = lwsapi.TEMPLATE_REVISION_HASH


def _rows(header: list[str], rows: list[list[str]]) -> str:
    widths = ([max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)] if rows
              else [len(h) for h in header])
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=False)) for row in [header, *rows]]
    return "\n".join("  " + line.rstrip() for line in lines)


def raw(response: Any) -> dict[str, Any]:
    """Decode a `_preload_content=False` response: dicts, not typed models (faster, and no Optional noise)."""
    return jsoncodec.loads(response.data)  # type: ignore[no-any-return]


def pods(api: client.ApiClient, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
    items = raw(client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=label_selector,
                                                          _preload_content=False))["items"]
    return items  # type: ignore[no-any-return]


def statefulsets(api: client.ApiClient, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
    items = raw(client.AppsV1Api(api).list_namespaced_stateful_set(namespace, label_selector=label_selector,
                                                                   _preload_content=False))["items"]
    return items  # type: ignore[no-any-return]


def get_lws(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return raw(client.CustomObjectsApi(api).get_namespaced_custom_object(
        workloads.GROUP, workloads.VERSION, namespace, workloads.PLURAL, name, _preload_content=False))


def describe_lws(api: client.ApiClient, namespace: str, name: str) -> str:
    try:
        lws = get_lws(api, namespace, name)
    except client.ApiException as exc:
        return f"LeaderWorkerSet {namespace}/{name}: {exc.status} {exc.reason}"
    status = lws.get("status") or {}
    conds = ", ".join(f"{c['type']}={c['status']}" for c in status.get("conditions") or []) or "none"
    return (f"LeaderWorkerSet {namespace}/{name}: generation {lws['metadata'].get('generation')}, "
            f"spec.replicas {lws['spec'].get('replicas')}, status replicas={status.get('replicas')} "
            f"ready={status.get('readyReplicas')} updated={status.get('updatedReplicas')} "
            f"observedGeneration={status.get('observedGeneration')}; conditions: {conds}")


def pod_ready(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def pod_row(pod: dict[str, Any]) -> list[str]:
    """NAME, PHASE, READY, RESTARTS, NODE, REVISION, UID of one pod for a timed-out wait's state dump.

    RESTARTS adds init containers' restarts (native sidecars among them) to the app containers', as kubectl's
    column does: a sidecar's restart recreates an LWS group just as an app container's does (contract 4.2).
    """
    meta, status = pod["metadata"], pod.get("status") or {}
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), "-")
    restarts = sum(cs.get("restartCount", 0) for key in ("initContainerStatuses", "containerStatuses")
                   for cs in status.get(key) or [])
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "")
    return [meta["name"], phase, str(ready), str(restarts), (pod.get("spec") or {}).get("nodeName", ""),
            (meta.get("labels") or {}).get(REV_LABEL, ""), meta.get("uid", "")[:8]]


IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName")
"""A container's waiting reasons when its node has not got its image (the real kubelet's words)."""


def image_pull_hints(pods_: list[dict[str, Any]]) -> list[str]:
    """One line per container stuck on its image, saying which image and what to do: lwsconf's clusters reach no
    registry, so a workload's image must be one the nodes already hold."""
    hints = []
    for pod in pods_:
        status = pod.get("status") or {}
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in IMAGE_PULL_REASONS:
                hints.append(f"{pod['metadata']['name']}/{cs.get('name')}: {waiting['reason']} for image "
                             f"{cs.get('image')!r}: no registry is reachable from lwsconf's clusters, so the nodes "
                             "must hold it (real nodes hold the images `lwsconf nodes build` makes: pause, CoreDNS, "
                             "python:3.12-slim, see lwsconf/realnodes/catalog.py; on kind, `kind load` it)")
    return hints


def describe_namespace(api: client.ApiClient, namespace: str, lws_name: str | None = None) -> str:
    """LWS status, StatefulSets, pods and the latest events of a namespace."""
    parts = [describe_lws(api, namespace, lws_name)] if lws_name else []
    sts_rows = []
    for s in statefulsets(api, namespace):
        spec, status = s.get("spec") or {}, s.get("status") or {}
        partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition", "")
        sts_rows.append([s["metadata"]["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas')}",
                         str(partition), (s["metadata"].get("labels") or {}).get(REV_LABEL, "")])
    parts.append("StatefulSets:\n" + _rows(["NAME", "READY", "PARTITION", "REVISION"], sts_rows))
    listed = pods(api, namespace)
    pod_rows = [pod_row(p) for p in listed]
    parts.append("Pods:\n" + _rows(["NAME", "PHASE", "READY", "RESTARTS", "NODE", "REVISION", "UID"], pod_rows))
    hints = image_pull_hints(listed)
    if hints:
        parts.append("Images the nodes have not got:\n" + "\n".join(hints))
    events = raw(client.CoreV1Api(api).list_namespaced_event(namespace, _preload_content=False))["items"]
    events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime")
                                  or e["metadata"].get("creationTimestamp")))
    ev_rows = [[e.get("type", ""), e.get("reason", ""),
                f"{(e.get('involvedObject') or {}).get('kind')}/{(e.get('involvedObject') or {}).get('name')}",
                (e.get("message") or "")[:100]] for e in events[-12:]]
    parts.append("Recent events:\n" + _rows(["TYPE", "REASON", "OBJECT", "MESSAGE"], ev_rows))
    return "\n".join(parts)
