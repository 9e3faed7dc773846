"""The test command `make mutate` runs per mutant (and for its baseline): pytest, judged by its tests alone.

    python -m bench.mutate_run [--durations FILE] -- PYTEST_ARGS...

Exits 1 when a test failed or errored (in any phase) or no test ran to a pass (a mutant that breaks an import
fails collection: killed), 0 when every test that ran passed. pytest's own exit code is not used: the conformance
report's gate turns a run of a few selected tests into a failure (a claimed profile none of whose tests ran is
"not-run"), which would count every mutant killed. With --durations, each test's duration (setup + call +
teardown), the failed and the passed tests are written as JSON (the baseline figures: tests fastest first).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


class Recorder:
    """A pytest plugin object: durations and failures of every test (the xdist controller gets every report)."""

    def __init__(self) -> None:
        self.durations: dict[str, float] = {}
        self.failed: list[str] = []
        self.passed: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.failed and report.nodeid not in self.failed:
            self.failed.append(report.nodeid)
        if report.when == "call" and report.passed:
            self.passed.append(report.nodeid)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.failed.append(f"collecting {report.nodeid}")


PIDS_ENV = "LWSCONF_MUTATE_PIDS"
"""A directory where each run leaves its pid: bench/mutate.py ends these process groups (each run is started as
a session leader) when it is interrupted, so no simulated cluster or xdist worker outlives it."""


def main(argv: list[str]) -> int:
    pid_file = Path(os.environ[PIDS_ENV]) / str(os.getpid()) if os.environ.get(PIDS_ENV) else None
    if pid_file is not None:
        pid_file.touch()
    try:
        return _run(argv)
    finally:
        if pid_file is not None:
            pid_file.unlink(missing_ok=True)


def _run(argv: list[str]) -> int:
    durations_file = None
    if argv[:1] == ["--durations"]:
        durations_file, argv = Path(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    recorder = Recorder()
    code = pytest.main(argv, plugins=[recorder])
    if durations_file is not None:
        durations_file.write_text(json.dumps({"durations": {k: round(v, 3) for k, v in sorted(
            recorder.durations.items())}, "failed": recorder.failed, "passed": recorder.passed,
            "pytest_exit_code": int(code)}, indent=1))
    if recorder.failed:
        print(f"mutate_run: failed: {' '.join(recorder.failed)}", flush=True)
        return 1
    if not recorder.passed:
        print(f"mutate_run: no test passed (pytest exit code {int(code)})", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
