"""`summary.md` and its terminal twin: the few lines a CI job summary or a maintainer reads first.

First what the reader must not miss: a run that failed as a whole, a run that was interrupted, and
a simulated cluster (so a sim report is never taken for a GPU cluster's). Then profiles with their
result and counts, every failure with its one-line reason, the core tests that did not run, what
the report could not show (a test's `problems`, e.g. an unreadable timeline), and one footer line
saying where and with what the run happened. `render` is
Markdown fit for `$GITHUB_STEP_SUMMARY`; `render_text` is the same content as aligned plain text
for `lwsconf report show`. Only renders a `schema.Report`.
"""

from __future__ import annotations

from lwsconf.conformance import Outcome
from lwsconf.report import schema

__all__ = ["FILENAME", "notices", "overall", "render", "render_text"]

FILENAME = "summary.md"
ICON = {schema.Result.SUCCESS: "✅", schema.Result.PARTIAL: "⚠️", schema.Result.FAILURE: "❌",
        schema.Result.NOT_RUN: "⛔", schema.Result.INTERRUPTED: "⏹️"}
RANK = (schema.Result.FAILURE, schema.Result.INTERRUPTED, schema.Result.NOT_RUN, schema.Result.PARTIAL,
        schema.Result.SUCCESS)
"""Worst first: the overall result is the first of these any profile has."""
HEADER = ["Profile", "Result", "Passed", "Failed", "Skipped", "Not supported"]
MAX_REASON = 200


def overall(report: schema.Report) -> schema.Result:
    """The worst profile result; failure also when the run failed as a whole or a test outside every
    profile failed, interrupted when the run stopped early even if no profile was claimed."""
    results = {p.result for p in report.profiles}
    if report.run_error or any(t.result is Outcome.FAILED for t in report.tests):
        results.add(schema.Result.FAILURE)
    if report.interrupted:
        results.add(schema.Result.INTERRUPTED)
    return next((r for r in RANK if r in results), schema.Result.SUCCESS)


def figures(report: schema.Report) -> list[tuple[schema.TestReport, str, str]]:
    """What the tests measured (their `figures`), as (test, name, value) in the report's order: every writer lists
    them so."""
    return [(t, name, value) for t in report.tests for name, value in t.figures]


def notices(report: schema.Report) -> list[str]:
    """The lines that go above everything else: run error, interruption, what is simulated."""
    out = []
    if report.run_error:
        out.append(f"The run failed as a whole: {report.run_error}")
    elif report.interrupted:
        out.append(f"The run was interrupted ({report.stop_reason or 'no reason recorded'}): "
                   f"{report.unfinished} selected test(s) did not finish; the results below are partial.")
    simulated = report.environment.simulated
    if simulated:
        out.append(f"Simulated on this cluster ({report.backend}): {', '.join(simulated)} are simulated, not real "
                   "hardware; this report does not show how the implementation behaves on a real GPU cluster.")
    return out


def _reason(message: str) -> str:
    line = message.strip() or "no message"
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 1] + "…"


def _rows(report: schema.Report) -> list[list[str]]:
    return [[p.name, p.result.value, str(p.statistics.passed), str(p.statistics.failed), str(p.statistics.skipped),
             str(p.statistics.not_supported)] for p in report.profiles]


def _unrun_core(report: schema.Report) -> list[schema.TestReport]:
    claimed = {p.name for p in report.profiles}
    return [t for t in report.tests if t.core and claimed.intersection(t.profiles)
            and t.result in schema.NOT_RUN]


def _others(report: schema.Report) -> str:
    claimed = {p.name for p in report.profiles}
    rest = [t for t in report.tests if not claimed.intersection(t.profiles)]
    if not rest:
        return ""
    counts = {o: sum(t.result is o for t in rest) for o in Outcome}
    shown = ", ".join(f"{n} {o.value.lower().replace('_', ' ')}" for o, n in counts.items() if n)
    return f"Tests outside the claimed profiles: {shown}."


