"""`report.html`: one self-contained static page a reviewer opens from the run directory.

It shows the implementation and environment, each claimed profile's result, a table of every test
that can be filtered by feature, result and name (inline script, works offline from file://), each
failure with its message and links to its artifacts, and for every test that recorded a timeline
the timeline picture (inline SVG). The page loads nothing: no network, no external stylesheet,
script or font, and a Content-Security-Policy that forbids fetching anything. Only renders a
`schema.Report` (plus the timelines read from its artifacts by the caller).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from html import escape

from lwsconf.conformance import Outcome
from lwsconf.report import schema, summary_md, timeline
from lwsconf.timeline.model import Timeline

__all__ = ["FILENAME", "render"]

FILENAME = "report.html"
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#1f2328;
background:#f6f8fa}
header,main,footer{max-width:1200px;margin:0 auto;padding:0 20px}
header{padding-top:18px}h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px;
border-bottom:1px solid #d0d7de;padding-bottom:4px}h3{font-size:15px;margin:0 0 6px}
.impl{color:#57606a;margin:0 0 10px}.impl a{color:#0969da}
.badge{display:inline-block;border-radius:12px;padding:1px 10px;font-weight:600;font-size:12px;color:#fff;
white-space:nowrap}
.success,.SUCCEEDED{background:#1a7f37}.partial{background:#9a6700}.failure,.FAILED{background:#cf222e}\
.KNOWN_DIVERGENCE{background:#bc4c00}
.SKIPPED,.PROVISIONAL_SKIPPED{background:#6e7781}.NOT_SUPPORTED{background:#8250df}
.not-run,.interrupted,.INTERRUPTED{background:#bc4c00}
.notice{background:#fff1e5;border:1px solid #bc4c00;border-radius:6px;padding:8px 12px;margin:8px 0;font-weight:600}
.overall{font-size:15px;padding:3px 14px;vertical-align:middle;margin-left:8px}
dl.env{display:flex;flex-wrap:wrap;gap:4px 22px;margin:8px 0}
dl.env div{display:flex;gap:6px;white-space:nowrap}dl.env dt{color:#57606a}dl.env dd{margin:0;font-weight:600}
td.nowrap{white-space:nowrap}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:12px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:12px}
.card .stats{display:grid;grid-template-columns:repeat(4,1fr);gap:4px;margin:8px 0;text-align:center}
.card .stats b{display:block;font-size:18px;font-variant-numeric:tabular-nums}.card .stats span{font-size:11px;
color:#57606a}
.card .unsupported{color:#57606a;font-size:12px}
.filters{display:flex;gap:10px;align-items:center;margin-bottom:8px;flex-wrap:wrap}
select,input{font:inherit;padding:3px 6px;border:1px solid #d0d7de;border-radius:6px;background:#fff}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #d0d7de}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.msg{color:#57606a;max-width:420px;overflow-wrap:anywhere}.feat{font-size:12px;color:#57606a}
tr[hidden]{display:none}
.failure-item{background:#fff;border:1px solid #d0d7de;border-left:4px solid #cf222e;border-radius:6px;
padding:10px 14px;margin-bottom:10px}
pre{background:#f6f8fa;padding:8px;border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere;margin:6px 0}
figure{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px;margin:10px 0 14px;overflow-x:auto}
.failure-item figure{border:0;padding:0}
table.phases{width:auto;margin-top:6px;font-size:12px}table.phases tr.bad td{color:#cf222e;font-weight:600}
figcaption{font-weight:600;margin-bottom:6px}.problem{color:#cf222e;font-weight:600}\
footer{color:#57606a;font-size:12px;padding:24px 20px}
"""

SCRIPT = """
(function () {
  var feature = document.getElementById('f-feature'), result = document.getElementById('f-result');
  var text = document.getElementById('f-text'), count = document.getElementById('f-count');
  var rows = Array.prototype.slice.call(document.querySelectorAll('#test-table tbody tr'));
  function apply() {
    var shown = 0, q = text.value.trim().toLowerCase();
    rows.forEach(function (row) {
      var ok = (!feature.value || (' ' + row.dataset.features + ' ').indexOf(' ' + feature.value + ' ') >= 0) &&
               (!result.value || row.dataset.result === result.value) &&
               (!q || row.dataset.name.toLowerCase().indexOf(q) >= 0);
      row.hidden = !ok;
      if (ok) { shown++; }
    });
    count.textContent = shown + ' of ' + rows.length + ' tests shown';
  }
  [feature, result, text].forEach(function (el) {
    el.addEventListener('input', apply); el.addEventListener('change', apply);
  });
  var wanted = /(?:^|[#&])result=([A-Z_]+)/.exec(location.hash);
  if (wanted) { result.value = wanted[1]; }
  apply();
})();
"""


