"""The implementations page (`lwsconf report compare`, `make implementations` -> docs/implementations.md/.html).

Why a page of its own: the suite is run against several implementations (the bundled reference, upstream's
manager) on several clusters (the sim, the real control plane of `--cluster=local`), and whoever wants to
know "does upstream v0.9.0 do X, and on which cluster was that seen" should not read four reports. One
column per run: implementation and version, cluster, Kubernetes version and run date in its header; one
row per feature, grouped by profile. A test that failed as conformance/divergences.yaml expects is a
known divergence, not a failure: its cell says so and links to the divergence's entry on the page, which
gives the evidence and the row of divergences.yaml it comes from. A run that has not been made (upstream on
the sim, before the sim serves what upstream's manager needs) is a column saying "not run" and why, never a
column left out; once its report exists the same command shows it.

Pure: reports and the divergence table's text in, Markdown and HTML out (the CLI does the reading).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from lwsconf import divergences, profiles
from lwsconf.conformance import Outcome
from lwsconf.report import compare, schema

__all__ = ["Cell", "DivergenceRow", "Run", "cell", "header", "read_divergences", "render_html", "render_markdown"]

TITLE = "LWS implementations: conformance by feature, implementation and cluster"
NOT_RUN = "not run"
KNOWN = "known divergence"
ICON = {**compare.ICON, KNOWN: "🔶", NOT_RUN: "⛔"}
COLOUR = {**compare.COLOUR, KNOWN: "#ffe8cc", NOT_RUN: "#eaeef2"}
GLYPH = {"pass": "✓", "success": "✓", "fail": "✗", "failure": "✗", KNOWN: "◆", NOT_RUN: "–"}
"""The HTML page's marks: plain glyphs every common font has (emoji render as empty boxes where no emoji font
is installed, as in a headless browser on CI); the cell's colour and word carry the rest."""
LEGEND = ("pass", "fail", KNOWN, "partial", "skipped", "not supported", "untested", NOT_RUN)
MEANING = {
    "pass": "every test of the feature passed", "fail": "a test failed",
    KNOWN: "a test failed as conformance/divergences.yaml expects for this implementation version (the number "
           "links to the evidence); the feature's other tests passed",
    "partial": "some tests passed, others did not run", "skipped": "its tests were skipped",
    "not supported": "not claimed in this run, or its tests cannot run on this cluster (reason under Runs)",
    "untested": "claimed, but no test of it ran", NOT_RUN: "there is no report of this run (reason in the header)",
}


@dataclass(frozen=True)
class Run:
    """One column: a run's report, or a run not made yet (`report` None) with the reason."""

    source: str
    """Where the report was read (or was looked for), shown under Runs."""
    report: schema.Report | None = None
    label: str = ""
    """A run not made: what it would be (implementation, version, cluster)."""
    reason: str = ""
    """A run not made: why."""


DivergenceRow = divergences.Divergence
"""A row of conformance/divergences.yaml and the line it starts on (the model: lwsconf/divergences.py)."""


def read_divergences(text: str) -> list[DivergenceRow]:
    """The rows of a divergences.yaml text, each with its 1-based line; ValueError names a malformed row."""
    return divergences.read(text)


@dataclass(frozen=True)
class Cell:
    status: str
    refs: tuple[int, ...] = ()
    """Numbers (1-based) of the page's known divergences this cell shows."""


@dataclass(frozen=True)
class Seen:
    """A known divergence as the page lists it: the table's row (if found) and the columns that showed it."""

    test: str
    implementation: str
    message: str
    row: DivergenceRow | None
    columns: tuple[int, ...]


def _divergent_tests(report: schema.Report) -> list[schema.TestReport]:
    return [t for t in report.tests if t.result is Outcome.KNOWN_DIVERGENCE]


def _row_for(test: schema.TestReport, report: schema.Report, table: Sequence[DivergenceRow]) -> DivergenceRow | None:
    names = {test.name, test.short_name}
    version = report.implementation.version
    return next((r for r in table if r.test in names and r.applies_to(r.implementation, version)),
                next((r for r in table if r.test in names), None))


