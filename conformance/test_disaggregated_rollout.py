"""The coordinated rolling update of a DisaggregatedSet (LWS-DISAGGREGATED; docs/disaggregatedset-contract.md 4.7).

Why it matters: prefill and decode serve only together, so a rollout that empties one role of a revision while
the other still takes traffic, or that overshoots the surge a cluster has room for, breaks serving. Each test
changes the template of every role and watches the set's LWS `spec.replicas` at every change: the surge bound
(old + new <= max(initial old, target) + maxSurge per role), the coordinated drain (once one role of the old
revision reaches 0 the others follow before anything else moves), and the end (the new LWS at their targets,
ready, the old ones deleted, the Services on the new revision). Upstream pins the exact states of two rollouts
(E12, E13, contract 4.7.4 traces A and B); those tests also require every state seen to be a planned state or
a mix of two consecutive ones (the writes of one step land one by one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from conformance.disaggregated import DSHarness, Obj, State, manifest, revision_of, role
from lwsconf import disaggapi
from lwsconf.conformance import conformance
from lwsconf.features import Feature

ROLES = ("prefill", "decode")
DEFAULT_SURGE = 1
"""A role that names no rollingUpdateConfiguration rolls with maxSurge 1, maxUnavailable 0 (contract 4.7.3, DT5)."""
Planned = tuple[int, int, int, int]
"""(old prefill, old decode, new prefill, new decode), as the contract's traces write them."""

TRACE_A: Sequence[Planned] = ((10, 2, 0, 0), (8, 2, 0, 0), (6, 2, 0, 0), (6, 2, 2, 2), (4, 1, 2, 2), (4, 1, 3, 4),
                              (4, 1, 4, 5), (2, 1, 4, 5), (2, 1, 5, 7), (2, 1, 6, 8), (0, 0, 6, 8))
TRACE_B: Sequence[Planned] = ((4, 4, 0, 0), (2, 2, 0, 0), (2, 2, 2, 2), (0, 0, 2, 2), (0, 0, 4, 4))


def _old(state: State, r: str) -> int:
    return state.get(r, (0, 0))[0]


def _new(state: State, r: str) -> int:
    return state.get(r, (0, 0))[1]


def _flat(state: State) -> Planned:
    return (_old(state, "prefill"), _old(state, "decode"), _new(state, "prefill"), _new(state, "decode"))


def _bounded(initial: dict[str, int], target: dict[str, int], surge: dict[str, int]) -> Callable[[State], None]:
    """The invariant every rollout keeps, checked on every state seen: the surge bound per role, and the
    coordinated drain: once one role of the old revision is at 0 while another is not, the next state seen either
    only drains the rest (the step's writes land one by one, 4.7.2 item 4; E4) or has the old revision drained
    entirely (what a poll that missed states saw: a fresh clone's make conformance, trace B from (0,2/2,2) to
    (0,0/4,4), 2026-12-08; the watch that replaced the poll can still relist after a watch error)."""
    previous: list[State] = []

    def check(state: State) -> None:
        for r, (old, new) in state.items():
            limit = max(initial.get(r, 0), target.get(r, 0)) + surge.get(r, DEFAULT_SURGE)
            assert old + new <= limit, f"role {r} at old {old} + new {new} > {limit} (max(initial, target) + maxSurge)"
        if previous:
            before = previous[0]
            roles = sorted(initial)  # the old revision's roles
            olds = [_old(before, r) for r in roles]
            drained = not any(_old(state, r) for r in roles)  # the drain finished between two polls: fine
            if 0 in olds and any(olds) and not drained:
                assert all(_old(state, r) <= _old(before, r) and _new(state, r) == _new(before, r)
                           for r in sorted(set(before) | set(state))), (
                    f"one role of the old revision reached 0 while another still served ({before}); the next state "
                    f"{state} must only drain the rest (coordinated drain)")
        previous[:] = [state]
    return check


