"""The nodes topic end to end: the sim with simulated nodes against real kubelets 1.37.2 (RealNodeCluster, 2 nodes),
every interaction identical after normalisation or an accepted difference (lwsconf/fidelity/accepted.py, each with
its reason). A new difference fails here with both answers' differing lines.

Skips when not root or when the node parts are not built (`make nodes`); LWSCONF_REQUIRE_REAL_NODES=1 (.ci/run)
fails instead. An xdist group of its own, not tests/realnodes' group: real-node clusters run side by side (a network
block each, under a lock), so the two need not queue on one worker.
"""

from __future__ import annotations

import os

import pytest

from lwsconf.controlplane import build as cpbuild
from lwsconf.controlplane import versions
from lwsconf.fidelity import cli, compare, corpus, servers

OPT_IN = "LWSCONF_FIDELITY_NODES"
pytestmark = [
    pytest.mark.xdist_group("realnodes-fidelity"),
    # Not in CI's unit tests yet: of three runs one passed (load 20-37) and two differed on timing, once the
    # readiness scenario's first probe racing the server's bind (fixed: initialDelaySeconds), once the crash loop's
    # previous log already removed by the real kubelet (fixed: the scenario waits for the loop's end state; passed
    # once since, idle). It comes back once a soak has measured it. `make fidelity-nodes` runs the same topic;
    # LWSCONF_FIDELITY_NODES=1 runs this test.
    pytest.mark.skipif(not os.environ.get(OPT_IN), reason=f"opt-in ({OPT_IN}=1, or make fidelity-nodes) until soaked"),
]
RELEASE = versions.DEFAULT


def _require_real_nodes() -> None:
    why = servers.nodes_unavailable(RELEASE) or (
        f"the control plane {RELEASE.kubernetes} is not built" if cpbuild.installed(RELEASE) is None else None)
    if why:
        if os.environ.get("LWSCONF_REQUIRE_REAL_NODES"):
            pytest.fail(f"{why}, and LWSCONF_REQUIRE_REAL_NODES is set (CI)")
        pytest.skip(why)


def test_every_node_interaction_is_identical_or_an_accepted_difference() -> None:
    _require_real_nodes()
    scenarios = corpus.select(["nodes"])
    results = cli.run_both(RELEASE, scenarios)
    assert len(results) == sum(len(s.steps) for s in scenarios)
    different = [f"{r.id}: {'; '.join(r.lines[:6])}" for r in results if not r.identical and not r.accepted]
    totals = compare.totals(results)
    print(f"{totals.line()}, {totals.accepted} accepted, {totals.different} different")  # the figure, with -s
    assert not different, f"{totals.line()}; not identical and not accepted:\n" + "\n".join(different)
