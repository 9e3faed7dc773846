"""Real pytest runs that end early or run nothing: the report says so, or no report is written at all.

--collect-only, --help and usage errors leave reports/ untouched; a `-k` that selects nothing gives
not-run profiles; an interrupted run (a test raising KeyboardInterrupt, as Ctrl-C does) keeps its
partial results, lists the tests that never finished, and says interrupted; an implementation that
never becomes ready ends the run with one error that the report puts at the top. In every case
`lwsconf report show` exits non-zero. Parametrised cases appear under their case id in every format.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

import jsonschema
import pytest
import yaml

from lwsconf.report import cli
from lwsconf.waits.core import NotYet, wait_until
from tests.report import test_plugin_run
from tests.report.test_plugin_run import REPO, SCHEMA, SUITE, latest, run

pytest_plugins = ["pytester"]
suite = test_plugin_run.suite  # the tiny conformance suite with the plugin loaded (a fixture)

STOPPING_SUITE = """
from lwsconf.conformance import conformance
from lwsconf.features import Feature

@conformance(short_name="First", description="Runs.", features={Feature.OBJECT_MODEL})
def test_first():
    pass

@conformance(short_name="Stopper", description="Ctrl-C arrives here.", features={Feature.LABELS})
def test_stopper():
    raise KeyboardInterrupt

@conformance(short_name="Never", description="Never reached.", features={Feature.SCALING})
def test_never():
    pass
"""
BLOCKING_SUITE = """
import os
import threading
from pathlib import Path
from lwsconf.conformance import conformance
from lwsconf.features import Feature

@conformance(short_name="First", description="Runs.", features={Feature.OBJECT_MODEL})
def test_first():
    pass

@conformance(short_name="Blocker", description="Runs until Ctrl-C.", features={Feature.LABELS})
def test_blocker():
    Path(os.environ["BLOCKER_STARTED"]).write_text("started")
    threading.Event().wait(300)

@conformance(short_name="Later1", description="Queued.", features={Feature.SCALING})
def test_later_1():
    threading.Event().wait(300)

@conformance(short_name="Later2", description="Queued.", features={Feature.SCALING})
def test_later_2():
    threading.Event().wait(300)

@conformance(short_name="Later3", description="Queued.", features={Feature.SCALING})
def test_later_3():
    threading.Event().wait(300)
"""
PARAMETRISED_SUITE = """
import pytest
from lwsconf.conformance import conformance
from lwsconf.features import Feature

@conformance(short_name="SpecsRejected", description="Bad specs are rejected.", features={Feature.VALIDATION})
@pytest.mark.parametrize("case", ["V1-ok", "V15-subgroup-larger-than-size"], ids=lambda c: c)
def test_specs_rejected(case):
    assert case == "V1-ok", f"{case} was accepted"
"""
NEEDS_IMPLEMENTATION_SUITE = """
from lwsconf.conformance import conformance
from lwsconf.features import Feature

@conformance(short_name="UsesImplA", description="Needs the implementation.", features={Feature.OBJECT_MODEL})
def test_a(implementation):
    pass

@conformance(short_name="UsesImplB", description="Needs the implementation.", features={Feature.LABELS})
def test_b(implementation):
    pass

@conformance(short_name="UsesImplC", description="Needs the implementation.", features={Feature.SCALING})
def test_c(implementation):
    pass
