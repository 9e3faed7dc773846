"""`Client`: the sim controllers' HTTP client for the Kubernetes REST API, on plain dicts.

Why not the official `kubernetes` client? It is synchronous, deserializes into pydantic models
(0.5 ms per pod, measured with the v37 client on 2 cores) and hides watch errors; a controller needs
asyncio, raw dicts and every watch event. Why not share Python objects with the server? Because the
sim must stay honest: a controller sees exactly what an HTTP client of kube-apiserver sees.

The client only talks to loopback addresses: the simulator serves on 127.0.0.1 and nothing in the
harness may send traffic elsewhere. Errors come in two kinds, both `KubeClientError`s: `ApiError`
(the server answered with a failure `Status`) and `TransportError` (no answer at all).
"""

from __future__ import annotations

import asyncio
import copy
import ipaddress
import os
import pathlib
import ssl
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import yarl

from lwsconf import jsoncodec
from lwsconf.kubeclient import errors, kubeconfig

Obj = dict[str, Any]
Objs = list[Obj]
PatchType = Literal["merge", "json", "strategic"]

_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
_TRANSPORT_ERRORS = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


@dataclass(frozen=True)
class GVR:
    """How a resource type is addressed: group ("" for core), version, plural, and its scope."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """The list/create/watch path; namespace None means all namespaces (or cluster scope)."""
        if namespace is not None and not self.namespaced:
            raise ValueError(f"{self} is cluster-scoped: call it without namespace= (got {namespace!r})")
        if namespace:
            return f"{self.prefix}/namespaces/{namespace}/{self.plural}"
        return f"{self.prefix}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None, subresource: str | None = None) -> str:
        """The path of one object (or one of its subresources)."""
        if not name:
            raise ValueError(f"{self}: an object path needs a non-empty name")
        if self.namespaced and not namespace:
            raise ValueError(f"{self} is namespaced: pass namespace= for object {name!r}")
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{name}"
        return f"{path}/{subresource}" if subresource else path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}" if self.group else f"{self.plural}/{self.version}"


NAMESPACES = GVR("", "v1", "namespaces", namespaced=False)
PODS = GVR("", "v1", "pods")
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
SERVICES = GVR("", "v1", "services")
STATEFULSETS = GVR("apps", "v1", "statefulsets")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)
GVRs = list[GVR]


@dataclass(frozen=True)
class APIResource:
    """One entry of a discovery document: the resource type, its kind and its verbs."""

    gvr: GVR
    kind: str
    verbs: frozenset[str]


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ADDED, MODIFIED, DELETED or BOOKMARK (ERROR events are raised as ApiError)."""

    type: str
    object: Obj


Resources = list[APIResource]
"""(Aliases: inside `Client`, the name `list` is the LIST verb, not the builtin.)"""


def _check_loopback(base_url: str) -> yarl.URL:
    url = yarl.URL(base_url)
    host = url.host or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if url.scheme not in ("http", "https") or not loopback:
        raise ValueError(f"the sim client only talks to a loopback API server (http://127.0.0.1:PORT), "
                         f"got {base_url!r}")
    return url


def _ssl_context(ca_pem: bytes | str | None, client_cert: tuple[bytes, bytes] | None, insecure: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca_pem.decode() if isinstance(ca_pem, bytes) else ca_pem)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if client_cert is not None:
        with tempfile.TemporaryDirectory(prefix="lwsconf-cert-") as tmp:
            cert, key = pathlib.Path(tmp, "tls.crt"), pathlib.Path(tmp, "tls.key")
            cert.write_bytes(client_cert[0])
            key.touch(mode=0o600)
            key.write_bytes(client_cert[1])
            ctx.load_cert_chain(str(cert), str(key))
    return ctx


def _decode(data: bytes) -> Obj:
    try:
        parsed = jsoncodec.loads(data) if data.strip() else {}
    except ValueError:
        return {"message": data[:500].decode(errors="replace")}
    return parsed if isinstance(parsed, dict) else {"items": parsed}


