"""How often the project's checks fail when nothing is wrong: the suites, run again and again under load (issue 30).

A CI gate is only as good as its flake rate. The soak runs, one after another and with a bounded CPU load beside
them (`bench.load.CpuLoad`, two busy processes by default):

  sim    the conformance suite on the sim with the reference, as `make conformance` (pytest-xdist -n 2);
  local  the suite on the real control plane with the reference, as `make conformance-local`;
  unit   the unit and integration tests, as `make unit`.

Every failure is recorded with its test id and the first line of its message (from pytest's JUnit XML), with the
run's exit code, wall time and the load average around it; a run that failed without a failing test (a crash, a
timeout) is recorded as such with the tail of its output. Nothing is retried and nothing is asserted: the figures go
into bench/results.json ("soak") and a table into docs/soak.md. The soak is bounded: each run has a timeout, the
whole soak a budget after which the remaining runs are recorded as not run, and the load stops with it.

The kinds take turns (sim 1, local 1, unit 1, sim 2, ...), so a soak cut short by its budget still says something
about every kind. The full count takes longer than one sitting on 2 cores, so `--resume` continues a soak that was
stopped: it keeps the recorded runs only if they were made at the same commit, with a clean tree, the same load and
the same plan, and runs the ones still missing; every run records the commit it ran at.

    python -m bench.soak --out bench/results.json --markdown docs/soak.md [--runs sim=10,local=3,unit=3]
        [--load 2] [--budget-minutes 300] [--resume]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._simproc import load_average, machine, write_results
from bench.load import CpuLoad

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Kind:
    """One kind of run: what it runs (pytest arguments after `-m pytest`) and how long one may take."""

    name: str
    argv: tuple[str, ...]
    timeout_seconds: float
    reports: bool
    """True for the conformance suite (it takes --lwsconf-reports)."""


KINDS = {
    "sim": Kind("sim", ("conformance", "-n", "2", "--all-features"), 1800.0, True),
    "local": Kind("local", ("conformance", "--cluster=local", "-n", "0",
                            "--profiles", "LWS-CORE,LWS-EXTENDED,LWS-SERVING", "--all-features", "--loopback-monitor"),
                  2700.0, True),
    "unit": Kind("unit", ("tests", "-n", "2", "--dist", "loadgroup"), 3600.0, False),
}
"""The runs the soak knows, named as in --runs; each mirrors its make target."""
DEFAULT_RUNS = "sim=10,local=3,unit=3"


def parse_runs(text: str) -> list[tuple[str, int]]:
    """`sim=10,local=3` -> [("sim", 10), ("local", 3)]; ValueError naming what is wrong."""
    out: list[tuple[str, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, count = part.partition("=")
        if name not in KINDS or not count.isdigit():
            raise ValueError(f"--runs: {part!r} is not KIND=COUNT with KIND one of {', '.join(KINDS)}")
        out.append((name, int(count)))
    return out


def schedule(planned: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The runs in the order they are made: the kinds take turns, `[("sim", 3), ("unit", 1)]` ->
    sim 1, unit 1, sim 2, sim 3 (index counted per kind from 1)."""
    order: list[tuple[str, int]] = []
    for index in range(1, max((count for _, count in planned), default=0) + 1):
        order += [(name, index) for name, count in planned if index <= count]
    return order


