"""Whole-timeline claims about a recorded `Timeline`, and a text view of it for failure messages.

Waiting for an end state cannot show what happened on the way; these read every observed instant:
a group serving half-updated (`half_updated`), the order groups were replaced in
(`replacement_order`), the most groups down at once (`max_unready`; `max_taken_down` counts only groups whose
leader was replaced, until they are back), the fewest serving
(`min_ready`), the leader StatefulSet's surge (`peak_leader_replicas`) and partition steps (`partitions`), and
for serving tests the requests sent per phase with their failures and latency (`request_phases`). `describe` is
what a failed assertion prints. Pure functions of the model.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lwsconf.timeline.model import GroupSample, LeaderSample, Request, Timeline

__all__ = ["Phase", "describe", "half_updated", "leader_uids", "max_taken_down", "max_unready", "min_ready",
           "partitions", "peak_leader_replicas", "percentile", "replacement_order", "request_phases", "states"]


def half_updated(timeline: Timeline) -> list[GroupSample]:
    """Samples of a group serving (ready) with leader and workers on different revisions."""
    return [s for s in timeline.samples if s.ready and s.mixed]


def replacement_order(timeline: Timeline, old_revision: str, groups: int) -> list[int]:
    """Groups `0..groups-1` in the order their leader first appeared on a revision other than `old_revision`."""
    first: dict[int, float] = {}
    for s in timeline.samples:
        leader = s.leader
        if s.group < groups and leader is not None and leader.revision != old_revision:
            first.setdefault(s.group, s.t)
    return sorted(first, key=lambda g: first[g])


def states(timeline: Timeline) -> Iterator[tuple[float, dict[int, GroupSample]]]:
    """(t, latest sample per group) at each observed instant, in time order.

    Samples taken from one event share their `seq` and form one instant (e.g. every group at the start).
    """
    latest: dict[int, GroupSample] = {}
    ordered = sorted(timeline.samples, key=lambda s: s.seq)
    for n, s in enumerate(ordered):
        latest[s.group] = s
        if n + 1 == len(ordered) or ordered[n + 1].seq != s.seq:
            yield s.t, dict(latest)


def max_unready(timeline: Timeline, groups: range) -> tuple[int, float]:
    """The most groups of `groups` not ready at one instant (missing counts as not ready), and when."""
    worst, when = 0, 0.0
    for t, latest in states(timeline):
        down = sum(1 for g in groups if g not in latest or not latest[g].ready)
        if down > worst:
            worst, when = down, t
    return worst, when


def max_taken_down(timeline: Timeline, groups: range,
                   unready_at_start: frozenset[int] = frozenset()) -> tuple[int, float]:
    """The most of `groups` a rollout had down at one instant, and when: what the controller took down.

    A group is down from the instant its original leader is gone (from the start when it did not exist yet,
    or when it is in `unready_at_start`) until a new incarnation of it is first seen ready. Readiness that
    flaps in a group the controller has not touched, or has already brought back, is not counted: on an
    overloaded machine probes time out on their own, which no controller causes or prevents (seen for the
    reference on --cluster=local at load ~30, run 20261203-034417-d1ad: old group 0 unready for 1.4 s,
    untouched, while groups 1 and 2 were replaced with maxUnavailable 2), and a controller that sees such a
    flap only holds back more (4.4.4 counts unready groups against maxUnavailable). Every LWS rollout and group
    restart replaces the leader pod, so a group the controller touched always has a new leader.
    """
    first_uid: dict[int, str | None] = {}
    down: dict[int, bool] = {}
    worst, when = 0, 0.0
    for t, latest in states(timeline):
        for g in groups:
            sample = latest.get(g)
            leader = sample.leader if sample is not None else None
            uid = leader.uid if leader is not None else None
            if g not in first_uid:
                first_uid[g] = uid
                down[g] = uid is None or g in unready_at_start
            elif not down[g] and uid != first_uid[g]:
                down[g] = True  # taken down: its leader (original or the one that came back) is gone
            if down[g] and sample is not None and sample.ready and uid is not None and uid != first_uid[g]:
                down[g], first_uid[g] = False, uid  # a new incarnation is ready: back
        count = sum(down.values())
        if count > worst:
            worst, when = count, t
    return worst, when


def min_ready(timeline: Timeline) -> int:
    """The fewest ready groups (any index, surge included) at one observed instant."""
    counts = [sum(1 for s in latest.values() if s.ready) for _, latest in states(timeline)]
    return min(counts) if counts else 0


def peak_leader_replicas(timeline: Timeline) -> int:
    return max((s.replicas for s in timeline.leader_sts), default=0)


def partitions(timeline: Timeline, revision: str, *, since: float = 0.0) -> list[int]:
    """The leader StatefulSet's partition values while it carried `revision` (from `since` on), repeats collapsed:
    the steps of that revision's rollout."""
    out: list[int] = []
    for s in timeline.leader_sts:
        if s.t >= since and s.revision == revision and (not out or out[-1] != s.partition):
            out.append(s.partition)
    return out


