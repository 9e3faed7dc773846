"""Mutation testing of the reference reconciler (`make mutate`, issue 28): how many small wrong reconcilers the
conformance suite fails.

Tool: cosmic-ray (PyPI). It mutates files in place and runs any test command per mutant, so each mutant runs only
the conformance tests whose coverage context covered the mutated statement (bench/mutate_plan.py), fail-fast and
fastest first, in a throwaway copy of the repository. Steps:

1. `git worktree add --detach` of HEAD into a temporary directory: mutations are never applied in the working tree
   others run tests from. The copy is removed at the end, also on Ctrl-C or SIGTERM.
2. Baseline: the conformance suite once on the unmutated copy under coverage.py with one context per test
   (pytest-cov `--cov-context=test`) and the per-test durations (bench/mutate_run.py). It must pass: a run on
   a failing suite would count every mutant killed.
3. cosmic-ray's `init` enumerates every mutant of lwsconf/reconciler/ (its core operators) into a session database;
   a seeded random sample of `--sample` of them is run, the others are marked skipped in the database.
4. Each sampled mutant: cosmic-ray's `mutate_and_test` applies it, runs the selected tests (`-x`, the named waits
   shortened by `--timeout-overrides`, PYTHONPATH on the copy) with a per-mutant timeout, restores the file.
   A timeout is counted as killed, cosmic-ray's convention (`cosmic_ray.testing.run_tests`), and shown apart.
5. Mutants triaged as equivalent in bench/mutate_equivalent.toml (file, diff, reason) are reported "equivalent:
   <reason>" and left out of the killed share; survivors triaged there with the behaviour the suite misses are
   reported with it. Results go to bench/results.json (section "mutate") and the table in docs/mutation-testing.md.

    python -m bench.mutate [--sample N] [--seed S] [--budget-minutes M] [--out bench/results.json]
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.metadata
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from bench import mutate_plan
from bench._simproc import load_average, machine, write_results

REPO = Path(__file__).resolve().parents[1]
TARGET = "lwsconf/reconciler"
EQUIVALENTS = REPO / "bench" / "mutate_equivalent.toml"
DOC = REPO / "docs" / "mutation-testing.md"
DOC_BEGIN = "<!-- mutate results: begin (written by python -m bench.mutate) -->"
DOC_END = "<!-- mutate results: end -->"
TIMEOUT_OVERRIDES = "LwsAvailable:40;GroupRecreated:40;RolloutComplete:60;ScaleComplete:40;PodsRunning:30;Delete:30"
"""The named waits shortened for mutant runs (defaults 60/60/120/60/30/30 s): a mutant that never reaches a state
fails its wait sooner. The baseline runs with the same values and must pass, so they are not too short for the
reference on this machine at this load."""
MAX_BASELINE_FAILURES = 3
"""Tests the unmutated suite may fail (flaky at this load) before the run stops: they are left out of every
selection (a test that fails unmutated kills nothing) and listed in the results."""
BASELINE_TIMEOUT = 3600.0
"""Seconds the baseline (whole suite under coverage) may take."""


class MutateError(Exception):
    """A step of the run failed; the message says what to do."""


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@contextlib.contextmanager
def worktree() -> Iterator[Path]:
    """A detached worktree of HEAD in a temporary directory, removed afterwards whatever happens (SIGTERM too)."""
    parent = Path(tempfile.mkdtemp(prefix="lwsconf-mutate-"))
    copy = parent / "repo"
    previous = signal.getsignal(signal.SIGTERM)

    def interrupted(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    try:
        _git("worktree", "add", "--detach", "--quiet", str(copy), "HEAD")
        yield copy
    finally:
        stop_runs(parent / "pids")
        with contextlib.suppress(subprocess.CalledProcessError):
            _git("worktree", "remove", "--force", str(copy))
        shutil.rmtree(parent, ignore_errors=True)
        with contextlib.suppress(subprocess.CalledProcessError):
            _git("worktree", "prune")
        signal.signal(signal.SIGTERM, previous)


def stop_runs(pids: Path) -> None:
    """End the process group of every test run started here that may still be running (an interrupted run's
    pytest, its xdist workers and simulated nodes): SIGTERM so they clean up, SIGKILL after 15 s."""
    groups = [int(p.name) for p in pids.iterdir()] if pids.is_dir() else []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, sig)
                alive.append(group)
        if not alive or sig == signal.SIGKILL:
            return
        for _ in range(30):
            if not any(_group_alive(g) for g in alive):
                return
            time.sleep(0.5)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _env(copy: Path) -> dict[str, str]:
    """The environment of every pytest run here: the copy's code wins over the editable install of the repo, and
    each run leaves its pid for `stop_runs`."""
    pids = copy.parent / "pids"
    pids.mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1", "LWSCONF_MUTATE_PIDS": str(pids)}


def _runner(copy: Path, overrides: str, durations: Path | None = None) -> list[str]:
    """bench/mutate_run.py (pytest judged by its tests, not by the report's gate) with the suite's options."""
    return [sys.executable, "-m", "bench.mutate_run", *(["--durations", str(durations)] if durations else []), "--",
            "-p", "no:cacheprovider", "--all-features", "-q",
            "--timeout-overrides", overrides, "--lwsconf-reports", str(copy.parent / "reports")]


Contexts = dict[str, dict[int, list[str]]]
"""Per file (relative to the repository), per line: the coverage contexts (one per test) that ran it."""


def baseline(copy: Path, workers: int, overrides: str,
             selection: str | None) -> tuple[Contexts, dict[str, float], float, list[str]]:
    """Run the suite once on the unmutated copy under coverage: each file's line -> contexts, test durations, wall."""
    durations_file, coverage_file = copy.parent / "durations.json", copy.parent / "coverage.sqlite"
    argv = [*_runner(copy, overrides, durations_file), "conformance", "-n", str(workers),
            f"--cov={TARGET}", "--cov-context=test", "--cov-report="] + (["-k", selection] if selection else [])
    env = {**_env(copy), "COVERAGE_FILE": str(coverage_file)}
    started = time.monotonic()
    done = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True, timeout=BASELINE_TIMEOUT,
                          start_new_session=True)
    wall = time.monotonic() - started
    figures = json.loads(durations_file.read_text()) if durations_file.exists() else {}
    failed = figures.get("failed", [])
    if not figures.get("durations") or len(failed) > MAX_BASELINE_FAILURES:
        raise MutateError(f"the unmutated suite failed ({failed or 'no figures'}); mutants would count as killed "
                          f"for it. Fix the suite first. Last output:\n{done.stdout[-3000:]}{done.stderr[-1500:]}")
    if failed:  # a flaky test at this load: it kills nothing, so it is not selected for any mutant
        print(f"mutate: baseline: {len(failed)} test(s) failed unmutated, left out of every selection: {failed}")
    import coverage  # the `mutate` extra; imported here so the module loads (and type-checks) without it

    data = coverage.CoverageData(basename=str(coverage_file))
    data.read()
    contexts: Contexts = {}
    for measured in data.measured_files():
        rel = os.path.relpath(measured, copy)
        contexts[rel] = {line: sorted(c) for line, c in data.contexts_by_lineno(measured).items()}
    passed = set(figures["passed"]) - set(failed)  # skipped tests cannot kill; a run of only those would "kill"
    return contexts, {t: d for t, d in figures["durations"].items() if t in passed}, wall, failed


