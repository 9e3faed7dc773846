"""`pods/NAME/exec`, `attach` and `portforward`: kubectl's WebSocket, proxied to the node's kubelet.

kube-apiserver 1.36+ proxies these WebSockets unchanged to a kubelet whose Node declares
`ExtendWebSocketsToKubelet` (pkg/registry/core/pod/rest/subresources.go), at the URL
`pod.ExecLocation` and friends build: `https://NODE_IP:KUBELET_PORT/exec/NS/POD/CONTAINER?input=1&...`
(pkg/registry/core/pod/strategy.go). The simulator does the same: it checks the request as the API
server does (the pod, its container, its node, the options), opens a WebSocket to the kubelet with
the subprotocols the client offered, accepts the client's with the one the kubelet chose and relays
messages both ways until either side closes. The kubelet speaks the protocols (`lwsconf.streaming`) and
answers only authorised callers: the server presents its kubelet client certificate (`ServerContext.kubelet_client`).

A SPDY upgrade (kubectl before 1.30, or any SPDY executor) is refused after those checks with a 400
naming the fix, so a request that is wrong anyway still gets its real error (kubectl retries with
SPDY when the WebSocket handshake fails and prints the second answer). Every address dialled is a
node's loopback InternalIP (`proxy.node_address`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import WSMsgType, web
from yarl import URL

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import proxy, routing
from lwsconf.sim.apiserver.http.context import ServerContext
from lwsconf.streaming import channels, options, portforward

SPDY_REFUSED = ("the simulated API server serves pods/{kind} over WebSocket only ({protocols}), not SPDY: "
                "use kubectl 1.31 or newer (its default), or a client that speaks these WebSocket protocols")
KINDS = ("exec", "attach", "portforward")


def _container(pod: dict[str, Any], wanted: str) -> str:
    """The container to use, with kube-apiserver's errors (`validateContainer` in strategy.go)."""
    name = (pod.get("metadata") or {}).get("name")
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    if not wanted:
        if len(names) == 1:
            return str(names[0])
        raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: {names}")
    every = names + [c.get("name") for key in ("initContainers", "ephemeralContainers")
                     for c in spec.get(key) or []]
    if wanted not in every:
        raise errors.bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def kubelet_path(pod: dict[str, Any], kind: str, request: web.Request) -> tuple[str, str]:
    """(path, query) on the kubelet for this request; StatusError 400 as the API server answers."""
    meta = pod.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    if kind == "portforward":
        ports = [p for value in request.query.getall("ports", []) for p in value.split(",") if p]
        if any(not p.isdigit() or not 0 < int(p) < 65536 for p in ports):
            raise errors.bad_request(f"invalid ports {ports}: each must be between 1 and 65535")
        return f"/portForward/{namespace}/{name}", urlencode([("port", ",".join(ports))] if ports else [])
    container = _container(pod, request.query.get("container", ""))
    try:
        opts = options.from_api_query(request.query.items(), exec_=kind == "exec")
    except options.BadOptions as exc:
        raise errors.bad_request(str(exc)) from None
    return f"/{kind}/{namespace}/{name}/{container}", urlencode(opts.kubelet_query())


def _offered(request: web.Request) -> list[str]:
    raw = ",".join(request.headers.getall("Sec-WebSocket-Protocol", []))
    return [p.strip() for p in raw.split(",") if p.strip()]


def _check_upgrade(request: web.Request, kind: str) -> None:
    if "upgrade" not in request.headers.get("Connection", "").lower():
        raise errors.bad_request("Upgrade request required")
    wanted = request.headers.get("Upgrade", "").lower()
    served = (portforward.TUNNEL_PROTOCOL, channels.V4) if kind == "portforward" else channels.PROTOCOLS
    if wanted.startswith("spdy/"):
        raise errors.bad_request(SPDY_REFUSED.format(kind=kind, protocols=", ".join(served)))
    if wanted != "websocket":
        raise errors.bad_request(f"upgrade to {request.headers.get('Upgrade')!r} is not served; use WebSocket")
    offered = _offered(request)
    if not any(p in served for p in offered):
        raise errors.bad_request(f"none of the WebSocket subprotocols offered ({', '.join(offered) or 'none'}) "
                                 f"is served for pods/{kind}; offer one of {', '.join(served)}")


async def pod_stream(ctx: ServerContext, request: web.Request, target: routing.Target, kind: str) -> web.StreamResponse:
    """Check the request, then relay the client's WebSocket to the kubelet's."""
    assert target.name is not None
    pod = ctx.storage.must_get(target.info, target.namespace or "", target.name)
    path, query = kubelet_path(pod, kind, request)
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise errors.bad_request(f"pod {target.name} does not have a host assigned")
    ip, port = proxy.node_address(ctx, node)
    _check_upgrade(request, kind)
    url = URL(f"https://{ip}:{port}{path}" + (f"?{query}" if query else ""), encoded=True)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5)) as session:
        try:
            upstream = await session.ws_connect(url, protocols=_offered(request), ssl=ctx.kubelet_client, autoping=True,
                                                max_msg_size=0)
        except aiohttp.WSServerHandshakeError as exc:
            raise errors.StatusError(exc.status if exc.status >= 400 else 502, "BadGateway",
                                     f"the kubelet on node {node} refused the upgrade: {exc.message}") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.StatusError(503, "ServiceUnavailable", f"error dialing backend: {exc}") from None
        client = web.WebSocketResponse(protocols=(upstream.protocol,) if upstream.protocol else (),
                                       autoping=True, max_msg_size=0)
        await client.prepare(request)
        await relay(client, upstream)
        return client


async def relay(client: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse) -> None:
    """Messages both ways until one side closes; the other is then closed with the same code."""
    async def pipe(source: Any, sink: Any) -> None:
        async for msg in source:
            if msg.type == WSMsgType.BINARY:
                await sink.send_bytes(msg.data)
            elif msg.type == WSMsgType.TEXT:
                await sink.send_str(msg.data)

    down = asyncio.create_task(pipe(upstream, client))
    up = asyncio.create_task(pipe(client, upstream))
    try:
        await asyncio.wait({down, up}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (down, up):
            task.cancel()
        await asyncio.gather(down, up, return_exceptions=True)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await client.close(code=upstream.close_code or aiohttp.WSCloseCode.OK)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await upstream.close()