def _on_path(states: Sequence[State], planned: Sequence[Planned]) -> None:
    """Every state seen is a planned state or lies between two consecutive ones, in order (4.7.4)."""
    at = 0
    for state in states:
        seen = _flat(state)
        for k in range(at, len(planned)):
            here, there = planned[k], planned[min(k + 1, len(planned) - 1)]
            if all(min(a, b) <= s <= max(a, b) for s, a, b in zip(seen, here, there, strict=True)):
                at = k
                break
        else:
            raise AssertionError(f"state {seen} (old P, old D, new P, new D) is on no step of the planned path from "
                                 f"step {at} {planned[at]}: planned {list(planned)}; seen {[_flat(s) for s in states]}")


def _roll(ds: DSHarness, initial: dict[str, int], target: dict[str, int], rollout: Obj | None,
          surge: dict[str, int]) -> list[State]:
    """Create prefill and decode at `initial`, roll them to a new template at `target` (`_roll_roles`)."""
    return _roll_roles(ds, [role(r, initial[r], rollout=rollout) for r in ROLES],
                       [role(r, target[r], tag="v2", rollout=rollout) for r in ROLES], surge)


def _roll_roles(ds: DSHarness, before: list[Obj], after: list[Obj], surge: dict[str, int]) -> list[State]:
    """Create the set with roles `before`, settle, replace them with `after` (a new revision) and watch the
    rollout to its end (`_bounded` at every poll), then the role Services; the distinct states seen."""
    initial = {r["name"]: int(r["spec"]["replicas"]) for r in before}
    target = {r["name"]: int(r["spec"]["replicas"]) for r in after}
    ds.create(manifest("pd", before))
    settled = ds.settled("pd", initial)
    (old,) = {revision_of(o) for o in settled.values()}
    ds.set_roles("pd", after, step=f"roles {sorted(initial)} -> {sorted(target)}, new template")
    seen = ds.rollout("pd", old, target, _bounded(initial, target, surge))
    assert len(seen.states) > 2, f"the rollout went in one jump, not in steps: {seen.states}"
    done = ds.settled("pd", target)

    def services_on_the_new_revision() -> None:
        want = {f"{name}{disaggapi.SERVICE_SUFFIX}" for name in done}
        assert set(ds.services("pd")) == want, f"Services {sorted(ds.services('pd'))}, want {sorted(want)}"
    ds.wait(services_on_the_new_revision, what="the role Services to be the new revision's only", name="pd",
            within="service_endpoints")
    return seen.states


def _trace(ds: DSHarness, initial: dict[str, int], target: dict[str, int], rollout: Obj,
           planned: Sequence[Planned]) -> None:
    """Roll both roles with `rollout` (the same budget for each) and require every state seen on `planned`'s path,
    ending at its last state."""
    surge = {r: int(rollout["maxSurge"]) for r in ROLES}
    states = _roll(ds, initial, target, rollout, surge)
    _on_path(states, planned)
    assert _flat(states[-1]) == planned[-1], f"the last state {states[-1]}"


def _gradual(states: Sequence[State], role_name: str) -> bool:
    """Whether some state had the role between 0 and its final count on the new side (it grew in steps)."""
    final = states[-1].get(role_name, (0, 0))[1]
    return any(0 < s.get(role_name, (0, 0))[1] < final for s in states)


@conformance(short_name="DisaggregatedSetRollsRolesTogether", features={Feature.DISAGGREGATED_ROLLOUT},
             description="A template change rolls both roles to a new revision in steps (no rollout strategy "
                         "named: maxSurge 1, maxUnavailable 0, DT5), within the surge bound, draining the old "
                         "revision's roles together, and ends with only the new LWS and their Services (4.7; "
                         "upstream E4, trace C).")
def test_a_template_change_rolls_every_role_together(ds: DSHarness) -> None:
    states = _roll(ds, {"prefill": 2, "decode": 2}, {"prefill": 2, "decode": 2}, None, {})
    assert _flat(states[-1]) == (0, 0, 2, 2), f"the last state {states[-1]}"


@conformance(short_name="DisaggregatedSetRolloutPercentages", features={Feature.DISAGGREGATED_ROLLOUT},
             description="maxSurge 50% and maxUnavailable 25% resolve against each role's target (4 -> 2 and 1) and "
                         "bound the rollout (4.7.3; upstream E5).")