def enumerate_mutants(copy: Path, session: Path) -> list[mutate_plan.Mutant]:
    """cosmic-ray's `init` over the copy's reconciler: every mutant, stored in the session database."""
    import cosmic_ray.commands
    import cosmic_ray.modules
    from cosmic_ray.work_db import WorkDB, use_db

    modules = sorted(cosmic_ray.modules.find_modules([copy / TARGET]))
    with use_db(str(session), WorkDB.Mode.create) as db:
        cosmic_ray.commands.init(modules, db, {})
        mutants = []
        for item in db.work_items:
            (spec,) = item.mutations
            mutants.append(mutate_plan.Mutant(
                job_id=item.job_id, path=os.path.relpath(spec.module_path, copy), operator=spec.operator_name,
                occurrence=spec.occurrence, line=spec.start_pos[0], end_line=spec.end_pos[0],
                col=spec.start_pos[1]))
    return mutants


def compiles(copy: Path) -> Callable[[mutate_plan.Mutant], bool]:
    """Whether a mutant is one worth running: outside annotations (`mutate_plan.in_annotation`) and its module
    still compiles (cosmic-ray's `mutate_code` on the copy's source, not applied)."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    sources: dict[str, str] = {}

    def check(mutant: mutate_plan.Mutant) -> bool:
        source = sources.setdefault(mutant.path, (copy / mutant.path).read_text())
        if mutate_plan.in_annotation(source, mutant.line, mutant.col):
            return False
        mutated = mutate_code(source, cosmic_ray.plugins.get_operator(mutant.operator)(), mutant.occurrence)
        if mutated is None:
            return False
        try:
            with warnings.catch_warnings():  # e.g. `is not` with a literal: a mutant, not a warning for the run
                warnings.simplefilter("ignore")
                compile(mutated, mutant.path, "exec")
        except SyntaxError:
            return False
        return True

    return check


def _triaged_equivalent(copy: Path, mutant: mutate_plan.Mutant,
                        equivalents: Sequence[mutate_plan.Equivalent]) -> tuple[str, str, str] | None:
    """(before, after, reason) when the triage file already argues this mutant equivalent."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    source = (copy / mutant.path).read_text()
    mutated = mutate_code(source, cosmic_ray.plugins.get_operator(mutant.operator)(), mutant.occurrence)
    if mutated is None:
        return None
    diff = "\n".join(difflib.unified_diff(source.splitlines(), mutated.splitlines(), lineterm="", n=0))
    reason = mutate_plan.equivalent_reason(mutant.path, diff, equivalents)
    return None if reason is None else (*mutate_plan.diff_lines(diff), reason)


