"""Real rollout, restart and scale conformance tests on the sim: report.html draws each one's timeline.

The conformance modules run inside pytester against the sim cluster and the reference implementation,
as `make conformance` runs them. Each test's `timeline.json` (written by the recorder's model) must be
drawn in report.html with one lane per group, coloured by the revisions that run really saw: the
revisions in the picture are those in the recorded file, and a rollout shows two of them.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from lwsconf.timeline import model

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
PICKED = {"test_rolling_update_group_by_group_from_the_top": "RollingUpdateGroupByGroupFromTheTop",
          "test_group_recreated_on_worker_deletion": "GroupRecreatedOnWorkerDeletion",
          "test_scale_up_adds_groups_at_the_top": "ScaleUpAddsGroupsAtTheTop"}


def figures(page: str) -> dict[str, ET.Element]:
    """Each timeline figure's SVG by the test's short name."""
    out = {}
    for match in re.finditer(r'<figure id="timeline-\d+" data-test="([^"]+)">.*?(<svg .*?</svg>)', page, re.S):
        out[match.group(1)] = ET.fromstring(match.group(2))
    return out


def segments(svg: ET.Element) -> list[dict[str, str]]:
    return [dict(e.attrib) for e in svg.iter(f"{SVG}rect") if e.get("class") == "seg"]


@pytest.mark.slow
def test_rollout_restart_and_scale_tests_draw_their_timelines_in_report_html(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    suite = pytester.mkdir("conformance")
    for name in ("__init__.py", "conftest.py", "harness.py", "disaggregated.py", "rollouts.py", "divergences.py",
                 "divergences.yaml", "test_rolling_update.py", "test_group_restart.py", "test_scaling.py"):
        shutil.copy(REPO / "conformance" / name, suite / name)
    pytester.makeconftest('pytest_plugins = ["fixtures.plugin"]')
    result = pytester.runpytest_subprocess("conformance", "-p", "no:cacheprovider", "-p", "no:randomly",
                                           "--profiles=LWS-CORE", "--all-features", "-k", " or ".join(PICKED))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-4000:]
    run = (pytester.path / "reports" / "latest").resolve()
    report = yaml.safe_load((run / "conformance-report.yaml").read_text())
    assert sorted(t["shortName"] for t in report["tests"]) == sorted(PICKED.values())
    drawn = figures((run / "report.html").read_text())
    assert sorted(drawn) == sorted(PICKED.values()), f"timelines drawn for {sorted(drawn)}"
    for name, svg in drawn.items():
        recorded = model.load(run / "artifacts" / name / model.FILENAME)
        segs = segments(svg)
        lanes = sorted({int(s["data-group"]) for s in segs})
        assert lanes == recorded.groups and lanes, f"{name}: lanes {lanes}, recorded groups {recorded.groups}"
        assert {s["data-revision"] for s in segs} == set(recorded.revisions), name
        legend = "".join(svg.itertext())
        assert all(f"revision {r}" in legend for r in recorded.revisions), name
        assert recorded.steps and all(f": {s.text}" in legend for s in recorded.steps), name
        assert not recorded.errors, f"{name}: the recorder lost track: {recorded.errors}"
    roll = model.load(run / "artifacts" / "RollingUpdateGroupByGroupFromTheTop" / model.FILENAME)
    assert len(roll.revisions) == 2 and roll.groups == [0, 1, 2], roll.revisions
    for g in roll.groups:
        revs = [s["data-revision"] for s in segments(drawn["RollingUpdateGroupByGroupFromTheTop"])
                if s["data-group"] == str(g)]
        assert revs[0] == roll.revisions[0] and revs[-1] == roll.revisions[1], f"group {g} drawn as {revs}"
    restart = drawn["GroupRecreatedOnWorkerDeletion"]
    assert [e.get("data-group") for e in restart.iter(f"{SVG}rect") if e.get("class") == "recreated"] == ["0"]
    scale = model.load(run / "artifacts" / "ScaleUpAddsGroupsAtTheTop" / model.FILENAME)
    assert scale.groups == [0, 1, 2] and [s.text for s in scale.steps] == ["patched up: spec.replicas=3"]
    unused = [p.name for p in (run / "artifacts").iterdir()]
    assert sorted(unused) == sorted(PICKED.values()), f"artifact folders: {unused}"