def seen_divergences(runs: Sequence[Run], table: Sequence[DivergenceRow]) -> list[Seen]:
    """Every known divergence some run showed, in column order, each once with every column that showed it."""
    order: dict[tuple[str, str], list[int]] = {}
    first: dict[tuple[str, str], tuple[schema.TestReport, schema.Report]] = {}
    for col, run in enumerate(runs):
        if run.report is None:
            continue
        for t in _divergent_tests(run.report):
            key = (t.name, _implementation(run.report))
            order.setdefault(key, []).append(col)
            first.setdefault(key, (t, run.report))
    return [Seen(key[0], key[1], first[key][0].message, _row_for(*first[key], table), tuple(cols))
            for key, cols in order.items()]


def _implementation(report: schema.Report) -> str:
    impl = report.implementation
    name = impl.project or "implementation"
    name = f"{impl.organization}/{name}" if impl.organization else name  # kubernetes-sigs/lws: whose LWS it is
    return f"{name} {impl.version}" if impl.version else f"{name} (bundled with lwsconf {report.lwsconf_version})"


def _where(run: Run) -> str:
    return f"{_implementation(run.report)} on {run.report.backend}" if run.report is not None else run.label


def cell(run: Run, feature: str, seen: Sequence[Seen], column: int) -> Cell:
    """What the column shows for `feature`: compare.feature_status, with known divergences told apart."""
    if run.report is None:
        return Cell(NOT_RUN)
    tests = [t for t in run.report.tests if feature in t.features]
    divergent = [t for t in tests if t.result is Outcome.KNOWN_DIVERGENCE]
    status = compare.feature_status(run.report, feature)
    if not divergent or status == "fail":
        return Cell(status)
    names = {t.name for t in divergent}
    refs = tuple(i + 1 for i, s in enumerate(seen) if s.test in names and column in s.columns)
    return Cell(KNOWN, refs)


def header(run: Run) -> tuple[str, ...]:
    """The column's header lines: implementation and version, cluster, Kubernetes version, run date."""
    if run.report is None:
        return (run.label, f"{NOT_RUN}: {run.reason}")
    r = run.report
    simulated = f" (simulated: {', '.join(r.environment.simulated)})" if r.environment.simulated else ""
    date = r.date.replace("T", " ").replace("+00:00", " UTC")
    lines = [_implementation(r), f"cluster: {r.backend}{simulated}",
             f"Kubernetes {r.environment.kubernetes_version}", f"run {date}"]
    if r.interrupted or r.run_error:
        lines.append(f"incomplete: {r.run_error or r.stop_reason or 'interrupted'}")
    return tuple(lines)


def _rows(runs: Sequence[Run]) -> list[tuple[str, str, str]]:
    """(label, kind, profile description) in page order: each profile, then its features."""
    features: set[str] = set()
    for run in runs:
        if run.report is not None:
            features |= {f for t in run.report.tests for f in t.features}
            features |= {f for p in run.report.profiles for f in (*p.supported_features, *p.unsupported_features)}
    out: list[tuple[str, str, str]] = []
    for name, profile in profiles.ALL.items():
        mine = sorted(f for f in features if f in {x.value for x in profile.features})
        if mine:
            out.append((name, "profile", profile.description))
            out += [(f, "feature", "") for f in mine]
    rest = sorted(f for f in features if not any(f in {x.value for x in p.features} for p in profiles.ALL.values()))
    if rest:
        out.append(("other", "profile", "features of no profile"))
        out += [(f, "feature", "") for f in rest]
    return out


def _profile_status(run: Run, name: str) -> str:
    if run.report is None:
        return NOT_RUN
    found = [p.result.value for p in run.report.profiles if p.name == name]
    return found[0] if found else "not claimed"


def _counts(report: schema.Report) -> str:
    n = {o: sum(t.result is o for t in report.tests) for o in Outcome}
    parts = [f"{n[Outcome.SUCCEEDED]} passed", f"{n[Outcome.FAILED]} failed",
             f"{n[Outcome.KNOWN_DIVERGENCE]} known divergences", f"{n[Outcome.SKIPPED]} skipped",
             f"{n[Outcome.NOT_SUPPORTED]} not supported"]
    if n[Outcome.INTERRUPTED]:
        parts.append(f"{n[Outcome.INTERRUPTED]} interrupted")
    return ", ".join(parts)