def _tests_for(copy: Path, mutant: mutate_plan.Mutant, contexts: Mapping[str, Mapping[int, Sequence[str]]],
               durations: Mapping[str, float]) -> list[str]:
    lines = mutate_plan.covering_lines((copy / mutant.path).read_text(), mutant.line)
    # Only tests that passed unmutated (the durations leave out the baseline's failures) can kill anything.
    return [t for t in mutate_plan.select_tests(lines, contexts.get(mutant.path, {}), durations) if t in durations]


def _killed_by(output: str) -> str | None:
    for text in output.splitlines():
        if text.startswith("mutate_run: failed: "):
            return text.removeprefix("mutate_run: failed: ").split(" ")[0]
    return None


def run_mutants(copy: Path, session: Path, chosen: Sequence[mutate_plan.Mutant],
                contexts: Mapping[str, Mapping[int, Sequence[str]]], durations: Mapping[str, float], *,
                overrides: str, deadline: float, equivalents: Sequence[mutate_plan.Equivalent],
                survivors: Mapping[tuple[str, str, str], str]) -> list[dict[str, Any]]:
    """Apply and test each chosen mutant with cosmic-ray (in `copy`); one result entry each, in order."""
    results: list[dict[str, Any]] = []
    # cosmic-ray runs the test command with this process's environment and working directory.
    saved_cwd, saved_path = os.getcwd(), os.environ.get("PYTHONPATH")
    os.chdir(copy)
    os.environ.update(_env(copy))
    try:
        _run_each(db_path=session, chosen=chosen, copy=copy, contexts=contexts, durations=durations,
                  overrides=overrides, deadline=deadline, equivalents=equivalents, survivors=survivors,
                  results=results)
    finally:
        os.chdir(saved_cwd)
        os.environ.pop("LWSCONF_MUTATE_PIDS", None)
        if saved_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_path
    return results


