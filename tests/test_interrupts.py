"""Interrupting real runs at points spread over their life leaves nothing behind (bench/interrupts.py).

Each group starts real runs (`lwsconf sim up`, `pytest conformance` with and without xdist,
`lwsconf run`, `make conformance`, a run against an existing cluster, a `--cluster=local` run with SIGINT
and SIGTERM 50 ms apart as `timeout` sends them), signals them at the phases
named in `bench.interrupts.GROUPS` plus a seeded random offset, and counts leftovers: processes
carrying the run's LWSCONF_RUN_ID, temp entries, held pod-network locks, namespaces, the terminal.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest

from bench import interrupts

SEED = int(os.environ.get("LWSCONF_INTERRUPT_SEED", interrupts.DEFAULT_SEED))


def test_the_points_cover_every_command_and_phase() -> None:
    points = [p for group in interrupts.GROUPS.values() for p in group]
    assert len(points) >= 20, len(points)
    assert {p.command for p in points} == {"sim-up", "pytest", "pytest-n2", "lwsconf-run", "make", "kubeconfig",
                                           "pytest-local"}
    markers = {p.after for p in points}
    for phase in (None, interrupts.CLUSTER_STARTING, interrupts.CLUSTER_UP, interrupts.INSTALLED,
                  interrupts.TEARDOWN, interrupts.SIM_UP_READY, interrupts.LOCAL_STARTING, interrupts.LOCAL_TEARDOWN):
        assert phase in markers, phase
    assert any(len(p.signals) > 1 for p in points) and any(not p.to_group for p in points)


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(interrupts.GROUPS))
def test_an_interrupted_run_leaves_nothing_behind(group: str) -> None:
    if group == "local" and not interrupts.local_built():
        pytest.skip("no control plane built for --cluster=local (lwsconf controlplane build)")
    print(f"seed {SEED} (set LWSCONF_INTERRUPT_SEED to replay other offsets)")
    rng = random.Random(f"{SEED}-{group}")
    with tempfile.TemporaryDirectory(prefix="lwsi-", dir="/tmp") as base:  # short: socket paths live under it
        outcomes = interrupts.run_group(group, rng, Path(base))
    assert len(outcomes) == len(interrupts.GROUPS[group])
    dirty = [o.describe() for o in outcomes if o.leftovers]
    assert not dirty, f"seed {SEED}: " + "\n".join(dirty)
    for outcome, point in zip(outcomes, interrupts.GROUPS[group], strict=True):
        # The count must be able to see a run's processes: at the signal, the run itself was one of them,
        # and a point with a running pod had its container process too.
        assert outcome.marked_at_signal >= (2 if point.pod else 1), outcome.describe()
        assert outcome.exit_code is not None, outcome.describe()
