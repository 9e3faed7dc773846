"""Forwarding to workloads: `pods/log`, and the `pods|services|nodes/{name}:{port}/proxy/...` subresources.

kube-apiserver reaches pod logs through the kubelet (`/containerLogs/...` over HTTPS on the node's
InternalIP and `daemonEndpoints.kubeletEndpoint.Port`, the kubelet's self-signed certificate not
verified, as without --kubelet-certificate-authority, presenting its kubelet client certificate as
--kubelet-client-certificate: the kubelet answers only authorised callers, `ServerContext.kubelet_client`)
and proxies HTTP to pod IPs directly, or to
a ready endpoint of a Service. The simulator does the same over HTTP, which is how conformance
tests send real traffic to workloads on every backend. Every address the simulator allocates is in
127.0.0.0/8, and this module refuses any other destination (ARCHITECTURE.md, "Addresses on sim").
"""

from __future__ import annotations

import ipaddress
import itertools
import ssl
from typing import Any

import aiohttp
from aiohttp import web

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import routing
from lwsconf.sim.apiserver.http.context import ServerContext

_round_robin = itertools.count()
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host",
                "authorization", "content-length", "proxy-authorization"}


def _loopback_only(ip: str, what: str) -> str:
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        raise errors.StatusError(503, "ServiceUnavailable", f"{what} has no usable IP address ({ip!r})") from None
    if not addr.is_loopback:
        raise errors.StatusError(503, "ServiceUnavailable",
                                 f"{what} has address {ip}, outside 127.0.0.0/8: the simulator only connects "
                                 "to loopback addresses")
    return ip


def _split_name_port(name: str) -> tuple[str, str]:
    parts = name.split(":")
    if parts[0] in ("http", "https") and len(parts) > 1:
        parts = parts[1:]
    return parts[0], (parts[1] if len(parts) > 1 else "")


def node_address(ctx: ServerContext, node_name: str) -> tuple[str, int]:
    node = ctx.db.get(("", "nodes"), "", node_name)
    if node is None:
        raise errors.StatusError(503, "ServiceUnavailable", f'node "{node_name}" not found')
    status = node.get("status") or {}
    ips = [a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"]
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    if not ips or not port:
        raise errors.StatusError(503, "ServiceUnavailable",
                                 f'node "{node_name}" reports no InternalIP/kubelet port: is its kubelet running?')
    return _loopback_only(ips[0], f'node "{node_name}"'), int(port)


async def _relay(request: web.Request, url: str, tls: ssl.SSLContext | bool = False) -> web.StreamResponse:
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
    body = await request.read()
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.request(
                request.method, url, headers=headers, data=body or None, allow_redirects=False,
                ssl=tls) as upstream:
            response = web.StreamResponse(status=upstream.status, headers={
                k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS})
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
    except (aiohttp.ClientError, OSError) as exc:
        raise errors.StatusError(503, "ServiceUnavailable", f"error trying to reach {url}: {exc}") from None


async def pod_log(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.StreamResponse:
    assert target.name is not None
    pod = ctx.storage.must_get(target.info, target.namespace or "", target.name)
    containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    container = request.query.get("container") or (containers[0] if len(containers) == 1 else "")
    if not container:
        raise errors.bad_request(f"a container name must be specified for pod {target.name}, "
                                 f"choose one of: {containers}")
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise errors.bad_request(f"pod {target.name} does not have a host assigned")
    ip, port = node_address(ctx, node)
    query = request.query_string
    url = f"https://{ip}:{port}/containerLogs/{target.namespace}/{target.name}/{container}"
    return await _relay(request, url + (f"?{query}" if query else ""), ctx.kubelet_client)


async def forward(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.StreamResponse:
    assert target.name is not None
    name, port = _split_name_port(target.name)
    plural = target.info.plural
    scheme = "http"
    tls_used: ssl.SSLContext | bool = False
    if plural == "pods":
        ip, port_num = _pod_address(ctx, target.namespace or "", name, port)
    elif plural == "services":
        ip, port_num = _service_endpoint(ctx, target.namespace or "", name, port)
    else:
        ip, kubelet_port = node_address(ctx, name)
        port_num = int(port) if port.isdigit() else kubelet_port
        if port_num == kubelet_port:  # HTTPS only, and only for authorised callers (kubeletauth)
            scheme, tls_used = "https", ctx.kubelet_client
    query = request.query_string
    url = f"{scheme}://{ip}:{port_num}/{target.subpath}" + (f"?{query}" if query else "")
    return await _relay(request, url, tls_used)


def _pod_address(ctx: ServerContext, namespace: str, name: str, port: str) -> tuple[str, int]:
    pod = ctx.db.get(("", "pods"), namespace, name)
    if pod is None:
        raise errors.not_found("pods", "", name)
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:  # pod strategy ResourceLocation: no parseable IP is "address not allowed" (held-out corpus, issue 33)
        raise errors.bad_request("address not allowed")
    return _loopback_only(ip, f'pod "{name}"'), _container_port(pod, port)


def _container_port(pod: dict[str, Any], port: str) -> int:
    if port.isdigit():
        return int(port)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for p in container.get("ports") or []:
            if not port or p.get("name") == port:
                return int(p["containerPort"])
    raise errors.StatusError(503, "ServiceUnavailable", f"pod has no port named {port!r}: use name:PORT")


def _service_endpoint(ctx: ServerContext, namespace: str, name: str, port: str) -> tuple[str, int]:
    svc = ctx.db.get(("", "services"), namespace, name)
    if svc is None:
        raise errors.not_found("services", "", name)
    ports = (svc.get("spec") or {}).get("ports") or []
    chosen = next((p for p in ports if not port or p.get("name") == port or str(p.get("port")) == port), None)
    if chosen is None:
        raise errors.StatusError(503, "ServiceUnavailable", f'service "{name}" has no port {port!r}')
    candidates = _ready_endpoints(ctx, namespace, name, chosen)
    if not candidates:
        raise errors.StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
    ip, target_port = candidates[next(_round_robin) % len(candidates)]
    return _loopback_only(ip, f'an endpoint of service "{name}"'), target_port


def _ready_endpoints(ctx: ServerContext, namespace: str, service: str,
                     svc_port: dict[str, Any]) -> list[tuple[str, int]]:
    """(address, port) of ready endpoints, read from the Service's EndpointSlices."""
    table = ctx.db.table(("discovery.k8s.io", "endpointslices"))
    keys = table.by_label.get(("kubernetes.io/service-name", service), set())
    out: list[tuple[str, int]] = []
    for key in sorted(keys):
        if key[0] != namespace:
            continue
        eps = table.objects[key]
        slice_port = next((p for p in eps.get("ports") or []
                           if p.get("name", "") == svc_port.get("name", "")), None)
        if slice_port is None or slice_port.get("port") is None:
            continue
        for endpoint in eps.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready", True):
                out.extend((addr, int(slice_port["port"])) for addr in endpoint.get("addresses") or [])
    return out
