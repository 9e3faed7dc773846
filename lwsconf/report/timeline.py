"""The picture of a timeline (`lwsconf.timeline.model.Timeline`) as a self-contained SVG.

One lane per group: colour = the group's revision (its leader's, with a legend in order of first
appearance), solid = ready, hatched = not ready, gaps = no pods, a red outline = leader and workers on
different revisions (half-updated), a black bar = a new leader pod (the group was recreated). Under
the groups, a lane for the leader StatefulSet's replicas
and partition; for serving tests a lane of the requests sent through the Service (a tick per request,
green answered, red failed, taller the slower), and `phase_table` gives their count, failures and
p50/p99 latency per phase. The test's steps ("template updated", "pod deleted", "scaled to 3") are numbered
dashed lines, listed below the axis. So a reader sees at a glance that group 3 was replaced before
group 2 and that no group was half-updated. `svg` is pure and deterministic (golden-tested); the
model and its file belong to `lwsconf.timeline`, the recording to `lwsconf.waits.recorder`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from xml.sax.saxutils import escape

from lwsconf.timeline import analysis
from lwsconf.timeline.model import GroupSample, LeaderSample, Request, Timeline

__all__ = ["PALETTE", "phase_table", "svg"]

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#8C6D31", "#666666")
"""Okabe-Ito colours (readable with colour-blindness), one per revision in order of first appearance."""
MIXED = "#D00000"
ANSWERED = "#009E73"
WIDTH, LEFT, RIGHT, LANE, GAP, LINE = 960, 116, 24, 22, 8, 18


# --- drawing -------------------------------------------------------------------------------------

def _tick_step(span: float) -> float:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 3600):
        if span / step <= 10:
            return float(step)
    return 7200.0


def _num(v: float) -> str:
    return f"{v:.1f}"


def _segments(timeline: Timeline, group: int) -> list[tuple[GroupSample, float]]:
    """(sample, end time) for each sample of a group, ordered by time."""
    mine = sorted((s for s in timeline.samples if s.group == group), key=lambda s: (s.t, s.seq))
    ends = [s.t for s in mine[1:]] + [timeline.stop]
    return list(zip(mine, ends, strict=True))


def colour_revision(sample: GroupSample) -> str | None:
    """The revision a segment is coloured by: the group's one revision, else its leader's (else the first)."""
    if sample.revision is not None or not sample.pods:
        return sample.revision
    leader = sample.leader
    return leader.revision if leader is not None and leader.revision else sample.revisions[0]


def _defs(prefix: str, revisions: Sequence[str]) -> list[str]:
    out = ["<defs>"]
    for i, _ in enumerate(revisions):
        colour = PALETTE[i % len(PALETTE)]
        out.append(f'<pattern id="{prefix}-hatch-{i}" width="6" height="6" patternUnits="userSpaceOnUse" '
                   f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
                   f'<rect width="2.5" height="6" fill="{colour}"/></pattern>')
    out.append(f'<pattern id="{prefix}-hatch-legend" width="6" height="6" patternUnits="userSpaceOnUse" '
               'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
               '<rect width="2.5" height="6" fill="#555555"/></pattern>')
    out.append("</defs>")
    return out


def _lane(timeline: Timeline, group: int, y: float, x: Callable[[float], float], prefix: str,
          revisions: Sequence[str]) -> list[str]:
    out = [f'<text x="{LEFT - 8}" y="{_num(y + 15)}" text-anchor="end" class="tl-lane">group {group}</text>',
           f'<rect x="{LEFT}" y="{_num(y)}" width="{WIDTH - LEFT - RIGHT}" height="{LANE}" fill="#f4f4f4"/>']
    leader_uid = None
    for sample, end in _segments(timeline, group):
        revision = colour_revision(sample)
        uid = sample.leader.uid if sample.leader is not None else None
        new_leader = leader_uid is not None and uid is not None and uid != leader_uid
        leader_uid = uid or leader_uid
        if not revision or end <= sample.t:
            continue
        i = revisions.index(revision)
        fill = PALETTE[i % len(PALETTE)] if sample.ready else f"url(#{prefix}-hatch-{i})"
        stroke = f'stroke="{MIXED}" stroke-width="2"' if sample.mixed else 'stroke="#ffffff" stroke-width="0.5"'
        x0, x1 = x(sample.t), x(end)
        pods = ", ".join(p.name + ("" if p.ready else " (not ready)") for p in sample.pods)
        tip = (f"group {group}: revision {', '.join(sample.revisions)}{' (MIXED)' if sample.mixed else ''}, "
               f"{'ready' if sample.ready else 'not ready'}, {_num(sample.t)}s to {_num(end)}s; pods: {pods}")
        out.append(f'<rect class="seg" data-group="{group}" data-revision="{escape(revision)}" '
                   f'data-ready="{str(sample.ready).lower()}" data-mixed="{str(sample.mixed).lower()}" '
                   f'x="{_num(x0)}" y="{_num(y)}" width="{_num(max(x1 - x0, 0.5))}" height="{LANE}" fill="{fill}" '
                   f'{stroke}><title>{escape(tip)}</title></rect>')
        if x1 - x0 >= 18:
            out.append(f'<text x="{_num((x0 + x1) / 2)}" y="{_num(y + 15)}" text-anchor="middle" '
                       f'class="tl-pods{"" if sample.ready else " hatched"}">{len(sample.pods)}</text>')
        if new_leader:
            out.append(f'<rect class="recreated" data-group="{group}" x="{_num(x0)}" y="{_num(y - 2)}" width="3" '
                       f'height="{LANE + 4}" fill="#111111"><title>group {group}: new leader pod at '
                       f'{_num(sample.t)}s (the group was recreated)</title></rect>')
    return out


def _leader_lane(rows: Sequence[LeaderSample], y: float, x: Callable[[float], float], stop: float) -> list[str]:
    """The leader StatefulSet's replicas (R plus surge) and partition, one segment per change."""
    out = [f'<text x="{LEFT - 8}" y="{_num(y + 15)}" text-anchor="end" class="tl-lane">leader sts</text>',
           f'<rect x="{LEFT}" y="{_num(y)}" width="{WIDTH - LEFT - RIGHT}" height="{LANE}" fill="#f4f4f4"/>']
    ordered = sorted(rows, key=lambda r: r.t)
    for row, end in zip(ordered, [r.t for r in ordered[1:]] + [stop], strict=True):
        x0, x1 = x(row.t), x(end)
        label = f"{row.replicas} / p{row.partition}"
        tip = (f"leader StatefulSet: replicas {row.replicas}, partition {row.partition}, maxUnavailable "
               f"{row.max_unavailable}, revision {row.revision}, {_num(row.t)}s to {_num(end)}s")
        out.append(f'<rect class="sts" data-replicas="{row.replicas}" data-partition="{row.partition}" '
                   f'x="{_num(x0)}" y="{_num(y)}" width="{_num(max(x1 - x0, 0.5))}" height="{LANE}" fill="#d8dee4" '
                   f'stroke="#ffffff" stroke-width="0.5"><title>{escape(tip)}</title></rect>')
        if x1 - x0 >= 7 * len(label):
            out.append(f'<text x="{_num((x0 + x1) / 2)}" y="{_num(y + 15)}" text-anchor="middle" '
                       f'class="tl-sts">{escape(label)}</text>')
    return out


