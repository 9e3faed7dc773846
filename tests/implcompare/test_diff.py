"""Differences between snapshots (pure): aligned lists, readable paths, objects on one side, rows over objects."""

from __future__ import annotations

from lwsconf.implcompare import diff
from lwsconf.implcompare.model import ABSENT, SideRun


def test_named_lists_are_aligned_by_name() -> None:
    a = {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}
    b = {"containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}]}
    assert diff.leaves(a, b) == [("containers[c].env[A]", {"name": "A", "value": "1"}, ABSENT)]


def test_keys_with_dots_are_bracketed_and_plain_lists_indexed() -> None:
    a = {"metadata": {"labels": {"x.io/k": "1"}}, "args": ["a", "b"]}
    b = {"metadata": {"labels": {"x.io/k": "2"}}, "args": ["a", "c"]}
    assert diff.leaves(a, b) == [("args[1]", "b", "c"), ("metadata.labels[x.io/k]", "1", "2")]


def test_an_object_on_one_side_only_is_one_difference() -> None:
    found = diff.differences("s", "steady", {"Pod/p": {}, "Service/x": {"a": 1}}, {"Service/x": {"a": 1}})
    assert [(d.kind, d.obj, d.path, d.a, d.b) for d in found] == [("Pod", "p", "(object)", "present", ABSENT)]


def test_rows_group_the_same_difference_over_objects() -> None:
    a = {"Pod/p-0": {"x": 1}, "Pod/p-1": {"x": 1}, "Pod/p-2": {"x": 1}}
    b = {"Pod/p-0": {"x": 2}, "Pod/p-1": {"x": 2}, "Pod/p-2": {"x": 3}}
    rows = diff.rows(diff.differences("s", "steady", a, b))
    assert sorted((r.objects, r.b) for r in rows) == [(("p-0", "p-1"), 2), (("p-2",), 3)]


def test_a_snapshot_one_side_lacks_is_reported_with_the_reason() -> None:
    a = SideRun("a", {"s": {"steady": {}, "step": {}}})
    b = SideRun("b", {"s": {"steady": {}}}, {"s": "timed out waiting for steady state"})
    found = diff.compare(a, b)
    assert [(d.snapshot, d.a, d.b) for d in found] == [("step", "taken", "timed out waiting for steady state")]
