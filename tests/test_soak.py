"""bench.soak and bench.load: the soak reads failures right, records a failed run honestly, and its load is bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import load, soak

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="conformance.test_deletion" name="test_ok" time="1.0"/>
<testcase classname="conformance.test_deletion" name="test_bad" time="2.0">
  <failure message="AssertionError: objects left after deleting fg&#10;assert not True">trace</failure></testcase>
<testcase classname="tests.sim.test_x" name="test_err" time="0.1"><error message="">Traceback
KeyError: 'x'</error></testcase>
<testcase classname="tests.sim.test_x" name="test_skip" time="0"><skipped message="no Go"/></testcase>
</testsuite></testsuites>
"""


def test_runs_are_parsed_and_a_bad_one_is_named() -> None:
    assert soak.parse_runs("sim=10, local=3,unit=0") == [("sim", 10), ("local", 3), ("unit", 0)]
    with pytest.raises(ValueError, match="'kind=2' is not KIND=COUNT"):
        soak.parse_runs("sim=1,kind=2")
    with pytest.raises(ValueError, match="'sim=x' is not KIND=COUNT"):
        soak.parse_runs("sim=x")


def test_failures_carry_the_test_id_and_the_first_line(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    counts, failed = soak.failures_of(junit)
    assert counts == {"passed": 1, "failed": 2, "skipped": 1}
    assert failed == [
        {"test": "conformance.test_deletion::test_bad", "kind": "failure",
         "first_line": "AssertionError: objects left after deleting fg"},
        {"test": "tests.sim.test_x::test_err", "kind": "error", "first_line": "Traceback"}]


def test_summary_counts_green_runs_and_how_often_each_test_failed() -> None:
    fail = {"test": "t::a", "kind": "failure", "first_line": "boom"}
    runs = [{"kind": "sim", "green": True, "wall_seconds": 10.0, "failures": []},
            {"kind": "sim", "green": False, "wall_seconds": 30.0, "failures": [fail]},
            {"kind": "sim", "green": False, "wall_seconds": 20.0, "failures": [fail]}]
    summary = soak.summarise(runs, [("sim", 4), ("unit", 1)])
    assert summary["sim"]["planned"] == 4 and summary["sim"]["run"] == 3 and summary["sim"]["green"] == 1
    assert summary["sim"]["wall_seconds"] == {"min": 10.0, "median": 20.0, "max": 30.0}
    assert summary["sim"]["failing_tests"] == [{"test": "t::a", "failed_runs": 2, "first_line": "boom"}]
    assert summary["unit"] == {"planned": 1, "run": 0, "green": 0, "wall_seconds": {}, "failing_tests": []}


def test_a_soak_of_a_failing_test_is_red_and_says_which(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end, with a stand-in kind whose one test fails: the run is recorded red with its test id, the table
    says so, and the exit code is 1 (a soak never claims green for what failed)."""
    (tmp_path / "test_flaky.py").write_text("def test_fails():\n    assert 1 == 2, 'one is not two'\n"
                                            "def test_passes():\n    pass\n")
    monkeypatch.setitem(soak.KINDS, "unit", soak.Kind("unit", (str(tmp_path / "test_flaky.py"),), 120.0, False))
    out, md = tmp_path / "results.json", tmp_path / "soak.md"
    code = soak.main(["--out", str(out), "--markdown", str(md), "--runs", "unit=2", "--load", "1",
                      "--keep", str(tmp_path / "kept")])
    assert code == 1
    assert "one is not two" in (tmp_path / "kept" / "unit-1" / "output.txt").read_text()
    results = json.loads(out.read_text())["soak"]
    assert results["summary"]["unit"]["green"] == 0 and results["summary"]["unit"]["run"] == 2
    assert results["summary"]["unit"]["failing_tests"][0]["failed_runs"] == 2
    assert "test_fails" in results["summary"]["unit"]["failing_tests"][0]["test"]
    assert results["runs"][0]["outcomes"] == {"passed": 1, "failed": 1, "skipped": 0}
    assert "| unit | 0 / 2 (2) |" in md.read_text() and "one is not two" in md.read_text()


def test_the_kinds_take_turns_so_a_soak_cut_short_covers_each() -> None:
    assert soak.schedule([("sim", 3), ("local", 1), ("unit", 2)]) == [
        ("sim", 1), ("local", 1), ("unit", 1), ("sim", 2), ("unit", 2), ("sim", 3)]
    assert soak.schedule([]) == []


def test_a_soak_resumes_only_what_measures_the_same_thing() -> None:
    plan = [("sim", 2), ("unit", 1)]
    recorded = {"commit": "abc", "load_workers": 2, "planned": [["sim", 2], ["unit", 1]],
                "runs": [{"kind": "sim", "index": 1, "green": True}]}
    assert soak.resumable_runs(recorded, commit="abc", load=2, planned=plan) == recorded["runs"]
    for kwargs, why in (({"commit": "def"}, "another commit"), ({"load": 0}, "another load"),
                        ({"planned": [("sim", 3)]}, "another plan")):
        with pytest.raises(soak.CannotResume, match=why):
            soak.resumable_runs(recorded, **{"commit": "abc", "load": 2, "planned": plan, **kwargs})  # type: ignore[arg-type]
    with pytest.raises(soak.CannotResume, match="uncommitted changes"):
        soak.resumable_runs({**recorded, "commit": "abc+dirty"}, commit="abc+dirty", load=2, planned=plan)
    with pytest.raises(soak.CannotResume, match="no recorded soak"):
        soak.resumable_runs(None, commit="abc", load=2, planned=plan)


def test_a_resumed_soak_runs_only_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A soak that had made one of two runs, resumed: the second sitting makes run 2 only, and the results hold
    both runs, the commit and two sittings. Resuming at another commit is refused with exit code 2."""
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    monkeypatch.setitem(soak.KINDS, "unit", soak.Kind("unit", (str(tmp_path / "test_ok.py"),), 120.0, False))
    monkeypatch.setattr(soak, "commit_of", lambda repo, outputs=(): "c0ffee")
    out = tmp_path / "results.json"
    common = ["--out", str(out), "--runs", "unit=2", "--load", "0", "--keep", str(tmp_path / "kept")]
    assert soak.main([*common, "--runs", "unit=1"]) == 0
    first = json.loads(out.read_text())["soak"]
    out.write_text(json.dumps({"soak": {**first, "planned": [["unit", 2]], "complete": False}}))
    assert soak.main([*common, "--resume"]) == 0
    second = json.loads(out.read_text())["soak"]
    assert [(r["index"], r["commit"]) for r in second["runs"]] == [(1, "c0ffee"), (2, "c0ffee")]
    assert second["sittings"] == 2 and second["complete"] is True
    assert second["summary"]["unit"]["green"] == 2
    monkeypatch.setattr(soak, "commit_of", lambda repo, outputs=(): "beef")
    assert soak.main([*common, "--resume"]) == 2


def test_the_load_stops_at_its_deadline_and_on_exit() -> None:
    with load.CpuLoad(workers=2, max_seconds=1.0) as cpu:
        assert cpu.alive() == 2
        deadline = time.monotonic() + 30
        while cpu.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cpu.alive() == 0, "busy processes outlived their 1 s deadline"
    with load.CpuLoad(workers=1, max_seconds=600) as cpu:
        procs = list(cpu.procs)
    assert all(p.poll() is not None for p in procs), "a busy process outlived the context"


def test_a_busy_process_stops_when_its_parent_is_killed() -> None:
    """SIGKILL of the soak leaves no busy process behind: each polls its parent and exits when it is gone."""
    parent = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from bench.load import CpuLoad\n"
         "with CpuLoad(1, 600) as c:\n    print(c.procs[0].pid, flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.1)
    assert not _running(child), f"busy process {child} outlived its killed parent"


def _running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (an orphan is reaped by init, which may take a moment)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and os.path.exists(f"/proc/{pid}")


def test_an_interrupted_soak_keeps_the_runs_it_finished_and_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM in the middle of the second run: the first run's figures are in the results, marked interrupted,
    the exit code is 1, and the second run's pytest is gone."""
    counter = tmp_path / "count"
    (tmp_path / "test_slow.py").write_text(
        "import os, time\n"
        f"COUNTER = {str(counter)!r}\n"
        "def test_second_run_hangs():\n"
        "    n = int(open(COUNTER).read()) + 1 if os.path.exists(COUNTER) else 1\n"
        "    open(COUNTER, 'w').write(str(n))\n"
        "    if n > 1:\n"
        "        open(COUNTER + '.pid', 'w').write(str(os.getpid()))\n"
        "        time.sleep(600)\n")
    out = tmp_path / "results.json"
    script = ("import sys; from bench import soak\n"
              f"soak.KINDS['unit'] = soak.Kind('unit', ({str(tmp_path / 'test_slow.py')!r},), 900.0, False)\n"
              f"sys.exit(soak.main(['--out', {str(out)!r}, '--runs', 'unit=3', '--load', '0', "
              f"'--keep', {str(tmp_path / 'kept')!r}]))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[1],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid_file = Path(str(counter) + ".pid")
    deadline = time.monotonic() + 120
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    ended = proc.communicate()[0] if proc.poll() is not None else ""
    assert pid_file.exists(), f"the second run never started: {ended}"
    hung = int(pid_file.read_text())
    proc.terminate()
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, output
    results = json.loads(out.read_text())["soak"]
    assert results["interrupted"] is True and results["complete"] is False, results
    assert [(r["index"], r["green"]) for r in results["runs"]] == [(1, True)], results["runs"]
    assert "interrupted; the runs finished so far are recorded" in output
    assert not _running(hung), f"the interrupted run's pytest {hung} is still running"


def test_the_soaks_own_outputs_do_not_make_the_tree_dirty(tmp_path: Path) -> None:
    """docs/soak.md is tracked and every sitting rewrites it: counted as a change, it made `make soak
    SOAK_RESUME=1` refuse every soak that a budget had stopped ("it was made with uncommitted changes")."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    git("config", "user.email", "soak@example.invalid")
    git("config", "user.name", "soak")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "soak.md").write_text("old\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("commit", "-qm", "c")
    (tmp_path / "docs" / "soak.md").write_text("new table\n")
    outputs = (tmp_path / "docs" / "soak.md", tmp_path / "bench" / "results.json")
    assert not soak.commit_of(tmp_path, outputs).endswith("+dirty")
    assert soak.commit_of(tmp_path).endswith("+dirty")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert soak.commit_of(tmp_path, outputs).endswith("+dirty")
