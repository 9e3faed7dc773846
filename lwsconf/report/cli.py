"""`lwsconf report ...`: read reports after a run, in a terminal or a CI job.

    lwsconf report show [--gate-on-skips] PATH        the summary of one run (a run dir or its YAML)
    lwsconf report compare A.yaml B.yaml ... [--html OUT] [--markdown OUT]
                                                      a feature-by-implementation matrix

Exit status, for CI gating: `show` exits 1 when a test of a claimed profile failed, a claimed profile
is not-run (none of its tests executed), or the run was interrupted or failed as a whole (and, with
--gate-on-skips, when a core test was skipped or not supported), 0 otherwise; `compare` exits 0.
Both exit 2 with a one-line message when a report cannot be read. `add_parser`/`run` plug this into
the main `lwsconf` command; `main` runs it alone (`python -m lwsconf.report.cli`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from lwsconf.report import build, compare, schema, summary_md, yaml_writer

__all__ = ["add_parser", "main", "read_report", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `report` (with `show` and `compare`) to an argparse subparsers object."""
    report = subparsers.add_parser("report", help="read conformance reports: show one, compare several")
    sub = report.add_subparsers(dest="report_command", required=True)
    show = sub.add_parser("show", help="print a run's summary; exit 1 when a claimed profile failed, "
                          "did not run or the run was interrupted")
    show.add_argument("path", type=Path, help="a run directory (e.g. reports/latest) or its conformance-report.yaml")
    show.add_argument("--gate-on-skips", action="store_true",
                      help="also exit 1 when a core test of a claimed profile was skipped or not supported")
    show.add_argument("--markdown", action="store_true", help="print the Markdown summary (summary.md) instead")
    cmp = sub.add_parser("compare", help="feature-by-implementation matrix of several reports")
    cmp.add_argument("reports", type=Path, nargs="+", help="conformance-report.yaml files or run directories")
    cmp.add_argument("--html", type=Path, help="also write the matrix as a self-contained HTML page here")
    cmp.add_argument("--markdown", type=Path, help="also write the Markdown matrix here")
    return report  # type: ignore[no-any-return]


def read_report(path: Path) -> schema.Report:
    """A report from a run directory or a YAML file; ValueError says what was expected."""
    target = path / yaml_writer.FILENAME if path.is_dir() else path
    if not target.exists():
        hint = " (the run may have been interrupted before writing it)" if path.is_dir() else ""
        raise ValueError(f"no report at {target}{hint}; pass a run directory such as reports/latest "
                         f"or a {yaml_writer.FILENAME} file")
    return yaml_writer.read(target)


def _show(args: argparse.Namespace) -> int:
    report = read_report(args.path)
    reasons = build.gate(report, on_skips=args.gate_on_skips)
    text = summary_md.render(report) if args.markdown else summary_md.render_text(report)
    try:
        print(text + "".join(f"gate: {reason}\n" for reason in reasons), end="", flush=True)
    except BrokenPipeError:  # `lwsconf report show ... | head`: the reader left; the gate's status still counts
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if reasons else 0


def _compare(args: argparse.Namespace) -> int:
    reports = [read_report(p) for p in args.reports]
    markdown = compare.render_markdown(reports)
    print(markdown, end="")
    try:
        if args.markdown:
            args.markdown.write_text(markdown)
        if args.html:
            args.html.write_text(compare.render_html(reports))
    except OSError as exc:
        raise ValueError(f"cannot write {exc.filename}: {exc.strerror}; choose a writable path") from None
    return 0


def run(args: argparse.Namespace) -> int:
    """Run a parsed `report` command; errors a user can fix are one line on stderr and status 2."""
    try:
        return _show(args) if args.report_command == "show" else _compare(args)
    except ValueError as exc:
        print(f"lwsconf report: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lwsconf")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
