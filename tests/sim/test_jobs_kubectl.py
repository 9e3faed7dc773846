"""`kubectl create job`, `kubectl wait --for=condition=complete` and `kubectl logs job/NAME` against `lwsconf sim up`.

The everyday Job round trip a user types, with the kubectl built with the real control plane (it sends
protobuf for built-in kinds, so batch/v1 goes through the protobuf path), else the installed one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.sim.apiserver.kubectl_on_sim import sim_up
from tests.sim.apiserver.protobuf.test_protobuf_server import built_kubectl

KUBECTL_TIMEOUT_SECONDS = 120.0
"""One kubectl command, `kubectl wait` included (its own --timeout is shorter)."""
JOB_WAIT = "90s"
"""kubectl wait's --timeout for the Job to complete (image start is instant on the sim; the process is short)."""


@pytest.mark.kubectl
@pytest.mark.slow
def test_kubectl_create_wait_and_logs_of_a_job_against_sim_up(tmp_path: Path) -> None:
    kubectl = built_kubectl()
    with sim_up(tmp_path) as env:
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
