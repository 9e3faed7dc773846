"""The server's shared state, handed to every handler, and the plain responses and body reading they share.

One `ServerContext` per API server instance: the store, the storage semantics over it, the
registry of served types, admission, the request journal and the Service ClusterIP range. Handlers
are plain functions of (context, request, target), which keeps each verb small and testable.
Decoding a request's object is
`decoding`'s job, its query parameters `params`'s.
"""

from __future__ import annotations

import collections
import ipaddress
import json
import ssl
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from lwsconf import jsoncodec
from lwsconf.sim.apiserver.admission import admission
from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.policies.webhooks.dispatch import Webhooks
from lwsconf.sim.apiserver.schema.openapi_builtin import BuiltinSpecs
from lwsconf.sim.apiserver.storage import resources, storage, store

DEFAULT_SERVICE_RANGE = ipaddress.IPv4Network("127.96.0.0/16")
"""ClusterIPs of an API server started on its own; `SimCluster` gives each cluster its own range instead."""
MAX_BODY_BYTES = 3 * 1024 * 1024
"""Request bodies above this are refused with 413, as kube-apiserver's 3 MiB limit does."""

JSON_TYPES = ("application/json", "application/yaml", "application/json-patch+json",
              "application/merge-patch+json", "application/strategic-merge-patch+json",
              "application/apply-patch+yaml")


@dataclass
class JournalEntry:
    """One handled request, kept for diagnostics (per-namespace request journals in reports)."""

    method: str
    path: str
    query: str
    status: int
    user_agent: str
    namespace: str | None
    content_type: str = ""
    """The request's Content-Type (which patch flavour a client chose)."""
    accept: str = ""
    """The request's Accept header (whether the client asked for Tables)."""


@dataclass
class ServerContext:
    db: store.Store
    registry: resources.Registry
    token: str
    admission: admission.Admission = field(default_factory=admission.Admission)
    webhooks: Webhooks = field(default_factory=Webhooks)
    """The admission webhooks of the stored Mutating/ValidatingWebhookConfigurations (`webhooks.dispatch`)."""
    journal: collections.deque[JournalEntry] = field(default_factory=lambda: collections.deque(maxlen=50_000))
    port: int = 0
    service_range: ipaddress.IPv4Network = DEFAULT_SERVICE_RANGE
    """Where Service ClusterIPs are allocated (kube-apiserver's `--service-cluster-ip-range`)."""
    openapi_specs: BuiltinSpecs | None = None
    """Kubernetes' OpenAPI documents for built-in group-versions (`openapi_cache`); None: generated ones."""
    kubelet_client: ssl.SSLContext | bool = False
    """TLS towards kubelets (`proxy`, `streams`): presents the server's kubelet client certificate, as
    kube-apiserver's --kubelet-client-certificate; False (no certificate) until `APIServer` sets it."""

    @property
    def storage(self) -> storage.Storage:
        return storage.Storage(self.db)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    data = body if isinstance(body, bytes) else jsoncodec.dumps(body)
    return web.Response(body=data, status=status, content_type="application/json", headers=headers)


def status_response(err: errors.StatusError) -> web.Response:
    if err.plain_text:
        return web.Response(text=err.message, status=err.code, headers={"X-Content-Type-Options": "nosniff"})
    headers = {"Warning": ", ".join(f"299 - {json.dumps(w)}" for w in err.warnings)} if err.warnings else None
    return json_response(err.to_status(), status=err.code, headers=headers)


async def read_body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise errors.too_large(MAX_BODY_BYTES)
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise errors.too_large(MAX_BODY_BYTES) from None