def _run_each(*, db_path: Path, chosen: Sequence[mutate_plan.Mutant], copy: Path,
              contexts: Mapping[str, Mapping[int, Sequence[str]]], durations: Mapping[str, float], overrides: str,
              deadline: float, equivalents: Sequence[mutate_plan.Equivalent],
              survivors: Mapping[tuple[str, str, str], str], results: list[dict[str, Any]]) -> None:
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

    with use_db(str(db_path), WorkDB.Mode.open) as db:
        by_id = {item.job_id: item for item in db.work_items}
        chosen_ids = {m.job_id for m in chosen}
        db.set_multiple_results([j for j in by_id if j not in chosen_ids],
                                WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
        for number, mutant in enumerate(chosen, 1):
            entry: dict[str, Any] = {"path": mutant.path, "line": mutant.line, "operator": mutant.operator,
                                     "occurrence": mutant.occurrence}
            if time.monotonic() > deadline:
                entry["outcome"] = "not_run"
                results.append(entry)
                continue
            known = _triaged_equivalent(copy, mutant, equivalents)
            if known is not None:  # argued equivalent already: running it would only cost time
                entry.update(outcome="equivalent", reason=known[2], before=known[0], after=known[1],
                             seconds=0.0, note="not run: triaged equivalent")
                results.append(entry)
                print(f"[{number}/{len(chosen)}] equivalent (triaged, not run) {mutant.path}:{mutant.line}", flush=True)
                continue
            tests = _tests_for(copy, mutant, contexts, durations)
            expected = sum(durations.get(t, 15.0) for t in tests)
            workers = "2" if len(tests) > 3 else "0"
            timeout = 120.0 + 2.0 * expected / (2 if workers == "2" else 1)
            command = shlex.join([*_runner(copy, overrides), "-x", "-n", workers, *tests]) if tests else "true"
            started = time.monotonic()
            result = mutate_and_test(by_id[mutant.job_id].mutations, command, timeout)
            seconds = round(time.monotonic() - started, 1)
            db.set_result(mutant.job_id, result)
            diff = result.diff or ""
            before, after = mutate_plan.diff_lines(diff)
            entry.update(before=before, after=after, tests_selected=len(tests), seconds=seconds,
                         timeout_seconds=round(timeout))
            output = result.output or ""
            if result.worker_outcome == WorkerOutcome.NO_TEST:
                entry["outcome"] = "no_test"
            elif result.worker_outcome != WorkerOutcome.NORMAL or result.test_outcome == TestOutcome.INCOMPETENT:
                entry.update(outcome="incompetent", output=output[-800:])
            elif (reason := mutate_plan.equivalent_reason(mutant.path, diff, equivalents)) is not None:
                entry.update(outcome="equivalent", reason=reason, tests_outcome=str(result.test_outcome.value))
            elif result.test_outcome == TestOutcome.KILLED and output == "timeout":
                entry["outcome"] = "timeout"
            elif result.test_outcome == TestOutcome.KILLED:
                entry.update(outcome="killed", killed_by=_killed_by(output))
            else:
                entry["outcome"] = "survived"
                if not tests:
                    entry["missed"] = "no conformance test runs this line"
                if (missed := survivors.get((mutant.path, before.strip(), after.strip()))) is not None:
                    entry["missed"] = missed
            results.append(entry)
            print(f"[{number}/{len(chosen)}] {entry['outcome']:>10} {seconds:6.1f}s {len(tests):3d} tests "
                  f"{mutant.path}:{mutant.line} {before!r} -> {after!r}", flush=True)


def load_triage(path: Path) -> tuple[list[mutate_plan.Equivalent], dict[tuple[str, str, str], str]]:
    """The equivalents (with reasons) and the survivors' missed behaviours recorded in the triage file."""
    if not path.exists():
        return [], {}
    document = tomllib.loads(path.read_text())
    survivors = {(s["path"], s["before"].strip(), s["after"].strip()): " ".join(s["missed"].split())
                 for s in document.get("survivor", [])}
    return mutate_plan.load_equivalents(document), survivors


def markdown(section: Mapping[str, Any]) -> str:
    """The results table for docs/mutation-testing.md."""
    summary, counts = section["summary"], section["summary"]["counts"]
    lines = [f"Run of {section['finished']} on commit `{section['commit'][:10]}`: {section['sampled']} of "
             f"{section['population']} mutants sampled (seed {section['seed']}), {section['run']} run, "
             f"{section['wall_seconds'] / 60:.0f} min wall (baseline {section['baseline']['wall_seconds']:.0f} s), "
             f"{section['per_mutant_seconds']['median']} s median per mutant.", "",
             "| killed | of which timeout | survived | equivalent | incompetent | killed % of non-equivalent "
             "| target |",
             "|---|---|---|---|---|---|---|",
             f"| {summary['killed_including_timeouts']} | {counts['timeout']} | {counts['survived']} | "
             f"{counts['equivalent']} | {counts['incompetent']} | {summary['killed_percent_of_non_equivalent']} | "
             f"{summary['target_percent']} ({'met' if summary['met'] else 'not met'}) |", "",
             "| # | mutant | change | outcome | tests | s |", "|---|---|---|---|---|---|"]
    for i, m in enumerate(section["mutants"], 1):
        if m["outcome"] == "not_run":
            continue
        outcome = m["outcome"]
        if outcome == "equivalent":
            outcome = f"equivalent: {m['reason']}"
        elif outcome == "killed" and m.get("killed_by"):
            outcome = f"killed by `{m['killed_by'].split('::')[-1]}`"
        elif outcome == "survived" and m.get("missed"):
            outcome = f"**survived**: {m['missed']}"
        elif outcome == "survived":
            outcome = "**survived** (not triaged)"
        change = f"`{m.get('before', '')}` → `{m.get('after', '')}`".replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {i} | {m['path'].removeprefix(TARGET + '/')}:{m['line']} {m['operator'].removeprefix('core/')}"
                     f" | {change} | {outcome.replace('|', '/')} | {m.get('tests_selected', '')} | "
                     f"{m.get('seconds', '')} |")
    return "\n".join(lines)


