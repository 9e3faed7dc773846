"""One HTTP GET to a pod's port through the API server's `pods/NAME/portforward` (WebSocket).

Why: kube-apiserver refuses `pods/NAME:PORT/proxy` to a pod whose IP is not a global unicast address
(400 "address not allowed", `pkg/registry/core/pod/strategy.go` ResourceLocation), as a cluster whose pod
IPs are loopback addresses would show them (on `--cluster=local` the API shows 198.18 stand-ins instead,
`lwsconf.sim.nodes.network.podnet`, so the proxy answers there and this is the fallback). Port-forwarding goes
the other way round: the API server hands the stream to the node's kubelet API (our node agent), which connects
to the pod on the node itself, so it works with loopback pod IPs and is still only the Kubernetes API. The
request is written by hand (HTTP/1.1, `Connection: close`) on the forwarded socket and the answer
parsed with `http.client`, so the reply has the same shape as a proxied one.
"""

from __future__ import annotations

import http.client
import io
import json
from typing import Any
from urllib.parse import urlencode

from kubernetes import client
from kubernetes.stream import portforward

MAX_BODY = 4 << 20
"""Bytes read from one answer at most (the probe's answers are small JSON documents)."""


class _Received:
    """What `http.client.HTTPResponse` needs from a socket: `makefile` over the bytes already read."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def makefile(self, *_: Any, **__: Any) -> io.BytesIO:
        return io.BytesIO(self._data)


def _read_all(sock: Any, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def http_get(api: client.ApiClient, namespace: str, pod: str, port: int, path: str,
             query: dict[str, str] | None, timeout: float) -> tuple[int, Any]:
    """(status, body) of `GET path` on the pod's port; status 0 with a message when no answer came."""
    target = path if path.startswith("/") else f"/{path}"
    if query:
        target += "?" + urlencode(query)
    # A client of its own: kubernetes.stream swaps `call_api` on the ApiClient it is given for the length of
    # the call, so every other thread using that client (a timeline recorder's watches) had its requests sent
    # as port-forwards meanwhile and failed "Missing required parameter `ports`" (RolloutSurvivesController-
    # Restart against upstream on --cluster=local, run 20261203-043538-b547: the recording lost every instant).
    own = client.ApiClient(api.configuration)
    try:
        return _get(own, namespace, pod, port, target, timeout)
    finally:
        own.close()  # type: ignore[no-untyped-call]


def _get(api: client.ApiClient, namespace: str, pod: str, port: int, target: str, timeout: float) -> tuple[int, Any]:
    try:
        forward = portforward(client.CoreV1Api(api).connect_get_namespaced_pod_portforward, pod, namespace,
                              ports=str(port), _request_timeout=timeout)
    except (client.ApiException, OSError) as exc:
        return 0, f"port-forward failed: {exc}"
    except Exception as exc:  # noqa: BLE001 - websocket errors (handshake refused, reset) are observations
        return 0, f"port-forward failed: {type(exc).__name__}: {exc}"
    try:
        sock = forward.socket(port)
        sock.settimeout(timeout)
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {pod}:{port}\r\nAccept: application/json\r\n"
                     "Connection: close\r\n\r\n".encode())
        raw = _read_all(sock, MAX_BODY)
        sock.close()
        error = forward.error(port)
    except OSError as exc:  # socket timeouts too
        return 0, f"port-forward to {pod}:{port} failed: {exc}"
    finally:
        forward.close()
    if not raw:
        return 0, f"port-forward to {pod}:{port}: no answer ({error or 'connection closed'})"
    return _parse(raw)


def _parse(raw: bytes) -> tuple[int, Any]:
    response = http.client.HTTPResponse(_Received(raw))  # type: ignore[arg-type]
    try:
        response.begin()
        body = response.read()
    except (http.client.HTTPException, ValueError) as exc:
        return 0, f"not an HTTP answer ({exc}): {raw[:200]!r}"
    text = body.decode("utf-8", "replace")
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text