class Client:
    """An asyncio client of one API server; create it inside the event loop that will use it.

    Args:
        base_url: the server's URL, e.g. `https://127.0.0.1:41234` (loopback only).
        token: the bearer token every request carries.
        ca_pem: the PEM certificate(s) to trust for https (the sim's `APIServer.ca_pem`); None means
            the system trust store, which does not know the sim's self-signed certificate.
        user_agent: how this controller appears in the server's request journal.
        request_timeout: seconds allowed for any non-watch request.
        unix_socket: talk plain HTTP over this Unix socket instead (`base_url` then only names the host in
            URLs): the sim's own components reach its API server this way (`APIServer.internal_socket`).
    """

    def __init__(self, base_url: str, token: str | None, *,
                 ca_pem: bytes | str | None = None,
                 user_agent: str = "lwsconf-sim-controller",
                 request_timeout: float = 30.0,
                 client_cert: tuple[bytes, bytes] | None = None,
                 insecure: bool = False,
                 loopback_only: bool = True,
                 unix_socket: str | None = None) -> None:
        if unix_socket is not None:
            base_url = "http://localhost"
        self.base_url = (str(_check_loopback(base_url)) if loopback_only else base_url).rstrip("/")
        self._unix_socket = unix_socket
        self.ca_pem = ca_pem.encode() if isinstance(ca_pem, str) else ca_pem
        """The CA this client trusts for the API server (None: the system store); a node agent's kubelet port takes
        it as its client CA when given none (`lwsconf.sim.nodes.streams.kubeletauth`), as kubeadm's kubelets do."""
        self._headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = aiohttp.ClientTimeout(total=request_timeout)
        self._ssl: ssl.SSLContext | bool = True
        if ca_pem is not None or client_cert is not None or insecure:
            self._ssl = _ssl_context(ca_pem, client_cert, insecure)
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_credentials(cls, creds: kubeconfig.Credentials, *, user_agent: str,
                         loopback_only: bool = True) -> Client:
        cert = ((creds.client_cert_pem, creds.client_key_pem)
                if creds.client_cert_pem and creds.client_key_pem else None)
        return cls(creds.server, creds.token, ca_pem=creds.ca_pem, user_agent=user_agent, client_cert=cert,
                   insecure=creds.insecure, loopback_only=loopback_only)

    @classmethod
    def from_kubeconfig(cls, path: str | os.PathLike[str], *, user_agent: str = "lwsconf-sim-controller",
                        context: str | None = None, loopback_only: bool = True) -> Client:
        """A client for a kubeconfig context (token or client-certificate users).

        `loopback_only` (the default, for sim components) refuses any server outside 127.0.0.0/8; the
        reference reconciler passes False to reach the cluster the user points it at.
        """
        return cls.from_credentials(kubeconfig.load(path, context), user_agent=user_agent,
                                    loopback_only=loopback_only)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def with_user_agent(self, user_agent: str) -> Client:
        """A client of the same server with the same credentials, sending another User-Agent (its own session)."""
        other = copy.copy(self)
        other._headers = {**self._headers, "User-Agent": user_agent}
        other._session = None
        return other

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # limit=0: watches hold a connection each, and a pool limit would starve plain requests.
            connector: aiohttp.BaseConnector = (aiohttp.UnixConnector(self._unix_socket, limit=0)
                                                if self._unix_socket is not None
                                                else aiohttp.TCPConnector(limit=0, ssl=self._ssl))
            self._session = aiohttp.ClientSession(headers=self._headers, connector=connector)
        return self._session

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      body: Any = None, content_type: str = "application/json") -> Obj:
        """Send one request and return the decoded JSON answer.

        Raises:
            errors.ApiError: the server answered with a non-2xx status.
            errors.TransportError: the server could not be reached or the answer was cut off.
        """
        data = None if body is None else jsoncodec.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else None
        try:
            async with self._http().request(method, self.base_url + path, params=params, data=data,
                                            headers=headers, timeout=self._timeout) as resp:
                raw = await resp.read()
                status = resp.status
        except _TRANSPORT_ERRORS as exc:
            raise errors.TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        decoded = _decode(raw)
        if status >= 300:
            raise errors.ApiError.from_status(status, decoded)
        return decoded

    # --- verbs ----------------------------------------------------------------------------------

    async def get(self, gvr: GVR, name: str, *, namespace: str | None = None) -> Obj:
        return await self.request("GET", gvr.object_path(name, namespace))

    async def list(self, gvr: GVR, *, namespace: str | None = None, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None) -> Obj:
        """One LIST request; the answer is the List object (`items`, `metadata.resourceVersion`)."""
        params = _params(labelSelector=label_selector, fieldSelector=field_selector,
                         limit=str(limit) if limit else None, **{"continue": continue_token})
        return await self.request("GET", gvr.collection_path(namespace), params=params)

    async def list_all(self, gvr: GVR, *, namespace: str | None = None, label_selector: str | None = None,
                       field_selector: str | None = None, page_size: int = 500) -> tuple[Objs, str]:
        """Every matching object, following `continue` tokens; returns (items, resourceVersion).

        The resourceVersion is the first page's: the sim's later pages show the state at the time they
        are read, not a snapshot, so a watch must start early enough to replay changes made meanwhile.
        """
        items: Objs = []
        token: str | None = None
        first_rv: str | None = None
        while True:
            page = await self.list(gvr, namespace=namespace, label_selector=label_selector,
                                   field_selector=field_selector, limit=page_size, continue_token=token)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            if first_rv is None:
                first_rv = str(meta.get("resourceVersion", ""))
            token = meta.get("continue")
            if not token:
                return items, first_rv

    async def create(self, gvr: GVR, body: Obj, *, namespace: str | None = None) -> Obj:
        ns = (namespace or (body.get("metadata") or {}).get("namespace")) if gvr.namespaced else None
        if gvr.namespaced and not ns:
            raise ValueError(f"{gvr} is namespaced: pass namespace= or set metadata.namespace")
        return await self.request("POST", gvr.collection_path(ns), body=body)

    async def replace(self, gvr: GVR, body: Obj, *, namespace: str | None = None,
                      subresource: str | None = None) -> Obj:
        """PUT the whole object (name and namespace from `body` unless given); sends its resourceVersion."""
        meta = body.get("metadata") or {}
        ns = (namespace or meta.get("namespace")) if gvr.namespaced else None
        return await self.request("PUT", gvr.object_path(meta.get("name", ""), ns, subresource), body=body)

    async def patch(self, gvr: GVR, name: str, body: Any, *, namespace: str | None = None,
                    patch_type: PatchType = "merge", subresource: str | None = None) -> Obj:
        return await self.request("PATCH", gvr.object_path(name, namespace, subresource), body=body,
                                  content_type=_PATCH_CONTENT_TYPES[patch_type])

    async def delete(self, gvr: GVR, name: str, *, namespace: str | None = None,
                     propagation_policy: str | None = None,
                     preconditions: Mapping[str, str] | None = None) -> Obj:
        """DELETE with a DeleteOptions body; returns the server's answer (the object or a Status)."""
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        return await self.request("DELETE", gvr.object_path(name, namespace), body=options)

    async def watch(self, gvr: GVR, *, namespace: str | None = None, resource_version: str | None = None,
                    label_selector: str | None = None, field_selector: str | None = None,
                    timeout_seconds: int | None = None,
                    allow_bookmarks: bool = True) -> AsyncGenerator[WatchEvent, None]:
        """Stream watch events until the server ends the watch.

        Use it inside `contextlib.aclosing(...)` so that leaving the loop early closes the connection.

        Raises:
            errors.ApiError: the watch was refused, or the stream carried an ERROR event (`is_gone` on a
                410 means: relist, then watch from the new resourceVersion).
            errors.TransportError: the connection failed or was cut mid-stream.
        """
        params = _params(watch="true", resourceVersion=resource_version, labelSelector=label_selector,
                         fieldSelector=field_selector,
                         timeoutSeconds=str(timeout_seconds) if timeout_seconds else None,
                         allowWatchBookmarks="true" if allow_bookmarks else None)
        # No read timeout: a quiet watch is healthy. A hung server is bounded by timeoutSeconds + margin.
        total = None if timeout_seconds is None else timeout_seconds + 30.0
        path = gvr.collection_path(namespace)
        try:
            async with self._http().get(self.base_url + path, params=params,
                                        timeout=aiohttp.ClientTimeout(total=total)) as resp:
                if resp.status >= 300:
                    raise errors.ApiError.from_status(resp.status, _decode(await resp.read()))
                async for line in _lines(resp.content):
                    yield _event(line)
        except _TRANSPORT_ERRORS as exc:
            raise errors.TransportError(f"watch {path}: {type(exc).__name__}: {exc}") from exc

    # --- discovery ------------------------------------------------------------------------------

    async def discover_resources(self) -> Resources:
        """Every served top-level resource, in each group's preferred version (subresources left out).

        A resource served in several versions of a group is reported once, in the first version the
        group lists (its preferred one), as client-go's `ServerPreferredResources` does.
        """
        out = await self._resources_of("", "v1")
        groups = (await self.request("GET", "/apis")).get("groups") or []
        for group in groups:
            versions = [v["version"] for v in group.get("versions") or []]
            preferred = (group.get("preferredVersion") or {}).get("version")
            if preferred in versions:
                versions.remove(preferred)
                versions.insert(0, preferred)
            seen: set[str] = set()
            for version in versions:
                for res in await self._resources_of(group["name"], version):
                    if res.gvr.plural not in seen:
                        seen.add(res.gvr.plural)
                        out.append(res)
        return out

    async def discover(self) -> GVRs:
        """Every served resource type that supports both list and watch."""
        return [r.gvr for r in await self.discover_resources() if {"list", "watch"} <= r.verbs]

    async def _resources_of(self, group: str, version: str) -> Resources:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = await self.request("GET", path)
        except errors.ApiError as exc:
            if exc.is_not_found:  # a CRD version removed between /apis and here
                return []
            raise
        out: Resources = []
        for entry in doc.get("resources") or []:
            if "/" in entry["name"]:
                continue
            gvr = GVR(group, version, entry["name"], bool(entry.get("namespaced")))
            out.append(APIResource(gvr, entry.get("kind", ""), frozenset(entry.get("verbs") or ())))
        return out


def _params(**values: str | None) -> dict[str, str]:
    return {k: v for k, v in values.items() if v is not None}


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Split a chunked stream on newlines, without aiohttp's 128 KiB line limit (CRDs are bigger)."""
    buffer = bytearray()
    async for chunk in content.iter_any():
        buffer.extend(chunk)
        while (end := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:end])
            del buffer[:end + 1]
            if line.strip():
                yield line
    if buffer.strip():
        yield bytes(buffer)


def _event(line: bytes) -> WatchEvent:
    try:
        raw = jsoncodec.loads(line)
        etype, obj = str(raw["type"]), raw["object"]
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.TransportError(f"unreadable watch event {line[:200]!r}: {exc}") from exc
    if etype == "ERROR":
        raise errors.ApiError.from_status(int(obj.get("code") or 500), obj)
    return WatchEvent(etype, obj)
