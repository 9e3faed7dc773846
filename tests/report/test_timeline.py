"""Timelines drawn as one SVG lane per group (colour = revision, hatched = not ready, red = half-updated)."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from lwsconf.conformance import Outcome
from lwsconf.report import collect, html, schema, timeline
from lwsconf.timeline import model
from lwsconf.timeline.model import GroupSample, PodState, Request, Step, Timeline
from tests.report import sample

SVG = "{http://www.w3.org/2000/svg}"


def segments(svg_text: str) -> list[dict[str, str]]:
    root = ET.fromstring(svg_text)
    return [dict(e.attrib) for e in root.iter(f"{SVG}rect") if e.get("class") == "seg"]


def test_svg_of_a_rolling_update_matches_golden(golden: Callable[[str, str], None]) -> None:
    golden("rolling-update.svg", timeline.svg(sample.rolling_timeline()))


def test_svg_draws_one_lane_per_group_and_segments_in_time_order() -> None:
    text = timeline.svg(sample.rolling_timeline())
    segs = segments(text)
    assert sorted({s["data-group"] for s in segs}) == ["0", "1", "2", "3"]
    for g in "0123":
        revs = [s["data-revision"] for s in segs if s["data-group"] == g]
        assert revs[0] == "5d8f" and revs[-1] == "7c9f", f"group {g}: {revs}"
    first_new = {s["data-group"]: float(s["x"]) for s in reversed(segs) if s["data-revision"] == "7c9f"}
    assert first_new["3"] < first_new["2"] < first_new["1"] < first_new["0"], first_new


def test_not_ready_is_hatched_and_ready_is_a_revision_colour() -> None:
    segs = segments(timeline.svg(sample.rolling_timeline(), id_prefix="x"))
    ready = {s["fill"] for s in segs if s["data-ready"] == "true"}
    not_ready = {s["fill"] for s in segs if s["data-ready"] == "false"}
    assert ready == {timeline.PALETTE[0], timeline.PALETTE[1]}
    assert not_ready == {"url(#x-hatch-1)"}, "only the new revision was ever not ready"


def test_groups_without_pods_leave_a_gap() -> None:
    segs = segments(timeline.svg(sample.scale_timeline()))
    group3 = [s for s in segs if s["data-group"] == "3"]
    last_end = max(float(s["x"]) + float(s["width"]) for s in group3)
    assert len(group3) == 2 and last_end < timeline.LEFT + (timeline.WIDTH - timeline.LEFT - timeline.RIGHT) * 0.4


def test_steps_are_vertical_lines_with_numbered_labels_and_a_legend_per_revision() -> None:
    text = timeline.svg(sample.rolling_timeline())
    root = ET.fromstring(text)
    steps = [g for g in root.iter(f"{SVG}g") if g.get("class") == "step"]
    assert len(steps) == 2
    texts = "".join(root.itertext())
    assert "1 at 1.0s: leader image changed to vllm:v0.9.1" in texts
    assert "revision 5d8f" in texts and "revision 7c9f" in texts and "not ready (hatched)" in texts
    assert "leader and workers on different revisions" not in texts, "no group was half-updated"


def test_the_leader_statefulset_has_its_own_lane_of_replicas_and_partition() -> None:
    root = ET.fromstring(timeline.svg(sample.rolling_timeline()))
    rows = [(e.get("data-replicas"), e.get("data-partition"))
            for e in root.iter(f"{SVG}rect") if e.get("class") == "sts"]
    assert rows == [("4", "0"), ("4", "3"), ("4", "2"), ("4", "1"), ("4", "0")]
    assert "leader sts" in "".join(root.itertext())


def test_a_half_updated_group_is_outlined_red_and_coloured_by_its_leader() -> None:
    pods = (PodState("demo-0", "new", True, "a", True), PodState("demo-0-1", "old", True, "b", False))
    tl = Timeline(samples=[GroupSample(0.0, 1, 0, ("old",), True, pods[1:]),
                           GroupSample(1.0, 2, 0, ("new", "old"), True, pods)], end=2.0)
    segs = segments(timeline.svg(tl))
    assert [(s["data-revision"], s["data-mixed"], s["stroke"]) for s in segs] == [
        ("old", "false", "#ffffff"), ("new", "true", timeline.MIXED)]


def test_svg_is_self_contained_and_ids_carry_the_prefix() -> None:
    text = timeline.svg(sample.restart_timeline(), id_prefix="t7")
    assert "href" not in text and "@import" not in text
    ids = [e.get("id") for e in ET.fromstring(text).iter() if e.get("id")]
    assert ids and all(i is not None and i.startswith("t7-") for i in ids)


def test_text_is_escaped() -> None:
    tl = Timeline(samples=[GroupSample(0, 1, 0, ("<r&>",), True, (PodState("p", "<r&>", True, "u", True),))],
                  steps=[Step(0.5, 'a <b> & "c"')])
    root = ET.fromstring(timeline.svg(tl))  # would raise on unescaped markup
    assert 'a <b> & "c"' in "".join(root.itertext())


def test_a_timeline_the_recorder_model_writes_is_what_the_report_reads_and_draws(tmp_path: Path) -> None:
    """The seam: model.save (the recorder's writer) -> collect.load_timelines -> html.render, nothing lost."""
    recorded = sample.rolling_timeline()
    rel = f"artifacts/{sample.ROLL}/{model.FILENAME}"
    model.save(recorded, tmp_path / rel)
    test = schema.TestReport(sample.ROLL, "conformance/test_x.py::test_roll", "", ("LWSRollingUpdate",),
                             ("LWS-CORE",), True, Outcome.SUCCEEDED, 1.0, artifacts=(rel,))
    report = dataclasses.replace(sample.report(), tests=(test,))
    loaded = collect.load_timelines(tmp_path, report)
    assert loaded == {test.node_id: recorded}
    page = html.render(report, timelines=loaded)
    drawn = segments(page[page.index("<svg"):page.index("</svg>") + 6])
    assert {(s["data-group"], s["data-revision"]) for s in drawn} == {
        (str(s.group), s.revision) for s in recorded.samples if s.revision}


def test_requests_get_a_lane_failed_ones_red_and_a_phase_table() -> None:
    tl = Timeline("ns", "roll", steps=[Step(1.0, "template updated")], end=4.0,
                  requests=[Request(0.5, 0.01, 200, "roll-0", "r1"), Request(1.5, 0.04, 200, "roll-1", "r2"),
                            Request(2.0, 1.2, 503, error="HTTP 503: no endpoints <x>")])
    drawn = timeline.svg(tl)
    assert drawn.count('class="request"') == 2 and drawn.count('class="request failed"') == 1
    assert "HTTP 503: no endpoints &lt;x&gt;" in drawn and "request failed" in drawn
    table = timeline.phase_table(tl)
    assert '<tr class="ok"><td>before: template updated</td><td>0.0-1.0s</td><td>1</td><td>0</td>' in table
    assert '<tr class="bad"><td>template updated</td><td>1.0-4.0s</td><td>2</td><td>1</td><td>40 ms</td>' in table
    assert 'class="request' not in timeline.svg(Timeline("ns", "quiet"))
    assert timeline.phase_table(Timeline("ns", "q")) == ""
