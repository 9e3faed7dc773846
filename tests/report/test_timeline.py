"""Timelines: recorded as JSON, drawn as one SVG lane per group (colour = revision, hatched = not ready)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from lwsconf.report import timeline
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


def test_svg_is_self_contained_and_ids_carry_the_prefix() -> None:
    text = timeline.svg(sample.restart_timeline(), id_prefix="t7")
    assert "href" not in text and "@import" not in text
    ids = [e.get("id") for e in ET.fromstring(text).iter() if e.get("id")]
    assert ids and all(i is not None and i.startswith("t7-") for i in ids)


def test_text_is_escaped() -> None:
    tl = timeline.Timeline((timeline.Sample(0, 0, "<r&>", True, 1),), (timeline.Step(0.5, 'a <b> & "c"'),))
    root = ET.fromstring(timeline.svg(tl))  # would raise on unescaped markup
    assert 'a <b> & "c"' in "".join(root.itertext())


def test_timeline_json_round_trips(tmp_path: Path) -> None:
    tl = sample.rolling_timeline()
    assert timeline.load(timeline.save(tl, tmp_path / "a" / timeline.FILENAME)) == tl


def test_loading_a_bad_timeline_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / timeline.FILENAME
    path.write_text('{"samples": [{"t": 1}]}')
    with pytest.raises(ValueError, match=r"timeline.json: not a timeline document"):
        timeline.load(path)


def test_recorder_times_from_its_start_and_drops_repeated_states() -> None:
    now = [100.0]
    rec = timeline.Recorder(clock=lambda: now[0])
    rec.sample(0, "a", False, 2)
    now[0] = 101.5
    rec.sample(0, "a", False, 2, "same state again")
    rec.step("update")
    rec.sample(0, "b", True, 2)
    tl = rec.timeline()
    assert [(s.t, s.revision) for s in tl.samples] == [(0.0, "a"), (1.5, "b")]
    assert tl.steps == (timeline.Step(1.5, "update"),) and tl.end == 1.5