def leader_uids(timeline: Timeline) -> dict[int, set[str]]:
    """Each group's leader pod UIDs (first 8 characters) over the timeline: one per incarnation of the group."""
    out: dict[int, set[str]] = {}
    for s in timeline.samples:
        out.setdefault(s.group, set()).update(p.uid for p in s.pods if p.leader)
    return out


def _row(s: GroupSample, around: float | None) -> str:
    pods = [p.name + ("*" if p.ready else "") for p in s.pods]
    mark = ">" if s.t == around else " "
    return f"{mark} t={s.t:7.2f} group {s.group} ready={s.ready} revisions={list(s.revisions)} pods={pods}"


def _sts_row(s: LeaderSample) -> str:
    return f"  t={s.t:7.2f} replicas={s.replicas} partition={s.partition} maxUnavailable={s.max_unavailable}"


def describe(timeline: Timeline, last: int = 40, *, around: float | None = None) -> str:
    """The last `last` group samples and leader StatefulSet rows; with `around` (a time `t`, e.g. from
    `max_unready`), the `last` samples centred on it (its rows marked `>`) and the leader rows up to it
    instead, so a violation early in a long timeline is still shown. Steps and recording errors follow."""
    samples, sts, where = timeline.samples[-last:], timeline.leader_sts[-10:], f"last {last}"
    if around is not None:
        at = next((n for n, s in enumerate(timeline.samples) if s.t >= around), len(timeline.samples))
        start = max(0, min(at - last // 2, len(timeline.samples) - last))
        samples = timeline.samples[start:start + last]
        sts = [s for s in timeline.leader_sts if s.t <= around][-10:]
        where = f"{len(samples)} around t={around}"
    nl = "\n"
    out = (f"group samples ({where}; * = ready):{nl}{nl.join(_row(s, around) for s in samples)}{nl}"
           f"leader StatefulSet{' up to then' if around is not None else ''}:{nl}{nl.join(_sts_row(s) for s in sts)}")
    if timeline.steps:
        out += f"{nl}steps:{nl}" + nl.join(f"  t={s.t:7.2f} {s.text}" for s in timeline.steps)
    if timeline.requests:
        out += f"{nl}requests per phase:{nl}" + nl.join(f"  {_phase_row(p)}" for p in request_phases(timeline))
        failed = [r for r in timeline.requests if not r.ok]
        if failed:
            out += f"{nl}failed requests (first 10 of {len(failed)}):{nl}" + nl.join(
                f"  t={r.t:7.2f} {r.seconds:.2f}s {r.error}" for r in failed[:10])
    if timeline.errors:
        out += f"{nl}recording errors (an instant may be missing):{nl}" + nl.join(f"  {e}" for e in timeline.errors)
    return out


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.0f} ms"


def _phase_row(p: Phase) -> str:
    return (f"t={p.start:7.2f}..{p.end:7.2f} {p.name}: {p.requests} requests, {p.failures} failed, "
            f"p50 {_ms(p.p50)}, p99 {_ms(p.p99)}")


@dataclass(frozen=True)
class Phase:
    """Requests sent from `start` until `end`: how many, how many failed, and latency percentiles (seconds,
    over every request of the phase, failed ones included: a request that hung until its timeout counts)."""

    name: str
    start: float
    end: float
    requests: int
    failures: int
    p50: float | None
    p99: float | None


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank `p`th percentile (the smallest value with at least p% of values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def request_phases(timeline: Timeline) -> list[Phase]:
    """The timeline's requests split at its steps: the first phase runs from the start to the first step
    ("before: <step>", left out when nothing was sent before it), each step then opens a phase named by its
    text. Later phases without a request are kept (a phase where traffic stopped is a finding too); [] when
    the timeline has no requests."""
    if not timeline.requests:
        return []
    steps = sorted(timeline.steps, key=lambda s: s.t)
    bounds = [(f"before: {steps[0].text}" if steps else "all", 0.0)] + [(s.text, s.t) for s in steps]
    out = []
    for n, (name, start) in enumerate(bounds):
        end = bounds[n + 1][1] if n + 1 < len(bounds) else timeline.stop
        last = n + 1 == len(bounds)
        mine: list[Request] = [r for r in timeline.requests if start <= r.t and (r.t < end or last)]
        seconds = [r.seconds for r in mine]
        if n == 0 and not mine:
            continue  # nothing was sent before the first step (traffic started with it): no phase to show
        out.append(Phase(name, start, end, len(mine), sum(1 for r in mine if not r.ok),
                         percentile(seconds, 50), percentile(seconds, 99)))
    return out
