"""Regenerate the README's report examples: docs/report-example.png from a real conformance run of
rolling-update, restart and scaling tests on the sim, and docs/summary-example.md from the sample run.

    .venv/bin/python -m tests.report.make_examples

The run is `pytest conformance/... -k <RUN_TESTS> --profiles=LWS-CORE --all-features -n 2` with its
reports in a temporary folder; its report.html is screenshotted with headless Chromium (installed
through apt-get when missing, as the browser test does). The summary example stays the sample run's,
which shows a failure and skipped tests.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from lwsconf.report import summary_md
from tests.report import browser, sample

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
MODULES = ("conformance/test_rolling_update.py", "conformance/test_group_restart.py", "conformance/test_scaling.py")
RUN_TESTS = ("test_rolling_update_group_by_group_from_the_top", "test_rolling_update_max_unavailable",
             "test_group_recreated_on_worker_crash", "test_scale_down_removes_highest_groups")
SIZE = (1280, 2300)


def run_suite(reports: Path) -> Path:
    """The conformance run; its run directory (the report is written even if a test failed)."""
    cmd = [sys.executable, "-m", "pytest", *MODULES, "-k", " or ".join(RUN_TESTS), "--profiles=LWS-CORE",
           "--all-features", "-n", "2", "-p", "no:randomly", "-p", "no:cacheprovider", f"--lwsconf-reports={reports}"]
    print("running:", " ".join(cmd[1:]))
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if not (reports / "latest" / "report.html").is_file():
        raise SystemExit(f"the run wrote no report (exit {done.returncode}):\n"
                         f"{done.stdout[-3000:]}{done.stderr[-2000:]}")
    print(done.stdout.strip().splitlines()[-1])
    return (reports / "latest").resolve()


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    (DOCS / "summary-example.md").write_text(summary_md.render(sample.report()))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = run_suite(Path(tmp) / "reports")
        browser.screenshot((run_dir / "report.html").as_uri(), DOCS / "report-example.png",
                           user_data=Path(tmp) / "profile", size=SIZE)
    print(f"wrote {DOCS / 'summary-example.md'} and {DOCS / 'report-example.png'}")


if __name__ == "__main__":
    main()
