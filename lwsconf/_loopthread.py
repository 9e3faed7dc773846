"""An asyncio event loop in a background thread, for sync callers (the sim and local clusters, the reference).

The simulator and the reference reconciler are asyncio programs, while conformance tests are sync
(the official client). Rather than doubling every API into sync and async twins, sync callers run
the async code on one loop in a daemon thread and wait for results with `run(coro)`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger("lwsconf")
T = TypeVar("T")


class LoopThread:
    """Owns one event loop running in a daemon thread between `start()` and `stop()`."""

    def __init__(self, name: str = "lwsconf-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("LoopThread is not started: call start() first")
        return self._loop

    def start(self) -> LoopThread:
        ready = threading.Event()

        def main() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

        self._thread = threading.Thread(target=main, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60.0) -> T:
        """Run a coroutine on the loop and wait for its result (re-raising its exception)."""
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        loop = self._loop

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(10)
        except TimeoutError:
            # A task that ignores cancellation must not turn a finished run into an error; the
            # daemon thread dies with the process.
            log.warning("%s: tasks still running 10 s after cancellation; leaving them", self._name)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        self._thread = None
