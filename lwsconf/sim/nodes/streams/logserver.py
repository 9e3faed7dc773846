"""The kubelet's log endpoint: `GET /containerLogs/{namespace}/{pod}/{container}` on the node IP.

The same server carries the kubelet's streaming endpoints (exec, attach, port-forward: `streamserver`)
and, for the node agents, serves HTTPS (`kubelettls`) to authorised callers only (`kubeletauth`: a client
certificate or a bearer token, then a SubjectAccessReview, as a kubelet with webhook auth; 401/403 else).

The API server forwards `pods/NAME/log` here (to the node's InternalIP and
daemonEndpoints.kubeletEndpoint.Port), so `kubectl logs` and `read_namespaced_pod_log` work as on a
real cluster. Query parameters as the kubelet honours them: `follow`, `previous`, `timestamps`,
`tailLines`, `limitBytes`, `sinceSeconds`, `sinceTime`.

Log files are per container instance (`<restartCount>.log`, as under /var/log/pods). Lines in the
CRI format (`<RFC3339Nano> <stdout|stderr> <F|P> <text>`, what emulated containers get) are parsed;
any other line (raw process output) is shown as it is, stamped with the file's modification time when
timestamps are asked for. Errors come back as a Kubernetes `Status` body with the kubelet's wording.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import re
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Middleware

_CRI = re.compile(r"^(\d{4}-\d\d-\d\dT\S+) (stdout|stderr) ([FP]) ?(.*)$")
_FOLLOW_POLL = 0.05


@dataclass(frozen=True)
class LogTarget:
    """Where one container instance's log is, and whether it may still grow."""

    path: Path
    running: Callable[[], bool]


