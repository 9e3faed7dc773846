"""Who may call the kubelet port: webhook authentication and authorization, as a kubelet runs with
`--anonymous-auth=false --authentication-token-webhook --authorization-mode=Webhook --client-ca-file=...`.

Every request to the node agent's kubelet port (`logserver.LogServer`: `/containerLogs`, `/healthz`, and
`streamserver`'s `/exec`, `/attach`, `/portForward`) passes `KubeletAuth.middleware` first, which does
what the kubelet's filter does (kubernetes v1.37.2 pkg/kubelet/server/server.go:380-433
`InstallAuthFilter`; every handler of its port is behind it, server.go:165-176 `filteringContainer`):

* **Authentication** (cmd/kubelet/app/auth.go:70-119 `BuildAuthn`): a TLS client certificate that
  verifies against the client CA (the user is its CommonName, its groups its Organizations, plus
  `system:authenticated`), else a bearer token, which the API server is asked about with a `TokenReview`
  (the answer cached for the kubelet's default `authentication.webhook.cacheTTL`, 2 minutes:
  pkg/kubelet/apis/config/v1beta1/defaults.go:97-99). Neither: `401 Unauthorized`. Anonymous requests are
  never accepted.
* **Authorization** (cmd/kubelet/app/auth.go:122-141 `BuildAuthz`, mode Webhook): a `SubjectAccessReview`
  for resource `nodes`, name the node, subresource from the path and verb from the HTTP method, exactly as
  pkg/kubelet/server/auth.go:69-157 `GetRequestAttributes` maps them (`KubeletFineGrainedAuthz`, GA and
  locked on since 1.36): `/containerLogs`, `/exec`, `/attach`, `/portForward` are `proxy`; `/healthz` is
  `healthz` or else `proxy`, `/pods` `pods` or else `proxy`; `/stats`, `/metrics`, `/logs` are `stats`,
  `metrics`, `log`. GET is `get`, POST `create` (so a WebSocket exec, a GET, needs `get nodes/proxy`).
  Answers cached as the kubelet's defaults: allowed 5 minutes, denied 30 seconds (defaults.go:103-108).
  Denied: `403 Forbidden (user=..., verb=..., resource=nodes, subresource(s)=[...])`; the review failing:
  `500 Authorization error (...)`, with the kubelet's wording.

Who is allowed is the API server's decision. On `--cluster=local` kube-apiserver presents its
`--kubelet-client-certificate` (signed by the cluster CA, group `system:masters`) and answers the reviews with
its authorizers (Node, RBAC). On the sim the API server presents a certificate signed by its own CA (the
one its kubeconfig carries: `lwsconf.sim.apiserver.http.tls`) and answers the reviews itself
(`lwsconf.sim.apiserver.http.reviews`): its one token, and the group `system:masters`, are all it allows.

One difference from a Go kubelet: Python's TLS layer rejects a client certificate the client CA did not
sign during the handshake (so the caller sees a TLS error, not a 401).
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors

log = logging.getLogger("lwsconf.sim.nodes.streams.kubeletauth")

TOKEN_CACHE_TTL = 120.0
"""Seconds a TokenReview's answer is reused (kubelet's authentication.webhook.cacheTTL default)."""
ALLOW_CACHE_TTL = 300.0
"""Seconds an allowing SubjectAccessReview is reused (authorization.webhook.cacheAuthorizedTTL)."""
DENY_CACHE_TTL = 30.0
"""Seconds a denying SubjectAccessReview is reused (authorization.webhook.cacheUnauthorizedTTL)."""

CACHE_SIZE = 1024
"""Entries each cache holds before the expired ones are dropped (random tokens cannot grow it without bound)."""

AUTHENTICATED = "system:authenticated"
_VERBS = {"POST": "create", "GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(frozen=True)
class User:
    """An authenticated caller (k8s.io/apiserver user.Info)."""

    name: str
    groups: tuple[str, ...]
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _is_subpath(path: str, prefix: str) -> bool:
    """pkg/kubelet/server/auth.go:64-67 isSubpath."""
    prefix = prefix.rstrip("/")
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] == "/")


def attributes(method: str, path: str) -> tuple[str, list[str]]:
    """(verb, subresources) the kubelet asks about for a request (auth.go:83-135 GetRequestAttributes)."""
    verb = _VERBS.get(method, "")
    subresources: list[str] = []
    for prefix, subresource in (("/pods", "pods"), ("/healthz", "healthz"), ("/configz", "configz"),
                                ("/runningpods/", "pods")):
        if _is_subpath(path, prefix):
            subresources.append(subresource)
            break
    for prefix, subresource in (("/stats", "stats"), ("/metrics", "metrics"), ("/logs", "log"),
                                ("/checkpoint", "checkpoint"), ("/statusz", "statusz"), ("/flagz", "configz")):
        if _is_subpath(path, prefix):
            subresources.append(subresource)
            break
    else:
        subresources.append("proxy")
    return verb, subresources


def _plain(status: int, text: str) -> web.Response:
    """go-restful's WriteErrorString: the text as it is."""
    return web.Response(status=status, text=text, content_type="text/plain")


