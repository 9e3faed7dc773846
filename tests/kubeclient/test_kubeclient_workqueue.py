"""The sim controllers' work queue and backoff: de-duplication, delays, rate-limited retries, workers.

Timing claims are checked with small real delays (tens of milliseconds) and lower bounds only, so a
slow machine cannot make them fail; each test runs its own event loop via `asyncio.run`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from lwsconf import kubeclient


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


# --- backoff and work queue -----------------------------------------------------------------------

def test_backoff_doubles_up_to_its_cap_and_resets() -> None:
    backoff = kubeclient.Backoff(initial=0.1, factor=2.0, cap=0.5)
    assert [backoff.next() for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    backoff.reset()
    assert backoff.next() == 0.1
    assert backoff.delay_for(10_000) == 0.5
    with pytest.raises(ValueError, match="cap >= initial"):
        kubeclient.Backoff(initial=1.0, cap=0.5)


async def next_key(queue: kubeclient.WorkQueue[str], timeout: float = 2.0) -> str:
    return await asyncio.wait_for(queue.get(), timeout)


def test_work_queue_deduplicates_keys_waiting_to_be_processed() -> None:
    async def scenario() -> None:
        queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue()
        for key in ("a", "b", "a", "a", "c", "b"):
            queue.add(key)
        assert len(queue) == 3
        assert [await next_key(queue) for _ in range(3)] == ["a", "b", "c"]
    run(scenario)


def test_work_queue_holds_back_a_key_added_while_it_is_processed() -> None:
    async def scenario() -> None:
        queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue()
        queue.add("a")
        assert await next_key(queue) == "a"
        queue.add("a")
        assert len(queue) == 0, "a key being processed is not handed to a second worker"
        queue.done("a")
        assert await next_key(queue) == "a"
        queue.done("a")
        assert len(queue) == 0
    run(scenario)


def test_work_queue_add_after_keeps_the_earliest_deadline() -> None:
    async def scenario() -> None:
        queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue()
        start = time.monotonic()
        queue.add_after("late", 0.15)
        queue.add_after("soon", 5.0)
        queue.add_after("soon", 0.05)  # earlier: replaces the 5 s deadline
        queue.add_after("soon", 1.0)  # later: ignored
        assert await next_key(queue) == "soon"
        soon_at = time.monotonic() - start
        assert await next_key(queue) == "late"
        late_at = time.monotonic() - start
        assert 0.05 <= soon_at < 0.15 <= late_at < 1.0, (soon_at, late_at)
    run(scenario)


def test_work_queue_rate_limits_retries_until_forgotten() -> None:
    async def scenario() -> None:
        queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue(backoff=kubeclient.Backoff(initial=0.02, cap=1.0))
        delays = []
        for _ in range(3):
            start = time.monotonic()
            queue.add_rate_limited("k")
            assert await next_key(queue) == "k"
            queue.done("k")
            delays.append(time.monotonic() - start)
        assert queue.num_requeues("k") == 3
        assert delays[0] >= 0.02 and delays[1] >= 0.04 and delays[2] >= 0.08, delays
        queue.forget("k")
        assert queue.num_requeues("k") == 0
    run(scenario)


def test_work_queue_shutdown_releases_waiting_workers() -> None:
    async def scenario() -> None:
        queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue()
        getter = asyncio.create_task(queue.get())
        await asyncio.sleep(0)  # let the getter start waiting
        queue.add_after("never", 10.0)
        queue.shutdown()
        with pytest.raises(kubeclient.ShutDown):
            await asyncio.wait_for(getter, 1.0)
        queue.add("ignored")
        assert len(queue) == 0
    run(scenario)


def test_run_worker_retries_failures_requeues_on_request_and_never_overlaps_a_key() -> None:
    async def scenario() -> None:
        queue: kubeclient.WorkQueue[str] = kubeclient.WorkQueue(backoff=kubeclient.Backoff(initial=0.01, cap=0.02))
        calls: list[str] = []
        running: set[str] = set()
        overlaps: list[str] = []

        async def reconcile(key: str) -> float | None:
            if key in running:
                overlaps.append(key)
            running.add(key)
            calls.append(key)
            await asyncio.sleep(0.01)  # hold the key while more adds arrive
            running.discard(key)
            if key == "flaky" and calls.count("flaky") < 3:
                raise RuntimeError("transient")
            if key == "periodic" and calls.count("periodic") < 2:
                return 0.02
            return None

        workers = [asyncio.create_task(kubeclient.run_worker(queue, reconcile)) for _ in range(3)]
        for _ in range(5):
            queue.add("flaky")
            queue.add("periodic")
            await asyncio.sleep(0.002)
        await eventually(lambda: calls.count("flaky") >= 3 and calls.count("periodic") >= 2, lambda: calls)
        queue.shutdown()
        await asyncio.wait_for(asyncio.gather(*workers), 2.0)
        assert overlaps == [], calls
        assert queue.num_requeues("flaky") == 0, "success forgets the failures"
    run(scenario)
