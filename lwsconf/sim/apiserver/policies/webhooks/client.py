"""Calling one webhook: where it is, TLS verified with its caBundle, one POST within its timeout.

Where (`util/webhook/client.go` `hookClientConfig`): `clientConfig.url` as written; `clientConfig.service`
resolved as kube-apiserver's default ClusterIP resolver does (`aggregator`'s `NewClusterIPServiceResolver`):
the Service's ClusterIP and the `spec.ports` entry whose `port` is the reference's port (443 by default), at
`https://<clusterIP>:<port><path>`, the TLS server name being `<name>.<namespace>.svc`. On the sim, ClusterIPs
are loopback addresses on which the sim's kube-proxy listens, so this reaches the Service's ready endpoints.
Only loopback is ever dialled: a URL or Service resolving elsewhere (another address, a host name other than
`localhost`, an ExternalName) fails the call saying so, which `failurePolicy` then decides about. As in
kube-apiserver, a service is resolved when the call dials, so its errors read `Post "https://<svc>.<ns>.svc:...":
service "x" not found`, and connection errors are worded as Go's (`dial tcp 127.0.0.1:1: connect: connection
refused`, `x509: certificate signed by unknown authority`).

TLS: verified against `caBundle` (PEM, base64 in JSON), or the system roots without one; the server name is the
URL's host or the Service's DNS name. The POST carries `?timeout=<n>s` as client-go sets it, and the call is cut
at `timeoutSeconds` (`context deadline exceeded`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import ipaddress
import json
import ssl
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.policies.webhooks.review import CallFailed
from lwsconf.sim.apiserver.storage import store

SERVICES: store.ResourceKey = ("", "services")


@dataclass(frozen=True)
class Endpoint:
    url: str
    """What errors name, as kube-apiserver's client does (`https://<svc>.<ns>.svc:<port><path>` for a service)."""
    dial: str
    """What is dialled (a loopback address)."""
    server_name: str
    """Whom the certificate must name."""


def endpoint(client_config: dict[str, Any]) -> Endpoint:
    """Where a webhook is, before any Service is resolved (`hookClientConfig`)."""
    url = client_config.get("url")
    if isinstance(url, str):
        return Endpoint(url, url, urlsplit(url).hostname or "")
    service = f.as_dict(client_config.get("service"))
    name, namespace = f.as_str(service.get("name")), f.as_str(service.get("namespace"))
    port, path = service.get("port", 443), f.as_str(service.get("path"))
    server_name = f"{name}.{namespace}.svc"
    return Endpoint(f"https://{server_name}:{port}{path}", "", server_name)


def resolve(db: store.Store, client_config: dict[str, Any], where: Endpoint) -> str:
    """The loopback URL to dial; an error message worded as the Go resolver's (`proxy.ResolveCluster`) otherwise."""
    if where.dial:
        _require_loopback(urlsplit(where.dial).hostname or "", f"url {where.dial!r}")
        return where.dial
    service = f.as_dict(client_config.get("service"))
    name, namespace = f.as_str(service.get("name")), f.as_str(service.get("namespace"))
    port = service.get("port", 443)
    svc = db.get(SERVICES, namespace, name)
    if svc is None:
        raise _Unresolved(f'service "{name}" not found')
    spec = f.as_dict(svc.get("spec"))
    if spec.get("type") == "ExternalName":
        raise _Unresolved(f"service {namespace}/{name} is an ExternalName service: the lwsconf sim only calls "
                          "webhooks on loopback ClusterIPs")
    cluster_ip = f.as_str(spec.get("clusterIP"))
    if cluster_ip == "None":
        raise _Unresolved('cannot route to service with ClusterIP "None"')
    if not any(p.get("port") == port for _, p in f.dicts(spec.get("ports"))):
        raise _Unresolved(f'no service port {port} found for service "{name}"')
    _require_loopback(cluster_ip, f"service {namespace}/{name}")
    return f"https://{cluster_ip}:{port}{f.as_str(service.get('path'))}"


class _Unresolved(Exception):
    """Why a webhook's address could not be found or may not be dialled (the dial error of the Go client)."""


def _require_loopback(host: str, what: str) -> None:
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise _Unresolved(f"{what} is not on a loopback address (127.0.0.0/8): the lwsconf sim never connects "
                      "elsewhere; serve the webhook on loopback")


@lru_cache(maxsize=64)
def _tls(ca_bundle: str) -> ssl.SSLContext:
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle, validate=True).decode()
        return ssl.create_default_context(cadata=pem)
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
        raise CallFailed(f"could not get REST client: unable to load root certificates: {exc}") from None


class Connections:
    """One HTTP client for every webhook call of a server, so connections to a webhook are kept alive and reused
    (kube-apiserver caches a client per webhook configuration, `ClientManager.HookClient`); closed with the server."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def post(connections: Connections, db: store.Store, hook: dict[str, Any], body: dict[str, Any]) -> Any:
    """POST the review to the webhook; the decoded JSON answer, or CallFailed saying why not as Go's client would."""
    client_config = f.as_dict(hook.get("clientConfig"))
    where = endpoint(client_config)
    context = _tls(f.as_str(client_config.get("caBundle")))
    timeout = hook.get("timeoutSeconds") if f.is_int(hook.get("timeoutSeconds")) else 10
    shown = f"{where.url}?timeout={timeout}s"
    try:
        async with asyncio.timeout(timeout):
            dial = f"{resolve(db, client_config, where)}?timeout={timeout}s"
            status, data = await _exchange(connections.session(), dial, body, context, where.server_name)
    except TimeoutError:
        raise CallFailed(f'failed to call webhook: Post "{shown}": context deadline exceeded') from None
    except _Unresolved as exc:
        raise CallFailed(f'failed to call webhook: Post "{shown}": {exc}') from None
    except aiohttp.ClientConnectorCertificateError:
        raise CallFailed(f'failed to call webhook: Post "{shown}": tls: failed to verify certificate: '
                         "x509: certificate signed by unknown authority") from None
    except aiohttp.ClientConnectorError as exc:
        raise CallFailed(f'failed to call webhook: Post "{shown}": dial tcp {exc.host}:{exc.port}: connect: '
                         f"{_os_reason(exc)}") from None
    except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
        raise CallFailed(f'failed to call webhook: Post "{shown}": {exc}') from None
    if not 200 <= status < 300:
        raise CallFailed(f"failed to call webhook: the server responded with the status code {status} but did not "
                         f"return more information: {data[:200]!r}")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise CallFailed(f"failed to call webhook: the response is not JSON: {exc}") from None


async def _exchange(session: aiohttp.ClientSession, url: str, body: dict[str, Any], context: ssl.SSLContext,
                    server_name: str) -> tuple[int, bytes]:
    async with session.post(url, data=json.dumps(body).encode(),
                            headers={"Content-Type": "application/json", "Accept": "application/json"},
                            ssl=context, server_hostname=server_name) as reply:
        return reply.status, await reply.read()


def _os_reason(exc: aiohttp.ClientConnectorError) -> str:
    """The errno text as Go prints it (`connection refused`), not Python's sentence."""
    return {errno.ECONNREFUSED: "connection refused", errno.EHOSTUNREACH: "no route to host",
            errno.ENETUNREACH: "network is unreachable"}.get(exc.os_error.errno or 0, exc.os_error.strerror or str(exc))