def commit_of(repo: Path, outputs: tuple[Path, ...] = ()) -> str:
    """The commit the soak runs, with "+dirty" when the tree has changes (such a soak cannot be resumed).

    `outputs` (the soak's own files, such as docs/soak.md, which is tracked) are left out: a sitting rewrites them,
    and counting that as a change made every soak stopped by its budget impossible to resume."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=False)
    if head.returncode != 0:
        return "unknown"
    excluded = [f":(exclude){path.resolve().relative_to(repo.resolve())}" for path in outputs
                if path.resolve().is_relative_to(repo.resolve())]
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *excluded],
                            cwd=repo, capture_output=True, text=True, check=False)
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


class CannotResume(Exception):
    """The recorded soak cannot be continued; the message says why and what to do."""


def resumable_runs(previous: dict[str, Any] | None, *, commit: str, load: int,
                   planned: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """The runs of `previous` (bench/results.json's "soak") that a resumed soak keeps. Runs made at another commit,
    with a dirty tree, another load or another plan do not measure the same thing: CannotResume."""
    if previous is None:
        raise CannotResume("there is no recorded soak to resume; run it without --resume")
    why = ("it was made at another commit" if previous.get("commit") != commit else
           "it was made with uncommitted changes" if commit.endswith("+dirty") or commit == "unknown" else
           "it ran with another load" if previous.get("load_workers") != load else
           "it had another plan" if previous.get("planned") != [list(p) for p in planned] else "")
    if why:
        raise CannotResume(f"cannot resume the recorded soak ({previous.get('commit')}, load "
                           f"{previous.get('load_workers')}, plan {previous.get('planned')}): {why}; "
                           f"run it again without --resume")
    return list(previous.get("runs", []))


def failures_of(junit: Path) -> tuple[dict[str, int], list[dict[str, str]]]:
    """Outcome counts and the failing tests (id, first line of the message) of one pytest JUnit XML file."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed: list[dict[str, str]] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = next((c for c in case if c.tag in ("failure", "error")), None)
        if problem is not None:
            counts["failed"] += 1
            message = (problem.get("message") or problem.text or "").strip()
            failed.append({"test": test, "kind": problem.tag, "first_line": message.splitlines()[0][:300]
                           if message else ""})
        elif any(c.tag == "skipped" for c in case):
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, failed


def run_once(kind: Kind, index: int, keep: Path | None = None) -> dict[str, Any]:
    """One run of `kind`: its exit code, wall time, counts and failures. A red run's whole output and reports are
    copied under `keep` (<kind>-<index>/): the first line says what failed, the captured logs say why."""
    with tempfile.TemporaryDirectory(prefix=f"lwsconf-soak-{kind.name}-") as tmp:
        junit = Path(tmp) / "junit.xml"
        argv = [sys.executable, "-m", "pytest", *kind.argv, "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
        if kind.reports:
            argv += ["--lwsconf-reports", str(Path(tmp) / "reports")]
        record: dict[str, Any] = {"kind": kind.name, "index": index, "load_average_before": load_average()}
        started = time.monotonic()
        with open(Path(tmp) / "output.txt", "w+") as output:
            proc = subprocess.Popen(argv, cwd=REPO, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, start_new_session=True)
            try:
                record["exit_code"] = proc.wait(timeout=kind.timeout_seconds)
            except subprocess.TimeoutExpired:
                record["timed_out_after_seconds"] = kind.timeout_seconds
            finally:
                if proc.poll() is None:
                    _stop_group(proc)
            output.seek(0)
            tail = output.read()[-2000:]
        record["wall_seconds"] = round(time.monotonic() - started, 1)
        record["load_average_after"] = load_average()
        if junit.exists():
            record["outcomes"], record["failures"] = failures_of(junit)
        else:
            record["outcomes"], record["failures"] = {}, []
        if record.get("exit_code") != 0 and not record["failures"]:
            lines = [ln for ln in tail.splitlines() if ln.strip()]
            record["failures"] = [{"test": "(the run itself)", "kind": "run",
                                   "first_line": (lines[-1] if lines else "no output")[:300]}]
        record["green"] = record.get("exit_code") == 0 and not record["failures"]
        if keep is not None and not record["green"]:
            kept = keep / f"{kind.name}-{index}"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(tmp, kept)
            record["kept"] = str(kept)
    return record


def _stop_group(proc: subprocess.Popen[Any]) -> None:
    """SIGINT to the run's process group (pytest then cleans up its clusters), SIGKILL if it does not stop."""
    for sig, grace in ((signal.SIGINT, 60.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def summarise(runs: list[dict[str, Any]], planned: list[tuple[str, int]]) -> dict[str, Any]:
    """Per kind: runs planned, run and green, wall times; and every failing test with how often it failed."""
    out: dict[str, Any] = {}
    for name, count in planned:
        mine = [r for r in runs if r["kind"] == name]
        walls = [r["wall_seconds"] for r in mine]
        flaky: dict[str, dict[str, Any]] = {}
        for r in mine:
            for f in r["failures"]:
                entry = flaky.setdefault(f["test"], {"test": f["test"], "failed_runs": 0,
                                                     "first_line": f["first_line"]})
                entry["failed_runs"] += 1
        out[name] = {"planned": count, "run": len(mine), "green": sum(1 for r in mine if r["green"]),
                     "wall_seconds": {"min": min(walls), "median": statistics.median(walls), "max": max(walls)}
                     if walls else {},
                     "failing_tests": sorted(flaky.values(), key=lambda e: (-e["failed_runs"], e["test"]))}
    return out


def markdown(results: dict[str, Any]) -> str:
    """docs/soak.md: the figures of the last soak as a table, with every failure it saw."""
    m = results["machine"]
    lines = ["# Soak: the project's checks under load", "",
             f"Last soak: {results['date']}, {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gb']} GB, Python "
             f"{m['python']}; {results['load_workers']} busy processes beside every run "
             f"(`make soak`, `python -m bench.soak`). Commit {results.get('commit', 'unknown')[:12]}, "
             f"{results.get('sittings', 1)} sitting(s) (`make soak SOAK_RESUME=1` continues a stopped soak at the "
             f"same commit). Written by the soak; do not edit by hand.", "",
             "| run | green / run (planned) | wall per run, min / median / max | failing tests |",
             "|---|---|---|---|"]
    for name, s in results["summary"].items():
        wall = s["wall_seconds"]
        walls = f"{wall['min']:.0f} / {wall['median']:.0f} / {wall['max']:.0f} s" if wall else "-"
        failing = "; ".join(f"`{f['test']}` x{f['failed_runs']}: {f['first_line']}" for f in s["failing_tests"])
        lines.append(f"| {name} | {s['green']} / {s['run']} ({s['planned']}) | {walls} | {failing or 'none'} |")
    if results.get("stopped_by_budget"):
        lines += ["", f"The soak stopped at its budget of {results['budget_minutes']} minutes; the runs above the "
                      "'run' count were not run."]
    elif results.get("interrupted"):
        lines += ["", "The soak was interrupted; the runs above the 'run' count were not run."]
    elif not results.get("complete", True):
        lines += ["", "The soak is still running (this is what it had measured when it wrote this)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here (docs/soak.md)")
    parser.add_argument("--runs", default=DEFAULT_RUNS, help=f"KIND=COUNT,... (default {DEFAULT_RUNS})")
    parser.add_argument("--keep", type=Path, default=Path("reports/soak"),
                        help="where a red run's output and reports are kept (default reports/soak)")
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the runs (default 2)")
    parser.add_argument("--budget-minutes", type=float, default=300.0,
                        help="start no run after this many minutes of this sitting (default 300)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the soak recorded in --out (same commit, load and plan): run what is missing")
    args = parser.parse_args(argv)
    try:
        planned = parse_runs(args.runs)
    except ValueError as exc:
        parser.error(str(exc))
    commit = commit_of(REPO, tuple(p for p in (args.out, args.markdown) if p is not None))
    runs: list[dict[str, Any]] = []
    sittings = 1
    if args.resume:
        previous = json.loads(args.out.read_text()).get("soak") if args.out.exists() else None
        try:
            runs = resumable_runs(previous, commit=commit, load=args.load, planned=planned)
        except CannotResume as exc:
            print(f"soak: {exc}", file=sys.stderr)
            return 2
        sittings = int((previous or {}).get("sittings", 1)) + 1
    done = {(r["kind"], r["index"]) for r in runs}
    started = time.monotonic()
    stopped: str | None = None

    def record(final: bool) -> None:
        """Write what was measured so far: after every run, so an interrupted soak keeps its figures."""
        results: dict[str, Any] = {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(),
            "commit": commit, "sittings": sittings, "planned": [list(p) for p in planned],
            "load_workers": args.load, "budget_minutes": args.budget_minutes,
            "stopped_by_budget": stopped == "budget", "interrupted": stopped == "interrupted",
            "complete": final and stopped is None, "summary": summarise(runs, planned), "runs": runs}
        write_results(args.out, "soak", results)
        if args.markdown:
            args.markdown.write_text(markdown(results))

    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        with CpuLoad(args.load, max_seconds=args.budget_minutes * 60 + 3 * 3600):
            counts = dict(planned)
            for name, index in schedule(planned):
                if (name, index) in done:
                    continue
                if time.monotonic() - started > args.budget_minutes * 60:
                    stopped = "budget"
                    break
                runs.append({**run_once(KINDS[name], index, args.keep), "commit": commit})
                failed = ", ".join(f["test"] for f in runs[-1]["failures"]) or "none"
                print(f"soak: {name} {index}/{counts[name]}: {'green' if runs[-1]['green'] else 'RED'} in "
                      f"{runs[-1]['wall_seconds']:.0f} s (failing: {failed})", flush=True)
                record(final=False)
    except KeyboardInterrupt:
        stopped = "interrupted"
        print("soak: interrupted; the runs finished so far are recorded", flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
    record(final=True)
    red = sum(1 for r in runs if not r["green"])
    print(f"soak: {len(runs) - red} of {len(runs)} runs green; figures in {args.out}")
    return 0 if red == 0 and stopped is None else 1


def _raise_interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends the soak as Ctrl-C does: the running suite is stopped, what was measured is written."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
