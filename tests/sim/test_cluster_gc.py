"""A running sim collects garbage less often, and gives the process its GC settings back when it stops."""

from __future__ import annotations

import gc

from lwsconf.sim import cluster as sim_cluster


def test_gc_thresholds_while_the_sim_runs_and_after() -> None:
    before = gc.get_threshold()
    with sim_cluster.RunningSimCluster(nodes=[]):
        assert gc.get_threshold() == sim_cluster.GC_THRESHOLDS
    assert gc.get_threshold() == before
