"""Regenerate the README's report examples from the sample run: docs/report-example.png, docs/summary-example.md.

    .venv/bin/python -m tests.report.make_examples

Needs Chromium (installed through apt-get when missing, as the browser test does).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from lwsconf.report import collect, html, summary_md
from tests.report import browser, sample

DOCS = Path(__file__).resolve().parents[2] / "docs"


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    report = sample.report()
    (DOCS / "summary-example.md").write_text(summary_md.render(report))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = sample.write_run_dir(Path(tmp) / report.run_id)
        collect.write_run(run_dir, report)
        browser.screenshot((run_dir / html.FILENAME).as_uri(), DOCS / "report-example.png",
                           user_data=Path(tmp) / "profile", size=(1280, 2320))
    print(f"wrote {DOCS / 'summary-example.md'} and {DOCS / 'report-example.png'}")


if __name__ == "__main__":
    main()
