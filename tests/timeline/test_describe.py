"""`analysis.describe(timeline, around=t)`: a failure early in a long rollout timeline still shows its instant.

Rolling-update tests report the instant at which too many groups were down; the default description
shows only the latest samples, which in a long test (a stuck rollout, a fix, a scale-down) can all
come after it.
"""

from __future__ import annotations

from lwsconf.timeline import analysis
from lwsconf.timeline.model import GroupSample, LeaderSample, PodState, Step, Timeline


def _timeline(n: int) -> Timeline:
    timeline = Timeline("ns", "demo")
    timeline.samples = [GroupSample(float(i), i, i % 3, ("a",), i != 20,
                                    (PodState(f"demo-{i % 3}", "a", i != 20, "u", True),)) for i in range(n)]
    timeline.leader_sts = [LeaderSample(float(i), 3, max(0, 3 - i // 10), 1, "a") for i in range(0, n, 10)]
    return timeline


def test_describe_around_centres_on_the_instant_and_marks_it() -> None:
    text = analysis.describe(_timeline(100), 10, around=20.0)
    rows = [line for line in text.splitlines() if line[2:4] == "t=" and " group " in line]
    assert len(rows) == 10 and rows[0].startswith("  t=  15.00") and rows[-1].startswith("  t=  24.00"), text
    assert [r for r in rows if r.startswith(">")] == ["> t=  20.00 group 2 ready=False revisions=['a'] pods=['demo-2']"]
    assert "10 around t=20.0" in text and "partition=1 " in text, text
    assert "t=  30.00 replicas" not in text, "leader rows after the instant are left out"


def test_describe_around_near_either_end_keeps_a_full_window() -> None:
    assert "  t=   0.00 group" in analysis.describe(_timeline(100), 10, around=1.0)
    assert "> t=  99.00 group" in analysis.describe(_timeline(100), 10, around=99.0)
    assert "  t=   0.00 group" in analysis.describe(_timeline(5), 10, around=3.0)


def test_describe_without_around_shows_the_latest_samples() -> None:
    text = analysis.describe(_timeline(100), 10)
    assert "group samples (last 10; * = ready)" in text and "  t=  99.00 group" in text and ">" not in text
    assert "maxUnavailable=1" in text


def test_describe_lists_steps_and_recording_errors() -> None:
    timeline = _timeline(3)
    timeline.steps.append(Step(1.5, "template updated"))
    timeline.errors.append("pods watch: ApiException: 410")
    text = analysis.describe(timeline)
    assert "steps:\n  t=   1.50 template updated" in text
    assert "recording errors (an instant may be missing):\n  pods watch: ApiException: 410" in text