def test_percentages_resolve_against_the_role_target(ds: DSHarness) -> None:
    rollout = {"maxSurge": "50%", "maxUnavailable": "25%"}
    surge = {r: math.ceil(4 * 0.5) for r in ROLES}
    _roll(ds, {"prefill": 4, "decode": 4}, {"prefill": 4, "decode": 4}, rollout, surge)


@conformance(short_name="DisaggregatedSetRolloutTraceScaleAcrossRoles", features={Feature.DISAGGREGATED_ROLLOUT},
             description="Prefill 10 -> 6 and decode 2 -> 8 with a new template, maxSurge 2: every state seen is on "
                         "the planned path of trace A, first to last (4.7.4; upstream E12).", slow=True)
def test_trace_a_scale_down_one_role_scale_up_the_other(ds: DSHarness) -> None:
    _trace(ds, {"prefill": 10, "decode": 2}, {"prefill": 6, "decode": 8}, {"maxSurge": 2, "maxUnavailable": 0}, TRACE_A)


@conformance(short_name="DisaggregatedSetRolloutTraceUnavailableFirst", features={Feature.DISAGGREGATED_ROLLOUT},
             description="Both roles at 4, maxSurge 0 and maxUnavailable 2: capacity is removed first, in batches of "
                         "2, every state seen on the planned path of trace B (4.7.4; upstream E13).")
def test_trace_b_batches_by_unavailable(ds: DSHarness) -> None:
    _trace(ds, {"prefill": 4, "decode": 4}, {"prefill": 4, "decode": 4}, {"maxSurge": 0, "maxUnavailable": 2}, TRACE_B)


@conformance(short_name="DisaggregatedSetRolloutDrainsARevisionWhole", features={Feature.DISAGGREGATED_ROLLOUT},
             description="Prefill 3 and decode 1, maxSurge 0, maxUnavailable 1: the lone decode group of the old "
                         "revision is not drained while its prefill groups still serve; the old revision's roles "
                         "reach 0 together (4.7.3 orphan prevention; upstream E4's rule).")
def test_an_asymmetric_rollout_never_orphans_a_role(ds: DSHarness) -> None:
    rollout = {"maxSurge": 0, "maxUnavailable": 1}
    # Orphan prevention keeps the lone old decode group (1) beside decode's first new group until prefill is
    # covered, one above maxSurge 0 (4.7.3: "each role that would reach 0 keeps 1"): the bound allows it.
    states = _roll(ds, {"prefill": 3, "decode": 1}, {"prefill": 3, "decode": 1}, rollout, {"prefill": 0, "decode": 1})
    assert _flat(states[-1]) == (0, 0, 3, 1), f"the last state {states[-1]}"


@conformance(short_name="DisaggregatedSetRollsThreeRolesTogether", features={Feature.DISAGGREGATED_ROLLOUT},
             description="Three roles roll to a new template together, in steps, the old revision drained whole "
                         "(4.7; upstream E14).")
def test_three_roles_roll_together(ds: DSHarness) -> None:
    three = ("encode", "prefill", "decode")
    states = _roll_roles(ds, [role(r, 2) for r in three], [role(r, 2, tag="v2") for r in three], {})
    assert all(_gradual(states, r) for r in three), f"a role jumped to its count: {states}"


@conformance(short_name="DisaggregatedSetRollsARoleRename", features={Feature.DISAGGREGATED_ROLLOUT},
             description="Renaming a role (decode -> generate) is a rollout: the new role grows in steps beside the "
                         "kept one, the old revision with the old name drains whole, no LWS of the old name is left "
                         "(4.7.5; upstream E15).")
def test_a_renamed_role_rolls_progressively(ds: DSHarness) -> None:
    states = _roll_roles(ds, [role("prefill", 2), role("decode", 2)], [role("prefill", 2), role("generate", 2)], {})
    assert _gradual(states, "generate"), f"the renamed role did not grow in steps: {states}"
    assert "decode" not in states[-1], f"the old role is still there at the end: {states[-1]}"


@conformance(short_name="DisaggregatedSetRollsAnAddedRole", features={Feature.DISAGGREGATED_ROLLOUT},
             description="Adding a role rolls every role to the new revision, the added one growing in steps with "
                         "the others rather than all at once (4.7.5; upstream E16, E17).")