"""


def reports_of(suite: pytest.Pytester) -> list[str]:
    folder = suite.path / "reports"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def use_suite(suite: pytest.Pytester, text: str) -> None:
    (suite.path / "conformance" / "test_tiny.py").write_text(text)


def report_of(suite: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((latest(suite) / "conformance-report.yaml").read_text())
    jsonschema.validate(data, SCHEMA)
    return data


def show(suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    status = cli.main(["report", "show", str(suite.path / "reports" / "latest")])
    return status, capsys.readouterr().out


@pytest.mark.parametrize("args", [["--collect-only"], ["--collect-only", "-q"], ["--help"], ["--profiles=NOPE"],
                                  ["--fixtures"]], ids=["collect-only", "collect-only-q", "help", "usage-error",
                                                        "fixtures"])
def test_a_session_that_runs_no_test_leaves_reports_untouched(suite: pytest.Pytester, args: list[str]) -> None:
    run(suite, "--skip-tests=RollingOrder")  # one real run first, for reports/latest to point at
    before = reports_of(suite)
    assert len(before) == 2 and (suite.path / "reports" / "latest" / "conformance-report.yaml").is_file(), before
    target = (suite.path / "reports" / "latest").resolve()
    result = run(suite, *args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.USAGE_ERROR), result.stdout.str()[-2000:]
    assert "lwsconf conformance report" not in result.stdout.str()
    assert reports_of(suite) == before, "a new run directory appeared"
    assert (suite.path / "reports" / "latest").resolve() == target, "reports/latest moved"


def test_a_usage_error_found_while_collecting_leaves_no_run_directory(suite: pytest.Pytester) -> None:
    result = run(suite, "-k", "Scale and")  # pytest rejects the expression after collecting
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    assert reports_of(suite) == []


def test_a_k_that_selects_nothing_is_not_run_and_fails_the_gate(suite: pytest.Pytester,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    result = run(suite, "-k", "nomatch")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["LWS-CORE: not-run (0 passed*", "gate: profile LWS-CORE is not-run*"])
    data = report_of(suite)
    assert [(p["name"], p["result"]) for p in data["profiles"]] == [("LWS-CORE", "not-run"),
                                                                     ("LWS-EXTENDED", "not-run")]
    assert data["tests"] == [] and "interrupted" not in data
    status, out = show(suite, capsys)
    assert status == 1, out
    assert "NOT-RUN" in out
    assert "gate: profile LWS-CORE is not-run: Not run: no test of this profile was selected" in out


def test_an_interrupted_run_keeps_partial_results_and_says_interrupted(
        suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    use_suite(suite, STOPPING_SUITE)
    result = run(suite, "--profiles=LWS-CORE")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()[-3000:]
    data = report_of(suite)
    assert data["interrupted"] is True and "KeyboardInterrupt" in data["stopReason"], data.get("stopReason")
    tests = {t["shortName"]: t for t in data["tests"]}
    assert set(tests) == {"First", "Stopper", "Never"}, "a test that never finished was dropped"
    assert tests["Stopper"]["result"] == "INTERRUPTED"
    assert tests["Stopper"]["message"].startswith("did not finish: the run stopped while it ran (KeyboardInterrupt")
    assert tests["First"]["result"] == "SUCCEEDED"
    assert tests["Never"]["result"] == "INTERRUPTED" and tests["Never"]["message"].startswith("not started")
    assert tests["Never"]["profiles"] == ["LWS-CORE"], "its metadata was known from the collection"
    core = data["profiles"][0]
    assert core["result"] == "interrupted" and "Stopper" in core["interruptedTests"], core
    assert core["summary"].startswith("Interrupted: the run stopped before it finished (KeyboardInterrupt")
    status, out = show(suite, capsys)
    assert status == 1 and "INTERRUPTED" in out and "gate: the run was interrupted (KeyboardInterrupt" in out, out
    assert "The run was interrupted" in (latest(suite) / "summary.md").read_text()
    assert 'class="notice">The run was interrupted' in (latest(suite) / "report.html").read_text()


def test_fail_fast_stops_the_run_and_the_report_lists_what_never_ran(suite: pytest.Pytester) -> None:
    result = run(suite, "--fail-fast", "--profiles=LWS-CORE")
    assert result.ret != pytest.ExitCode.OK
    data = report_of(suite)
    assert data["interrupted"] is True and data["stopReason"].startswith("--fail-fast: conformance/test_tiny.py::"
                                                                         "test_rolling_order failed")
    results = {t["shortName"]: t["result"] for t in data["tests"]}
    # Surge was never reached, but the suite had decided at collection that it is NOT_SUPPORTED
    assert results == {"ScaleUp": "SUCCEEDED", "RollingOrder": "FAILED", "EnvSeen": "INTERRUPTED",
                       "Surge": "NOT_SUPPORTED"}, results
    assert data["profiles"][0]["result"] == "interrupted" and data["profiles"][0]["failedTests"] == ["RollingOrder"]


def test_ctrl_c_to_an_xdist_run_keeps_the_finished_results_and_lists_the_rest(
        suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """A real SIGINT to the whole process group (what a terminal's Ctrl-C does) while a test runs."""
    use_suite(suite, BLOCKING_SUITE)
    started = suite.path / "blocker-started"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKER_STARTED": str(started)}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "-n", "2",
                             "--profiles=LWS-CORE"], cwd=suite.path, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    def blocker_started() -> None:
        if not started.is_file():
            raise NotYet(f"{started.name} not written yet")

    try:
        wait_until(blocker_started, what="the Blocker test to start", timeout=120)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    data = report_of(suite)
    assert data["interrupted"] is True, out[-3000:]
    tests = {t["shortName"]: t for t in data["tests"]}
    assert set(tests) == {"First", "Blocker", "Later1", "Later2", "Later3"}, out[-3000:]
    assert tests["First"]["result"] == "SUCCEEDED"
    assert tests["Blocker"]["result"] == "INTERRUPTED", tests["Blocker"]
    assert data["profiles"][0]["result"] == "interrupted"
    status, shown = show(suite, capsys)
    assert status == 1 and "INTERRUPTED" in shown


