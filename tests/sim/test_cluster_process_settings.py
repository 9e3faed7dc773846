"""A running sim tunes two process-wide settings (cyclic GC, GIL switch interval) and gives both back when it stops."""

from __future__ import annotations

import gc
import sys

from lwsconf.sim import cluster as sim_cluster


def test_gc_thresholds_while_the_sim_runs_and_after() -> None:
    before = gc.get_threshold()
    with sim_cluster.RunningSimCluster(nodes=[]):
        assert gc.get_threshold() == sim_cluster.GC_THRESHOLDS
    assert gc.get_threshold() == before


def test_gil_switch_interval_while_the_sim_runs_and_after() -> None:
    before = sys.getswitchinterval()
    assert before != sim_cluster.SWITCH_INTERVAL, "the test needs a different interval to start from"
    with sim_cluster.RunningSimCluster(nodes=[]):
        assert sys.getswitchinterval() == sim_cluster.SWITCH_INTERVAL
    assert sys.getswitchinterval() == before
