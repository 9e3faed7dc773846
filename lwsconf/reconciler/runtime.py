"""The reconcile contract and the runner that drives it (controller-runtime's shape, in asyncio).

A reconciler implements `async reconcile(req: Request) -> Result`. It is level-based: the request
names an object, never an event, and the reconciler reads current state from informer caches,
computes the desired state and applies the difference. Outcomes:

* return `Result()` — done until something changes;
* return `Result(requeue_after=s)` — look again in `s` seconds (e.g. waiting on a deletion);
* raise `TerminalError` — logged, not retried (the input can never succeed as it is);
* raise anything else — retried with per-key exponential backoff.

`Controller` owns the work queue and the workers; the queue de-duplicates keys and never hands one
key to two workers at once, so a reconcile for one LeaderWorkerSet never races another for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lwsconf import kubeclient

log = logging.getLogger("lwsconf.reconciler")


@dataclass(frozen=True, order=True)
class Request:
    """What to reconcile: one object by namespace and name (no event, no object contents)."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None


class TerminalError(Exception):
    """A failure retrying cannot fix; the key is dropped until the object changes again."""


class Reconciler(Protocol):
    async def reconcile(self, req: Request) -> Result: ...


async def informers_synced(informers: Sequence[kubeclient.Informer], stop: asyncio.Event) -> bool:
    """Wait for every informer's first LIST; False when `stop` is set first.

    Without this, a controller whose kinds are not served yet (no CRD) could not be stopped: it would wait for
    that first LIST forever, deaf to SIGTERM and to a harness restarting it.
    """
    synced = asyncio.ensure_future(asyncio.gather(*(i.wait_synced() for i in informers)))
    stopping = asyncio.ensure_future(stop.wait())
    either: set[asyncio.Future[Any]] = {synced, stopping}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in either:
            waiting.cancel()
    if synced.done() and not synced.cancelled():
        synced.result()
    return not stop.is_set()


async def run_with_informers(informers: Sequence[kubeclient.Informer], stop: asyncio.Event,
                             loops: Callable[[], Awaitable[object]]) -> None:
    """Start `informers`, run `loops()` once they have synced (unless `stop` came first), then stop and join
    every informer: what each manager of the reference does around its reconcile loops."""
    for informer in informers:
        informer.start()
    try:
        if await informers_synced(informers, stop):
            await loops()
    finally:
        for informer in informers:
            informer.stop()
        for informer in informers:
            with contextlib.suppress(Exception):
                await informer.join()


class Controller:
    """A named work queue of Requests plus `workers` concurrent reconcile loops."""

    def __init__(self, name: str, reconciler: Reconciler, *, workers: int = 2) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be >= 1, got {workers}")
        self.name = name
        self.reconciler = reconciler
        self.workers = workers
        self.queue: kubeclient.WorkQueue[Request] = kubeclient.WorkQueue(name=name)
        self._ids = itertools.count(1)

    def enqueue(self, req: Request) -> None:
        self.queue.add(req)

    async def _reconcile_one(self, req: Request) -> float | None:
        reconcile_id = next(self._ids)
        try:
            result = await self.reconciler.reconcile(req)
        except TerminalError as exc:
            log.error("%s reconcile #%d %s: giving up: %s", self.name, reconcile_id, req, exc)
            return None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("%s reconcile #%d %s failed: %s", self.name, reconcile_id, req, exc)
            raise
        log.debug("%s reconcile #%d %s done (requeue_after=%s)", self.name, reconcile_id, req,
                  result.requeue_after)
        return result.requeue_after

    async def run(self, stop: asyncio.Event) -> None:
        """Run the workers until `stop` is set, then drain and shut the queue down."""
        await kubeclient.run_workers(self.queue, self._reconcile_one, stop, workers=self.workers)
