"""The kubelet's streaming endpoints: `/exec`, `/attach` and `/portForward`, over WebSocket.

Served on the kubelet port beside `/containerLogs` (`logserver.LogServer`), where the sim API server
and a real kube-apiserver (1.36+, for a Node declaring `ExtendWebSocketsToKubelet`) proxy kubectl's
WebSocket unchanged. Paths and query as kube-apiserver builds them (pkg/registry/core/pod/strategy.go):
`/exec/NS/POD/CONTAINER?command=..&input=1&output=1&error=1&tty=1`, `/attach/NS/POD/CONTAINER?...`,
`/portForward/NS/POD`. Exec and attach speak `channels` (v5, v4); port-forward the SPDY tunnel
(kubectl) or, for the official Python client, v4 channels (`portforward_channels`).

Once the WebSocket is up, a request that cannot be served (no such pod or container, a container the
sim emulates without a process, a command the sim will not run) ends with a `Failure` on the error
channel, which kubectl prints as it is. Attach follows the container's output from now on and, when
the container has `stdin: true`, writes the client's stdin to it (closing it at the end with
`stdinOnce`); without one the client's stdin is dropped, as container runtimes drop it. A SPDY
upgrade (kubectl before 1.30, or a client-go SPDY executor) is refused before upgrading, with the
same error when there is one and otherwise a message
naming the fix; a request without any upgrade gets 400 `Upgrade request required` as from a kubelet.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from aiohttp import WSMsgType, web

from lwsconf.sim.nodes.streams.execsession import ExecSession
from lwsconf.streaming import channels, options, portforward, portforward_channels
from lwsconf.streaming.spdy.session import Session

SPDY_REFUSED = ("this kubelet serves exec, attach and port-forward over WebSocket only ({protocols}), not "
                "SPDY: use kubectl 1.31 or newer (its default), or a client that speaks these WebSocket "
                "protocols")


REAP_TIMEOUT = 5.0
"""Seconds an exec'd command killed by its client's leaving may take to be reaped."""


class StreamNotAvailable(Exception):
    """What the kubelet says when a stream request cannot be served; `code` is its HTTP status."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ExecTarget:
    """How to run a command in a container: its command line for argv, its env and working dir."""

    command_for: Callable[[list[str]], tuple[list[str], str | None]]
    env: dict[str, str]


@dataclass(frozen=True)
class AttachTarget:
    """A running container's output (new bytes of its log) and, with `stdin: true`, its stdin."""

    follow: Callable[[], Awaitable[bytes]]
    """Waits for and returns the next output; b"" once the container ended."""
    stdin: Callable[[bytes], Awaitable[None]] | None = None
    """Writes to the container's stdin; None when it has none (the client's stdin is then dropped, as
    container runtimes do)."""
    end_stdin: Callable[[], None] | None = None
    """`stdinOnce`: closes the container's stdin when this attach ends."""


class Targets(Protocol):
    """The agent's answers (`agentstreams.AgentStreams`); each raises StreamNotAvailable."""

    def exec_target(self, namespace: str, pod: str, container: str) -> ExecTarget: ...

    def attach_target(self, namespace: str, pod: str, container: str) -> AttachTarget: ...

    def pod_address(self, namespace: str, pod: str) -> tuple[str, str]: ...


def _status(code: int, message: str) -> web.Response:
    reason = {400: "BadRequest", 404: "NotFound"}.get(code, "InternalError")
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.Response(status=code, text=json.dumps(body), content_type="application/json")


def _upgrade(request: web.Request) -> str:
    """"websocket", "spdy" or "" (no upgrade asked)."""
    if "upgrade" not in request.headers.get("Connection", "").lower():
        return ""
    wanted = request.headers.get("Upgrade", "").lower()
    return "websocket" if wanted == "websocket" else "spdy" if wanted.startswith("spdy/") else wanted


def offered(request: web.Request) -> list[str]:
    """The WebSocket subprotocols the client offered, in its order."""
    raw = ",".join(request.headers.getall("Sec-WebSocket-Protocol", []))
    return [p.strip() for p in raw.split(",") if p.strip()]