def test_an_added_role_rolls_every_role_progressively(ds: DSHarness) -> None:
    states = _roll_roles(ds, [role("prefill", 2), role("decode", 2)],
                         [role("prefill", 2), role("decode", 2), role("encode", 2)], {})
    assert all(_gradual(states, r) for r in ("prefill", "decode", "encode")), f"a role jumped: {states}"


@conformance(short_name="DisaggregatedSetRollsARemovedRole", features={Feature.DISAGGREGATED_ROLLOUT},
             description="Removing a role rolls the remaining roles progressively; the removed role's old LWS drains "
                         "with its revision and is deleted (4.7.5; upstream E18, E20).")
def test_a_removed_role_drains_with_its_revision(ds: DSHarness) -> None:
    states = _roll_roles(ds, [role("prefill", 2), role("decode", 2), role("encode", 2)],
                         [role("prefill", 2), role("decode", 2)], {})
    assert all(_gradual(states, r) for r in ("prefill", "decode")), f"a role jumped: {states}"
    assert any(s.get("encode", (0, 0))[0] > 0 and s.get("prefill", (0, 0))[1] > 0 for s in states), \
        f"the removed role was dropped at once instead of draining with its revision: {states}"
    assert "encode" not in states[-1], f"the removed role is still there at the end: {states[-1]}"


def _never_ready(name: str, replicas: int) -> Obj:
    """A role whose pods never become Ready (the probe starts unready): a rollout to it stalls."""
    out = role(name, replicas, tag="broken")
    container = out["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": "LWSCONF_START_UNREADY", "value": "1"})
    return out


@conformance(short_name="DisaggregatedSetDrainsTheNewestOldRevisionFirst", features={Feature.DISAGGREGATED_ROLLOUT},
             description="A -> B stalls (B never ready), then -> C: both A and B are old; B, the newest, drains "
                         "before A loses a group, and A is never emptied while B still has replicas (4.7.5; "
                         "upstream E19).")
def test_a_stalled_revision_drains_before_the_stable_one(ds: DSHarness) -> None:
    roles_a = [role("prefill", 2), role("decode", 2)]
    ds.create(manifest("pd", roles_a))
    settled = ds.settled("pd", {"prefill": 2, "decode": 2})
    (rev_a,) = {revision_of(o) for o in settled.values()}
    ds.set_roles("pd", [_never_ready("prefill", 2), _never_ready("decode", 2)], step="A -> B (B never ready)")

    def b_started() -> str:
        found = ds.lws_objects("pd")
        b = {revision_of(o) for o in found if o["spec"].get("replicas", 0) > 0} - {rev_a}
        assert len(b) == 1, f"revisions with replicas: {sorted({revision_of(o) for o in found})}"
        return b.pop()
    rev_b = ds.wait(b_started, what="revision B to get its first replicas", name="pd")
    per_revision: list[dict[str, int]] = []

    def totals() -> dict[str, int]:
        out: dict[str, int] = {}
        for o in ds.lws_objects("pd"):
            out[revision_of(o)] = out.get(revision_of(o), 0) + int(o["spec"].get("replicas", 1))
        return out

    a_before = totals()[rev_a]
    ds.set_roles("pd", [role("prefill", 2, tag="v3"), role("decode", 2, tag="v3")], step="B -> C (B stalled)")

    def rolled_to_c() -> None:
        now = totals()
        if not per_revision or per_revision[-1] != now:
            per_revision.append(now)
        a, b = now.get(rev_a, 0), now.get(rev_b, 0)
        newer = set(now) - {rev_a, rev_b}
        if a or b or not newer or sum(now[r] for r in newer) != 4:
            raise AssertionError(f"not on C alone yet: {now}")
    ds.wait(rolled_to_c, what="the set to roll to C, draining B first", name="pd", within="rollout_complete")
    ds.settled("pd", {"prefill": 2, "decode": 2})
    early = [now for now in per_revision if now.get(rev_b, 0) > 0 and now.get(rev_a, 0) < a_before]
    assert not early, (f"A (revision {rev_a}, {a_before} replicas) lost replicas while B ({rev_b}) still had some: "
                       f"{early}; every total seen: {per_revision}")
