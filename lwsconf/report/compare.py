"""A feature-by-implementation matrix from several reports (`lwsconf report compare`).

Rows are features, grouped by profile (with each profile's result first); columns are the
reports (implementation, version, mode). A cell says what the report shows for that feature:
pass (all its tests passed), fail (one failed), partial (some passed, others did not run or finish), skipped,
not supported (the implementation does not claim it), untested (claimed, no test ran it) or "-"
(the report does not cover the feature's profile). Rendered as Markdown and as a self-contained
HTML page. Pure: reports in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from lwsconf import profiles
from lwsconf.conformance import Outcome
from lwsconf.report import schema

__all__ = ["Matrix", "feature_status", "matrix", "render_html", "render_markdown"]

ICON = {"pass": "✅", "fail": "❌", "partial": "⚠️", "skipped": "⏭️", "not supported": "➖", "untested": "·",
        "-": "", "success": "✅", "failure": "❌", "not-run": "⛔", "interrupted": "⏹️"}
COLOUR = {"pass": "#dafbe1", "success": "#dafbe1", "fail": "#ffebe9", "failure": "#ffebe9", "partial": "#fff8c5",
          "skipped": "#eaeef2", "not supported": "#f0e6ff", "untested": "#ffffff", "-": "#ffffff",
          "not-run": "#fff1e5", "interrupted": "#fff1e5"}


def feature_status(report: schema.Report, feature: str) -> str:
    """One matrix cell: how `report` fared on `feature`."""
    tests = [t for t in report.tests if feature in t.features]
    supported = any(feature in p.supported_features for p in report.profiles)
    unsupported = any(feature in p.unsupported_features for p in report.profiles)
    results = {t.result for t in tests}
    if Outcome.FAILED in results:
        return "fail"
    if not supported:
        return "not supported" if unsupported or tests else "-"
    ran = {t.result for t in tests if t.result is not Outcome.NOT_SUPPORTED}
    if not ran - {Outcome.INTERRUPTED}:
        return "untested"
    if ran == {Outcome.SUCCEEDED}:
        return "pass"
    return "partial" if Outcome.SUCCEEDED in ran else "skipped"


def column_label(report: schema.Report) -> str:
    impl = report.implementation
    label = " ".join(x for x in (impl.project, impl.version) if x) or report.run_id or "report"
    label += f" ({report.mode})" if report.mode not in ("", "default") else ""
    return label + (" [interrupted]" if report.interrupted else "") + (" [simulated]" if report.environment.simulated
                                                                       else "")


@dataclass(frozen=True)
class Matrix:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, str, tuple[str, ...]], ...]
    """(label, kind "profile" or "feature", one cell per column)."""


def _profile_of(feature: str) -> str:
    for p in profiles.ALL.values():
        if feature in {f.value for f in p.features}:
            return p.name
    return "other"


def matrix(reports: Sequence[schema.Report]) -> Matrix:
    features: set[str] = set()
    for r in reports:
        features |= {f for t in r.tests for f in t.features}
        features |= {f for p in r.profiles for f in (*p.supported_features, *p.unsupported_features)}
    order = [*profiles.ALL, "other"]
    rows: list[tuple[str, str, tuple[str, ...]]] = []
    for name in order:
        mine = sorted(f for f in features if _profile_of(f) == name)
        results = []
        for r in reports:
            found = [p.result.value for p in r.profiles if p.name == name]
            results.append(found[0] if found else "-")
        if not mine and all(x == "-" for x in results):
            continue
        rows.append((name, "profile", tuple(results)))
        rows += [(f, "feature", tuple(feature_status(r, f) for r in reports)) for f in mine]
    return Matrix(tuple(column_label(r) for r in reports), tuple(rows))


def _cell(value: str) -> str:
    return f"{ICON.get(value, '')} {value}".strip() if value != "-" else "-"


def render_markdown(reports: Sequence[schema.Report]) -> str:
    m = matrix(reports)
    out = ["### LWS conformance: feature matrix", "", "| Feature | " + " | ".join(m.columns) + " |",
           "| --- |" + " --- |" * len(m.columns)]
    for label, kind, cells in m.rows:
        head = f"**{label}** (profile)" if kind == "profile" else label
        out.append(f"| {head} | " + " | ".join(_cell(c) for c in cells) + " |")
    legend = ", ".join(f"{ICON[k]} {k}" for k in ("pass", "fail", "partial", "skipped", "not supported", "untested"))
    out += ["", f"Legend: {legend}; - the report does not cover this profile. Profile rows: ⛔ not-run (no test "
            "of it executed), ⏹️ interrupted (the run stopped early); a column marked [interrupted] holds partial "
            "results, one marked [simulated] comes from a simulated cluster.", ""]
    return "\n".join(out)


def render_html(reports: Sequence[schema.Report]) -> str:
    m = matrix(reports)
    head = "".join(f"<th>{escape(c)}</th>" for c in m.columns)
    body = []
    for label, kind, cells in m.rows:
        tds = "".join(f'<td style="background:{COLOUR.get(c, "#fff")}" data-status="{escape(c)}">'
                      f"{escape(_cell(c))}</td>" for c in cells)
        name = f"<b>{escape(label)}</b> profile" if kind == "profile" else escape(label)
        body.append(f'<tr class="{kind}"><td>{name}</td>{tds}</tr>')
    return "\n".join([
        '<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        "<title>LWS conformance: feature matrix</title><style>body{font:14px system-ui,sans-serif;margin:20px;"
        "color:#1f2328}table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:4px 10px;"
        "text-align:left}tr.profile td{border-top:2px solid #57606a}</style></head><body>",
        "<h1>LWS conformance: feature matrix</h1>", f"<table><thead><tr><th>Feature</th>{head}</tr></thead>",
        "<tbody>", *body, "</tbody></table></body></html>", ""])


REGRESSED = (Outcome.FAILED, Outcome.INTERRUPTED)
"""What a test that SUCCEEDED in the baseline must not become for `compare --fail-on-regression` (a skip or a
not-supported test follows from the run's claims, which the gate of `report show` judges)."""


def regressions(baseline: schema.Report, current: schema.Report) -> list[str]:
    """One line per test that SUCCEEDED in `baseline` and FAILED or was INTERRUPTED in `current`, matched by
    name (parametrised cases included)."""
    before = {t.name: t.result for t in baseline.tests}
    return [f"{t.name}: {before[t.name].value} -> {t.result.value}" for t in current.tests
            if before.get(t.name) is Outcome.SUCCEEDED and t.result in REGRESSED]