class StreamServer:
    """aiohttp handlers for one node's streaming endpoints (routes added by `add_routes`)."""

    def __init__(self, targets: Targets) -> None:
        self._targets = targets

    def add_routes(self, app: web.Application) -> None:
        for method in ("GET", "POST"):
            app.router.add_route(method, "/exec/{namespace}/{pod}/{container}", self._exec)
            app.router.add_route(method, "/attach/{namespace}/{pod}/{container}", self._attach)
            app.router.add_route(method, "/portForward/{namespace}/{pod}", self._port_forward)

    async def _refuse(self, request: web.Request, check: Callable[[], object], protocols: str) -> web.Response:
        kind = _upgrade(request)
        try:
            check()
        except StreamNotAvailable as exc:
            return _status(exc.code, str(exc))
        if kind == "":
            return _status(400, "Upgrade request required")
        if kind == "spdy":
            return _status(400, SPDY_REFUSED.format(protocols=protocols))
        if kind == "websocket":
            return _status(400, f"none of the WebSocket subprotocols offered ({', '.join(offered(request))}) "
                                f"is served here; offer {protocols}")
        return _status(400, f"upgrade to {request.headers.get('Upgrade')!r} is not served; use WebSocket "
                            f"({protocols})")

    async def _open(self, request: web.Request, protocols: tuple[str, ...]) -> web.WebSocketResponse | None:
        ws = web.WebSocketResponse(protocols=protocols, autoping=True, max_msg_size=0)
        if _upgrade(request) != "websocket" or not ws.can_prepare(request).ok:
            return None
        if not any(p in protocols for p in offered(request)):
            return None
        await ws.prepare(request)
        return ws

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        try:
            opts = options.from_kubelet_query(request.query.items())
        except options.BadOptions as exc:
            return _status(400, str(exc))
        ws = await self._open(request, channels.PROTOCOLS)
        if ws is None:
            return await self._refuse(request, lambda: self._targets.exec_target(ns, pod, container),
                                      ", ".join(channels.PROTOCOLS))
        try:
            target = self._targets.exec_target(ns, pod, container)
            command, cwd = target.command_for(list(opts.command))
            session = await ExecSession.start(command, env=target.env, cwd=cwd, stdin=opts.stdin, tty=opts.tty)
        except (StreamNotAvailable, ValueError, OSError) as exc:
            await _finish(ws, channels.failure(f"cannot exec in container {container!r} of pod {pod!r}: {exc}"))
            return ws
        await run_exec(ws, ws.ws_protocol or channels.V4, opts, session)
        return ws

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        try:
            opts = options.from_kubelet_query(request.query.items())
        except options.BadOptions as exc:
            return _status(400, str(exc))
        ws = await self._open(request, channels.PROTOCOLS)
        if ws is None:
            return await self._refuse(request, lambda: self._targets.attach_target(ns, pod, container),
                                      ", ".join(channels.PROTOCOLS))
        try:
            target = self._targets.attach_target(ns, pod, container)
        except StreamNotAvailable as exc:
            await _finish(ws, channels.failure(str(exc)))
            return ws
        await run_attach(ws, ws.ws_protocol or channels.V4, target if opts.stdin else AttachTarget(target.follow))
        return ws

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        ns, pod = request.match_info["namespace"], request.match_info["pod"]
        try:  # the channel protocol names its ports in the query; the SPDY tunnel per stream
            ports = portforward_channels.ports_from_query(request.query.items()) if channels.V4 in offered(
                request) else []
        except portforward_channels.BadPorts as exc:
            return _status(400, str(exc))
        ws = await self._open(request, (portforward.TUNNEL_PROTOCOL, channels.V4))
        if ws is None:
            return await self._refuse(request, lambda: self._targets.pod_address(ns, pod),
                                      f"{portforward.TUNNEL_PROTOCOL} or {channels.V4}")
        try:
            ip, uid = self._targets.pod_address(ns, pod)
        except StreamNotAvailable:
            ip, uid = "", ""  # each forwarded connection reports it on its error stream

        async def dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            if not ip:
                raise OSError(f"pod {ns}/{pod} is not running on this node")
            if not ipaddress.ip_address(ip).is_loopback:  # the sim's pod IPs always are; never dial out
                raise OSError(f"pod IP {ip} is outside 127.0.0.0/8: the sim only connects to loopback addresses")
            return await asyncio.open_connection(ip, port)

        if ws.ws_protocol == channels.V4:
            await serve_channel_forward(ws, dial, ports, pod, uid)
        else:
            await serve_tunnel(ws, dial, pod, uid)
        return ws


async def _finish(ws: web.WebSocketResponse, status: bytes) -> None:
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.send_bytes(channels.frame(channels.ERROR, status))
    await ws.close()


