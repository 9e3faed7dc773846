"""The sim controllers' client: GVR paths, errors, discovery, watch streams, the informer, the work queue.

Informer recovery (410, dropped connections) is driven by a scripted fake server, because the real
API server cannot be made to expire a live watcher's resourceVersion on demand; everything else also
runs against the real in-process API server. Each test runs its own event loop via `asyncio.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import pathlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.kubeclient import informer as informer_mod
from lwsconf.ports import reserve_port
from lwsconf.sim.apiserver.http import app

Obj = dict[str, Any]
CM = kc.CONFIGMAPS


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 30.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


async def eventually(check: Callable[[], bool], describe: Callable[[], object], *, timeout: float = 5.0) -> None:
    """Poll `check` every 10 ms; on timeout fail with the observed state."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s; observed: {describe()}")
        await asyncio.sleep(0.01)


def cm(name: str, rv: str, uid: str | None = None, namespace: str = "ns") -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "uid": uid or f"uid-{name}"}}


class Recorder:
    """An informer handler that keeps (type, name, old resourceVersion) tuples."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []

    def __call__(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        old_rv = None if old is None else old["metadata"]["resourceVersion"]
        self.events.append((event_type, obj["metadata"]["name"], old_rv))


# --- a scripted fake API server ---------------------------------------------------------------

WatchScript = Callable[[web.Request], Awaitable[web.StreamResponse]]


def stream(*events: Obj, end: str = "clean") -> WatchScript:
    """A watch answer: the events, then a clean end, a dropped connection, or an open stream."""
    async def serve(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        for event in events:
            await resp.write(json.dumps(event).encode() + b"\n")
        if end == "drop":
            assert request.transport is not None
            request.transport.close()
        elif end == "hang":
            await asyncio.Event().wait()
        return resp
    return serve


class FakeAPI:
    """Answers LISTs from `lists` (the last one repeats) and watches from `watches` (then hangs)."""

    def __init__(self, lists: list[Obj], watches: list[WatchScript]) -> None:
        self.lists = lists
        self.watches = watches
        self.requests: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path_qs)
        if request.query.get("watch") == "true":
            script = self.watches.pop(0) if self.watches else stream(end="hang")
            return await script(request)
        body = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        return web.json_response(body)

    def watch_rvs(self) -> list[str]:
        return [q.split("resourceVersion=")[1].split("&")[0] for q in self.requests if "watch=true" in q]


@contextlib.asynccontextmanager
async def fake_server(handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def cm_list(rv: str, *items: Obj) -> Obj:
    return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": list(items)}


def expired() -> Obj:
    return {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                        "reason": "Expired", "code": 410, "message": "too old resource version"}}


async def run_informer(fake: FakeAPI, check: Callable[[Recorder, informer_mod.Informer], bool],
                       ) -> tuple[Recorder, informer_mod.Informer]:
    """Run an informer against `fake` until `check` holds; returns its events and (stopped) cache."""
    async with fake_server(fake.handle) as url, kc.Client(url, "t") as client:
        informer = kubeclient.Informer(client, CM, namespace="ns",
                                       backoff=kubeclient.Backoff(initial=0.01, cap=0.05))
        recorder = Recorder()
        informer.add_handler(recorder)
        informer.start()
        try:
            await eventually(lambda: check(recorder, informer),
                             lambda: (recorder.events, informer, fake.requests))
        finally:
            informer.stop()
            await informer.join()
    return recorder, informer


def run_informer_sync(fake: FakeAPI, check: Callable[[Recorder, informer_mod.Informer], bool],
                      ) -> tuple[Recorder, informer_mod.Informer]:
    out: list[tuple[Recorder, informer_mod.Informer]] = []

    async def scenario() -> None:
        out.append(await run_informer(fake, check))
    run(scenario)
    return out[0]


# --- GVR, errors, loopback --------------------------------------------------------------------

def test_gvr_builds_core_group_and_cluster_scoped_paths() -> None:
    sts = kc.GVR("apps", "v1", "statefulsets")
    assert sts.collection_path() == "/apis/apps/v1/statefulsets"
    assert sts.object_path("web", "ns", "scale") == "/apis/apps/v1/namespaces/ns/statefulsets/web/scale"
    assert kc.PODS.collection_path("ns") == "/api/v1/namespaces/ns/pods"
    assert kc.NAMESPACES.object_path("ns", subresource="finalize") == "/api/v1/namespaces/ns/finalize"
    assert sts.api_version == "apps/v1" and kc.PODS.api_version == "v1"


def test_gvr_rejects_a_missing_or_superfluous_namespace() -> None:
    with pytest.raises(ValueError, match="is namespaced"):
        kc.PODS.object_path("p")
    with pytest.raises(ValueError, match="cluster-scoped"):
        kc.NAMESPACES.collection_path("ns")


def test_client_refuses_non_loopback_servers() -> None:
    with pytest.raises(ValueError, match="loopback"):
        kc.Client("http://10.0.0.1:6443", "t")
    kc.Client("http://127.0.0.1:1", "t")
    kc.Client("http://localhost:1", "t")


def test_api_error_classifies_status_bodies() -> None:
    gone = errors.ApiError.from_status(200, {"reason": "Expired", "code": 410, "message": "too old"})
    assert gone.is_gone and gone.status == 410 and "too old" in str(gone)
    exists = errors.ApiError.from_status(409, {"reason": "AlreadyExists"})
    assert exists.is_already_exists and not exists.is_conflict
    assert errors.ApiError.from_status(409, {"reason": "Conflict"}).is_conflict
    assert errors.ApiError.from_status(404, {}).is_not_found


def test_transport_errors_are_raised_as_transport_error() -> None:
    async def scenario() -> None:
        async with fake_server(FakeAPI([cm_list("1")], []).handle) as url:
            pass  # the port is now closed
        async with kc.Client(url, "t") as client:
            with pytest.raises(errors.TransportError):
                await client.get(CM, "x", namespace="ns")
    run(scenario)


# --- discovery and watch parsing (fake server) --------------------------------------------------

DISCOVERY: dict[str, Obj] = {
    "/api/v1": {"resources": [
        {"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list", "watch", "delete"]},
        {"name": "pods/status", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
        {"name": "bindings", "namespaced": True, "kind": "Binding", "verbs": ["create"]}]},
    "/apis": {"groups": [{"name": "x.io", "versions": [{"version": "v1beta1"}, {"version": "v1"}],
                          "preferredVersion": {"version": "v1"}}]},
    "/apis/x.io/v1": {"resources": [{"name": "things", "namespaced": False, "kind": "Thing",
                                     "verbs": ["list", "watch"]}]},
    "/apis/x.io/v1beta1": {"resources": [
        {"name": "things", "namespaced": False, "kind": "Thing", "verbs": ["list", "watch"]},
        {"name": "oldies", "namespaced": True, "kind": "Oldie", "verbs": ["list", "watch"]}]},
}


def test_discover_prefers_each_groups_preferred_version_and_skips_subresources() -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.json_response(DISCOVERY[request.path])

    async def scenario() -> None:
        async with fake_server(handle) as url, kc.Client(url, "t") as client:
            assert await client.discover() == [
                kc.PODS, kc.GVR("x.io", "v1", "things", namespaced=False), kc.GVR("x.io", "v1beta1", "oldies")]
            kinds = {r.kind for r in await client.discover_resources()}
            assert kinds == {"Pod", "Binding", "Thing", "Oldie"}
    run(scenario)


def test_watch_reads_events_larger_than_aiohttp_line_limit() -> None:
    big = cm("big", "5")
    big["data"] = {"blob": "x" * 300_000}
    fake = FakeAPI([cm_list("1")], [stream({"type": "ADDED", "object": big},
                                           {"type": "BOOKMARK", "object": cm("", "6")})])

    async def scenario() -> None:
        async with fake_server(fake.handle) as url, kc.Client(url, "t") as client:
            events = [e async for e in client.watch(CM, namespace="ns", resource_version="1")]
        assert [(e.type, len(e.object.get("data", {}).get("blob", ""))) for e in events] == [
            ("ADDED", 300_000), ("BOOKMARK", 0)]
        assert "allowWatchBookmarks=true" in fake.requests[0]
    run(scenario)


def test_watch_error_event_raises_api_error_gone() -> None:
    fake = FakeAPI([cm_list("1")], [stream(expired())])

    async def scenario() -> None:
        async with fake_server(fake.handle) as url, kc.Client(url, "t") as client:
            with pytest.raises(errors.ApiError) as err:
                async for _ in client.watch(CM, namespace="ns", resource_version="1"):
                    pass
        assert err.value.is_gone and err.value.reason == "Expired"
    run(scenario)


# --- the informer (fake server) -----------------------------------------------------------------

def test_informer_relists_after_410() -> None:
    fake = FakeAPI(
        lists=[cm_list("10", cm("a", "3"), cm("b", "4"), cm("c", "5"), cm("e", "6")),
               cm_list("20", cm("a", "15"), cm("c", "19"), cm("d", "18"), cm("e", "6"))],
        watches=[stream({"type": "MODIFIED", "object": cm("c", "11")}, expired())])
    recorder, informer = run_informer_sync(fake, lambda r, i: i.relists == 2 and len(r.events) == 9)
    assert recorder.events == [
        ("ADDED", "a", None), ("ADDED", "b", None), ("ADDED", "c", None), ("ADDED", "e", None),
        ("MODIFIED", "c", "5"),
        # the relist, diffed against the cache: a and c changed, d is new, b is gone, e is unchanged
        ("MODIFIED", "a", "3"), ("MODIFIED", "c", "11"), ("ADDED", "d", None), ("DELETED", "b", "4")]
    assert informer.keys() == [("ns", "a"), ("ns", "c"), ("ns", "d"), ("ns", "e")]
    assert fake.watch_rvs() == ["10", "20"], "the second watch starts from the relist's resourceVersion"


def test_informer_relists_after_a_dropped_connection() -> None:
    fake = FakeAPI(
        lists=[cm_list("10", cm("a", "3"), cm("b", "4")),
               cm_list("20", cm("a", "3"), cm("b", "19", uid="uid-b2"))],
        watches=[stream({"type": "MODIFIED", "object": cm("a", "11")}, end="drop")])
    recorder, informer = run_informer_sync(fake, lambda r, i: i.relists == 2 and len(r.events) == 6)
    assert recorder.events == [
        ("ADDED", "a", None), ("ADDED", "b", None), ("MODIFIED", "a", "3"),
        # a's change was lost with the connection; b was deleted and recreated meanwhile (new uid)
        ("MODIFIED", "a", "11"), ("DELETED", "b", "4"), ("ADDED", "b", None)]
    cached_b = informer.get("b", "ns")
    assert cached_b is not None and cached_b["metadata"]["uid"] == "uid-b2"


def test_informer_resumes_a_cleanly_ended_watch_without_relisting() -> None:
    fake = FakeAPI(
        lists=[cm_list("10", cm("a", "3"))],
        watches=[stream({"type": "MODIFIED", "object": cm("a", "12")},
                        {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": "15"}}}),
                 stream({"type": "MODIFIED", "object": cm("a", "12")},  # a repeat is ignored
                        {"type": "DELETED", "object": cm("a", "16")}, end="hang")])
    recorder, informer = run_informer_sync(fake, lambda r, i: len(r.events) == 3)
    assert recorder.events == [("ADDED", "a", None), ("MODIFIED", "a", "3"), ("DELETED", "a", "12")]
    assert informer.relists == 1 and informer.keys() == []
    assert fake.watch_rvs() == ["10", "15"], "the watch resumes from the bookmark's resourceVersion"


def test_informer_watches_from_the_first_page_of_a_paged_list_and_skips_replayed_events() -> None:
    first_page = cm_list("10", cm("a", "3"))
    first_page["metadata"]["continue"] = "page-2"
    fake = FakeAPI(
        lists=[first_page, cm_list("12", cm("b", "11"))],  # b was created between the two pages
        watches=[stream({"type": "ADDED", "object": cm("b", "11")},  # replayed: already listed
                        {"type": "DELETED", "object": cm("ghost", "11")},  # never seen: nothing to tell
                        {"type": "MODIFIED", "object": cm("a", "12")}, end="hang")])
    recorder, informer = run_informer_sync(fake, lambda r, i: len(r.events) == 3)
    assert recorder.events == [("ADDED", "a", None), ("ADDED", "b", None), ("MODIFIED", "a", "3")]
    assert "continue=page-2" in fake.requests[1] and fake.watch_rvs() == ["10"], fake.requests
    assert informer.keys() == [("ns", "a"), ("ns", "b")]


def test_informer_backs_off_between_failed_lists_and_reports_why_it_is_not_synced() -> None:
    stamps: list[float] = []

    async def failing(request: web.Request) -> web.StreamResponse:
        stamps.append(time.monotonic())
        return web.json_response({"kind": "Status", "reason": "InternalError", "code": 500}, status=500)

    async def scenario() -> None:
        async with fake_server(failing) as url, kc.Client(url, "t") as client:
            informer = kubeclient.Informer(client, CM, backoff=kubeclient.Backoff(initial=0.02, cap=0.08))
            informer.start()
            with pytest.raises(TimeoutError, match="did not sync"):
                await informer.wait_synced(timeout=0.01)
            await eventually(lambda: len(stamps) >= 5, lambda: stamps)
            informer.stop()
            await informer.join()
        gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)][:4]
        assert [round(g, 2) >= d for g, d in zip(gaps, (0.02, 0.04, 0.08, 0.08), strict=True)] == [True] * 4, gaps
    run(scenario)


# --- against the real API server ------------------------------------------------------------------

@contextlib.asynccontextmanager
async def api_server(port: int = 0) -> AsyncIterator[tuple[app.APIServer, kc.Client]]:
    server = app.APIServer(port=port)
    await server.start()
    client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="kubeclient-test")
    try:
        yield server, client
    finally:
        await client.close()
        await server.stop()


def configmap(name: str, namespace: str = "default", **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace,
                                                                  "labels": labels}, "data": {"v": "0"}}


def test_client_round_trips_objects_and_maps_failures_to_api_errors() -> None:
    async def scenario() -> None:
        async with api_server() as (_, client):
            created = await client.create(CM, configmap("c1"))
            assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
            with pytest.raises(errors.ApiError) as exists:
                await client.create(CM, configmap("c1"))
            assert exists.value.is_already_exists
            created["data"] = {"v": "1"}
            replaced = await client.replace(CM, created)
            with pytest.raises(errors.ApiError) as stale:
                await client.replace(CM, created)  # still carries the old resourceVersion
            assert stale.value.is_conflict, stale.value
            await client.patch(CM, "c1", {"data": {"m": "merge"}}, namespace="default")
            await client.patch(CM, "c1", [{"op": "add", "path": "/data/j", "value": "json"}], namespace="default",
                               patch_type="json")
            await client.patch(CM, "c1", {"data": {"s": "strategic"}}, namespace="default", patch_type="strategic")
            got = await client.get(CM, "c1", namespace="default")
            assert got["data"] == {"v": "1", "m": "merge", "j": "json", "s": "strategic"}
            assert int(got["metadata"]["resourceVersion"]) > int(replaced["metadata"]["resourceVersion"])
            with pytest.raises(errors.ApiError) as wrong_uid:
                await client.delete(CM, "c1", namespace="default", preconditions={"uid": "not-the-uid"})
            assert wrong_uid.value.is_conflict
            await client.delete(CM, "c1", namespace="default", propagation_policy="Background")
            with pytest.raises(errors.ApiError) as missing:
                await client.get(CM, "c1", namespace="default")
            assert missing.value.is_not_found and missing.value.reason == "NotFound"
    run(scenario)


def test_client_from_kubeconfig_trusts_the_sims_certificate_and_nothing_else(tmp_path: pathlib.Path) -> None:
    async def scenario() -> None:
        async with api_server() as (server, _):
            kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
            async with kc.Client.from_kubeconfig(kubeconfig) as client:
                assert (await client.get(kc.NAMESPACES, "default"))["metadata"]["name"] == "default"
            async with kc.Client(server.url, server.token) as untrusting:  # system CAs only
                with pytest.raises(errors.TransportError, match="[Cc]ertificate"):
                    await untrusting.get(kc.NAMESPACES, "default")
    run(scenario)


def test_list_all_follows_continue_tokens_and_discover_lists_watchable_types() -> None:
    async def scenario() -> None:
        async with api_server() as (_, client):
            for i in range(7):
                await client.create(CM, configmap(f"c{i}", tier="a" if i % 2 else "b"))
            items, rv = await client.list_all(CM, namespace="default", page_size=3)
            assert [i["metadata"]["name"] for i in items] == [f"c{i}" for i in range(7)] and rv
            odd, _ = await client.list_all(CM, label_selector="tier=a", page_size=2)
            assert [i["metadata"]["name"] for i in odd] == ["c1", "c3", "c5"]
            gvrs = await client.discover()
            assert {kc.NAMESPACES, kc.PODS, CM, kc.STATEFULSETS, kc.CRDS} <= set(gvrs), gvrs
            assert all("/" not in g.plural for g in gvrs)
    run(scenario)


def test_informer_follows_changes_and_a_label_selector_on_the_api_server() -> None:
    async def scenario() -> None:
        async with api_server() as (_, client):
            await client.create(CM, configmap("before", app="x"))
            everything = kubeclient.Informer(client, CM)
            selected = kubeclient.Informer(client, CM, label_selector="app=x")
            seen_all, seen_x = Recorder(), Recorder()
            everything.add_handler(seen_all)
            selected.add_handler(seen_x)
            for informer in (everything, selected):
                informer.start()
                await informer.wait_synced(timeout=5)
            await client.create(CM, configmap("other"))
            await client.patch(CM, "before", {"metadata": {"labels": {"app": "y"}}}, namespace="default")
            await client.delete(CM, "other", namespace="default")
            await eventually(lambda: len(seen_all.events) == 4 and len(seen_x.events) == 2,
                             lambda: (seen_all.events, seen_x.events))
            assert [e[:2] for e in seen_all.events] == [("ADDED", "before"), ("ADDED", "other"),
                                                        ("MODIFIED", "before"), ("DELETED", "other")]
            assert [e[:2] for e in seen_x.events] == [("ADDED", "before"), ("DELETED", "before")], \
                "an object that stops matching the selector looks deleted"
            assert everything.keys() == [("default", "before")] and selected.keys() == []
            for informer in (everything, selected):
                informer.stop()
                await informer.join()
    run(scenario)


def test_informer_relists_after_the_api_server_restarts() -> None:
    # Held for the whole test, not picked and released (lwsconf/ports.py): no other process can take the port
    # before the first start or while the server is stopped; the server binds with reuse_address beside it.
    held = reserve_port()
    port = held.port

    async def scenario() -> None:
        async with api_server(port) as (server, client):
            await client.create(CM, configmap("before"))
            informer = kubeclient.Informer(client, CM, backoff=kubeclient.Backoff(initial=0.01, cap=0.1))
            informer.start()
            await informer.wait_synced(timeout=5)
            await server.stop()
            await server.start()  # same port, same store
            await client.create(CM, configmap("after"))
            await client.delete(CM, "before", namespace="default")
            await eventually(lambda: informer.keys() == [("default", "after")] and informer.relists >= 2,
                             lambda: (informer, informer.keys()))
            informer.stop()
            await informer.join()
    with held:
        run(scenario)


WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}
WIDGETS = kc.GVR("example.com", "v1", "widgets")


def test_dynamic_informers_follow_crds_registered_and_removed_at_run_time() -> None:
    async def scenario() -> None:
        async with api_server() as (_, client):
            events: list[tuple[str, str, str]] = []
            informers = kubeclient.DynamicInformers(
                client, handler=lambda gvr, t, obj, old: events.append((gvr.plural, t, obj["metadata"]["name"])),
                interval=0.05)
            stop = asyncio.Event()
            task = asyncio.create_task(informers.run(stop))
            await informers.wait_synced(timeout=5)
            assert informers.gvr_for("example.com/v1", "Widget") is None
            await client.create(kc.CRDS, WIDGET_CRD)
            await eventually(lambda: informers.informer(WIDGETS) is not None, lambda: informers.gvrs)
            assert informers.gvr_for("example.com/v1beta1", "Widget") == WIDGETS, "any version of the group"
            await client.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                          "metadata": {"name": "w", "namespace": "default"}, "spec": {"a": 1}})
            await eventually(lambda: ("widgets", "ADDED", "w") in events, lambda: events)
            cached = informers.informer(WIDGETS).get("w", "default")  # type: ignore[union-attr]
            assert cached is not None and "spec" not in cached, "metadata only by default"
            await client.delete(kc.CRDS, "widgets.example.com")
            await eventually(lambda: informers.informer(WIDGETS) is None and ("widgets", "DELETED", "w") in events,
                             lambda: (informers.gvrs, events))
            stop.set()
            await asyncio.wait_for(task, 5)
    run(scenario)
