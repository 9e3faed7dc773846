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


def start(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    kubeconfig = tmp_path / "sim" / "kubeconfig"
    private_tmp = tmp_path / "tmpdir"
    private_tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "lwsconf.cli", "sim", "up", "--kubeconfig", str(kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "TMPDIR": str(private_tmp)})
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if "kubeconfig written to" in line:
            return proc, kubeconfig
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"sim up did not report its kubeconfig; output: {''.join(lines)!r}")


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
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert not kubeconfig.exists(), "sim up removes its kubeconfig when it stops"
    # lwsconf-podnet/ holds the machine-wide advisory locks that keep parallel clusters on different pod
    # networks (lwsconf/sim/nodes/ipam.py); it is shared by design, like /tmp/.X11-unix. Nothing else may stay.
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
