"""The reconcile runner and Lease-based leader election, against the real in-process API server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from lwsconf import kubeclient
from lwsconf.reconciler import leaderelection, runtime
from lwsconf.sim.apiserver.http import app


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 30.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)
    asyncio.run(bounded())


async def until(check: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


class Recorder:
    def __init__(self, outcomes: dict[str, list[object]]) -> None:
        self.outcomes = outcomes
        self.calls: list[str] = []
        self.running: set[str] = set()
        self.overlap = False

    async def reconcile(self, req: runtime.Request) -> runtime.Result:
        if req.name in self.running:
            self.overlap = True
        self.running.add(req.name)
        self.calls.append(req.name)
        await asyncio.sleep(0.01)
        self.running.discard(req.name)
        script = self.outcomes.get(req.name, [])
        outcome = script.pop(0) if script else runtime.Result()
        if isinstance(outcome, Exception):
            raise outcome
        assert isinstance(outcome, runtime.Result)
        return outcome


def test_errors_are_retried_terminal_errors_are_not_and_requeue_after_comes_back() -> None:
    async def scenario() -> None:
        rec = Recorder({"flaky": [RuntimeError("boom"), RuntimeError("boom")],
                        "bad": [runtime.TerminalError("never")],
                        "later": [runtime.Result(requeue_after=0.05)]})
        ctl = runtime.Controller("test", rec, workers=2)
        stop = asyncio.Event()
        task = asyncio.create_task(ctl.run(stop))
        for name in ("flaky", "bad", "later"):
            ctl.enqueue(runtime.Request("ns", name))
        await until(lambda: rec.calls.count("flaky") == 3 and rec.calls.count("later") == 2,
                    f"retries and requeues; calls so far {rec.calls}")
        stop.set()
        await task
        assert rec.calls.count("bad") == 1, rec.calls
        assert not rec.overlap, "one key must never be reconciled by two workers at once"
    run(scenario)


def test_a_key_added_many_times_while_queued_is_reconciled_once() -> None:
    async def scenario() -> None:
        rec = Recorder({})
        ctl = runtime.Controller("dedup", rec, workers=1)
        for _ in range(10):
            ctl.enqueue(runtime.Request("ns", "same"))
        stop = asyncio.Event()
        task = asyncio.create_task(ctl.run(stop))
        await until(lambda: rec.calls == ["same"], "the single reconcile")
        stop.set()
        await task
        assert rec.calls == ["same"]
    run(scenario)


@contextlib.asynccontextmanager
async def api() -> AsyncIterator[app.APIServer]:
    server = app.APIServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def client_of(server: app.APIServer, agent: str) -> kubeclient.Client:
    return kubeclient.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent=agent)


def test_only_one_of_two_candidates_leads_and_the_other_takes_over_when_it_stops() -> None:
    async def scenario() -> None:
        async with api() as server:
            clients = [client_of(server, f"candidate-{i}") for i in range(2)]
            electors = [leaderelection.LeaderElector(c, namespace="kube-system", name="lwsconf-reference",
                                                     identity=f"candidate-{i}", lease_duration=1.5,
                                                     renew_deadline=1.0, retry_period=0.1)
                        for i, c in enumerate(clients)]
            leading: list[str] = []

            def lead_as(identity: str) -> Callable[[asyncio.Event], Awaitable[None]]:
                async def lead(stop_leading: asyncio.Event) -> None:
                    leading.append(identity)
                    await stop_leading.wait()
                return lead

            stops = [asyncio.Event(), asyncio.Event()]
            tasks = [asyncio.create_task(e.run(s, lead_as(e.identity))) for e, s in zip(electors, stops, strict=True)]
            await until(lambda: len(leading) == 1, "a first leader", timeout=5)
            await asyncio.sleep(0.5)
            assert sum(e.is_leader for e in electors) == 1, "two leaders at once"
            first = leading[0]
            index = int(first.rsplit("-", 1)[1])
            stops[index].set()
            await tasks[index]
            await until(lambda: len(leading) == 2, "the other candidate to take over", timeout=10)
            assert leading[1] != first
            stops[1 - index].set()
            await tasks[1 - index]
            for c in clients:
                await c.close()
    run(scenario)


def test_timings_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        leaderelection.LeaderElector(object(), namespace="n", name="l", identity="i",  # type: ignore[arg-type]
                                     lease_duration=1, renew_deadline=2, retry_period=0.5)
