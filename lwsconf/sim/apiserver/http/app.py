"""The HTTP face of the simulated API server: auth, limits, error rendering, routing; start and stop.

`APIServer` is the in-process entry point (fixtures, `lwsconf sim up`):

    server = APIServer()            # https://127.0.0.1:<free port>, a random bearer token, a fresh cert
    await server.start()
    ... server.url, server.token, server.write_kubeconfig(path) ...
    await server.stop()

Every request must carry `Authorization: Bearer <token>` (401 otherwise), except the health
endpoints. Every failure leaves as a Kubernetes `Status` body; an unexpected exception becomes a 500
Status naming the request, and the store is never left half-written because each write is a
single synchronous step on the event loop.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

from lwsconf import shutdown
from lwsconf.sim.apiserver.apimachinery import errors, objects
from lwsconf.sim.apiserver.http import (
    context,
    handlers,
    kubeconfig,
    params,
    protobuf_http,
    reads,
    routing,
    subresources,
    tls,
    watch,
)
from lwsconf.sim.apiserver.http.context import JournalEntry, ServerContext, json_response
from lwsconf.sim.apiserver.patch.fieldmanager import entries as managed_fields
from lwsconf.sim.apiserver.schema import discovery, openapi, openapi_cache
from lwsconf.sim.apiserver.schema.openapi_builtin import BuiltinSpecs
from lwsconf.sim.apiserver.storage import resources, store

log = logging.getLogger("lwsconf.sim.apiserver")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_OPEN_PATHS = ("/healthz", "/livez", "/readyz")
_OPEN_PREFIXES = ("/version",)
"""Public as in kube-apiserver (the system:public-info-viewer role): health and version."""
CTX = web.AppKey("ctx", ServerContext)


@web.middleware
async def _errors_and_journal(request: web.Request, handler: Handler) -> web.StreamResponse:
    ctx: ServerContext = request.app[CTX]
    try:
        public = request.path in _OPEN_PATHS or request.path.startswith(_OPEN_PREFIXES)
        if not public and request.headers.get("Authorization") != f"Bearer {ctx.token}":
            raise errors.unauthorized()
        response = await handler(request)
    except errors.StatusError as exc:
        response = context.status_response(exc)
    except web.HTTPRequestEntityTooLarge:
        response = context.status_response(errors.too_large(context.MAX_BODY_BYTES))
    except web.HTTPException as exc:
        response = context.status_response(errors.StatusError(exc.status, exc.reason, exc.text or exc.reason))
    except Exception as exc:  # noqa: BLE001 - the server must answer, never drop the connection
        log.exception("unhandled error serving %s %s", request.method, request.path_qs)
        response = context.status_response(errors.internal(f"{type(exc).__name__} while serving "
                                                           f"{request.method} {request.path}: {exc}"))
    response = protobuf_http.encode_answer(request, response)
    segments = request.path.split("/")
    namespace = segments[segments.index("namespaces") + 1] if "namespaces" in segments[:-1] else None
    ctx.journal.append(JournalEntry(request.method, request.path, request.query_string, response.status,
                                    request.headers.get("User-Agent", ""), namespace,
                                    request.headers.get("Content-Type", ""), request.headers.get("Accept", "")))
    return response


async def _resource(request: web.Request) -> web.StreamResponse:
    ctx: ServerContext = request.app[CTX]
    target = routing.resolve(request.path, ctx.registry)
    protobuf_http.refuse_custom_body(request, target)
    if target.subresource is not None:
        return await subresources.dispatch(ctx, request, target)
    method = request.method
    verb = _verb(method, target, watching=target.legacy_watch or params.flag(request, "watch"))
    if verb not in target.info.verbs:
        raise errors.method_not_allowed()
    if verb == "watch":
        return await watch.serve(ctx, request, target)
    action = {"get": reads.get, "list": reads.list_, "create": handlers.create, "update": handlers.update,
              "patch": handlers.patch_, "delete": handlers.delete,
              "deletecollection": handlers.delete_collection}[verb]
    return await action(ctx, request, target)


def _verb(method: str, target: routing.Target, *, watching: bool) -> str:
    collection = target.name is None
    table = {("GET", True): "watch" if watching else "list", ("GET", False): "get",
             ("POST", True): "create", ("PUT", False): "update", ("PATCH", False): "patch",
             ("DELETE", False): "delete", ("DELETE", True): "deletecollection"}
    verb = table.get((method, collection))
    if verb is None:
        raise errors.method_not_allowed()
    return verb


async def _discovery(request: web.Request) -> web.Response:
    ctx: ServerContext = request.app[CTX]
    path = request.path.rstrip("/") or "/"
    segments = [s for s in path.split("/") if s]
    body: object = None
    if path == "/version":
        body = discovery.version_info()
    elif path == "/api":
        body = discovery.core_versions(ctx.port)
    elif path == "/apis":
        body = discovery.api_group_list(ctx.registry)
    elif len(segments) == 2 and segments[0] == "api":
        body = discovery.api_resource_list(ctx.registry, "", segments[1])
    elif len(segments) == 2 and segments[0] == "apis":
        body = discovery.api_group(ctx.registry, segments[1])
    elif len(segments) == 3 and segments[0] == "apis":
        body = discovery.api_resource_list(ctx.registry, segments[1], segments[2])
    elif path == "/openapi/v3":
        body = openapi.openapi_index(ctx.registry, ctx.openapi_specs)
    elif path.startswith("/openapi/v3/"):
        gv = routing.group_version(segments[2:])
        body = None if gv is None or gv[2] else openapi.openapi_group_version_body(
            ctx.registry, gv[0], gv[1], ctx.openapi_specs)
    if body is None:
        raise errors.StatusError(404, "NotFound", f"the server could not find the requested resource ({path})")
    return json_response(body)


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def _is_discovery(path: str) -> bool:
    segments = [s for s in path.split("/") if s]
    if path.rstrip("/") in ("/version", "/api", "/apis") or path.startswith("/openapi/"):
        return True
    return (len(segments) == 2 and segments[0] in ("api", "apis")) or (len(segments) == 3 and segments[0] == "apis")


async def _route(request: web.Request) -> web.StreamResponse:
    if request.path.startswith("/openapi/v2"):
        raise errors.StatusError(404, "NotFound", "OpenAPI v2 is not served; clients use /openapi/v3")
    if _is_discovery(request.path):
        return await _discovery(request)
    return await _resource(request)


class APIServer:
    """The simulated kube-apiserver, bound to 127.0.0.1 only.

    Args:
        port: where to listen (0: a free port).
        token: the bearer token clients must send (default: a random one).
        history_size: watch events kept for resuming watches (older resourceVersions get 410).
        service_range: where Service ClusterIPs come from (default 127.96.0.0/16); `SimCluster` passes
            its own cluster network's range, so simulated clusters side by side never share an address.
        openapi_specs: Kubernetes' OpenAPI documents for the built-in group-versions; "auto" (default) takes
            them from the user cache at start (`openapi_cache.for_sim_start`), None serves generated ones.
    """

    def __init__(self, *, port: int = 0, token: str | None = None, history_size: int = store.DEFAULT_HISTORY,
                 service_range: str | ipaddress.IPv4Network | None = None,
                 openapi_specs: BuiltinSpecs | None | Literal["auto"] = "auto") -> None:
        self.host = "127.0.0.1"
        self.requested_port = port
        self.ctx = ServerContext(db=store.Store(history_size), registry=resources.Registry(),
                                 token=token or secrets.token_urlsafe(24))
        if service_range is not None:
            self.ctx.service_range = ipaddress.IPv4Network(service_range)
        self._runner: web.AppRunner | None = None
        self.internal_socket: str | None = None
        """The plain-HTTP abstract Unix socket the sim's own components use (set by `start`); see `start`."""
        self.identity = tls.self_signed()
        # kube-apiserver's --kubelet-client-certificate, with a kubeadm cluster's subject and group
        self.kubelet_client = self.identity.issue_client("kube-apiserver-kubelet-client", "system:masters")
        self.ctx.kubelet_client = self.kubelet_client.client_context()
        self._openapi_auto = openapi_specs == "auto"
        if not isinstance(openapi_specs, str):
            self.ctx.openapi_specs = openapi_specs
        _seed_namespaces(self.ctx)

    @property
    def token(self) -> str:
        return self.ctx.token

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.ctx.port}"

    @property
    def ca_pem(self) -> bytes:
        """The server certificate, which clients trust as their CA (it is self-signed)."""
        return self.identity.cert_pem

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[_errors_and_journal], client_max_size=context.MAX_BODY_BYTES)
        app[CTX] = self.ctx
        for path in _OPEN_PATHS:
            app.router.add_get(path, _health)
        app.router.add_route("*", "/{tail:.*}", _route)
        return app

    async def start(self) -> None:
        if self._openapi_auto:
            # a first start may unpack the documents from the Go module cache (about a second): off the loop
            self.ctx.openapi_specs = await asyncio.to_thread(openapi_cache.for_sim_start)
        self._runner = web.AppRunner(self.build_app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.requested_port, reuse_address=True,
                           ssl_context=self.identity.server_context())
        await site.start()
        self.ctx.port = int(self._runner.addresses[0][1])
        # The sim's controllers, scheduler and kubelets share this process: they reach the same app over a Unix
        # socket without TLS. TLS stays on the TCP port every other client uses (kubectl sends tokens over TLS
        # only); for the in-process components it was ~15% of the API server's busy time (py-spy, 2026-12-03:
        # SSLProtocol writes of watch events). Same token, same handlers, same journal. An abstract socket
        # (Linux): no file to leave behind when a run is killed, no path-length limit from a long TMPDIR; like
        # the TCP port, only the token guards it.
        self.internal_socket = "\0" + shutdown.temp_prefix("api") + secrets.token_hex(6)
        await web.UnixSite(self._runner, self.internal_socket).start()
        log.info("API server listening on %s (and @%s for the sim's components)", self.url, self.internal_socket[1:])

    async def stop(self) -> None:
        for table in self.ctx.db.tables():
            for watcher in list(table.watchers):
                watcher.queue.put_nowait(None)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.internal_socket = None
        await self.ctx.webhooks.close()

    def write_kubeconfig(self, path: Path) -> Path:
        return kubeconfig.write(path, server=self.url, token=self.token, ca_pem=self.ca_pem)


def _seed_namespaces(ctx: ServerContext) -> None:
    info = ctx.registry.lookup("", "v1", "namespaces")
    assert info is not None
    for name in resources.DEFAULT_NAMESPACES:
        obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
        obj["metadata"]["uid"] = objects.new_uid()
        obj["metadata"]["creationTimestamp"] = objects.now_rfc3339()
        # kube-apiserver creates them through its own client, so they carry its Update entry (the label)
        managed_fields.record_update(None, obj, manager="kube-apiserver", api_version="v1", subresource=None,
                                     now=obj["metadata"]["creationTimestamp"], kind="Namespace", builtin=True,
                                     status_reset=True, sent={"metadata": obj["metadata"]})
        ctx.db.put(info.storage_key, obj)
