"""A known divergence's result says which row expected it and what the run saw: pytest keeps the failure's repr
beside the xfail reason, and the report keeps both (a report that only repeated the row would not show whether
the test failed the way the row says)."""

from __future__ import annotations

from types import SimpleNamespace

from lwsconf.conformance import Outcome
from lwsconf.report import collect


def _xfailed(longrepr: object) -> object:
    return SimpleNamespace(duration=1.0, failed=False, skipped=True, when="call", longrepr=longrepr,
                           wasxfail="known divergence 'row' of upstream v0.9.0 (class c; v0.9.0 and later)")


def test_the_observed_failure_follows_the_row() -> None:
    res = collect._Result(collect.TestMeta("T"), "conformance/test_x.py::test_t")
    crash = SimpleNamespace(reprcrash=SimpleNamespace(message="AssertionError: replicas 2, want 3\nassert 2 == 3"))
    collect._fold(res, _xfailed(crash))  # type: ignore[arg-type]
    assert res.outcome is Outcome.KNOWN_DIVERGENCE
    assert res.message == ("known divergence 'row' of upstream v0.9.0 (class c; v0.9.0 and later); observed: "
                           "AssertionError: replicas 2, want 3")


def test_without_a_failure_repr_the_row_alone() -> None:
    res = collect._Result(collect.TestMeta("T"), "conformance/test_x.py::test_t")
    collect._fold(res, _xfailed(None))  # type: ignore[arg-type]
    assert res.message == "known divergence 'row' of upstream v0.9.0 (class c; v0.9.0 and later)"
