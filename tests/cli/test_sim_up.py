"""`lwsconf sim up` as a user runs it: starts, serves kubectl, stops cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config

STARTUP_TIMEOUT = 30.0
"""Seconds `sim up` may take to report its kubeconfig."""


def start(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """Start `sim up` with its output going to a file, polled until it names its kubeconfig.

    Not a pipe: the test stops reading once the cluster is up, and in the fresh-clone CI run of 2026-12-06 (load
    4-6) `sim up` filled the 64 KiB pipe with its log, blocked in write() (wchan anon_pipe_write) while the test
    waited on its list_namespace answer, and the unit-test run hung for 16 minutes until the pipe was drained."""
    kubeconfig = tmp_path / "sim" / "kubeconfig"
    private_tmp = tmp_path / "tmpdir"
    private_tmp.mkdir()
    output = tmp_path / "sim-up.log"
    with output.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "lwsconf.cli", "sim", "up", "--kubeconfig", str(kubeconfig)],
                                stdout=sink, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "TMPDIR": str(private_tmp)})
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if "kubeconfig written to" in output.read_text(errors="replace"):
            return proc, kubeconfig
        if proc.poll() is not None:
            break
        time.sleep(0.1)  # polling a file we own for a line; the deadline bounds it
    proc.kill()
    proc.wait(timeout=30)
    raise AssertionError(f"sim up did not report its kubeconfig within {STARTUP_TIMEOUT:g}s; output: "
                         f"{output.read_text(errors='replace')!r}")


def output_of(proc: subprocess.Popen[str], tmp_path: Path) -> str:
    """Wait for `sim up` to exit; everything it wrote."""
    proc.wait(timeout=30)
    return (tmp_path / "sim-up.log").read_text(errors="replace")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_sim_up_serves_clients_and_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    proc, kubeconfig = start(tmp_path)
    try:
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600", "the kubeconfig holds the token"
        api = config.new_client_from_config(config_file=str(kubeconfig))
        names = {ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items}
        assert {"default", "kube-system"} <= names
        api.close()
    finally:
        proc.send_signal(sig)
        out = output_of(proc, tmp_path)
    assert proc.returncode == 0, out
    assert not kubeconfig.exists(), "sim up removes its kubeconfig when it stops"
    # lwsconf-podnet/ holds the machine-wide advisory locks that keep parallel clusters on different pod
    # networks (lwsconf/sim/nodes/network/ipam.py); it is shared by design, like /tmp/.X11-unix. Nothing else may stay.
    leftovers = sorted(p.name for p in (tmp_path / "tmpdir").iterdir() if p.name != "lwsconf-podnet")
    assert leftovers == [], f"temp files left behind: {leftovers}"
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
    assert children == "", f"processes left behind: {children}"


def test_sim_up_on_a_busy_port_says_what_to_do(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "lwsconf.cli", "sim", "up", "--port", str(port),
                               "--kubeconfig", str(tmp_path / "k")], capture_output=True, text=True, timeout=30,
                              env={**os.environ})
    assert proc.returncode == 2
    assert "choose another --port" in proc.stderr and "Traceback" not in proc.stderr
