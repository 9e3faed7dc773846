"""`lwsconf sim chaos ...` against a `lwsconf sim up` cluster running in another process.

The faults here are the ones the node agents carry out by themselves (crash, fail, slow, cut off,
delete); what the node lifecycle controller does next is tested in test_chaos.py. Errors must be one
line with exit status 2, never a traceback.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client, config

from lwsconf.sim import chaos_cli
from lwsconf.waits import core, observe

Obj = dict[str, Any]
T = TypeVar("T")
NS = "default"
PAUSE = "registry.k8s.io/pause:3.10"


class SimUp:
    def __init__(self, kubeconfig: Path, api: client.ApiClient) -> None:
        self.kubeconfig = kubeconfig
        self.api = api
        self.core = client.CoreV1Api(api)

    def chaos(self, *args: str) -> int:
        return chaos_cli.main(["--kubeconfig", str(self.kubeconfig), *args])

    def pod(self, name: str) -> Obj:
        return observe.raw(self.core.read_namespaced_pod(name, NS, _preload_content=False))

    def node_names(self) -> list[str]:
        return sorted(n.metadata.name for n in self.core.list_node().items)

    def describe(self) -> str:
        pods = [f"{p['metadata']['name']} phase={p['status'].get('phase')} "
                f"statuses={p['status'].get('containerStatuses')}" for p in observe.pods(self.api, NS)]
        return "\n".join(["pods:", *pods, f"nodes: {self.node_names()}"])

    def wait(self, check: Callable[[], T], what: str) -> T:
        return core.wait_until(check, what=what, timeout=30, poll=0.05, describe=self.describe)


@pytest.fixture(scope="module")
def sim_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimUp]:
    kubeconfig = tmp_path_factory.mktemp("sim") / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "lwsconf.cli", "sim", "up", "--kubeconfig", str(kubeconfig),
                             "--gpu-nodes", "1", "--cpu-nodes", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "kubeconfig written to" not in "".join(lines):
        line = proc.stdout.readline()
        lines.append(line)
        if not line and proc.poll() is not None:
            break
    if "kubeconfig written to" not in "".join(lines):
        proc.kill()
        pytest.fail(f"sim up did not report its kubeconfig; output: {''.join(lines)!r}")
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        sim = SimUp(kubeconfig, api)
        sim.wait(lambda: _nodes_ready(sim), "both nodes to be Ready")
        yield sim
    finally:
        api.close()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def _nodes_ready(sim: SimUp) -> None:
    nodes = sim.core.list_node().items
    states = {n.metadata.name: {c.type: c.status for c in (n.status and n.status.conditions) or []}.get("Ready")
              for n in nodes}
    if sorted(states) != ["cpu-0", "gpu-0"] or set(states.values()) != {"True"}:
        raise core.NotYet(f"nodes: {states}")


def _create_pod(sim: SimUp, name: str, node: str, restart: str = "Always") -> None:
    sim.core.create_namespaced_pod(NS, {"metadata": {"name": name}, "spec": {
        "nodeName": node, "restartPolicy": restart, "containers": [{"name": "main", "image": PAUSE}]}})

    def running() -> None:
        if sim.pod(name)["status"].get("phase") != "Running":
            raise core.NotYet(f"{name} is not Running")
    sim.wait(running, f"pod {name} to run")


def test_cli_crashes_a_container_and_fails_a_pod(sim_up: SimUp, capsys: pytest.CaptureFixture[str]) -> None:
    _create_pod(sim_up, "crashy", "cpu-0")
    assert sim_up.chaos("crash-container", f"{NS}/crashy", "--exit-code", "4") == 0
    assert "container main will exit with code 4" in capsys.readouterr().out

    def restarted() -> Obj:
        status = sim_up.pod("crashy")["status"]["containerStatuses"][0]
        if status["restartCount"] < 1:
            raise core.NotYet("not restarted yet")
        return status
    assert sim_up.wait(restarted, "the container to restart")["lastState"]["terminated"]["exitCode"] == 4

    _create_pod(sim_up, "doomed", "cpu-0", restart="Never")
    assert sim_up.chaos("fail-pod", "doomed", "--reason", "OutOfGPU") == 0

    def failed() -> Obj:
        status = sim_up.pod("doomed")["status"]
        if status.get("phase") != "Failed":
            raise core.NotYet(f"phase {status.get('phase')}")
        return status
    assert sim_up.wait(failed, "the pod to fail")["reason"] == "OutOfGPU"


def test_cli_switches_node_faults_on_and_off_and_deletes_a_node(sim_up: SimUp,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    def annotations() -> dict[str, str]:
        return sim_up.core.read_node("gpu-0").metadata.annotations or {}

    assert sim_up.chaos("slow-kubelet", "gpu-0", "--seconds", "0.5") == 0
    assert annotations()["chaos.lwsconf.dev/slow"] == "0.5"
    assert sim_up.chaos("slow-kubelet", "gpu-0", "--seconds", "0") == 0
    assert "chaos.lwsconf.dev/slow" not in annotations()
    assert sim_up.chaos("node-not-ready", "gpu-0") == 0
    assert annotations()["chaos.lwsconf.dev/not-ready"] == "true"
    assert "node-ready gpu-0` ends it" in capsys.readouterr().out
    assert sim_up.chaos("node-ready", "gpu-0") == 0
    assert "chaos.lwsconf.dev/not-ready" not in annotations()

    assert sim_up.chaos("delete-node", "gpu-0") == 0
    assert sim_up.node_names() == ["cpu-0"]

    def lease_gone() -> None:
        names = [x.metadata.name for x in client.CoordinationV1Api(sim_up.api).list_namespaced_lease(
            "kube-node-lease").items]
        if "gpu-0" in names:
            raise core.NotYet(f"leases: {names}")
    sim_up.wait(lease_gone, "the deleted node's Lease to go (the agent stopped renewing it)")


def test_cli_bad_targets_say_what_to_do(sim_up: SimUp, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["crash-container", "default/ghost"],
         "pod default/ghost not found; list pods with `kubectl get pods -n default`"),
        (["fail-pod", "a/b/c"], "bad pod 'a/b/c'; write it as NAMESPACE/POD"),
        (["node-not-ready", "gpu-7"], "node gpu-7 not found; list nodes with `kubectl get nodes`"),
        (["slow-kubelet", "cpu-0", "--seconds", "nan"], "the delay must be a number of seconds >= 0"),
    ]
    for args, message in cases:
        assert sim_up.chaos(*args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("lwsconf sim chaos: ") and message in err and err.count("\n") == 1, err
    missing = chaos_cli.main(["--kubeconfig", str(tmp_path / "none"), "node-ready", "cpu-0"])
    assert missing == 2 and "start a cluster with `lwsconf sim up` or pass --kubeconfig" in capsys.readouterr().err


def test_cli_against_a_stopped_cluster_fails_in_one_line_without_traceback(sim_up: SimUp, tmp_path: Path) -> None:
    doc = yaml.safe_load(sim_up.kubeconfig.read_text())
    doc["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    dead = tmp_path / "kubeconfig"
    dead.write_text(yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, "-m", "lwsconf.sim.chaos_cli", "--kubeconfig", str(dead),
                           "node-ready", "cpu-0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "cannot reach the cluster" in proc.stderr and "is `lwsconf sim up` running?" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