class LogNotAvailable(Exception):
    """The container (or its previous instance) has no log to show; `code` is the HTTP status."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


Resolver = Callable[[str, str, str, bool], LogTarget]
"""resolve(namespace, pod, container, previous) -> LogTarget, or raise LogNotAvailable."""


@dataclass(frozen=True)
class _Entry:
    stamp: str
    text: str
    newline: bool

    def render(self, timestamps: bool) -> str:
        body = self.text + ("\n" if self.newline else "")
        return f"{self.stamp} {body}" if timestamps else body


def parse_lines(data: str, fallback_stamp: str) -> list[_Entry]:
    entries = []
    for raw in data.splitlines():
        match = _CRI.match(raw)
        if match:
            entries.append(_Entry(match.group(1), match.group(4), match.group(3) == "F"))
        else:
            entries.append(_Entry(fallback_stamp, raw, True))
    return entries


def _stamp_seconds(stamp: str) -> float | None:
    try:
        text = stamp.rstrip("Z")
        head, _, frac = text.partition(".")
        when = datetime.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.UTC)
        return when.timestamp() + (float("0." + frac[:6]) if frac else 0.0)
    except ValueError:
        return None


def _mtime_stamp(path: Path) -> str:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = datetime.datetime.now(datetime.UTC).timestamp()
    return datetime.datetime.fromtimestamp(mtime, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


def _status(code: int, message: str) -> web.Response:
    reason = {400: "BadRequest", 404: "NotFound"}.get(code, "InternalError")
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.Response(status=code, text=json.dumps(body), content_type="application/json")


@dataclass(frozen=True)
class _Options:
    follow: bool
    previous: bool
    timestamps: bool
    tail: int | None
    limit: int | None
    since: float | None

    @classmethod
    def parse(cls, query: dict[str, str]) -> _Options:
        def flag(name: str) -> bool:
            return query.get(name, "").lower() in ("true", "1")

        def number(name: str) -> int | None:
            value = query.get(name)
            if value is None or value == "":
                return None
            if not value.lstrip("-").isdigit():
                raise LogNotAvailable(f"{name} must be an integer, got {value!r}")
            return int(value)

        since: float | None = None
        if query.get("sinceSeconds"):
            seconds = number("sinceSeconds") or 0
            since = datetime.datetime.now(datetime.UTC).timestamp() - seconds
        elif query.get("sinceTime"):
            since = _stamp_seconds(query["sinceTime"])
        tail = number("tailLines")
        return cls(flag("follow"), flag("previous"), flag("timestamps"),
                   None if tail is None or tail < 0 else tail, number("limitBytes"), since)


class LogServer:
    """aiohttp server on one node IP, port 0 unless given; `port` is known after `start()`.

    The node agent's kubelet port: `routes` adds the streaming endpoints (`streamserver`) to the
    same application, `ssl_context` makes it HTTPS as a kubelet's port is (`kubelettls`), and
    `middlewares` put every endpoint behind the kubelet's authentication and authorization
    (`kubeletauth.KubeletAuth.middleware`).
    """

    def __init__(self, host: str, resolve: Resolver, *, port: int = 0,
                 routes: Callable[[web.Application], None] | None = None,
                 ssl_context: ssl.SSLContext | None = None,
                 middlewares: Sequence[Middleware] = ()) -> None:
        self.host = host
        self._resolve = resolve
        self._want_port = port
        self._routes = routes
        self._ssl = ssl_context
        self._middlewares = tuple(middlewares)
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._streams: set[asyncio.Task[object]] = set()

    async def start(self) -> int:
        app = web.Application(middlewares=self._middlewares)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        app.router.add_get("/healthz", _ok)
        if self._routes is not None:
            self._routes(app)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._want_port, ssl_context=self._ssl)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else self._want_port
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        try:
            options = _Options.parse(dict(request.query))
            target = self._resolve(info["namespace"], info["pod"], info["container"], options.previous)
        except LogNotAvailable as exc:
            return _status(exc.code, str(exc))
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        sent, offset = await self._send_existing(response, target, options)
        if options.follow and (options.limit is None or sent < options.limit):
            await self._follow(response, target, options, sent, offset)
        await response.write_eof()
        return response

    async def _send_existing(self, response: web.StreamResponse, target: LogTarget,
                             options: _Options) -> tuple[int, int]:
        """Write the lines already there; returns (bytes sent, bytes of the file consumed)."""
        raw = _read(target.path, 0)
        if options.follow:  # a partial last line is sent once complete
            raw = raw[:raw.rfind(b"\n") + 1]
        data = raw.decode(errors="replace")
        entries = parse_lines(data, _mtime_stamp(target.path))
        if options.since is not None:
            entries = [e for e in entries if (_stamp_seconds(e.stamp) or 0) >= options.since]
        if options.tail is not None:
            entries = entries[-options.tail:] if options.tail else []
        text = "".join(e.render(options.timestamps) for e in entries)
        return await _write_limited(response, text, options.limit, 0), len(raw)

    async def _follow(self, response: web.StreamResponse, target: LogTarget, options: _Options, sent: int,
                      offset: int) -> None:
        pending = b""
        while True:
            running = target.running()
            chunk = _read(target.path, offset)
            offset += len(chunk)
            pending += chunk
            complete, _, pending = pending.rpartition(b"\n")
            if complete:
                entries = parse_lines(complete.decode(errors="replace") + "\n", _mtime_stamp(target.path))
                text = "".join(e.render(options.timestamps) for e in entries)
                sent = await _write_limited(response, text, options.limit, sent)
                if options.limit is not None and sent >= options.limit:
                    return
            if not running:
                return
            await asyncio.sleep(_FOLLOW_POLL)


def _read(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read()
    except OSError:
        return b""


async def _write_limited(response: web.StreamResponse, text: str, limit: int | None, sent: int) -> int:
    data = text.encode()
    if limit is not None:
        data = data[:max(0, limit - sent)]
    if data:
        await response.write(data)
    return sent + len(data)


async def _ok(_: web.Request) -> web.Response:
    return web.Response(text="ok")
