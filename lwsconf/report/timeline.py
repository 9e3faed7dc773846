"""What happened to each group during a test, as data (`timeline.json`) and as a picture (SVG).

A test that rolls, restarts or scales groups records `Sample`s (a group's template revision,
readiness and pod count from time `t` on, in seconds since the test started) and `Step` markers
("template updated"). The report shows the timeline as one lane per group: colour = revision (with a
legend), solid = ready, hatched = not ready, gaps = no pods, vertical lines = steps. So a reader sees
at a glance that group 3 was replaced before group 2 and that no group was half-updated.
`svg` is pure and deterministic (golden-tested); only `save`/`load` and `Recorder` touch files or
clocks. The file lives at `reports/<run-id>/artifacts/<test>/timeline.json`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

__all__ = ["FILENAME", "Recorder", "Sample", "Step", "Timeline", "load", "save", "svg"]

FILENAME = "timeline.json"
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#8C6D31", "#666666")
"""Okabe-Ito colours (readable with colour-blindness), one per revision in order of first appearance."""
WIDTH, LEFT, RIGHT, LANE, GAP, LINE = 960, 96, 24, 22, 8, 18


@dataclass(frozen=True)
class Sample:
    """Group `group` has `pods` pods of `revision`, all ready or not, from `t` until its next sample."""

    t: float
    group: int
    revision: str
    ready: bool
    pods: int
    note: str = ""


@dataclass(frozen=True)
class Step:
    t: float
    text: str


@dataclass(frozen=True)
class Timeline:
    samples: tuple[Sample, ...]
    steps: tuple[Step, ...] = ()
    title: str = ""
    end: float | None = None
    """When recording stopped; defaults to a little after the last sample or step."""

    @property
    def groups(self) -> list[int]:
        return sorted({s.group for s in self.samples})

    @property
    def revisions(self) -> list[str]:
        """Revisions in order of first appearance (the legend order)."""
        seen: dict[str, None] = {}
        for s in sorted(self.samples, key=lambda s: s.t):
            if s.revision and s.pods:
                seen.setdefault(s.revision, None)
        return list(seen)

    @property
    def stop(self) -> float:
        last = max([s.t for s in self.samples] + [s.t for s in self.steps] + [0.0])
        return self.end if self.end is not None and self.end > last else last + max(1.0, 0.05 * last)

    def to_dict(self) -> dict[str, Any]:
        return {"version": 1, "title": self.title, "end": self.end, "samples": [asdict(s) for s in self.samples],
                "steps": [asdict(s) for s in self.steps]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Timeline:
        try:
            return cls(tuple(Sample(**s) for s in data["samples"]), tuple(Step(**s) for s in data.get("steps", [])),
                       str(data.get("title", "")), data.get("end"))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a timeline document ({exc}); expected samples[] of "
                             "{t, group, revision, ready, pods, note} and steps[] of {t, text}") from None


def save(timeline: Timeline, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(timeline.to_dict(), indent=1) + "\n")
    return path


def load(path: Path) -> Timeline:
    """Read a timeline.json; ValueError names the file when it is not one."""
    try:
        return Timeline.from_dict(json.loads(path.read_text()))
    except (json.JSONDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None


@dataclass
class Recorder:
    """Collects samples and steps during a test, timed from the recorder's creation.

    A sample equal to the group's previous state (ignoring `note`) is dropped, so callers can feed
    every watch event without bloating the file.
    """

    title: str = ""
    clock: Callable[[], float] = time.monotonic
    samples: list[Sample] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._t0 = self.clock()
        self._last: dict[int, tuple[str, bool, int]] = {}

    def now(self) -> float:
        return round(self.clock() - self._t0, 3)

    def sample(self, group: int, revision: str, ready: bool, pods: int, note: str = "") -> None:
        state = (revision, ready, pods)
        if self._last.get(group) == state:
            return
        self._last[group] = state
        self.samples.append(Sample(self.now(), group, revision, ready, pods, note))

    def step(self, text: str) -> None:
        self.steps.append(Step(self.now(), text))

    def timeline(self) -> Timeline:
        return Timeline(tuple(self.samples), tuple(self.steps), self.title, self.now())

    def save(self, path: Path) -> Path:
        return save(self.timeline(), path)


# --- drawing -------------------------------------------------------------------------------------

def _tick_step(span: float) -> float:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 3600):
        if span / step <= 10:
            return float(step)
    return 7200.0


def _num(v: float) -> str:
    return f"{v:.1f}"


def _segments(timeline: Timeline, group: int) -> list[tuple[Sample, float]]:
    """(sample, end time) for each sample of a group, ordered by time."""
    mine = sorted((s for s in timeline.samples if s.group == group), key=lambda s: s.t)
    ends = [s.t for s in mine[1:]] + [timeline.stop]
    return list(zip(mine, ends, strict=True))


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
    for sample, end in _segments(timeline, group):
        if not sample.revision or sample.pods <= 0 or end <= sample.t:
            continue
        i = revisions.index(sample.revision)
        fill = PALETTE[i % len(PALETTE)] if sample.ready else f"url(#{prefix}-hatch-{i})"
        x0, x1 = x(sample.t), x(end)
        tip = (f"group {group}: revision {sample.revision}, {'ready' if sample.ready else 'not ready'}, "
               f"{sample.pods} pod(s), {_num(sample.t)}s to {_num(end)}s" + (f"; {sample.note}" if sample.note else ""))
        out.append(f'<rect class="seg" data-group="{group}" data-revision="{escape(sample.revision)}" '
                   f'data-ready="{str(sample.ready).lower()}" x="{_num(x0)}" y="{_num(y)}" '
                   f'width="{_num(max(x1 - x0, 0.5))}" height="{LANE}" fill="{fill}" stroke="#ffffff" '
                   f'stroke-width="0.5"><title>{escape(tip)}</title></rect>')
        if x1 - x0 >= 18:
            out.append(f'<text x="{_num((x0 + x1) / 2)}" y="{_num(y + 15)}" text-anchor="middle" '
                       f'class="tl-pods{"" if sample.ready else " hatched"}">{sample.pods}</text>')
    return out


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


def _legend(prefix: str, revisions: Sequence[str], y: float) -> list[str]:
    out, lx = [], float(LEFT)
    entries = [(PALETTE[i % len(PALETTE)], f"revision {r}") for i, r in enumerate(revisions)]
    entries += [("#555555", "ready (solid)"), (f"url(#{prefix}-hatch-legend)", "not ready (hatched)")]
    for fill, label in entries:
        out.append(f'<rect class="legend" x="{_num(lx)}" y="{_num(y - 11)}" width="14" height="14" fill="{fill}" '
                   f'stroke="#333333" stroke-width="0.5"/><text x="{_num(lx + 20)}" y="{_num(y)}" '
                   f'class="tl-legendtext">{escape(label)}</text>')
        lx += 34 + 7 * len(label)
    return out


def svg(timeline: Timeline, *, id_prefix: str = "tl") -> str:
    """A self-contained SVG of the timeline. `id_prefix` keeps ids unique when several share a page."""
    groups, revisions, stop = timeline.groups, timeline.revisions, timeline.stop
    title_h = 24 if timeline.title else 0
    top = title_h + 28.0
    lanes_bottom = top + len(groups) * (LANE + GAP)
    axis_y = lanes_bottom + 2
    list_y = axis_y + 40
    legend_y = list_y + len(timeline.steps) * LINE + 8
    height = legend_y + 16

    def x(t: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (t / stop)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{_num(height)}" '
           f'viewBox="0 0 {WIDTH} {_num(height)}" font-family="sans-serif" font-size="12">',
           "<style>.tl-lane{font-size:12px;fill:#222}.tl-pods{font-size:10px;fill:#fff}"
           ".tl-pods.hatched{fill:#111;paint-order:stroke;stroke:#fff;stroke-width:3px}"
           ".tl-tick{font-size:10px;fill:#333}.tl-badge{font-size:10px;fill:#fff;font-weight:bold}"
           ".tl-steptext,.tl-legendtext{font-size:12px;fill:#222}.tl-title{font-size:14px;font-weight:bold;fill:#111}"
           "</style>", *_defs(id_prefix, revisions)]
    if timeline.title:
        out.append(f'<text x="8" y="18" class="tl-title">{escape(timeline.title)}</text>')
    for n, group in enumerate(groups):
        out += _lane(timeline, group, top + n * (LANE + GAP), x, id_prefix, revisions)
    out += _axis(axis_y, stop, x)
    out += _steps(timeline, top, lanes_bottom - GAP, list_y, x)
    out += _legend(id_prefix, revisions, legend_y)
    out.append("</svg>")
    return "\n".join(out) + "\n"
