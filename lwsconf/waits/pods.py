"""Named waits on individual pods: reachable through the proxy, restarted in place, gone.

Same shape as `waits.lws`: poll through the official client with a named timeout, fail with the
namespace's observed state (LWS status, StatefulSets, pods with phase/ready/restarts, events).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from lwsconf import workloads
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, observe, proxy


def get_pod(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return observe.raw(client.CoreV1Api(api).read_namespaced_pod(name, namespace, _preload_content=False))
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def restart_count(pod: dict[str, Any], container: str | None = None) -> int:
    """Sum of restartCount over the pod's (init) containers, or of one named container."""
    status = pod.get("status") or {}
    entries = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    return sum(int(c.get("restartCount", 0)) for c in entries if container is None or c.get("name") == container)


def _describe(api: client.ApiClient, namespace: str, lws: str | None) -> Any:
    return lambda: observe.describe_namespace(api, namespace, lws)


def pod_must_answer(api: client.ApiClient, namespace: str, pod: str, t: Timeouts, *, path: str = "/",
                    lws: str | None = None) -> dict[str, Any]:
    """The probe in `pod` answers `path` with 200 through the API server proxy; returns the JSON body."""
    def check() -> dict[str, Any]:
        return proxy.pod_get(api, namespace, pod, workloads.PROBE_PORT, path, timeout=t.request_timeout).json()
    return core.wait_until(check, what=f"pod {namespace}/{pod} to answer {path} through the API server proxy",
                           timeout=t.pods_running, poll=t.poll_interval, describe=_describe(api, namespace, lws))


def pod_must_have_restarted(api: client.ApiClient, namespace: str, name: str, *, uid: str, restarts: int,
                            t: Timeouts, lws: str | None = None) -> dict[str, Any]:
    """Pod `name` is still the pod `uid`, its containers restarted `restarts` times in all, and it is Ready."""
    def check() -> dict[str, Any]:
        pod = get_pod(api, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid:
            raise core.Terminal(f"pod {name} was replaced (uid {uid[:8]} gone): the pod, not the container, restarted")
        seen = restart_count(pod)
        if seen < restarts:
            raise core.NotYet(f"restartCount {seen} < {restarts}")
        if not observe.pod_ready(pod):
            raise core.NotYet(f"restartCount {seen}, not Ready yet")
        return pod
    return core.wait_until(check, what=f"pod {namespace}/{name} to restart its container in place",
                           timeout=t.group_recreated, poll=t.poll_interval, describe=_describe(api, namespace, lws))


def pods_must_be_gone(api: client.ApiClient, namespace: str, label_selector: str, t: Timeouts, *,
                      lws: str | None = None, timeout: float | None = None) -> None:
    """No pod matching `label_selector` exists any more (terminating ones count as existing)."""
    def check() -> None:
        left = [p["metadata"]["name"] for p in observe.pods(api, namespace, label_selector)]
        if left:
            raise core.NotYet(f"pods still present: {sorted(left)}")
    core.wait_until(check, what=f"pods {label_selector!r} in {namespace} to be gone", timeout=timeout or t.delete,
                    poll=t.poll_interval, describe=_describe(api, namespace, lws))
