"""SimCluster.stop is bounded: a controller that ignores cancellation is named and left behind."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from lwsconf import kubeclient
from lwsconf.sim import cluster as cluster_mod


def _stubborn(released: asyncio.Event) -> cluster_mod.ControllerFactory:
    """A controller that ignores cancellation until `released`, as one stuck in cleanup would."""
    def factory(_: kubeclient.Client) -> cluster_mod.Runner:
        async def run(stop: asyncio.Event) -> None:
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

    async def scenario() -> float:
        released = asyncio.Event()
        sim = cluster_mod.SimCluster(controllers=[("stubborn-controller", _stubborn(released))], nodes=[])
        await sim.start()
        await asyncio.sleep(0.1)  # let the controller task start running
        started = time.monotonic()
        try:
            await sim.stop()
        finally:
            released.set()
        return time.monotonic() - started

    with caplog.at_level(logging.WARNING, logger="lwsconf.sim"):
        elapsed = asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    assert elapsed < 20, f"stop took {elapsed:.1f} s with STOP_GRACE 0.3 s"
    assert "left behind: stubborn-controller" in caplog.text, caplog.text