def _badge(value: str, extra: str = "") -> str:
    return f'<span class="badge {escape(value)}{extra}">{escape(value)}</span>'


def _header(report: schema.Report) -> list[str]:
    impl, env = report.implementation, report.environment
    who = " ".join(escape(x) for x in (impl.organization, impl.project, impl.version) if x)
    if impl.url:
        who += f' · <a href="{escape(impl.url)}" rel="noreferrer">{escape(impl.url)}</a>'
    if impl.contact:
        who += " · contact: " + escape(", ".join(impl.contact))
    facts = [("Date", report.date), ("Run", report.run_id), ("Backend", report.backend), ("Mode", report.mode),
             ("Kubernetes", env.kubernetes_version), ("Nodes", str(env.node_count)),
             ("Node image", env.node_image + (" (simulated)" if "node image" in env.simulated else "")),
             ("GPU", (env.gpu_product or "none") + (" (simulated)" if "GPUs" in env.simulated else "")),
             ("LWS API", report.lws_api_version),
             ("lwsconf", report.suite_label),
             ("Built from", " · ".join(f"{k} {v}" for k, v in impl.source))]
    dl = "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts if v)
    result = summary_md.overall(report).value
    notices = [f'<p class="notice">{escape(line)}</p>' for line in summary_md.notices(report)]
    return ["<header>", f'<h1>LWS conformance report {_badge(result, " overall")}</h1>',
            f'<p class="impl">{who}</p>', *notices, f'<dl class="env">{dl}</dl>', "</header>"]


def _profiles(report: schema.Report) -> list[str]:
    out = ['<section id="profiles"><h2>Profiles</h2><div class="cards">']
    for p in report.profiles:
        s = p.statistics
        unsupported = (f'<div class="unsupported">Unsupported features: {escape(", ".join(p.unsupported_features))}'
                       "</div>" if p.unsupported_features else "")
        out.append(f'<div class="card profile" data-profile="{escape(p.name)}"><h3>{escape(p.name)} '
                   f'{_badge(p.result.value)}</h3><div>{escape(p.summary)}</div><div class="stats">'
                   f"<span><b>{s.passed}</b>passed</span><span><b>{s.failed}</b>failed</span>"
                   f"<span><b>{s.skipped}</b>skipped</span><span><b>{s.not_supported}</b>not supported</span>"
                   f"</div>{unsupported}</div>")
    if not report.profiles:
        out.append("<p>No profile was claimed.</p>")
    out.append("</div></section>")
    return out


def _options(values: list[str], everything: str) -> str:
    return f'<option value="">{everything}</option>' + "".join(
        f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)


def _test_rows(report: schema.Report, anchors: Mapping[int, str]) -> list[str]:
    out = []
    for i, t in enumerate(report.tests):
        name = escape(t.name)
        if i in anchors:
            name = f'<a href="#{anchors[i]}">{name}</a>'
        out.append(f'<tr data-result="{t.result.value}" data-features="{escape(" ".join(t.features))}" '
                   f'data-name="{escape(t.name + " " + t.node_id)}"><td title="{escape(t.node_id)}">{name}'
                   f"</td><td>{_badge(t.result.value)}</td>"
                   f"<td class=\"nowrap\">{escape(', '.join(t.profiles) or '-')}</td>"
                   f'<td class="feat">{escape(", ".join(t.features) or "-")}</td>'
                   f'<td class="num">{t.duration:.1f}s</td>'
                   f'<td class="msg">{escape(t.message)}{_figures(t)}{_problems(t)}</td></tr>')
    return out


def _figures(test: schema.TestReport) -> str:
    """What a test measured (record_property), in its entry: one line per figure."""
    return "".join(f'<div class="figure">{escape(name)}: <b>{escape(value)}</b></div>' for name, value in test.figures)


def _problems(test: schema.TestReport) -> str:
    """What the report could not show of a test (e.g. an unreadable timeline.json), in its entry."""
    return "".join(f'<div class="problem">report problem: {escape(p)}</div>' for p in test.problems)


