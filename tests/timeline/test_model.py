"""timeline.json: what the recorder's model writes is what the report reads; anything else is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lwsconf.timeline import model
from lwsconf.timeline.model import GroupSample, LeaderSample, PodState, Step, Timeline


def sample_timeline() -> Timeline:
    pods = (PodState("demo-0", "r2", True, "1a2b3c4d", True), PodState("demo-0-1", "r1", False, "5e6f7a8b", False))
    return Timeline("ns", "demo", "RollingUpdateX",
                    [GroupSample(0.0, 1, 0, ("r1",), True, (PodState("demo-0", "r1", True, "00aa", True),)),
                     GroupSample(1.25, 2, 0, ("r1", "r2"), False, pods), GroupSample(2.0, 3, 1, (), False)],
                    [LeaderSample(0.0, 2, 2, 1, "r1"), LeaderSample(1.0, 3, 1, "50%", "r2"),
                     LeaderSample(1.5, 3, 0, None, None)],
                    [Step(0.5, "template updated")], ["pods watch: RuntimeError: boom"], 3.0)


def test_a_timeline_round_trips_through_its_file(tmp_path: Path) -> None:
    timeline = sample_timeline()
    path = model.save(timeline, tmp_path / "a" / model.FILENAME)
    assert json.loads(path.read_text())["version"] == model.VERSION
    assert model.load(path) == timeline


def test_derived_views() -> None:
    timeline = sample_timeline()
    mixed = timeline.samples[1]
    assert mixed.mixed and mixed.revision is None and mixed.leader == mixed.pods[0]
    assert timeline.samples[0].revision == "r1" and timeline.samples[2].leader is None
    assert timeline.groups == [0, 1] and timeline.revisions == ["r1", "r2"] and timeline.stop == 3.0


@pytest.mark.parametrize(("document", "error"), [
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"samples": []}', "timeline version None: this lwsconf reads versions 2, 3"),
    ('{"version": 1, "samples": [{"t": 0, "group": 0, "revision": "a", "ready": true, "pods": 2}]}',
     "timeline version 1"),
    ("{", "not JSON"),
])
def test_a_foreign_or_old_document_is_rejected_naming_the_file(tmp_path: Path, document: str, error: str) -> None:
    path = tmp_path / model.FILENAME
    path.write_text(document)
    with pytest.raises(ValueError, match=r"timeline\.json: ") as exc:
        model.load(path)
    assert error in str(exc.value)


def test_a_bad_field_is_named_with_its_path(tmp_path: Path) -> None:
    data = sample_timeline().to_dict()
    data["samples"][1]["pods"][0]["ready"] = "yes"
    path = tmp_path / model.FILENAME
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"samples\[1\]\.pods\[0\]\.ready: expected bool, got str 'yes'"):
        model.load(path)


def test_a_missing_file_is_a_value_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"timeline\.json: .*No such file"):
        model.load(tmp_path / model.FILENAME)


def test_requests_round_trip_and_a_version_2_file_still_reads(tmp_path: Path) -> None:
    timeline = sample_timeline()
    timeline.requests = [model.Request(0.1, 0.02, 200, "demo-0", "r1"),
                         model.Request(0.7, 1.5, 0, error="request failed: connection refused")]
    path = model.save(timeline, tmp_path / model.FILENAME)
    again = model.load(path)
    assert again == timeline and [r.ok for r in again.requests] == [True, False]
    old = sample_timeline().to_dict()
    del old["requests"]
    old["version"] = 2
    path.write_text(json.dumps(old))
    assert model.load(path) == sample_timeline()
