"""A conformance run against a broken implementation: the report shows the failures it causes.

The "broken reconciler" here is an implementation that serves the LWS API (our CRD is installed) but
reconciles nothing, run as `--lws-impl=installed`: real conformance tests from `conformance/` then
fail with their observed state, next to a skipped and a not-supported test, and every report file
says so.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]

CONFTEST = '''
import pytest
from fixtures.implementations import bundled
pytest_plugins = ["fixtures.plugin"]


@pytest.fixture(scope="session", autouse=True)
def crd_without_a_controller(cluster, api_client, timeout_config):
    """Serve the LWS API with nothing reconciling it: the broken implementation under test."""
    bundled.install_crd(api_client, timeout_config)
'''


@pytest.mark.slow
def test_a_run_against_a_broken_implementation_reports_its_failures(pytester: pytest.Pytester,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    suite = pytester.mkdir("conformance")
    for name in ("conftest.py", "harness.py", "disaggregated.py", "divergences.py", "divergences.yaml",
                 "test_scaling.py", "__init__.py"):
        shutil.copy(REPO / "conformance" / name, suite / name)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess(
        "conformance", "-p", "no:cacheprovider", "--lws-impl=installed", "--profiles=LWS-CORE",
        "--skip-tests=ScaleToZeroAndBack", "--exempt-features=LWSScaleSubresource",
        "--timeout-overrides=LwsAvailable:4;ScaleComplete:4;PodsRunning:4")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    run = next(p for p in (pytester.path / "reports").iterdir() if p.is_dir() and p.name != "latest")
    report = yaml.safe_load((run / "conformance-report.yaml").read_text())
    by_name = {t["shortName"]: t for t in report["tests"]}
    assert by_name["ScaleUpAddsGroupsAtTheTop"]["result"] == "FAILED"
    assert "timed out" in by_name["ScaleUpAddsGroupsAtTheTop"]["message"]
    assert by_name["ScaleToZeroAndBack"]["result"] == "SKIPPED"
    assert by_name["ScaleSubresource"]["result"] == "NOT_SUPPORTED"
    core = next(p for p in report["profiles"] if p["name"] == "LWS-CORE")
    assert core["result"] == "failure"
    summary = (run / "summary.md").read_text()
    assert "ScaleUpAddsGroupsAtTheTop" in summary and "failure" in summary
    html = (run / "report.html").read_text()
    assert "ScaleUpAddsGroupsAtTheTop" in html and "NOT_SUPPORTED" in html
    assert (run / "artifacts" / "ScaleUpAddsGroupsAtTheTop" / "pods.yaml").is_file(), "failure artifacts"
