"""Calling one webhook: where it is, TLS verified with its caBundle, one POST within its timeout.

Where (`util/webhook/client.go`, `serviceresolver.go`): `clientConfig.url` as written; `clientConfig.service`
resolved as kube-apiserver's default ClusterIP resolver does (`aggregator`'s `NewClusterIPServiceResolver`):
the Service's ClusterIP and the `spec.ports` entry whose `port` is the reference's port (443 by default), at
`https://<clusterIP>:<port><path>`, the TLS server name being `<name>.<namespace>.svc`. On the sim, ClusterIPs
are loopback addresses on which the sim's kube-proxy listens, so this reaches the Service's ready endpoints.
Only loopback is ever dialled: a URL or Service resolving elsewhere (another address, a host name other than
`localhost`, an ExternalName) fails the call saying so, which `failurePolicy` then decides about.

TLS: verified against `caBundle` (PEM, base64 in JSON), or the system roots without one; the server name is the
URL's host or the Service's DNS name. The POST carries `?timeout=<n>s` as client-go sets it, and the call is cut
at `timeoutSeconds` (`context deadline exceeded`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import json
import ssl
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from lwsconf.sim.apiserver import store
from lwsconf.sim.apiserver import validation_fields as f
from lwsconf.sim.apiserver.webhooks.review import CallFailed

SERVICES: store.ResourceKey = ("", "services")


@dataclass(frozen=True)
class Endpoint:
    url: str
    """What is dialled (a loopback address)."""
    server_name: str
    """Whom the certificate must name."""


def resolve(db: store.Store, client_config: dict[str, Any]) -> Endpoint:
    """The loopback URL and TLS server name of a webhook; CallFailed when there is none."""
    url = client_config.get("url")
    if isinstance(url, str):
        parts = urlsplit(url)
        host = parts.hostname or ""
        _require_loopback(host, f"url {url!r}")
        return Endpoint(url, host)
    service = f.as_dict(client_config.get("service"))
    name, namespace = f.as_str(service.get("name")), f.as_str(service.get("namespace"))
    port = service.get("port", 443)
    svc = db.get(SERVICES, namespace, name)
    if svc is None:
        raise CallFailed(f'could not get REST client: service "{name}" not found')
    spec = f.as_dict(svc.get("spec"))
    if spec.get("type") == "ExternalName":
        raise CallFailed(f"could not get REST client: service {namespace}/{name} is an ExternalName service: the "
                         "lwsconf sim only calls webhooks on loopback ClusterIPs")
    cluster_ip = f.as_str(spec.get("clusterIP"))
    if not cluster_ip or cluster_ip == "None":
        raise CallFailed(f'could not get REST client: cannot resolve service {namespace}/{name}: it has no ClusterIP')
    if not any(p.get("port") == port for _, p in f.dicts(spec.get("ports"))):
        raise CallFailed(f'could not get REST client: no service port {port} found for service "{name}"')
    _require_loopback(cluster_ip, f"service {namespace}/{name}")
    path = f.as_str(service.get("path"))
    return Endpoint(f"https://{cluster_ip}:{port}{path}", f"{name}.{namespace}.svc")


def _require_loopback(host: str, what: str) -> None:
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise CallFailed(f"failed to call webhook: {what} is not on a loopback address (127.0.0.0/8): the lwsconf sim "
                     "never connects elsewhere; serve the webhook on loopback")


@lru_cache(maxsize=64)
def _tls(ca_bundle: str) -> ssl.SSLContext:
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle, validate=True).decode()
        return ssl.create_default_context(cadata=pem)
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
        raise CallFailed(f"could not get REST client: unable to load root certificates: {exc}") from None


async def post(db: store.Store, hook: dict[str, Any], body: dict[str, Any]) -> Any:
    """POST the review to the webhook; the decoded JSON answer, or CallFailed saying why not."""
    client_config = f.as_dict(hook.get("clientConfig"))
    where = resolve(db, client_config)
    context = _tls(f.as_str(client_config.get("caBundle")))
    timeout = hook.get("timeoutSeconds") if f.is_int(hook.get("timeoutSeconds")) else 10
    url = f"{where.url}?timeout={timeout}s"
    try:
        async with asyncio.timeout(timeout), aiohttp.ClientSession() as session, session.post(
                url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json",
                                                              "Accept": "application/json"},
                ssl=context, server_hostname=where.server_name) as reply:
            data = await reply.read()
            status = reply.status
    except TimeoutError:
        raise CallFailed(f'failed to call webhook: Post "{url}": context deadline exceeded') from None
    except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
        raise CallFailed(f'failed to call webhook: Post "{url}": {exc}') from None
    if not 200 <= status < 300:
        raise CallFailed(f"failed to call webhook: the server responded with the status code {status} but did not "
                         f"return more information: {data[:200]!r}")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise CallFailed(f"failed to call webhook: the response is not JSON: {exc}") from None