def _footer(report: schema.Report) -> str:
    env = report.environment
    sim = " (simulated)"
    parts = [f"lwsconf {report.suite_label}", f"backend {report.backend}", f"Kubernetes {env.kubernetes_version}",
             f"{env.node_count} node(s) ({env.node_image}{sim if 'node image' in env.simulated else ''})",
             f"LWS API {report.lws_api_version}"]
    if env.gpu_product:
        parts.append(f"GPU {env.gpu_product}{sim if 'GPUs' in env.simulated else ''}")
    parts.append(f"run {report.run_id or report.date}")
    return " · ".join(parts)


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def render(report: schema.Report) -> str:
    impl = report.implementation
    out = [f"### LWS conformance: {impl.project} {impl.version}".rstrip() + f" — {overall(report).value}", ""]
    out += [f"> **{_md_cell(line)}**" for line in notices(report)] + ([""] if notices(report) else [])
    out += ["| " + " | ".join(HEADER) + " |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for row in _rows(report):
        row[1] = f"{ICON[schema.Result(row[1])]} {row[1]}"
        out.append("| " + " | ".join(row) + " |")
    failed = [t for t in report.tests if t.result is Outcome.FAILED]
    if failed:
        out += ["", "**Failures**", "", "| Test | Profiles | Reason |", "| --- | --- | --- |"]
        out += [f"| `{t.name}` | {', '.join(t.profiles) or '-'} | {_md_cell(_reason(t.message))} |"
                for t in failed]
    known = [t for t in report.tests if t.result is Outcome.KNOWN_DIVERGENCE]
    if known:
        out += ["", "**Known divergences** (failed as conformance/divergences.yaml expects for this version)", "",
                "| Test | Evidence |", "| --- | --- |"]
        out += [f"| `{t.name}` | {_md_cell(t.message or '-')} |" for t in known]
    unrun = _unrun_core(report)
    if unrun:
        out += ["", "**Core tests not run**", ""]
        out += [f"- `{t.name}` {t.result.value}: {_md_cell(_reason(t.message))}" for t in unrun]
    measured = figures(report)
    if measured:
        out += ["", "**Figures** (what the tests measured)", "", "| Test | Figure | Value |", "| --- | --- | ---: |"]
        out += [f"| `{t.name}` | {_md_cell(name)} | {_md_cell(value)} |" for t, name, value in measured]
    problems = [(t, p) for t in report.tests for p in t.problems]
    if problems:
        out += ["", "**Report problems** (what this report could not show)", ""]
        out += [f"- `{t.short_name}`: {_md_cell(p)}" for t, p in problems]
    others = _others(report)
    out += ["", others] if others else []
    out += ["", f"<sub>{_md_cell(_footer(report))} · details: report.html</sub>", ""]
    return "\n".join(out)


def render_text(report: schema.Report) -> str:
    impl = report.implementation
    rows = [HEADER, *_rows(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    out = [f"LWS conformance: {impl.project} {impl.version}".rstrip() + f": {overall(report).value.upper()}", ""]
    out += [*notices(report), ""] if notices(report) else []
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    failed = [t for t in report.tests if t.result is Outcome.FAILED]
    if failed:
        out += ["", "Failures:"] + [f"  {t.name}: {_reason(t.message)}" for t in failed]
    unrun = _unrun_core(report)
    if unrun:
        out += ["", "Core tests not run:"] + [f"  {t.name} {t.result.value}: {_reason(t.message)}" for t in unrun]
    measured = figures(report)
    if measured:
        out += ["", "Figures (what the tests measured):"] + [f"  {t.name}: {n} = {v}" for t, n, v in measured]
    problems = [(t, p) for t in report.tests for p in t.problems]
    if problems:
        out += ["", "Report problems (what this report could not show):"]
        out += [f"  {t.short_name}: {p}" for t, p in problems]
    others = _others(report)
    out += ["", others] if others else []
    out += ["", _footer(report), ""]
    return "\n".join(out)