def _tests(report: schema.Report, anchors: Mapping[int, str]) -> list[str]:
    features = sorted({f for t in report.tests for f in t.features})
    return ['<section id="tests"><h2>Tests</h2><div class="filters">',
            f'<label>Feature <select id="f-feature">{_options(features, "all features")}</select></label>',
            f'<label>Result <select id="f-result">{_options([o.value for o in Outcome], "all results")}'
            "</select></label>",
            '<label>Name <input id="f-text" type="search" placeholder="filter by name"></label>',
            f'<span id="f-count">{len(report.tests)} tests</span></div>',
            '<table id="test-table"><thead><tr><th>Test</th><th>Result</th><th>Profiles</th><th>Features</th>'
            "<th>Duration</th><th>Message</th></tr></thead><tbody>", *_test_rows(report, anchors),
            "</tbody></table></section>"]


def _artifact_links(test: schema.TestReport) -> str:
    if not test.artifacts:
        return "<p>No artifacts were collected for this test.</p>"
    links = "".join(f'<li><a href="{escape(a)}">{escape(a)}</a></li>' for a in test.artifacts)
    return f"<p>Artifacts:</p><ul>{links}</ul>"


def _figure(report: schema.Report, i: int, tl: Timeline) -> str:
    t = report.tests[i]
    return (f'<figure id="timeline-{i}" data-test="{escape(t.name)}"><figcaption>{escape(t.name)} '
            f"{_badge(t.result.value)}</figcaption>{timeline.svg(replace(tl, title=''), id_prefix=f'tl{i}')}"
            f"{timeline.phase_table(tl)}</figure>")


def _failures(report: schema.Report, drawn: Mapping[int, Timeline]) -> list[str]:
    failed = [(i, t) for i, t in enumerate(report.tests) if t.result is Outcome.FAILED]
    if not failed:
        return ['<section id="failures"><h2>Failures</h2><p>No test failed.</p></section>']
    out = ['<section id="failures"><h2>Failures</h2>']
    for i, t in failed:
        picture = _figure(report, i, drawn[i]) if i in drawn else ""
        out.append(f'<article class="failure-item" id="test-{i}"><h3>{escape(t.name)}</h3>'
                   f"<div>{escape(t.description)}</div><pre>{escape(t.message or 'no message')}</pre>"
                   f"<div><code>pytest {escape(t.node_id)}</code></div>"
                   f"{_problems(t)}{_artifact_links(t)}{picture}</article>")
    out.append("</section>")
    return out


def _timelines(report: schema.Report, drawn: Mapping[int, Timeline]) -> list[str]:
    rest = {i: tl for i, tl in drawn.items() if report.tests[i].result is not Outcome.FAILED}
    if not rest:
        return []
    out = ['<section id="timelines"><h2>Timelines</h2>',
           "<p>One lane per group: colour is the template revision, hatched means not ready, gaps mean no "
           "pods, a red outline means leader and workers on different revisions; the last lane is the leader "
           "StatefulSet (replicas / partition); dashed lines are the test's steps. Failed tests show theirs "
           "under Failures.</p>"]
    out += [_figure(report, i, tl) for i, tl in sorted(rest.items())]
    out.append("</section>")
    return out


def render(report: schema.Report, *, timelines: Mapping[str, Timeline] | None = None) -> str:
    """The page, as one HTML string.

    Args:
        report: the run's report.
        timelines: timelines by test node id (`TestReport.node_id`), read from the tests' artifacts.
    """
    by_node = timelines or {}
    drawn = {i: by_node[t.node_id] for i, t in enumerate(report.tests) if t.node_id in by_node}
    anchors = {**{i: f"timeline-{i}" for i in drawn},
               **{i: f"test-{i}" for i, t in enumerate(report.tests) if t.result is Outcome.FAILED}}
    impl = report.implementation
    title = escape(f"LWS conformance: {impl.project} {impl.version}".strip())
    body = [*_header(report), "<main>", *_profiles(report), *_failures(report, drawn), *_tests(report, anchors),
            *_timelines(report, drawn), "</main>",
            f"<footer>{escape(report.kind)} {escape(report.api_version)} · written by lwsconf "
            f"{escape(report.lwsconf_version)} · conformance-report.yaml holds the same results</footer>"]
    return "\n".join(['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
                      f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{title}</title><style>{CSS}</style></head><body>", *body,
                      f"<script>{SCRIPT}</script>", "</body></html>", ""])
