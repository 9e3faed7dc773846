"""`WorkQueue`: the key queue between informer callbacks and reconcile workers, as in client-go.

Why a queue of keys and not of events: reconciles are level-based, so ten changes to one object
need one reconcile, not ten. The queue therefore de-duplicates: a key waiting in the queue is not
added twice, and a key added while a worker is processing it is held back and queued again when
that worker calls `done`, so one key is never processed by two workers at once. Failures are
retried through `add_rate_limited`, with a per-key exponential backoff that `forget` resets.
`add_after` delays a key (periodic re-checks); a later, earlier deadline wins.

Everything runs on one event loop; `get` is the only coroutine.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from lwsconf.kubeclient import backoff as backoff_mod
from lwsconf.kubeclient import errors

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """`get()` on a queue that was shut down: the worker should return."""


class WorkQueue(Generic[K]):
    """A de-duplicating FIFO of keys with delayed and rate-limited adds.

    Args:
        backoff: per-key retry delays for `add_rate_limited` (default 5 ms doubling up to 10 s).
        name: shown in logs.
    """

    def __init__(self, *, backoff: backoff_mod.Backoff | None = None, name: str = "queue") -> None:
        self.name = name
        self._backoff = backoff or backoff_mod.Backoff(initial=0.005, factor=2.0, cap=10.0)
        self._queue: collections.deque[K] = collections.deque()
        self._dirty: set[K] = set()
        """Keys that need processing: queued, or re-added while being processed."""
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
        self._delayed: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._shutting_down = False

    def __len__(self) -> int:
        """Keys ready to be handed out (not counting delayed or in-process ones)."""
        return len(self._queue)

    def __repr__(self) -> str:
        return (f"WorkQueue({self.name}: {len(self._queue)} ready, {len(self._processing)} processing, "
                f"{len(self._delayed)} delayed)")

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        """Queue `key` unless it is already waiting; if it is being processed, queue it after `done`."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._wake_one()

    def add_after(self, key: K, delay: float) -> None:
        """Queue `key` after `delay` seconds; an already pending earlier deadline is kept."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        pending = self._delayed.get(key)
        if pending is not None:
            if pending[0] <= when:
                return
            pending[1].cancel()
        self._delayed[key] = (when, loop.call_at(when, self._fire, key))

    def add_rate_limited(self, key: K) -> None:
        """Retry `key` after its next backoff delay (5 ms, 10 ms, ... per consecutive failure)."""
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        self.add_after(key, self._backoff.delay_for(failures))

    def forget(self, key: K) -> None:
        """The key succeeded: its next failure starts the backoff from the beginning."""
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> K:
        """The next key to process; call `done(key)` when finished with it.

        Raises:
            ShutDown: the queue was shut down and nothing is left to hand out.
        """
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        """Processing ended; re-queue the key if it was added meanwhile."""
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._wake_one()

    def shutdown(self) -> None:
        """Stop accepting keys; `get` raises ShutDown once the ready keys are drained."""
        self._shutting_down = True
        for _, handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _fire(self, key: K) -> None:
        self._delayed.pop(key, None)
        self.add(key)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


Reconcile = Callable[[K], Awaitable[float | None]]
"""`reconcile(key)` returns None when done, or seconds after which to look at the key again."""


async def run_worker(queue: WorkQueue[K], reconcile: Reconcile[K]) -> None:
    """Process keys until the queue shuts down: the controller runtime's four-way outcome.

    Success forgets the key's failures; a returned delay requeues it after that delay; an exception
    is logged and retried with the key's rate-limited backoff. A key is never processed twice at once.
    """
    while True:
        try:
            key = await queue.get()
        except ShutDown:
            return
        try:
            requeue_after = await reconcile(key)
        except Exception as exc:
            queue.add_rate_limited(key)
            log.warning("%s: %r failed (attempt %d, retrying in backoff): %s", queue.name, key,
                        queue.num_requeues(key), exc,
                        exc_info=not isinstance(exc, errors.KubeClientError))
        else:
            queue.forget(key)
            if requeue_after is not None:
                queue.add_after(key, requeue_after)
        finally:
            queue.done(key)


async def run_workers(queue: WorkQueue[K], reconcile: Reconcile[K], stop: asyncio.Event, *, workers: int) -> None:
    """Run `workers` concurrent `run_worker` loops until `stop` is set, then shut the queue and end them.

    The one place controllers start and stop their workers, so every controller drains the same way.
    """
    tasks = [asyncio.create_task(run_worker(queue, reconcile), name=f"{queue.name} worker {i}")
             for i in range(workers)]
    try:
        await stop.wait()
    finally:
        queue.shutdown()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