def write_doc(doc: Path, table: str) -> None:
    text = doc.read_text()
    if DOC_BEGIN not in text or DOC_END not in text:
        raise MutateError(f"{doc} has no {DOC_BEGIN!r} ... {DOC_END!r} markers to write the results between")
    head, rest = text.split(DOC_BEGIN, 1)
    doc.write_text(f"{head}{DOC_BEGIN}\n{table}\n{DOC_END}{rest.split(DOC_END, 1)[1]}")


def retriage(section: dict[str, Any], equivalents: Sequence[mutate_plan.Equivalent],
             survivors: Mapping[tuple[str, str, str], str]) -> None:
    """Apply the triage file to a recorded run: survivors it argues equivalent become `equivalent: <reason>`,
    the others get the behaviour the suite misses; the summary is recomputed. No mutant is run."""
    for m in section["mutants"]:
        if m["outcome"] not in ("survived", "equivalent"):
            continue
        reason = mutate_plan.reason_for(m["path"], m.get("before", ""), m.get("after", ""), equivalents)
        if reason is not None:
            m.update(outcome="equivalent", reason=reason)
            m.pop("missed", None)
        else:
            m["outcome"] = "survived"
            m.pop("reason", None)
            key = (m["path"], m.get("before", "").strip(), m.get("after", "").strip())
            if (missed := survivors.get(key)) is not None:
                m["missed"] = missed
    section["summary"] = mutate_plan.summarise(m["outcome"] for m in section["mutants"] if m["outcome"] != "not_run")


