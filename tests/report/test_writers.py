"""summary.md, the terminal summary, junit.xml properties and report.html, for the sample run."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from lwsconf.conformance import Outcome
from lwsconf.report import collect, html, junit, schema, summary_md
from tests.report import sample


def test_summary_md_matches_golden(report: schema.Report, golden: Callable[[str, str], None]) -> None:
    golden("summary.md", summary_md.render(report))


def test_summary_md_lists_profiles_counts_failures_and_unrun_core_tests(report: schema.Report) -> None:
    text = summary_md.render(report)
    assert "| LWS-CORE | ❌ failure | 10 | 1 | 1 | 0 |" in text
    assert "| LWS-EXTENDED | ✅ success | 1 | 0 | 0 | 2 |" in text
    assert f"| `{sample.ROLL}` | LWS-CORE | {sample.FAIL_MESSAGE} |" in text
    assert "- `ScaleSubresource` SKIPPED: ScaleSubresource is listed in --skip-tests" in text
    assert text.splitlines()[0] == "### LWS conformance: lws-operator v1.2.0 — failure"


def test_summary_md_keeps_a_reason_with_pipes_inside_its_table_cell(report: schema.Report) -> None:
    tests = tuple(replace(t, message="a | b\\c") if t.result is Outcome.FAILED else t for t in report.tests)
    line = next(ln for ln in summary_md.render(replace(report, tests=tests)).splitlines() if sample.ROLL in ln)
    assert line.endswith("| a \\| b\\\\c |")
    assert len(re.findall(r"(?<!\\)\|", line)) == 4, f"three cells, four unescaped pipes: {line}"


def test_terminal_summary_is_aligned_text(report: schema.Report) -> None:
    text = summary_md.render_text(report)
    assert text.startswith("LWS conformance: lws-operator v1.2.0: FAILURE")
    assert re.search(r"^  LWS-CORE +failure +10 +1 +1 +0$", text, re.M), text
    assert f"  {sample.ROLL}: {sample.FAIL_MESSAGE}" in text and "|" not in text


def test_overall_result_is_the_worst_profile_or_a_failed_unprofiled_test(report: schema.Report) -> None:
    ok = tuple(replace(p, result=schema.Result.SUCCESS) for p in report.profiles)
    assert summary_md.overall(replace(report, profiles=ok)) is schema.Result.FAILURE  # the failed test remains
    passing = tuple(replace(t, result=Outcome.SUCCEEDED) for t in report.tests)
    assert summary_md.overall(replace(report, profiles=ok, tests=passing)) is schema.Result.SUCCESS


def test_junit_gets_feature_profile_and_result_properties(report: schema.Report,
                                                          golden: Callable[[str, str], None]) -> None:
    text = junit.annotate(sample.junit_xml(), report)
    golden("junit.xml", text)
    case = next(c for c in ET.fromstring(text).iter("testcase") if c.get("name") == f"test_{sample.ROLL}")
    props = [(p.get("name"), p.get("value")) for p in case.find("properties") or []]
    assert ("lwsconf.feature", "LWSRollingUpdate") in props and ("lwsconf.profile", "LWS-CORE") in props
    assert ("lwsconf.result", "FAILED") in props
    assert list(case)[0].tag == "properties", "properties come first in a JUnit testcase"


def test_junit_annotation_is_idempotent_and_keeps_recorded_properties(report: schema.Report) -> None:
    xml_in = sample.junit_xml().replace(
        '<testcase classname="conformance.test_sample" name="test_DefaultsReadBack" time="0.4">',
        '<testcase classname="conformance.test_sample" name="test_DefaultsReadBack" time="0.4">'
        '<properties><property name="mine" value="1"/></properties>')
    once = junit.annotate(xml_in, report)
    assert junit.annotate(once, report) == once
    case = next(c for c in ET.fromstring(once).iter("testcase") if c.get("name") == "test_DefaultsReadBack")
    names = [p.get("name") for p in case.iter("property")]
    assert names[0] == "mine" and names.count("lwsconf.result") == 1


def test_junit_names_follow_pytest_mangling() -> None:
    assert junit.junit_names("conformance/sub/test_x.py::TestA::test_b[p-1]") == (
        "conformance.sub.test_x.TestA", "test_b[p-1]")


def test_html_matches_golden(report: schema.Report, run_dir: Path, golden: Callable[[str, str], None]) -> None:
    golden("report.html", html.render(report, timelines=collect.load_timelines(run_dir, report)))


def test_html_shows_profiles_tests_failures_with_artifact_links_and_timelines(report: schema.Report,
                                                                             run_dir: Path) -> None:
    page = html.render(report, timelines=collect.load_timelines(run_dir, report))
    assert page.count('class="card profile"') == 3 and page.count("<tr data-result=") == len(report.tests)
    failure = page[page.index('<section id="failures">'):page.index('<section id="tests">')]
    for name in sample.ROLL_FILES:
        assert f'href="artifacts/{sample.ROLL}/{name}"' in failure
    assert sample.FAIL_MESSAGE in failure and f'<figure id="timeline-6" data-test="{sample.ROLL}">' in failure
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="timeline"') == len(sample.TIMELINED)
    timelines = page[page.index('<section id="timelines">'):]
    assert 'data-test="GroupRestartOnWorkerCrash"' in timelines
    assert 'data-test="ScaleDownHighestIndexFirst"' in timelines
    assert '<option value="LWSRollingUpdate">' in page and '<option value="NOT_SUPPORTED">' in page


def test_html_loads_nothing_from_anywhere(report: schema.Report, run_dir: Path) -> None:
    page = html.render(report, timelines=collect.load_timelines(run_dir, report))
    assert not re.search(r"<(link|img|iframe|object|embed)\b|\bsrc=|@import|url\((?!#)", page), "external load"
    assert "default-src 'none'" in page
    links = re.findall(r'href="([^"#][^"]*)"', page)
    assert all(link.startswith("artifacts/") or link == report.implementation.url for link in links), links


def test_html_escapes_messages(report: schema.Report) -> None:
    tests = tuple(replace(t, message="<script>alert(1)</script>") if t.result is Outcome.FAILED else t
                  for t in report.tests)
    page = html.render(replace(report, tests=tests))
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


@pytest.mark.parametrize("name", ["summary.md", "report.html", "conformance-report.yaml"])
def test_write_run_writes_every_file_into_the_run_dir(report: schema.Report, run_dir: Path, name: str) -> None:
    (run_dir / "junit.xml").write_text(sample.junit_xml())
    written = collect.write_run(run_dir, report)
    assert run_dir / name in written and (run_dir / name).stat().st_size > 500
    assert "lwsconf.result" in (run_dir / "junit.xml").read_text()


def interrupted_sim_run(report: schema.Report) -> schema.Report:
    """The sample, cut short on a simulated cluster, with a parametrised case among the unfinished tests."""
    tests = (*report.tests[:-1], replace(report.tests[-1], result=Outcome.INTERRUPTED, case_id="V15-big",
                                         message="not started: the run stopped first (KeyboardInterrupt)"))
    return replace(report, tests=tests, interrupted=True, stop_reason="KeyboardInterrupt (Ctrl-C, SIGINT or SIGTERM)",
                   environment=replace(report.environment, simulated=("node image", "kubelets", "GPUs")),
                   profiles=tuple(replace(p, result=schema.Result.INTERRUPTED) for p in report.profiles))


def test_every_writer_puts_the_interruption_and_the_simulation_first(report: schema.Report) -> None:
    run = interrupted_sim_run(report)
    text, md, page = summary_md.render_text(run), summary_md.render(run), html.render(run)
    for shown in (text, md, page):
        assert "The run was interrupted (KeyboardInterrupt (Ctrl-C, SIGINT or SIGTERM)): 1 selected test(s)" in shown
        assert "Simulated on this cluster (sim): node image, kubelets, GPUs are simulated" in shown
    assert text.startswith("LWS conformance: lws-operator v1.2.0: FAILURE")  # the failed test still counts first
    assert md.index("The run was interrupted") < md.index("| Profile |")
    assert "| LWS-SERVING | ⏹️ interrupted |" in md
    assert "<dd>sim (simulated)</dd>" in page and "LeaderOnlyServiceRoutes[V15-big]" in page
    assert "node(s) (sim (simulated))" in text


def test_overall_is_interrupted_or_not_run_when_nothing_failed(report: schema.Report) -> None:
    ok = replace(report, tests=tuple(replace(x, result=Outcome.SUCCEEDED) for x in report.tests),
                 profiles=tuple(replace(p, result=schema.Result.SUCCESS) for p in report.profiles))
    assert summary_md.overall(ok) is schema.Result.SUCCESS
    assert summary_md.overall(replace(ok, interrupted=True)) is schema.Result.INTERRUPTED
    not_run = replace(ok, profiles=(replace(ok.profiles[0], result=schema.Result.NOT_RUN), *ok.profiles[1:]))
    assert summary_md.overall(not_run) is schema.Result.NOT_RUN
    assert summary_md.overall(replace(ok, run_error="x")) is schema.Result.FAILURE


def test_junit_names_a_parametrised_case(report: schema.Report) -> None:
    case = replace(report.tests[0], case_id="V15-big", node_id="conformance/test_v.py::test_rejects[V15-big]")
    xml = ('<testsuites><testsuite><testcase classname="conformance.test_v" name="test_rejects[V15-big]"/>'
           "</testsuite></testsuites>")
    props = {p.get("name"): p.get("value") for p in ET.fromstring(junit.annotate(xml, replace(report, tests=(case,))))
             .iter("property")}
    assert props["lwsconf.caseId"] == "V15-big" and props["lwsconf.name"] == f"{case.short_name}[V15-big]"
