"""How long the conformance suite takes: wall time with pytest-xdist, the serial sum, the slowest tests (issue 18).

Runs the suite as `make conformance` does (pytest on conformance/ with `-n 2` and every feature claimed) on the
sim; then on the sim again with one worker (`sim-serial`: the serial sum, each test with the machine to itself but
for its own cluster); and, when the real control plane is built, on `--cluster=local` (`-n 0`, as `make
conformance-local`). Each run writes its own reports folder, and the per-test durations are read from the report.
Records the wall time, the sum of the test durations, the outcome counts, the ten slowest tests and the machine's
load before and after: figures under load say so. Nothing is asserted: the issue's targets (sum <= 150 s, wall <=
90 s on 2 cores, no test over 8 s; all three measured at `-n 2`) are compared in the `targets` entry, as facts.

    python -m bench.suite --out bench/results.json [--clusters sim,sim-serial,local] [-k EXPR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._simproc import load_average, machine, write_results
from lwsconf.report import yaml_writer

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"sum_seconds": 150.0, "wall_seconds": 90.0, "slowest_test_seconds": 8.0}
"""Issue 18's targets for the sim with the reference on 2 cores."""
RUNS = {"sim": ("sim", "2"), "sim-serial": ("sim", "0"), "local": ("local", "0")}
"""Run name: (the --cluster it runs on, pytest-xdist workers)."""
RUN_TIMEOUT = 3600.0
"""Seconds one suite run may take before the benchmark records it as timed out."""


def run_suite(run: str, selection: str | None) -> dict[str, Any]:
    """One suite run (a name in `RUNS`); its figures, or why there are none."""
    cluster, workers = RUNS[run]
    with tempfile.TemporaryDirectory(prefix="lwsconf-bench-suite-") as reports:
        argv = [sys.executable, "-m", "pytest", "conformance", f"--cluster={cluster}", "-n", workers,
                "--all-features", "--lwsconf-reports", reports, "-q", "-p", "no:cacheprovider"]
        if selection:
            argv += ["-k", selection]
        load_before, started = load_average(), time.monotonic()
        try:
            done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                                  env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        except subprocess.TimeoutExpired:
            return {"cluster": cluster, "timed_out_after_seconds": RUN_TIMEOUT}
        wall = time.monotonic() - started
        report_file = Path(reports) / "latest" / yaml_writer.FILENAME
        if not report_file.exists():
            return {"cluster": cluster, "exit_code": done.returncode, "no_report": done.stdout[-1500:]}
        report = yaml_writer.read(report_file)
    ran = [t for t in report.tests if t.result.value not in ("SKIPPED", "NOT_SUPPORTED", "PROVISIONAL_SKIPPED")]
    outcomes: dict[str, int] = {}
    for t in report.tests:
        outcomes[t.result.value] = outcomes.get(t.result.value, 0) + 1
    slowest = sorted(ran, key=lambda t: -t.duration)[:10]
    return {"cluster": cluster, "workers": workers, "exit_code": done.returncode,
            "wall_seconds": round(wall, 1), "sum_seconds": round(sum(t.duration for t in ran), 1),
            "tests_run": len(ran), "outcomes": outcomes,
            "slowest": [{"test": t.name, "seconds": round(t.duration, 1)} for t in slowest],
            "load_average_before": load_before, "load_average_after": load_average()}


def targets(sim: dict[str, Any]) -> dict[str, Any]:
    """The sim run against issue 18's targets (facts, not assertions)."""
    if "sum_seconds" not in sim:
        return {"not_measured": "the sim run gave no figures"}
    slowest = sim["slowest"][0]["seconds"] if sim["slowest"] else 0.0
    measured = {"sum_seconds": sim["sum_seconds"], "wall_seconds": sim["wall_seconds"],
                "slowest_test_seconds": slowest}
    return {name: {"target": TARGETS[name], "measured": value, "met": value <= TARGETS[name]}
            for name, value in measured.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.suite")
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--clusters", default=",".join(RUNS), help=f"comma separated runs: {', '.join(RUNS)}")
    parser.add_argument("-k", dest="selection", default=None, help="pytest -k expression (a smaller run)")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"machine": machine()}
    for run in [c for c in args.clusters.split(",") if c]:
        if run not in RUNS:
            parser.error(f"--clusters: unknown run {run!r}; choose from {', '.join(RUNS)}")
        figures[run] = run_suite(run, args.selection)
        print(f"suite on {run}: " + ", ".join(f"{k} {v}" for k, v in figures[run].items()
                                                     if k in ("wall_seconds", "sum_seconds", "tests_run", "exit_code")))
    if "sim" in figures:
        figures["targets"] = targets(figures["sim"])
    write_results(args.out, "suite", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