def rerun(section: dict[str, Any], tests: Sequence[str], overrides: str) -> None:
    """Run the recorded survivors again, on a worktree of the current HEAD, against `tests` (new tests written to
    kill them): each survivor is found again by its file, operator and diff (its occurrence may have moved). A
    killed one is recorded killed, with the test and the commit; the others stay survivors."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_and_test, mutate_code
    from cosmic_ray.work_item import MutationSpec, TestOutcome, WorkerOutcome

    commit = _git("rev-parse", "HEAD").strip()
    with worktree() as copy:
        saved = os.getcwd()
        os.chdir(copy)
        os.environ.update(_env(copy))
        try:
            for m in section["mutants"]:
                if m["outcome"] != "survived":
                    continue
                source = (copy / m["path"]).read_text()
                operator = cosmic_ray.plugins.get_operator(m["operator"])()
                found = None
                for occurrence in range(400):
                    mutated = mutate_code(source, operator, occurrence)
                    if mutated is None:
                        break
                    diff = "\n".join(difflib.unified_diff(source.splitlines(), mutated.splitlines(), lineterm="", n=0))
                    if mutate_plan.diff_lines(diff) == (m.get("before", ""), m.get("after", "")):
                        found = occurrence
                        break
                if found is None:
                    m["rerun"] = f"not found at {commit[:10]}: the code changed"
                    continue
                spec = MutationSpec(module_path=str(copy / m["path"]), operator_name=m["operator"], occurrence=found,
                                    start_pos=(1, 0), end_pos=(1, 1))
                command = shlex.join([*_runner(copy, overrides), "-x", "-n", "0", *tests])
                started = time.monotonic()
                result = mutate_and_test([spec], command, 600.0)
                seconds = round(time.monotonic() - started, 1)
                killed = result.worker_outcome == WorkerOutcome.NORMAL and result.test_outcome == TestOutcome.KILLED
                m["rerun"] = {"commit": commit, "tests": list(tests), "seconds": seconds,
                              "outcome": "killed" if killed else "survived"}
                if killed:
                    m.update(outcome="timeout" if result.output == "timeout" else "killed",
                             killed_by=_killed_by(result.output or ""))
                    m.pop("missed", None)
                print(f"rerun: {m['path']}:{m['line']} {m['before']!r} -> {m['after']!r}: "
                      f"{m['rerun']['outcome']} in {seconds} s", flush=True)
        finally:
            os.chdir(saved)
    section["summary"] = mutate_plan.summarise(m["outcome"] for m in section["mutants"] if m["outcome"] != "not_run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mutate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=40, help="mutants to run, chosen at random (default 40)")
    parser.add_argument("--seed", type=int, default=28, help="seed of the random sample (default 28)")
    parser.add_argument("--budget-minutes", type=float, default=55.0,
                        help="no new mutant starts after this many minutes; the rest are reported not_run")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers of the baseline run")
    parser.add_argument("--timeout-overrides", default=TIMEOUT_OVERRIDES, help="named waits for every run here")
    parser.add_argument("-k", dest="selection", default=None,
                        help="pytest -k expression: a smaller baseline (trying the tool out; not a measurement)")
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS, help="the triage file (TOML)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results.json")
    parser.add_argument("--doc", default=str(DOC), help='markdown file with the results markers ("" for none)')
    parser.add_argument("--retriage", action="store_true",
                        help="run nothing: apply the triage file to the recorded run in --out and rewrite --doc")
    parser.add_argument("--rerun-survivors", nargs="+", metavar="TEST", default=None,
                        help="run nothing new: run the recorded survivors again against these tests (at HEAD)")
    args = parser.parse_args(argv)
    equivalents, survivors = load_triage(args.equivalents)
    if args.retriage or args.rerun_survivors:
        recorded: dict[str, Any] = json.loads(args.out.read_text())["mutate"]
        if args.rerun_survivors:
            retriage(recorded, equivalents, survivors)  # equivalents need no rerun
            rerun(recorded, args.rerun_survivors, args.timeout_overrides)
        retriage(recorded, equivalents, survivors)
        write_results(args.out, "mutate", recorded)
        if args.doc:
            write_doc(Path(args.doc), markdown(recorded))
        print(json.dumps(recorded["summary"], indent=1))
        return 0
    started, load_before = time.monotonic(), load_average()
    deadline = started + 60.0 * args.budget_minutes
    commit = _git("rev-parse", "HEAD").strip()
    try:
        with worktree() as copy:
            print(f"mutate: copy of {commit[:10]} at {copy}; baseline run under coverage...", flush=True)
            contexts, durations, baseline_wall, baseline_failed = baseline(copy, args.workers, args.timeout_overrides,
                                                        args.selection)
            print(f"mutate: baseline {baseline_wall:.0f} s, {len(durations)} tests", flush=True)
            session = copy.parent / "session.sqlite"
            population = enumerate_mutants(copy, session)
            chosen, invalid = mutate_plan.sample(population, args.sample, args.seed, valid=compiles(copy))
            results = run_mutants(copy, session, chosen, contexts, durations, overrides=args.timeout_overrides,
                                  deadline=deadline, equivalents=equivalents, survivors=survivors)
    except (MutateError, subprocess.CalledProcessError) as exc:
        print(f"mutate: {exc}", file=sys.stderr)
        return 2
    ran = [m for m in results if m["outcome"] != "not_run"]
    seconds = [m["seconds"] for m in ran if "seconds" in m] or [0.0]
    section: dict[str, Any] = {
        "tool": f"cosmic-ray {importlib.metadata.version('cosmic-ray')}", "target": TARGET, "commit": commit,
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
        "load_average_before": load_before, "load_average_after": load_average(),
        "seed": args.seed, "sampled": len(results), "population": len(population), "run": len(ran),
        "passed_over_not_compiling_or_in_annotations": invalid,
        "timeout_overrides": args.timeout_overrides, "wall_seconds": round(time.monotonic() - started, 1),
        "baseline": {"wall_seconds": round(baseline_wall, 1), "tests": len(durations), "workers": args.workers,
                     "failed_unmutated": baseline_failed},
        "per_mutant_seconds": {"mean": round(statistics.mean(seconds), 1),
                               "median": round(statistics.median(seconds), 1), "max": max(seconds)},
        "summary": mutate_plan.summarise(m["outcome"] for m in ran),
        "mutants": results,
    }
    write_results(args.out, "mutate", section)
    if args.doc:
        write_doc(Path(args.doc), markdown(section))
    print(json.dumps(section["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