def _requests_lane(requests: Sequence[Request], y: float, x: Callable[[float], float]) -> list[str]:
    """One tick per request at the time it was sent: answered ones green, as tall as their latency's share of
    the slowest; failed ones red and full height, so a burst of failures stands out at once."""
    height = 2 * LANE
    out = [f'<text x="{LEFT - 8}" y="{_num(y + 15)}" text-anchor="end" class="tl-lane">requests</text>',
           f'<rect x="{LEFT}" y="{_num(y)}" width="{WIDTH - LEFT - RIGHT}" height="{height}" fill="#f4f4f4"/>']
    slowest = max((r.seconds for r in requests), default=0.0) or 1.0
    for r in requests:
        tall = height if not r.ok else max(3.0, height * r.seconds / slowest)
        tip = (f"{_num(r.t)}s: {'HTTP ' + str(r.status) if r.ok else r.error} in {r.seconds * 1000:.0f} ms"
               + (f" from {r.pod} ({r.revision})" if r.pod else ""))
        out.append(f'<line class="{"request" if r.ok else "request failed"}" x1="{_num(x(r.t))}" '
                   f'y1="{_num(y + height)}" x2="{_num(x(r.t))}" y2="{_num(y + height - tall)}" '
                   f'stroke="{ANSWERED if r.ok else MIXED}" stroke-width="{1 if r.ok else 2}">'
                   f'<title>{escape(tip)}</title></line>')
    return out


