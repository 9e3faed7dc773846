"""A running sim tunes two process-wide settings (cyclic GC, GIL switch interval) and gives both back when the
last sim in the process stops, also when sims overlap and stop in the order they started."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from lwsconf.sim import cluster as sim_cluster

START = ((700, 10, 10), 0.005)


@pytest.fixture(autouse=True)
def known_settings() -> Iterator[None]:
    """Start from Python's defaults whatever ran before in this process, and put back what was there."""
    saved = (gc.get_threshold(), sys.getswitchinterval())
    gc.set_threshold(*START[0])
    sys.setswitchinterval(START[1])
    yield
    gc.set_threshold(*saved[0])
    sys.setswitchinterval(saved[1])


def settings() -> tuple[tuple[int, int, int], float]:
    return gc.get_threshold(), sys.getswitchinterval()


def test_tuned_while_the_sim_runs_and_given_back_after() -> None:
    with sim_cluster.RunningSimCluster(nodes=[]):
        assert settings() == (sim_cluster.GC_THRESHOLDS, sim_cluster.SWITCH_INTERVAL)
    assert settings() == START


def test_overlapping_sims_give_the_settings_back_when_the_last_one_stops() -> None:
    first = sim_cluster.RunningSimCluster(nodes=[]).__enter__()
    second = sim_cluster.RunningSimCluster(nodes=[]).__enter__()
    first.__exit__(None, None, None)  # stopped in start order: the second still runs
    assert settings() == (sim_cluster.GC_THRESHOLDS, sim_cluster.SWITCH_INTERVAL)
    second.__exit__(None, None, None)
    assert settings() == START
