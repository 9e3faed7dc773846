"""SimCluster.stop is bounded: a controller that ignores cancellation is named and left behind."""

from __future__ import annotations

import asyncio
import logging

import pytest

from lwsconf import kubeclient
from lwsconf.sim import cluster as cluster_mod

STOP_RETURNS_WITHIN = 30.0
"""Seconds the test gives `stop()` (STOP_GRACE is 0.3 s here): a stop that waited for the stuck controller would
never return, since the controller is released only after it; the bound turns that hang into a failure."""


def _stubborn(running: asyncio.Event, released: asyncio.Event) -> cluster_mod.ControllerFactory:
    """A controller that ignores cancellation until `released`, as one stuck in cleanup would; sets `running`."""
    def factory(_: kubeclient.Client) -> cluster_mod.Runner:
        async def run(stop: asyncio.Event) -> None:
            running.set()
            while not released.is_set():
                try:
                    await released.wait()
                except asyncio.CancelledError:
                    continue
        return run
    return factory


def test_stop_leaves_a_stuck_controller_behind_and_names_it(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(cluster_mod, "STOP_GRACE", 0.3)

    async def scenario() -> None:
        running, released = asyncio.Event(), asyncio.Event()
        sim = cluster_mod.SimCluster(controllers=[("stubborn-controller", _stubborn(running, released))], nodes=[])
        await sim.start()
        await asyncio.wait_for(running.wait(), STOP_RETURNS_WITHIN)
        try:
            await asyncio.wait_for(sim.stop(), STOP_RETURNS_WITHIN)
        except TimeoutError:
            pytest.fail(f"stop() did not return within {STOP_RETURNS_WITHIN} s: it waited for the stuck controller "
                        f"(STOP_GRACE 0.3 s); log: {caplog.text}")
        finally:
            released.set()

    with caplog.at_level(logging.WARNING, logger="lwsconf.sim"):
        asyncio.run(scenario())
    assert "left behind: stubborn-controller" in caplog.text, caplog.text