def phase_table(timeline: Timeline) -> str:
    """The requests per phase (split at the steps) as an HTML table; "" when the timeline has no requests."""
    phases = analysis.request_phases(timeline)
    if not phases:
        return ""

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v * 1000:.0f} ms"
    rows = "".join(f'<tr class="{"bad" if p.failures else "ok"}"><td>{escape(p.name)}</td>'
                   f"<td>{_num(p.start)}-{_num(p.end)}s</td><td>{p.requests}</td><td>{p.failures}</td>"
                   f"<td>{ms(p.p50)}</td><td>{ms(p.p99)}</td></tr>" for p in phases)
    return ('<table class="phases"><thead><tr><th>phase (from step)</th><th>time</th><th>requests</th>'
            f"<th>failed</th><th>p50</th><th>p99</th></tr></thead><tbody>{rows}</tbody></table>")


def _axis(y: float, stop: float, x: Callable[[float], float]) -> list[str]:
    step = _tick_step(stop)
    out = [f'<line x1="{LEFT}" y1="{_num(y)}" x2="{WIDTH - RIGHT}" y2="{_num(y)}" stroke="#333333"/>']
    n = 0
    while n * step <= stop + 1e-9:
        t = n * step
        out.append(f'<line x1="{_num(x(t))}" y1="{_num(y)}" x2="{_num(x(t))}" y2="{_num(y + 4)}" stroke="#333333"/>')
        label = f"{t:g}s"
        out.append(f'<text x="{_num(x(t))}" y="{_num(y + 16)}" text-anchor="middle" class="tl-tick">{label}</text>')
        n += 1
    return out


def _steps(timeline: Timeline, top: float, bottom: float, list_y: float, x: Callable[[float], float]) -> list[str]:
    out = []
    for n, step in enumerate(sorted(timeline.steps, key=lambda s: s.t), start=1):
        sx = x(step.t)
        out.append(f'<g class="step"><line x1="{_num(sx)}" y1="{_num(top)}" x2="{_num(sx)}" y2="{_num(bottom)}" '
                   f'stroke="#222222" stroke-dasharray="4 3"/><circle cx="{_num(sx)}" cy="{_num(top - 8)}" r="8" '
                   f'fill="#222222"/><text x="{_num(sx)}" y="{_num(top - 4)}" text-anchor="middle" '
                   f'class="tl-badge">{n}</text><title>{escape(step.text)} ({_num(step.t)}s)</title></g>')
        ly = list_y + (n - 1) * LINE
        out.append(f'<text x="{LEFT}" y="{_num(ly)}" class="tl-steptext"><tspan font-weight="bold">{n}</tspan>'
                   f' at {_num(step.t)}s: {escape(step.text)}</text>')
    return out


