"""Declaring a conformance test: metadata plus a body (Gateway API's ConformanceTest, as a decorator).

    @conformance(
        short_name="GroupRestartOnWorkerCrash",
        description="A crashed worker container recreates its whole group (docs/lws-contract.md 4.2).",
        features={Feature.GROUP_RESTART},
    )
    def test_group_restart_on_worker_crash(lws: LWSHarness) -> None: ...

The decorator only attaches a frozen `TestSpec` and pytest markers. The suite, not the test, decides
whether a test runs or is SKIPPED / NOT_SUPPORTED (fixtures/selection.py). Public API: `conformance`,
`TestSpec`, `Outcome`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

import pytest

from lwsconf import profiles
from lwsconf.features import Feature

__all__ = ["Outcome", "TestSpec", "case", "conformance", "spec_of"]

F = TypeVar("F", bound=Callable[..., Any])
_SHORT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]+$")
SPEC_ATTR = "__lwsconf_spec__"
CASE_MARK = "lwsconf_case"
"""The mark `case()` puts on one parametrised case whose features differ from its function's."""


class Outcome(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    PROVISIONAL_SKIPPED = "PROVISIONAL_SKIPPED"
    INTERRUPTED = "INTERRUPTED"
    KNOWN_DIVERGENCE = "KNOWN_DIVERGENCE"
    """The test failed as expected against an implementation version listed in conformance/divergences.yaml:
    that version departs from the contract, with the evidence as the reason (a strict expected failure, so a
    version that no longer departs turns the test FAILED)."""
    """Never a test's own verdict: the report's, for a test selected to run that had not finished when the
    run stopped (Ctrl-C, SIGTERM, --fail-fast, or a run-wide error such as an implementation never ready)."""


@dataclass(frozen=True)
class TestSpec:
    """What a conformance test checks and needs; read by the suite and written into reports."""

    __test__ = False  # not a pytest test class

    short_name: str
    description: str
    features: frozenset[Feature]
    slow: bool = False
    serial: bool = False
    """Needs the cluster to itself: on a cluster xdist workers share, it runs alone (fixtures/exclusive.py)."""
    disruptive: bool = False
    """Disturbs the cluster beyond its namespace (restarts the controller): runs alone like `serial`."""
    provisional: bool = False
    profiles: tuple[str, ...] = field(default=())


def conformance(*, short_name: str, description: str, features: Iterable[Feature], slow: bool = False,
                serial: bool = False, disruptive: bool = False, provisional: bool = False) -> Callable[[F], F]:
    """Mark a test function as a conformance test with the given metadata."""
    feats = frozenset(features)
    if not _SHORT_NAME.match(short_name):
        raise ValueError(f"short_name {short_name!r} must be UpperCamelCase letters and digits")
    if not feats:
        raise ValueError(f"conformance test {short_name} must declare at least one feature")
    spec = TestSpec(short_name=short_name, description=description, features=feats, slow=slow, serial=serial,
                    disruptive=disruptive, provisional=provisional,
                    profiles=profiles.profiles_of(feats))

    def decorate(fn: F) -> F:
        setattr(fn, SPEC_ATTR, spec)
        marks = [pytest.mark.lwsconf(short_name=short_name)]
        marks += [getattr(pytest.mark, flag) for flag in ("slow", "serial", "disruptive") if getattr(spec, flag)]
        for mark in marks:
            fn = mark(fn)
        return fn

    return decorate


def case(value: Any, *, id: str, features: Iterable[Feature]) -> Any:  # noqa: A002 - pytest.param's name
    """One parametrised case of a conformance test that exercises other features than its function declares.

    Why: one body can serve two profiles (the GPU smoke test runs real vLLM under GPU-SMOKE and the
    emulator under LWS-SERVING); each case is then selected, reported and claimed by its own features,
    while both keep the function's short name (the report and divergences tell them apart by case id).
    """
    feats = frozenset(features)
    if not feats:
        raise ValueError(f"conformance case {id!r} must declare at least one feature")
    return pytest.param(value, id=id, marks=getattr(pytest.mark, CASE_MARK)(features=feats))


def spec_of(obj: Any) -> TestSpec | None:
    """The TestSpec of a test function (or a pytest item's function), if it is a conformance test; for an
    item of a `case()`, with that case's features and profiles."""
    fn = getattr(obj, "function", obj)
    spec = getattr(fn, SPEC_ATTR, None)
    if not isinstance(spec, TestSpec):
        return None
    get_marker = getattr(obj, "get_closest_marker", None)
    marker = get_marker(CASE_MARK) if callable(get_marker) and hasattr(obj, "callspec") else None
    if marker is None:
        return spec
    feats = frozenset(marker.kwargs["features"])
    return dataclasses.replace(spec, features=feats,
                               profiles=profiles.profiles_of(feats))