def _not_supported(report: schema.Report) -> list[str]:
    """One line per distinct reason this run's NOT_SUPPORTED tests give, with how many gave it."""
    reasons: dict[str, list[str]] = {}
    for t in report.tests:
        if t.result is Outcome.NOT_SUPPORTED:
            reasons.setdefault(t.message or "no reason given", []).append(t.name)
    return [f"{len(names)} test(s) ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}): {why}"
            for why, names in reasons.items()]


def _run_lines(run: Run) -> tuple[str, list[str]]:
    """A run's summary line and its NOT_SUPPORTED reasons, for the Runs section."""
    if run.report is None:
        return f"{run.label}: {NOT_RUN}: {run.reason} (no report at `{run.source}`)", []
    r = run.report
    how = dict(r.implementation.source).get("how", "")
    head = (f"{_implementation(r)} on {r.backend} (Kubernetes {r.environment.kubernetes_version}, "
            f"{r.environment.node_count} nodes), run {r.run_id or '?'} of {r.date}: {_counts(r)}"
            f"{f'; ran as: {how}' if how else ''}; report `{run.source}`")
    return head, _not_supported(r)


# --- Markdown ---------------------------------------------------------------------------------------------

def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_cell(c: Cell) -> str:
    text = f"{ICON.get(c.status, '')} {c.status}".strip()
    if c.refs:
        text += " " + " ".join(f"[[{n}]](#divergence-{n})" for n in c.refs)
    return text


