"""Shared scaffolding for the workload-controller tests: a real API server plus one controller.

No kubelet or scheduler runs here, so tests play their part: `set_pod_status` patches
`pods/NAME/status` (Running + Ready, or Failed). Waits poll with a bounded timeout and fail with
the observed state (`pod_table`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.apiserver.http import app

Obj = dict[str, Any]
NS = "default"
PODS = kc.PODS
EVENTS = kc.GVR("", "v1", "events")


class Controller(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...

    async def wait_synced(self, timeout: float | None = None) -> None: ...


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


@contextlib.asynccontextmanager
async def sim_with(*factories: Callable[[kc.Client], Controller]) -> AsyncIterator[kc.Client]:
    """An API server plus the given controllers (each with its own client); yields the test's client."""
    server = app.APIServer()
    await server.start()
    stop = asyncio.Event()
    clients: list[kc.Client] = []
    tasks: list[asyncio.Task[None]] = []
    client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent="test")
    try:
        for i, factory in enumerate(factories):
            ctl_client = kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent=f"controller-{i}")
            clients.append(ctl_client)
            controller = factory(ctl_client)
            tasks.append(asyncio.create_task(controller.run(stop)))
            await controller.wait_synced(timeout=10)
        yield client
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        for c in [*clients, client]:
            await c.close()
        await server.stop()


async def set_pod_status(client: kc.Client, name: str, *, phase: str = "Running", ready: bool = True) -> Obj:
    """Play kubelet: set the pod's phase and Ready condition through `pods/NAME/status`."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp}]}
    return await client.patch(PODS, name, {"status": status}, namespace=NS, subresource="status")


async def make_ready(client: kc.Client, *names: str) -> None:
    for name in names:
        await set_pod_status(client, name)


async def pods(client: kc.Client, selector: str | None = None) -> dict[str, Obj]:
    items, _ = await client.list_all(PODS, namespace=NS, label_selector=selector)
    return {p["metadata"]["name"]: p for p in items}


def pod_table(found: dict[str, Obj]) -> str:
    rows = []
    for name, pod in sorted(found.items()):
        labels = pod["metadata"].get("labels") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (pod.get("status") or {}).get("conditions") or ())
        rows.append(f"{name} phase={(pod.get('status') or {}).get('phase')} ready={ready} "
                    f"rev={labels.get('controller-revision-hash') or labels.get('pod-template-hash')} "
                    f"deleting={bool(pod['metadata'].get('deletionTimestamp'))} uid={pod['metadata']['uid'][:8]}")
    return "\n  ".join(rows) or "(no pods)"


async def until(check: Callable[[], Awaitable[bool]], describe: Callable[[], Awaitable[str]], what: str, *,
                timeout: float = 10.0) -> None:
    """Poll `check` until true; on timeout fail with `what` and the described state."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {what} within {timeout}s; observed:\n  {await describe()}")
        await asyncio.sleep(0.02)


async def pods_until(client: kc.Client, predicate: Callable[[dict[str, Obj]], bool], what: str, *,
                     selector: str | None = None, timeout: float = 10.0) -> dict[str, Obj]:
    """Poll the namespace's pods until `predicate` holds; returns them."""
    seen: dict[str, Obj] = {}

    async def check() -> bool:
        nonlocal seen
        seen = await pods(client, selector)
        return predicate(seen)

    async def describe() -> str:
        return pod_table(seen)

    await until(check, describe, what, timeout=timeout)
    return seen


async def pods_stay(client: kc.Client, predicate: Callable[[dict[str, Obj]], bool], what: str, *,
                    duration: float = 0.5, selector: str | None = None) -> None:
    """Check that `predicate` keeps holding for `duration` seconds (a 'nothing more happens' claim)."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        seen = await pods(client, selector)
        if not predicate(seen):
            raise AssertionError(f"expected {what} to hold for {duration}s; observed:\n  {pod_table(seen)}")
        await asyncio.sleep(0.02)


async def get_or_none(client: kc.Client, gvr: kc.GVR, name: str, *, namespace: str = NS) -> Obj | None:
    try:
        return await client.get(gvr, name, namespace=namespace)
    except errors.ApiError as exc:
        if exc.is_not_found:
            return None
        raise


async def object_until(client: kc.Client, gvr: kc.GVR, name: str, predicate: Callable[[Obj | None], bool],
                       what: str, *, timeout: float = 10.0, namespace: str = NS) -> Obj | None:
    """Poll one object (None when absent) until `predicate` holds; fail showing its status."""
    seen: Obj | None = None

    async def check() -> bool:
        nonlocal seen
        seen = await get_or_none(client, gvr, name, namespace=namespace)
        return predicate(seen)

    async def describe() -> str:
        return "absent" if seen is None else f"status={seen.get('status')}"

    await until(check, describe, f"{gvr.plural}/{name}: {what}", timeout=timeout)
    return seen


def container(image: str = "registry.k8s.io/pause:3.10") -> Obj:
    return {"name": "main", "image": image}


async def sorted_events(client: kc.Client) -> list[Obj]:
    """Events in the order they were made (their names end in a hex nanosecond timestamp)."""
    items, _ = await client.list_all(EVENTS, namespace=NS)
    return sorted(items, key=lambda e: int(e["metadata"]["name"].rsplit(".", 1)[1], 16))


async def events_until(client: kc.Client, involved: str, reason: str, count: int) -> list[str]:
    """Messages of `reason` events about object `involved`, in order, once there are `count` of them."""
    messages: list[str] = []

    async def check() -> bool:
        nonlocal messages
        messages = [e["message"] for e in await sorted_events(client)
                    if e["reason"] == reason and e["involvedObject"].get("name") == involved]
        return len(messages) >= count

    async def describe() -> str:
        return str(messages)

    await until(check, describe, f"{count} {reason} events")
    return messages