def _legend(prefix: str, revisions: Sequence[str], y: float, *, mixed: bool, leader: bool,
            recreated: bool, requests: bool = False) -> tuple[list[str], float]:
    """The legend's entries, wrapped onto as many rows as the width needs; (elements, y of its last row)."""
    out, lx = [], float(LEFT)
    entries = [(PALETTE[i % len(PALETTE)], f"revision {r}", "#333333") for i, r in enumerate(revisions)]
    entries += [("#555555", "ready (solid)", "#333333"), (f"url(#{prefix}-hatch-legend)", "not ready (hatched)",
                                                         "#333333")]
    entries += [("#ffffff", "leader and workers on different revisions", MIXED)] if mixed else []
    entries += [("#111111", "new leader pod (group recreated)", "#111111")] if recreated else []
    entries += [("#d8dee4", "leader sts: replicas / partition", "#333333")] if leader else []
    entries += [(ANSWERED, "request answered (taller = slower)", ANSWERED), (MIXED, "request failed", MIXED)] \
        if requests else []
    for fill, label, stroke in entries:
        width = 34 + 7 * len(label)
        if lx > LEFT and lx + width - 14 > WIDTH - RIGHT:
            lx, y = float(LEFT), y + LINE
        out.append(f'<rect class="legend" x="{_num(lx)}" y="{_num(y - 11)}" width="14" height="14" fill="{fill}" '
                   f'stroke="{stroke}" stroke-width="{2 if stroke == MIXED else 0.5}"/><text x="{_num(lx + 20)}" '
                   f'y="{_num(y)}" class="tl-legendtext">{escape(label)}</text>')
        lx += width
    return out, y


def svg(timeline: Timeline, *, id_prefix: str = "tl") -> str:
    """A self-contained SVG of the timeline. `id_prefix` keeps ids unique when several share a page."""
    groups, revisions, stop = timeline.groups, timeline.revisions, timeline.stop
    lanes = len(groups) + (1 if timeline.leader_sts else 0)
    title_h = 24 if timeline.title else 0
    top = title_h + 28.0
    requests_y = top + lanes * (LANE + GAP)
    lanes_bottom = requests_y + (2 * LANE + GAP if timeline.requests else 0)
    axis_y = lanes_bottom + 2
    list_y = axis_y + 40

    def x(t: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (t / stop)

    body = [f'<text x="8" y="18" class="tl-title">{escape(timeline.title)}</text>'] if timeline.title else []
    for n, group in enumerate(groups):
        body += _lane(timeline, group, top + n * (LANE + GAP), x, id_prefix, revisions)
    if timeline.leader_sts:
        body += _leader_lane(timeline.leader_sts, top + len(groups) * (LANE + GAP), x, stop)
    if timeline.requests:
        body += _requests_lane(timeline.requests, requests_y, x)
    body += _axis(axis_y, stop, x)
    body += _steps(timeline, top, lanes_bottom - GAP, list_y, x)
    legend, legend_end = _legend(id_prefix, revisions, list_y + len(timeline.steps) * LINE + 8,
                                 mixed=any(s.mixed for s in timeline.samples), leader=bool(timeline.leader_sts),
                                 recreated=any('class="recreated"' in e for e in body),
                                 requests=bool(timeline.requests))
    height = legend_end + 16
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{_num(height)}" '
        f'viewBox="0 0 {WIDTH} {_num(height)}" font-family="sans-serif" font-size="12">',
        "<style>.tl-lane{font-size:12px;fill:#222}.tl-pods{font-size:10px;fill:#fff}"
        ".tl-pods.hatched{fill:#111;paint-order:stroke;stroke:#fff;stroke-width:3px}.tl-sts{font-size:10px;fill:#222}"
        ".tl-tick{font-size:10px;fill:#333}.tl-badge{font-size:10px;fill:#fff;font-weight:bold}"
        ".tl-steptext,.tl-legendtext{font-size:12px;fill:#222}.tl-title{font-size:14px;font-weight:bold;fill:#111}"
        "</style>", *_defs(id_prefix, revisions), *body, *legend, "</svg>"]) + "\n"
