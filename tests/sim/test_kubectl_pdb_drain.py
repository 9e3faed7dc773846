"""kubectl against a whole sim (controllers and nodes, as `lwsconf sim up` runs it): auth, PDBs, drain, top.

Uses the kubectl of `lwsconf controlplane build` (1.37.2; skips saying what to run without a build, fails under
LWSCONF_REQUIRE_GO=1). What a user sees on a real cluster:
* `kubectl create poddisruptionbudget` is stored and the disruption controller fills its status;
* `kubectl drain` of a node whose pod the budget protects keeps retrying "Cannot evict pod as it would
  violate the pod's disruption budget." until its --timeout (eviction.go's 429), and drains once the
  budget allows a disruption;
* `kubectl top` ends with kubectl's own "Metrics API not available": the sim serves no metrics.k8s.io,
  since its emulated containers use no CPU or memory to report (see ARCHITECTURE.md).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lwsconf.controlplane import versions
from lwsconf.sim import cluster as cluster_mod
from lwsconf.sim.nodes import layout
from tests.sim.nodes.streams.test_kubectl_streams import KUBECTL_TIMEOUT, built_kubectl

pytestmark = pytest.mark.kubectl
DRAIN_REFUSED_TIMEOUT = "8s"
"""How long the refused drain retries (kubectl retries every 5 s): at least one refusal is seen."""
READY_TIMEOUT = "90s"


def test_kubectl_auth_pdb_drain_and_top(tmp_path: Path) -> None:
    binary = built_kubectl(versions.RELEASES[0])

    with cluster_mod.RunningSimCluster(nodes=layout.default_layout(gpu_nodes=0, cpu_nodes=2)) as sim:
        def kubectl(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
            done = subprocess.run([str(binary), "--kubeconfig", str(sim.kubeconfig), *args], capture_output=True,
                                  text=True, timeout=KUBECTL_TIMEOUT + 30, check=False)
            if ok:
                assert done.returncode == 0, (args, done.stdout, done.stderr)
            return done

        assert kubectl("auth", "can-i", "create", "pods").stdout == "yes\n"
        assert "*.*" in kubectl("auth", "can-i", "--list").stdout
        assert "lwsconf-sim-admin" in kubectl("auth", "whoami").stdout

        kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
        kubectl("create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=2")
        kubectl("wait", "--for=condition=Available", "deployment/web", f"--timeout={READY_TIMEOUT}")
        kubectl("wait", "--for=jsonpath={.status.currentHealthy}=2", "pdb/web", f"--timeout={READY_TIMEOUT}")
        table = kubectl("get", "pdb", "web").stdout.split()
        assert table[:7] == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS"], table
        assert table[8:11] == ["web", "2", "N/A"] and table[11] == "0", table

        node = kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}").stdout
        refused = kubectl("drain", node, "--ignore-daemonsets", f"--timeout={DRAIN_REFUSED_TIMEOUT}", ok=False)
        assert refused.returncode != 0
        assert "Cannot evict pod as it would violate the pod's disruption budget." in refused.stderr, refused.stderr
        assert "global timeout reached" in refused.stderr, refused.stderr

        kubectl("patch", "pdb", "web", "--type=merge", "-p", '{"spec":{"minAvailable":1}}')
        kubectl("wait", "--for=jsonpath={.status.disruptionsAllowed}=1", "pdb/web", f"--timeout={READY_TIMEOUT}")
        drained = kubectl("drain", node, "--ignore-daemonsets", f"--timeout={READY_TIMEOUT}")
        assert "evicted" in drained.stdout and f"node/{node} drained" in drained.stdout, drained.stdout

        for what in ("pods", "nodes"):
            top = kubectl("top", what, ok=False)
            assert top.returncode == 1 and "Metrics API not available" in top.stderr, top.stderr
