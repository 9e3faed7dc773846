"""The whole-timeline claims of `lwsconf.timeline.analysis`, on hand-built timelines."""

from __future__ import annotations

from lwsconf.timeline import analysis
from lwsconf.timeline.model import GroupSample, LeaderSample, PodState, Timeline


def group(t: float, seq: int, g: int, ready: bool, *revs: str, leader_uid: str = "l0") -> GroupSample:
    """Group `g` with a leader on revs[0] and one worker per further revision (or on revs[0] when there is none)."""
    if not revs:
        return GroupSample(t, seq, g, (), False)
    pods = [PodState(f"demo-{g}", revs[0], ready, leader_uid, True)]
    pods += [PodState(f"demo-{g}-{n}", r, ready, f"w{n}", False) for n, r in enumerate(revs[1:] or revs[:1], 1)]
    return GroupSample(t, seq, g, tuple(sorted(set(revs))), ready, tuple(pods))


def test_samples_of_one_event_form_one_instant() -> None:
    timeline = Timeline("ns", "demo", samples=[
        group(0.0, 1, 0, True, "a"), group(0.0, 1, 1, True, "a"),
        group(1.0, 2, 1, False), group(2.0, 3, 1, True, "b"), group(2.5, 4, 0, False)])
    assert analysis.max_unready(timeline, range(2)) == (1, 1.0)
    assert analysis.min_ready(timeline) == 1
    assert [t for t, _ in analysis.states(timeline)] == [0.0, 1.0, 2.0, 2.5]


def test_a_missing_group_counts_as_down() -> None:
    timeline = Timeline(samples=[group(0.0, 1, 0, True, "a")])
    assert analysis.max_unready(timeline, range(3)) == (2, 0.0)


def test_half_updated_is_a_ready_group_on_two_revisions_only() -> None:
    bad = group(1.0, 2, 0, True, "b", "a")
    timeline = Timeline(samples=[group(0.0, 1, 0, True, "a"), group(0.5, 2, 1, False, "b", "a"), bad])
    assert analysis.half_updated(timeline) == [bad]


def test_replacement_order_follows_each_leader_leaving_the_old_revision() -> None:
    timeline = Timeline(samples=[
        *(group(0.0, 1, g, True, "old") for g in range(3)),
        group(1.0, 2, 2, False, "new", leader_uid="n2"), group(2.0, 3, 1, False, "new", leader_uid="n1"),
        group(3.0, 4, 0, False, "new", leader_uid="n0"), group(4.0, 5, 3, True, "new")])
    assert analysis.replacement_order(timeline, "old", 3) == [2, 1, 0]
    assert analysis.leader_uids(timeline) == {0: {"l0", "n0"}, 1: {"l0", "n1"}, 2: {"l0", "n2"}, 3: {"l0"}}


def test_peak_leader_replicas_is_the_largest_replicas_seen() -> None:
    timeline = Timeline(leader_sts=[LeaderSample(0.0, 2, 2, 1, "a"), LeaderSample(1.0, 3, 1, 1, "b"),
                                    LeaderSample(2.0, 2, 0, 1, "b")])
    assert analysis.peak_leader_replicas(timeline) == 3
    assert analysis.peak_leader_replicas(Timeline()) == 0


def test_partitions_are_one_revisions_steps_with_repeats_collapsed() -> None:
    timeline = Timeline(leader_sts=[LeaderSample(0.0, 3, 0, 1, "a"), LeaderSample(1.0, 4, 3, 2, "b"),
                                    LeaderSample(2.0, 4, 2, 2, "b"), LeaderSample(2.5, 3, 2, 2, "b"),
                                    LeaderSample(3.0, 4, 3, 2, "c"), LeaderSample(4.0, 3, 0, 2, "b")])
    assert analysis.partitions(timeline, "b") == [3, 2, 0]
    assert analysis.partitions(timeline, "b", since=2.5) == [2, 0]
    assert analysis.partitions(timeline, "z") == []


def test_taken_down_leaves_out_a_group_unready_with_its_original_pods() -> None:
    """Groups 1 and 2 replaced (new leader UIDs), group 0 unready with the pods it started with: three unready,
    two taken down; once group 0's leader is replaced it counts too."""
    timeline = Timeline(samples=[
        *(group(0.0, 1, g, True, "old") for g in range(3)),
        group(1.0, 2, 1, False), group(1.1, 3, 2, False, "new", leader_uid="n2"),
        group(2.0, 4, 0, False, "old"),
        group(3.0, 5, 1, True, "new", leader_uid="n1"), group(3.1, 6, 2, True, "new", leader_uid="n2"),
        group(4.0, 7, 0, False, "new", leader_uid="n0")])
    assert analysis.max_unready(timeline, range(3)) == (3, 2.0)
    assert analysis.max_taken_down(timeline, range(3)) == (2, 1.1)


def test_taken_down_counts_missing_and_emptied_groups() -> None:
    timeline = Timeline(samples=[group(0.0, 1, 0, True, "a"), group(1.0, 2, 0, False)])
    assert analysis.max_taken_down(timeline, range(2)) == (2, 1.0)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert analysis.percentile(values, 50) == 50.0 and analysis.percentile(values, 99) == 99.0
    assert analysis.percentile([3.0], 99) == 3.0 and analysis.percentile([], 50) is None


def test_request_phases_split_at_steps_count_failures_and_keep_empty_phases() -> None:
    from lwsconf.timeline.model import Request, Step
    timeline = Timeline("ns", "demo", steps=[Step(2.0, "template updated"), Step(5.0, "rolled out")], end=9.0)
    timeline.requests = [Request(0.5, 0.1, 200), Request(1.0, 0.3, 200), Request(2.5, 2.0, 0, error="refused"),
                         Request(3.0, 0.2, 503, error="HTTP 503")]
    phases = analysis.request_phases(timeline)
    assert [(p.name, p.start, p.end, p.requests, p.failures) for p in phases] == [
        ("before: template updated", 0.0, 2.0, 2, 0), ("template updated", 2.0, 5.0, 2, 2),
        ("rolled out", 5.0, 9.0, 0, 0)]
    assert (phases[0].p50, phases[0].p99, phases[1].p99, phases[2].p50) == (0.1, 0.3, 2.0, None)
    text = analysis.describe(timeline)
    assert "template updated: 2 requests, 2 failed, p50 200 ms, p99 2000 ms" in text
    assert "2.00s refused" in text
    assert analysis.request_phases(Timeline("ns", "demo")) == []


def test_no_phase_before_the_first_step_when_nothing_was_sent_before_it() -> None:
    from lwsconf.timeline.model import Request, Step
    timeline = Timeline("ns", "demo", steps=[Step(0.1, "traffic started")], end=2.0,
                        requests=[Request(0.2, 0.1, 200)])
    assert [p.name for p in analysis.request_phases(timeline)] == ["traffic started"]
