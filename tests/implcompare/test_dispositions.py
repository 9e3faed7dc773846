"""The dispositions list and its judge (pure): unlisted differences and stale entries both fail the check."""

from __future__ import annotations

from lwsconf.implcompare import dispositions
from lwsconf.implcompare.dispositions import Disposition
from lwsconf.implcompare.model import Difference

ENTRY = Disposition("env", ("Pod",), ("spec.containers[*].env*",), ("basic", "rollout"), "freedom", "a reason")


def d(scenario: str, kind: str = "Pod", path: str = "spec.containers[c].env[A]") -> Difference:
    return Difference(scenario, "steady", kind, "p-0", path, 1, 2)


def test_patterns_treat_brackets_literally() -> None:
    assert dispositions.glob("spec.containers[*].env*", "spec.containers[probe].env[LWS_GROUP_SIZE]")
    assert not dispositions.glob("spec.containers[*].env*", "spec.containers[probe].ports[http]")
    assert not dispositions.glob("a[0]", "a0")


def test_a_matched_difference_is_listed_and_an_unmatched_one_is_not() -> None:
    judged = dispositions.judge([d("basic"), d("basic", kind="Service"), d("rollout")], [ENTRY], ["basic", "rollout"])
    assert judged.keys == ["env", None, "env"]
    assert [x.kind for x in judged.unlisted] == ["Service"] and not judged.ok


def test_an_entry_no_longer_seen_in_a_scenario_that_ran_is_stale() -> None:
    judged = dispositions.judge([d("basic")], [ENTRY], ["basic", "rollout"])
    assert [(e.key, s) for e, s in judged.stale] == [("env", "rollout")] and not judged.ok


def test_scenarios_not_run_do_not_make_an_entry_stale() -> None:
    judged = dispositions.judge([d("basic")], [ENTRY], ["basic"])
    assert judged.ok


def test_a_difference_in_a_scenario_the_entry_does_not_list_is_unlisted() -> None:
    assert not dispositions.judge([d("claims")], [ENTRY], ["claims"]).ok


def test_the_checked_in_list_is_well_formed() -> None:
    assert dispositions.check(dispositions.DISPOSITIONS) == []
    bad = [ENTRY, ENTRY, Disposition("x", ("Pod",), ("p",), ("nope",), "maybe", " ")]
    problems = dispositions.check(bad)
    assert any("duplicate" in p for p in problems) and any("verdict" in p for p in problems)
    assert any("unknown ['nope']" in p for p in problems) and any("no reason" in p for p in problems)


def test_the_env_disposition_does_not_hide_a_differing_value() -> None:
    """The reference writes LWS_* into templates and upstream into pods (a known row), but a pod whose
    LWS_GROUP_SIZE differs is a new difference, not covered by that row."""
    pod_value = Difference("basic", "steady", "Pod", "p-0-1", "spec.containers[probe].env[LWS_GROUP_SIZE].value", "3",
                           "4")
    template_entry = Difference("basic", "steady", "StatefulSet", "p-0",
                                "spec.template.spec.containers[probe].env[LWS_GROUP_SIZE]", {"name": "x"}, "(absent)")
    judged = dispositions.judge([pod_value, template_entry], dispositions.DISPOSITIONS, ["basic"])
    assert judged.keys == [None, "env-from-templates"]
