"""Named waits on Services: which pods their EndpointSlices list, and who answers through them.

Routing is eventually consistent, so traffic checks use `core.must_converge` (N consecutive good
answers within `max_time_to_consistency`), as Gateway API's AwaitConvergence does. Every request
goes through the API server's `services/NAME:PORT/proxy` (`waits.proxy`).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, observe, proxy

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def endpoint_slices(api: client.ApiClient, namespace: str, service: str) -> list[dict[str, Any]]:
    items = observe.raw(client.DiscoveryV1Api(api).list_namespaced_endpoint_slice(
        namespace, label_selector=f"{SERVICE_NAME_LABEL}={service}", _preload_content=False))["items"]
    return items  # type: ignore[no-any-return]


def endpoint_pods(api: client.ApiClient, namespace: str, service: str) -> dict[str, bool]:
    """Pod name -> ready, over every endpoint of every EndpointSlice of the Service."""
    out: dict[str, bool] = {}
    for eps in endpoint_slices(api, namespace, service):
        for endpoint in eps.get("endpoints") or []:
            ref = endpoint.get("targetRef") or {}
            if ref.get("kind") == "Pod":
                ready = (endpoint.get("conditions") or {}).get("ready")
                out[str(ref.get("name"))] = ready is None or bool(ready)
    return out


def _describe(api: client.ApiClient, namespace: str, service: str, lws: str | None) -> Any:
    def text() -> str:
        eps = endpoint_pods(api, namespace, service)
        return f"EndpointSlices of Service {service}: {eps}\n" + observe.describe_namespace(api, namespace, lws)
    return text


def service_endpoints_must_be(api: client.ApiClient, namespace: str, service: str, pods: set[str], t: Timeouts,
                              *, lws: str | None = None) -> dict[str, bool]:
    """The Service's ready endpoints are exactly `pods`, and no other pod is listed at all."""
    def check() -> dict[str, bool]:
        seen = endpoint_pods(api, namespace, service)
        ready = {p for p, ok in seen.items() if ok}
        if set(seen) != pods or ready != pods:
            raise core.NotYet(f"endpoints {sorted(seen)} (ready {sorted(ready)}), want exactly {sorted(pods)}")
        return seen
    return core.wait_until(check, what=f"Service {namespace}/{service} endpoints to be {sorted(pods)}",
                           timeout=t.service_endpoints, poll=t.poll_interval,
                           describe=_describe(api, namespace, service, lws))


def answering_pod(api: client.ApiClient, namespace: str, service: str, port: int | str, t: Timeouts) -> str:
    """One request through the Service; the name of the probe pod that answered (AssertionError if none)."""
    body = proxy.service_get(api, namespace, service, port, "/", timeout=t.request_timeout).json()
    return str(body.get("pod"))


def service_must_route_only_to(api: client.ApiClient, namespace: str, service: str, port: int | str,
                               allowed: set[str], t: Timeouts, *, must_reach: set[str] | None = None,
                               lws: str | None = None) -> set[str]:
    """Every answer comes from a pod in `allowed` (N in a row), and together they covered `must_reach`.

    Returns the set of pods that answered during the converged streak and before it.
    """
    seen: set[str] = set()
    want = must_reach or set()

    def check() -> str:
        pod = answering_pod(api, namespace, service, port, t)
        if pod not in allowed:
            raise core.NotYet(f"answered by {pod}, which is not one of {sorted(allowed)}")
        seen.add(pod)
        if not want <= seen:
            raise core.NotYet(f"answers so far from {sorted(seen)}, still waiting for {sorted(want - seen)}")
        return pod

    core.must_converge(check, what=f"Service {namespace}/{service} to route only to {sorted(allowed)}",
                       successes=t.required_consecutive_successes, within=t.max_time_to_consistency,
                       poll=t.poll_interval, describe=_describe(api, namespace, service, lws))
    return seen