def render_markdown(runs: Sequence[Run], table: Sequence[DivergenceRow] = (), *, divergences_link: str = "",
                    generated: str = "") -> str:
    """The page as Markdown; `divergences_link` is the path of divergences.yaml relative to the page."""
    seen = seen_divergences(runs, table)
    heads = ["<br>".join(_md(x) for x in header(r)) for r in runs]
    out = [f"# {TITLE}", ""]
    if generated:
        out += [generated, ""]
    out += ["| Feature | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(runs)]
    for label, kind, _ in _rows(runs):
        if kind == "profile":
            cells = [_profile_status(r, label) for r in runs]
            out.append(f"| **{label}** (profile) | " + " | ".join(
                f"{ICON.get(c, '')} {c}".strip() for c in cells) + " |")
        else:
            out.append(f"| {label} | " + " | ".join(_md_cell(cell(r, label, seen, i)) for i, r in enumerate(runs))
                       + " |")
    out += ["", "Legend: " + "; ".join(f"{ICON[k]} {k}: {MEANING[k]}" for k in LEGEND) + ".", "", "## Runs", ""]
    for run in runs:
        head, reasons = _run_lines(run)
        out.append(f"- {_md(head)}")
        out += [f"  - not supported here: {_md(x)}" for x in reasons]
    out += ["", "## Known divergences", ""]
    if not seen:
        out.append("None of these runs showed a known divergence.")
    for n, s in enumerate(seen, 1):
        where = ", ".join(_where(runs[c]) for c in s.columns)
        if s.row is not None:
            link = f"[divergences.yaml line {s.row.line}]({divergences_link}#L{s.row.line})" if divergences_link \
                else f"divergences.yaml line {s.row.line}"
            body = (f"'{s.row.id}', class {s.row.klass}, {s.row.implementation} {s.row.describe_range()} ({link}): "
                    f"{s.row.evidence}")
        else:
            body = f"not in the divergence table given; the report's reason: {s.message}"
        out.append(f'- <a id="divergence-{n}"></a>**[{n}] {_md(s.test)}** ({_md(s.implementation)}; seen on '
                   f"{_md(where)}): {_md(body)}")
    return "\n".join(out) + "\n"


# --- HTML -------------------------------------------------------------------------------------------------

STYLE = ("body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1400px}"
         "table{border-collapse:collapse;margin:12px 0}th,td{border:1px solid #d0d7de;padding:5px 10px;"
         "text-align:left;vertical-align:top}thead th{background:#f6f8fa;font-weight:normal;min-width:150px}"
         "thead th b{display:block;font-size:15px}thead th span{display:block;color:#57606a;font-size:12px}"
         "thead th.notrun{background:#eaeef2}tr.profile td{border-top:2px solid #57606a;background:#f6f8fa}"
         "tr.profile td:first-child{font-weight:600;max-width:380px}td.feature{white-space:nowrap}td a{color:#0969da}"
         "p.desc{color:#57606a;margin:0;font-size:12px;font-weight:normal}ul{padding-left:20px}li{margin:4px 0}"
         "code{font-size:12px;background:#f6f8fa;padding:1px 4px}"
         ".legend span{display:inline-block;margin:2px 10px 2px 0;"
         "padding:1px 6px;border:1px solid #d0d7de}ul.divergences{list-style:none;padding-left:0}")


def _code(text: str) -> str:
    """`command` (Markdown's code span) as <code> in escaped HTML text."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _html_cell(c: Cell) -> str:
    refs = "".join(f' <a href="#divergence-{n}">[{n}]</a>' for n in c.refs)
    return (f'<td style="background:{COLOUR.get(c.status, "#fff")}" data-status="{escape(c.status)}">'
            f"{escape(GLYPH.get(c.status, ''))} {escape(c.status)}{refs}</td>")


def _html_head(run: Run) -> str:
    lines = header(run)
    cls = ' class="notrun"' if run.report is None else ""
    return f"<th{cls}><b>{escape(lines[0])}</b>" + "".join(f"<span>{escape(x)}</span>" for x in lines[1:]) + "</th>"


def render_html(runs: Sequence[Run], table: Sequence[DivergenceRow] = (), *, divergences_link: str = "",
                generated: str = "") -> str:
    """The page as one self-contained HTML document (no script, no external resource)."""
    seen = seen_divergences(runs, table)
    body = []
    for label, kind, description in _rows(runs):
        if kind == "profile":
            cells = "".join(
                f'<td style="background:{COLOUR.get(s, "#f6f8fa")}" data-status="{escape(s)}">'
                f"{escape(GLYPH.get(s, ''))} {escape(s)}</td>" for s in (_profile_status(r, label) for r in runs))
            body.append(f'<tr class="profile"><td>{escape(label)}<p class="desc">{escape(description)}</p></td>'
                        f"{cells}</tr>")
        else:
            cells = "".join(_html_cell(cell(r, label, seen, i)) for i, r in enumerate(runs))
            body.append(f'<tr class="feature"><td class="feature">{escape(label)}</td>{cells}</tr>')
    legend = "".join(f'<span style="background:{COLOUR.get(k, "#fff")}">{escape(GLYPH.get(k, ""))} <b>{escape(k)}</b>: '
                     f"{escape(MEANING[k])}</span>" for k in LEGEND)
    run_items = []
    for run in runs:
        head, reasons = _run_lines(run)
        sub = "".join(f"<li>not supported here: {escape(x)}</li>" for x in reasons)
        run_items.append(f"<li>{_code(escape(head))}{f'<ul>{sub}</ul>' if sub else ''}</li>")
    div_items = []
    for n, s in enumerate(seen, 1):
        where = ", ".join(_where(runs[c]) for c in s.columns)
        if s.row is not None:
            target = f"divergences.yaml line {s.row.line}"
            link = (f'<a href="{escape(divergences_link)}">{escape(target)}</a>' if divergences_link
                    else escape(target))
            body_text = (f"'{escape(s.row.id)}', class {escape(s.row.klass)}, {escape(s.row.implementation)} "
                         f"{escape(s.row.describe_range())} ({link}): {escape(s.row.evidence)}")
        else:
            body_text = f"not in the divergence table given; the report's reason: {escape(s.message)}"
        div_items.append(f'<li id="divergence-{n}"><b>[{n}] {escape(s.test)}</b> ({escape(s.implementation)}; '
                         f"seen on {escape(where)}): {body_text}</li>")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{escape(TITLE)}</title><style>{STYLE}</style></head><body>", f"<h1>{escape(TITLE)}</h1>",
        f"<p>{_code(escape(generated))}</p>" if generated else "",
        "<table><thead><tr><th>Feature</th>" + "".join(_html_head(r) for r in runs) + "</tr></thead><tbody>",
        *body, "</tbody></table>", f'<p class="legend">{legend}</p>',
        "<h2>Runs</h2><ul>", *run_items, "</ul>", "<h2>Known divergences</h2>",
        ('<ul class="divergences">' + "".join(div_items) + "</ul>" if div_items
         else "<p>None of these runs showed a known divergence.</p>"),
        "</body></html>", ""])
