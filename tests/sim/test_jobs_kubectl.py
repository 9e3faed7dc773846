"""`kubectl create job`, `kubectl wait --for=condition=complete` and `kubectl logs job/NAME` against `lwsconf sim up`.

The everyday Job round trip a user types, with the kubectl built with the real control plane (it sends
protobuf for built-in kinds, so batch/v1 goes through the protobuf path), else the installed one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.sim.apiserver.test_protobuf_server import built_kubectl

SIM_UP_TIMEOUT_SECONDS = float(os.environ.get("LWSCONF_TEST_SIM_UP_TIMEOUT", "60"))
"""How long `lwsconf sim up` may take to write its kubeconfig (a cold start on a busy 2-core machine)."""
KUBECTL_TIMEOUT_SECONDS = 120.0
"""One kubectl command, `kubectl wait` included (its own --timeout is shorter)."""
JOB_WAIT = "90s"
"""kubectl wait's --timeout for the Job to complete (image start is instant on the sim; the process is short)."""


@pytest.mark.kubectl
@pytest.mark.slow
def test_kubectl_create_wait_and_logs_of_a_job_against_sim_up(tmp_path: Path) -> None:
    kubectl = built_kubectl()
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "lwsconf.cli", "sim", "up", "--kubeconfig", str(kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + SIM_UP_TIMEOUT_SECONDS
        assert proc.stdout is not None
        while "kubeconfig written to" not in proc.stdout.readline():
            assert proc.poll() is None and time.monotonic() < deadline, "lwsconf sim up did not come up"
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": str(kubeconfig)}

        def run(*args: str) -> str:
            done = subprocess.run([str(kubectl), *args], capture_output=True, text=True, env=env,
                                  timeout=KUBECTL_TIMEOUT_SECONDS, check=False)
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
            return done.stdout

        assert run("create", "job", "demo", "--image=python:3.12-slim", "--", "python", "-c",
                   "print(1)").strip() == "job.batch/demo created"
        assert "condition met" in run("wait", "--for=condition=complete", "job/demo", f"--timeout={JOB_WAIT}")
        assert run("logs", "job/demo").strip() == "1"
        table = run("get", "jobs").splitlines()
        assert table[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], table
        assert table[1].split()[:3] == ["demo", "Complete", "1/1"], table
        events = run("get", "events", "--field-selector", "involvedObject.name=demo", "-o",
                     "jsonpath={range .items[*]}{.reason}{'\\n'}{end}").split()
        assert "SuccessfulCreate" in events and "Completed" in events, events
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=SIM_UP_TIMEOUT_SECONDS)
