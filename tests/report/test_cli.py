"""`lwsconf report show|compare`: terminal summary, feature matrix, and exit status for CI gating."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lwsconf.conformance import Outcome
from lwsconf.features import Feature
from lwsconf.report import cli, collect, compare, schema, yaml_writer
from tests.report import sample


def passing(report: schema.Report) -> schema.Report:
    """The sample with its failure fixed (ScaleSubresource stays skipped)."""
    tests = tuple(replace(t, result=Outcome.SUCCEEDED, message="") if t.result is Outcome.FAILED else t
                  for t in report.tests)
    return replace(report, tests=tests, profiles=tuple(replace(p, result=schema.Result.PARTIAL, failed_tests=())
                                                        if p.name == "LWS-CORE" else p for p in report.profiles))


def upstream(report: schema.Report) -> schema.Report:
    impl = replace(report.implementation, project="other-lws", version="v0.3.1")
    return replace(passing(report), implementation=impl)


def test_show_prints_the_summary_and_exits_1_when_a_claimed_profile_failed(
        report: schema.Report, run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    collect.write_run(run_dir, report)
    assert cli.main(["report", "show", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "LWS conformance: lws-operator v1.2.0: FAILURE" in out
    assert f"gate: {sample.ROLL} (LWS-CORE) failed: {sample.FAIL_MESSAGE}" in out


def test_show_exits_0_when_nothing_failed_unless_gating_on_core_skips(
        report: schema.Report, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = yaml_writer.write(passing(report), tmp_path / "r.yaml")
    assert cli.main(["report", "show", str(path)]) == 0
    assert cli.main(["report", "show", "--gate-on-skips", str(path)]) == 1
    assert "gate: core test ScaleSubresource (LWS-CORE) was SKIPPED" in capsys.readouterr().out


def test_show_follows_the_latest_symlink_and_can_print_markdown(
        report: schema.Report, run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    collect.write_run(run_dir, report)
    (run_dir.parent / "latest").symlink_to(run_dir.name)
    cli.main(["report", "show", "--markdown", str(run_dir.parent / "latest")])
    assert "| LWS-CORE | ❌ failure | 10 | 1 | 1 | 0 |" in capsys.readouterr().out


def test_show_without_a_report_says_what_to_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", "show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no report at" in err and "pass a run directory such as reports/latest" in err


def test_compare_renders_a_feature_by_implementation_matrix(
        report: schema.Report, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The page itself is tested in test_implementations.py; here: the command prints and writes it."""
    a = yaml_writer.write(report, tmp_path / "a.yaml")
    b = yaml_writer.write(upstream(report), tmp_path / "b.yaml")
    out_md, out_html = tmp_path / "m.md", tmp_path / "m.html"
    assert cli.main(["report", "compare", str(a), str(b), "--markdown", str(out_md), "--html", str(out_html)]) == 0
    markdown = capsys.readouterr().out
    assert out_md.read_text() == markdown
    assert "| LWSRollingUpdate | ❌ fail | ✅ pass |" in markdown
    assert "| **LWS-CORE** (profile) | ❌ failure | ⚠️ partial |" in markdown
    assert "| Feature | example-org/lws-operator v1.2.0<br>cluster: sim<br>Kubernetes " in markdown
    page = out_html.read_text()
    assert "<th><b>example-org/lws-operator v1.2.0</b><span>cluster: sim</span>" in page
    assert 'data-status="not supported"' in page


@pytest.mark.parametrize(("feature", "expected"), [
    (Feature.ROLLING_UPDATE, "fail"), (Feature.SCALING, "pass"), (Feature.SCALE_SUBRESOURCE, "skipped"),
    (Feature.ROLLING_UPDATE_PARTITION, "not supported"), (Feature.RESTART_POLICY_NONE, "untested"),
    (Feature.VLLM_MULTI_NODE, "-"),
])
def test_feature_cells_say_what_the_report_shows(report: schema.Report, feature: Feature, expected: str) -> None:
    assert compare.feature_status(report, feature.value) == expected


def test_cli_module_runs_on_its_own(report: schema.Report, tmp_path: Path) -> None:
    path = yaml_writer.write(report, tmp_path / "r.yaml")
    proc = subprocess.run([sys.executable, "-m", "lwsconf.report.cli", "report", "show", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "LWS-CORE" in proc.stdout


@pytest.mark.parametrize("how", ["not-run", "interrupted", "run-error"])
def test_show_exits_1_for_a_run_that_did_not_run_was_interrupted_or_failed_as_a_whole(
        report: schema.Report, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    ok = passing(report)
    assert cli.main(["report", "show", str(yaml_writer.write(ok, tmp_path / "ok.yaml"))]) == 0
    bad = {"not-run": replace(ok, profiles=tuple(replace(p, result=schema.Result.NOT_RUN) for p in ok.profiles)),
           "interrupted": replace(ok, interrupted=True, stop_reason="KeyboardInterrupt"),
           "run-error": replace(ok, run_error="implementation reference never became ready: WaitTimeout: x")}[how]
    capsys.readouterr()
    assert cli.main(["report", "show", str(yaml_writer.write(bad, tmp_path / "bad.yaml"))]) == 1
    assert "gate: " in capsys.readouterr().out


def test_compare_marks_interrupted_and_simulated_columns_and_unfinished_features(report: schema.Report) -> None:
    cut = replace(passing(report), interrupted=True,
                  environment=replace(report.environment, simulated=("node image",)),
                  tests=tuple(replace(t, result=Outcome.INTERRUPTED) if t.short_name == "ScaleDownHighestIndexFirst"
                              else t for t in passing(report).tests))
    assert compare.column_label(cut) == "lws-operator v1.2.0 [interrupted] [simulated]"
    assert compare.feature_status(cut, Feature.SCALING.value) == "untested"


def test_show_piped_into_a_reader_that_leaves_early_keeps_its_status_and_prints_no_traceback(
        report: schema.Report, run_dir: Path) -> None:
    collect.write_run(run_dir, report)
    proc = subprocess.Popen([sys.executable, "-m", "lwsconf.report.cli", "report", "show", str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head -1` does once it has its line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 1 and "Traceback" not in err, err


def test_compare_fails_on_regression_against_a_baseline_only(
        report: schema.Report, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The GitHub Action's `baseline` input: a test that passed in the stored report and fails now fails the
    job; a failure the baseline already had does not."""
    failing = yaml_writer.write(report, tmp_path / "failing.yaml")
    fixed = yaml_writer.write(passing(report), tmp_path / "fixed.yaml")
    assert cli.main(["report", "compare", "--fail-on-regression", str(failing), str(failing)]) == 0
    assert capsys.readouterr().out.endswith("regressions: none\n")
    assert cli.main(["report", "compare", "--fail-on-regression", str(fixed), str(failing)]) == 1
    assert f"regression: {sample.ROLL}: SUCCEEDED -> FAILED\n" in capsys.readouterr().out
    assert cli.main(["report", "compare", "--fail-on-regression", str(failing), str(fixed)]) == 0
    assert cli.main(["report", "compare", "--fail-on-regression", str(fixed)]) == 2
    assert "pass two reports" in capsys.readouterr().err
