"""`lwsconf report ...`: read reports after a run, in a terminal or a CI job.

    lwsconf report show [--gate-on-skips] PATH        the summary of one run (a run dir or its YAML)
    lwsconf report compare RUN ... [--html OUT] [--markdown OUT] [--divergences conformance/divergences.yaml]
                           [--not-run RUN LABEL REASON ...]
                                                      the feature by implementation by cluster page
                                                      (make implementations: docs/implementations.md/.html)

Exit status, for CI gating: `show` exits 1 when a test of a claimed profile failed, a claimed profile
is not-run (none of its tests executed), or the run was interrupted or failed as a whole (and, with
--gate-on-skips, when a core test was skipped or not supported), 0 otherwise; `compare` exits 0, or with
--fail-on-regression 1 when a test that succeeded in the first (baseline) report failed in the last.
Both exit 2 with a one-line message when a report cannot be read. `add_parser`/`run` plug this into
the main `lwsconf` command; `main` runs it alone (`python -m lwsconf.report.cli`).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from lwsconf.report import build, compare, implementations, schema, summary_md, yaml_writer

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
    cmp = sub.add_parser("compare", help="feature by implementation by cluster matrix of several runs, one column "
                         "per run (implementation, version, cluster, Kubernetes version, run date)")
    cmp.add_argument("reports", type=Path, nargs="+", help="conformance-report.yaml files or run directories, "
                     "in column order")
    cmp.add_argument("--html", type=Path, help="also write the page as a self-contained HTML file here")
    cmp.add_argument("--markdown", type=Path, help="also write the Markdown page here")
    cmp.add_argument("--divergences", type=Path, default=None, metavar="YAML",
                     help="the known-divergence table (conformance/divergences.yaml): each known divergence on the "
                          "page gives its evidence and links to its row")
    cmp.add_argument("--fail-on-regression", action="store_true",
                     help="exit 1 when a test that SUCCEEDED in the first report FAILED or was INTERRUPTED in the "
                          "last one (a CI gate against a stored baseline report)")
    cmp.add_argument("--not-run", nargs=3, action="append", default=[], metavar=("RUN", "LABEL", "REASON"),
                     help="a run that may not have been made yet: when RUN has no report, its column is LABEL, "
                          "'not run' and REASON instead of an error (repeatable)")
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


def _runs(args: argparse.Namespace) -> list[implementations.Run]:
    """One column per RUN argument; one declared with --not-run and without a report is a 'not run' column."""
    declared = {Path(path): (label, reason) for path, label, reason in args.not_run}
    unknown = [str(p) for p in declared if p not in args.reports]
    if unknown:
        raise ValueError(f"--not-run {', '.join(unknown)}: also pass it as a RUN argument, where its column goes")
    runs = []
    for path in args.reports:
        target = path / yaml_writer.FILENAME if path.is_dir() else path
        if path in declared and not target.exists():
            label, reason = declared[path]
            runs.append(implementations.Run(str(path), None, label, reason))
        else:
            runs.append(implementations.Run(str(path), read_report(path)))
    return runs


def _divergences(path: Path | None) -> list[implementations.DivergenceRow]:
    if path is None:
        return []
    try:
        return implementations.read_divergences(path.read_text())
    except OSError as exc:
        raise ValueError(f"--divergences {path}: {exc.strerror}; pass conformance/divergences.yaml") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"--divergences {path}: not YAML: {str(exc).splitlines()[0]}") from None


def _link(target: Path | None, page: Path | None) -> str:
    """The divergence table's path as a link from the page's folder (as given when printing)."""
    if target is None:
        return ""
    return os.path.relpath(target.resolve(), page.resolve().parent) if page is not None else str(target)


def _compare(args: argparse.Namespace) -> int:
    runs = _runs(args)
    table = _divergences(args.divergences)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    generated = (f"Generated by `lwsconf report compare` on {when} from the last run of each column "
                 "(`make implementations`); each column header names the implementation, the cluster, its "
                 "Kubernetes version and when the run was made.")
    markdown = implementations.render_markdown(runs, table, divergences_link=_link(args.divergences, args.markdown),
                                               generated=generated)
    print(markdown, end="")
    try:
        if args.markdown:
            args.markdown.write_text(markdown)
        if args.html:
            args.html.write_text(implementations.render_html(
                runs, table, divergences_link=_link(args.divergences, args.html), generated=generated))
    except OSError as exc:
        raise ValueError(f"cannot write {exc.filename}: {exc.strerror}; choose a writable path") from None
    if not args.fail_on_regression:
        return 0
    first, last = runs[0].report, runs[-1].report
    if first is None or last is None or len(runs) < 2:
        raise ValueError("--fail-on-regression compares the first report (the baseline) with the last: pass two "
                         "reports that exist, e.g. baseline.yaml reports/latest")
    found = compare.regressions(first, last)
    print("".join(f"regression: {line}\n" for line in found) or "regressions: none\n", end="")
    return 1 if found else 0


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
