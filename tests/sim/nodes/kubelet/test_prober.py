"""The prober's schedule (`next_tick`) and its own loop (`ProbeThread`)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lwsconf.sim.nodes.kubelet import prober


@pytest.mark.parametrize(("started", "now", "want"), [
    (10.0, 10.2, 11.0),   # a quick attempt: the next one period after this one's start, not after its end
    (10.0, 10.99, 11.0),
    (10.0, 11.5, 11.5),   # an attempt that overran its period: the tick that came meanwhile fires at once
])
def test_next_attempt_follows_the_ticker_of_the_previous_start(started: float, now: float, want: float) -> None:
    assert prober.next_tick(started, 1.0, now) == want


def test_probe_thread_runs_attempts_on_its_loop_while_held_and_cancels_them_with_the_caller() -> None:
    thread = prober.ProbeThread()

    async def where() -> str:
        return threading.current_thread().name

    async def scenario() -> None:
        assert await thread.run(where()) == threading.current_thread().name  # not held: on the caller's loop
        thread.acquire()
        try:
            assert await thread.run(where()) == "lwsconf-prober"
            cancelled = asyncio.Event()
            caller_loop = asyncio.get_running_loop()

            async def hang() -> None:
                try:
                    await asyncio.sleep(60)
                finally:
                    caller_loop.call_soon_threadsafe(cancelled.set)

            task = asyncio.create_task(thread.run(hang()))
            await asyncio.sleep(0.1)
            task.cancel()
            await asyncio.wait_for(cancelled.wait(), 5)  # the attempt on the prober's loop ended too
        finally:
            thread.release()
        assert [t for t in threading.enumerate() if t.name == "lwsconf-prober"] == []

    asyncio.run(scenario())
