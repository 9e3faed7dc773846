"""report.html in a real browser (headless Chromium): results, filter script and timeline SVGs render.

The screenshot is kept as an artifact in reports/selftest/report-html.png (git-ignored) for a
person to look at, and in the test's run directory under artifacts/.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from lwsconf.report import collect, html, schema
from tests.report import browser, sample

REPO = Path(__file__).resolve().parents[2]
SELFTEST = REPO / "reports" / "selftest"


@pytest.fixture
def page_url(report: schema.Report, run_dir: Path) -> str:
    collect.write_run(run_dir, report)
    return (run_dir / html.FILENAME).resolve().as_uri()


def test_report_renders_results_and_timelines_in_chromium(page_url: str, tmp_path: Path) -> None:
    dom = browser.dump_dom(page_url, user_data=tmp_path / "profile")
    assert "16 of 16 tests shown" in dom, "the inline filter script ran and counted the rows"
    assert len(re.findall(r'<svg[^>]*class="timeline"', dom)) == len(sample.TIMELINED)
    assert dom.count('class="seg"') >= 20 and sample.FAIL_MESSAGE in dom
    assert re.search(r'<span class="badge failure overall">failure</span>', dom)


def test_filtering_by_result_hides_the_other_rows(page_url: str, tmp_path: Path) -> None:
    dom = browser.dump_dom(page_url + "#result=NOT_SUPPORTED", user_data=tmp_path / "profile")
    rows = re.findall(r"<tr data-result=\"(\w+)\"[^>]*?( hidden=\"\")?>", dom)
    shown = {r for r, hidden in rows if not hidden}
    assert shown == {"NOT_SUPPORTED"} and len(rows) == 16, rows
    assert "2 of 16 tests shown" in dom


def test_screenshot_of_the_report_is_saved_and_not_blank(page_url: str, run_dir: Path, tmp_path: Path) -> None:
    shot = browser.screenshot(page_url, run_dir / "artifacts" / "report-html.png", user_data=tmp_path / "profile")
    width, height, variety = browser.png_facts(shot)
    assert (width, height) == (1280, 1600)
    assert variety > 100, f"the screenshot looks blank ({variety} distinct byte values)"
    SELFTEST.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SELFTEST / "report-html.png")