def test_parametrised_cases_appear_under_their_case_id_in_every_format(suite: pytest.Pytester) -> None:
    use_suite(suite, PARAMETRISED_SUITE)
    result = run(suite, "--profiles=LWS-CORE")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    assert "\ngate: SpecsRejected[V15-subgroup-larger-than-size] (LWS-CORE) failed: " in result.stdout.str()
    run_dir = latest(suite)
    data = report_of(suite)
    assert [(t["shortName"], t.get("caseId"), t["result"]) for t in data["tests"]] == [
        ("SpecsRejected", "V1-ok", "SUCCEEDED"), ("SpecsRejected", "V15-subgroup-larger-than-size", "FAILED")]
    assert data["profiles"][0]["failedTests"] == ["SpecsRejected[V15-subgroup-larger-than-size]"]
    summary = (run_dir / "summary.md").read_text()
    assert "| `SpecsRejected[V15-subgroup-larger-than-size]` | LWS-CORE |" in summary
    page = (run_dir / "report.html").read_text()
    assert ">SpecsRejected[V1-ok]</td>" in page and "<h3>SpecsRejected[V15-subgroup-larger-than-size]</h3>" in page
    props = {(c.get("name"), p.get("name"), p.get("value"))
             for c in ET.parse(run_dir / "junit.xml").iter("testcase") for p in c.iter("property")}
    assert ("test_specs_rejected[V15-subgroup-larger-than-size]", "lwsconf.caseId",
            "V15-subgroup-larger-than-size") in props
    assert ("test_specs_rejected[V1-ok]", "lwsconf.name", "SpecsRejected[V1-ok]") in props


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_an_implementation_that_never_becomes_ready_is_one_error_at_the_top_of_the_report(
        suite: pytest.Pytester, capsys: pytest.CaptureFixture[str], workers: list[str]) -> None:
    """--lws-impl=installed on a sim cluster where no LWS is installed: the CRD is never served."""
    use_suite(suite, NEEDS_IMPLEMENTATION_SUITE)
    result = run(suite, "--profiles=LWS-CORE", "--lws-impl=installed", *workers)
    out = result.stdout.str()
    assert result.ret != pytest.ExitCode.OK, out[-3000:]
    assert 1 <= out.count("ERROR at setup of") <= (2 if workers else 1), out[-3000:]  # once per process
    assert "Traceback" not in out, out[-3000:]
    data = report_of(suite)
    assert data["runError"].startswith("implementation installed never became ready: "), data.get("runError")
    assert "\n" not in data["runError"]
    assert {t["shortName"]: t["result"] for t in data["tests"]} == {
        "UsesImplA": "INTERRUPTED", "UsesImplB": "INTERRUPTED", "UsesImplC": "INTERRUPTED"}, data["tests"]
    assert data["profiles"][0]["result"] == "failure"
    assert data["profiles"][0]["summary"].startswith("Failed: the run failed as a whole: implementation installed")
    status, shown = show(suite, capsys)
    assert status == 1 and "The run failed as a whole: implementation installed never became ready" in shown
    summary = (latest(suite) / "summary.md").read_text()
    assert summary.index("The run failed as a whole") < summary.index("| Profile |")
    assert "Simulated on this cluster (sim)" in summary, "known from the backend, though no test asked the cluster"


def test_a_sim_report_says_what_is_simulated(suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    use_suite(suite, SUITE + """
@conformance(short_name="ClusterFacts", description="Sees the cluster.", features={Feature.OBJECT_MODEL})
def test_cluster_facts(api_client):
    assert api_client is not None
""")
    run(suite, "--run-test=ClusterFacts", "--profiles=LWS-CORE")
    data = report_of(suite)
    assert data["environment"]["simulated"] == ["node image", "kubelets", "GPUs", "TPUs"]
    notice = "Simulated on this cluster (sim): node image, kubelets, GPUs, TPUs are simulated, not real hardware"
    assert notice in (latest(suite) / "summary.md").read_text()
    page = (latest(suite) / "report.html").read_text()
    assert notice in page and "<dd>sim (simulated)</dd>" in page
    _, shown = show(suite, capsys)
    assert notice in shown