async def run_exec(ws: web.WebSocketResponse, protocol: str, opts: options.StreamOptions,
                   session: ExecSession) -> None:
    """Relay a running exec until it ends, then its exit status; the client leaving kills it."""
    async def pump(reader: asyncio.StreamReader, channel: int) -> None:
        while chunk := await reader.read(32 * 1024):
            if opts.stdout or channel != channels.STDOUT:
                await ws.send_bytes(channels.frame(channel, chunk))

    inbound = asyncio.create_task(_from_client(ws, protocol, session))
    try:
        await asyncio.gather(pump(session.stdout, channels.STDOUT),
                             *([pump(session.stderr, channels.STDERR)] if session.stderr else []))
        code = await session.wait()
        await _finish(ws, channels.exit_status(code))
    except (ConnectionError, RuntimeError):
        session.kill()
    finally:
        inbound.cancel()
        await asyncio.gather(inbound, return_exceptions=True)
        session.kill()
        with contextlib.suppress(TimeoutError):  # reaped, and its terminal released
            await asyncio.wait_for(session.wait(), REAP_TIMEOUT)


async def _from_client(ws: web.WebSocketResponse, protocol: str, session: ExecSession) -> None:
    """stdin, its close signal and resize events from the client; its leaving kills the command."""
    async for msg in ws:
        if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
            continue
        try:
            parsed = channels.parse(msg.data, protocol)
        except channels.ProtocolError:
            continue
        if isinstance(parsed, channels.Closed):
            if parsed.channel == channels.STDIN:
                session.close_stdin()
        elif parsed.channel == channels.STDIN:
            await session.write_stdin(parsed.data)
        elif parsed.channel == channels.RESIZE:
            for width, height in channels.resize_events(parsed.data):
                session.resize(width, height)
    session.kill()


async def run_attach(ws: web.WebSocketResponse, protocol: str, target: AttachTarget) -> None:
    """The container's new output on stdout until it ends (Success) or the client leaves; its stdin."""
    async def from_client() -> None:
        async for msg in ws:
            if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                continue
            with contextlib.suppress(channels.ProtocolError):
                parsed = channels.parse(msg.data, protocol)
                if isinstance(parsed, channels.Data) and parsed.channel == channels.STDIN and target.stdin:
                    await target.stdin(parsed.data)
                elif parsed == channels.Closed(channels.STDIN) and target.end_stdin:
                    target.end_stdin()
        if target.end_stdin:
            target.end_stdin()

    inbound = asyncio.create_task(from_client())
    follow = asyncio.create_task(_follow(ws, target))
    done, _ = await asyncio.wait({inbound, follow}, return_when=asyncio.FIRST_COMPLETED)
    for task in (inbound, follow):
        task.cancel()
    await asyncio.gather(inbound, follow, return_exceptions=True)
    if follow in done and not ws.closed:
        await _finish(ws, channels.success())


async def _follow(ws: web.WebSocketResponse, target: AttachTarget) -> None:
    while chunk := await target.follow():
        await ws.send_bytes(channels.frame(channels.STDOUT, chunk))


async def serve_channel_forward(ws: web.WebSocketResponse, dial: portforward.Dial, ports: list[int], pod: str,
                                uid: str) -> None:
    """Port-forward as WebSocket channels (the official Python client), see `portforward_channels`."""
    async def send(data: bytes) -> None:
        if not ws.closed:
            await ws.send_bytes(data)

    async def messages() -> AsyncIterator[bytes]:
        async for msg in ws:
            if msg.type == WSMsgType.BINARY:
                yield bytes(msg.data)

    try:
        await portforward_channels.serve(send, messages(), dial, ports, pod, uid)
    finally:
        await ws.close()


async def serve_tunnel(ws: web.WebSocketResponse, dial: portforward.Dial, pod: str, uid: str) -> None:
    """A SPDY session carried in the WebSocket's binary messages, serving port-forward."""
    async def send(data: bytes) -> None:
        if not ws.closed:
            await ws.send_bytes(data)

    session = Session(send)
    server = asyncio.create_task(portforward.serve(session, dial, pod, uid))
    try:
        async for msg in ws:
            if msg.type == WSMsgType.BINARY:
                await session.feed(msg.data)
            if session.closed:
                break
    finally:
        session.shutdown()
        await asyncio.gather(server, return_exceptions=True)
        await ws.close()