def server_context(base: ssl.SSLContext, client_ca: bytes | None) -> ssl.SSLContext:
    """`base` (the kubelet's serving context) asking for a client certificate signed by `client_ca`."""
    if client_ca:
        base.load_verify_locations(cadata=client_ca.decode())
        base.verify_mode = ssl.CERT_OPTIONAL
    return base


class KubeletAuth:
    """The kubelet port's authentication and authorization for node `node_name`.

    Args:
        client: the agent's API client, which sends the TokenReviews and SubjectAccessReviews.
        node_name: the `name` of every SubjectAccessReview.
        client_ca: PEM of the CA whose client certificates authenticate (the kubelet's
            `authentication.x509.clientCAFile`); None: only bearer tokens do.
        clock: seconds, for the caches.
    """

    def __init__(self, client: kc.Client, node_name: str, client_ca: bytes | None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._node = node_name
        self.client_ca = client_ca
        self._clock = clock
        self._tokens: dict[str, tuple[float, User | None]] = {}
        self._decisions: dict[tuple[User, str, str], tuple[float, bool]] = {}

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """server.go:383-432: authenticate (401), authorize every attribute until one is allowed (403)."""
        user = await self.authenticate(request)
        if user is None:
            return _plain(401, "Unauthorized")
        verb, subresources = attributes(request.method, request.path)
        for subresource in subresources:
            try:
                if await self.authorize(user, verb, subresource):
                    return await handler(request)
            except errors.KubeClientError as exc:
                log.warning("authorization error for %s %s on node %s: %s", request.method, request.path,
                            self._node, exc)
                return _plain(500, f"Authorization error (user={user.name}, verb={verb}, resource=nodes, "
                                   f"subresource={subresource})")
        return _plain(403, f"Forbidden (user={user.name}, verb={verb}, resource=nodes, "
                           f"subresource(s)=[{' '.join(subresources)}])\n")

    async def authenticate(self, request: web.Request) -> User | None:
        """The x509 authenticator first, then the token webhook (a union, as k8s.io/apiserver's)."""
        cert = request.transport.get_extra_info("peercert") if request.transport is not None else None
        if cert:  # only present once verified against client_ca (CERT_OPTIONAL)
            return _cert_user(cert)
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        return await self._review_token(token)

    async def _review_token(self, token: str) -> User | None:
        now = self._clock()
        cached = self._tokens.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            review = await self._client.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", body=body)
        except errors.KubeClientError as exc:  # unable to authenticate: 401, not cached (server.go:386-390)
            log.warning("TokenReview for a caller of node %s failed: %s", self._node, exc)
            return None
        status = review.get("status") or {}
        user = _review_user(status.get("user") or {}) if status.get("authenticated") else None
        if len(self._tokens) >= CACHE_SIZE:  # bounded, as the kubelet's LRU caches are
            self._tokens = _unexpired(self._tokens, now)
        self._tokens[token] = (now + TOKEN_CACHE_TTL, user)
        return user

    async def authorize(self, user: User, verb: str, subresource: str) -> bool:
        """A SubjectAccessReview for (verb, nodes/subresource, this node), cached; raises KubeClientError."""
        now = self._clock()
        key = (user, verb, subresource)
        cached = self._decisions.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "resourceAttributes": {"verb": verb, "group": "", "version": "v1",
                                                       "resource": "nodes", "subresource": subresource,
                                                       "name": self._node}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        review = await self._client.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                            body=body)
        allowed = bool((review.get("status") or {}).get("allowed"))
        if len(self._decisions) >= CACHE_SIZE:
            self._decisions = _unexpired(self._decisions, now)
        self._decisions[key] = (now + (ALLOW_CACHE_TTL if allowed else DENY_CACHE_TTL), allowed)
        return allowed


def _unexpired(cache: dict[_K, tuple[float, _V]], now: float) -> dict[_K, tuple[float, _V]]:
    """The entries still valid at `now`; none when even those fill the cache."""
    kept = {k: v for k, v in cache.items() if v[0] > now}
    return kept if len(kept) < CACHE_SIZE else {}


def _cert_user(cert: dict[str, Any]) -> User:
    """k8s.io/apiserver x509 CommonNameUserConversion: CN the name, O the groups; then system:authenticated
    (the group every authenticated user gets, k8s.io/apiserver authenticatorfactory/delegating.go)."""
    names: list[str] = []
    groups: list[str] = []
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                names.append(str(value))
            elif key == "organizationName":
                groups.append(str(value))
    return User(names[0] if names else "", tuple(dict.fromkeys([*groups, AUTHENTICATED])))


def _review_user(info: dict[str, Any]) -> User:
    extra = tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in (info.get("extra") or {}).items()))
    groups = [str(g) for g in info.get("groups") or ()]
    return User(str(info.get("username") or ""), tuple(dict.fromkeys([*groups, AUTHENTICATED])),
                str(info.get("uid") or ""), extra)
