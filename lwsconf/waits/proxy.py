"""Talking to workloads through the API server's proxy: `pods/NAME:PORT/proxy` and `services/NAME:PORT/proxy`.

Conformance tests never open connections to pod or Service IPs themselves (they may be unreachable
from the test machine); the API server forwards for them, on every backend. The request is built by
hand (the generated client would percent-encode the `/` and `?` of the proxied path) and sent with
the ApiClient's own credentials. Non-2xx answers are returned, not raised: a proxy error is an
observation a wait can report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from kubernetes import client

from lwsconf.waits import portforward

ADDRESS_NOT_ALLOWED = "address not allowed"
"""kube-apiserver's answer to `pods/NAME/proxy` for a pod whose IP is loopback or link-local."""


@dataclass(frozen=True)
class Reply:
    """One proxied answer: the HTTP status and the body (decoded JSON, else text)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> dict[str, Any]:
        """The body as a JSON object; raises AssertionError (a wait's "not yet") otherwise."""
        if not self.ok or not isinstance(self.body, dict):
            raise AssertionError(f"HTTP {self.status}: {str(self.body)[:300]}")
        return self.body


def _get(api: client.ApiClient, path: str, query: dict[str, str] | None, timeout: float) -> Reply:
    return _call(api, "GET", path, query, None, timeout)


def _call(api: client.ApiClient, verb: str, path: str, query: dict[str, str] | None, body: Any,
          timeout: float) -> Reply:
    header = {"Accept": "application/json"}
    if body is not None:
        header["Content-Type"] = "application/json"
    method, url, headers, data, _ = api.param_serialize(
        verb, path, query_params=list((query or {}).items()), header_params=header, body=body,
        auth_settings=["BearerToken"])
    try:
        response = api.call_api(method, url, header_params=headers, body=data, _request_timeout=timeout)
        raw = response.read()  # type: ignore[no-untyped-call]
    except (client.ApiException, OSError) as exc:
        return Reply(0, f"request failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - urllib3 errors (timeouts, resets) are observations too
        return Reply(0, f"request failed: {type(exc).__name__}: {exc}")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:
        return Reply(response.status, json.loads(text))
    except ValueError:
        return Reply(response.status, text)


def pod_get(api: client.ApiClient, namespace: str, pod: str, port: int, path: str = "/", *,
            query: dict[str, str] | None = None, timeout: float = 10.0) -> Reply:
    """GET http://<pod>:<port><path> through `pods/<pod>:<port>/proxy`, else `pods/<pod>/portforward`.

    kube-apiserver refuses to proxy to a pod IP that is not global unicast (400 "address not allowed"), as
    loopback pod IPs are; on that answer the same GET goes through port-forwarding instead (`portforward`):
    the API server hands it to the node's kubelet API. (On `--cluster=local` the API shows our pods under
    198.18 stand-ins, `lwsconf.sim.nodes.network.podnet`, so the proxy itself answers there.)
    """
    target = quote(f"{pod}:{port}", safe=":")
    reply = _get(api, f"/api/v1/namespaces/{namespace}/pods/{target}/proxy/{path.lstrip('/')}", query, timeout)
    if reply.status == 400 and isinstance(reply.body, dict) and reply.body.get("message") == ADDRESS_NOT_ALLOWED:
        return Reply(*portforward.http_get(api, namespace, pod, port, path, query, timeout))
    return reply


def service_get(api: client.ApiClient, namespace: str, service: str, port: int | str, path: str = "/", *,
                query: dict[str, str] | None = None, timeout: float = 10.0) -> Reply:
    """GET a Service's endpoint through `services/<svc>:<port>/proxy` (the API server picks the endpoint)."""
    target = quote(f"{service}:{port}", safe=":")
    return _get(api, f"/api/v1/namespaces/{namespace}/services/{target}/proxy/{path.lstrip('/')}", query, timeout)


def pod_post(api: client.ApiClient, namespace: str, pod: str, port: int, path: str, body: Any, *,
             timeout: float = 10.0) -> Reply:
    """POST `body` as JSON to http://<pod>:<port><path> through `pods/<pod>:<port>/proxy` (no port-forward
    fallback: a pod whose IP the API server will not proxy to answers 400 "address not allowed")."""
    target = quote(f"{pod}:{port}", safe=":")
    return _call(api, "POST", f"/api/v1/namespaces/{namespace}/pods/{target}/proxy/{path.lstrip('/')}", None, body,
                 timeout)


def service_post(api: client.ApiClient, namespace: str, service: str, port: int | str, path: str, body: Any, *,
                 timeout: float = 10.0) -> Reply:
    """POST `body` as JSON to a Service's endpoint through `services/<svc>:<port>/proxy`."""
    target = quote(f"{service}:{port}", safe=":")
    return _call(api, "POST", f"/api/v1/namespaces/{namespace}/services/{target}/proxy/{path.lstrip('/')}", None,
                 body, timeout)
