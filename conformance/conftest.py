"""Fixtures shared by the conformance modules: the `lws` and `ds` harnesses and small manifest helpers.

`lws` is bound to the test's fresh namespace and the run's timeouts, and requests the session's
`implementation` so the LWS implementation under test is installed before any LWS is created. When
the run provides an artifacts directory (`artifacts_dir`), whole-timeline recordings land there.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest
from kubernetes import client

from conformance import divergences
from conformance.disaggregated import DSHarness
from conformance.harness import LWSHarness
from fixtures import settings
from lwsconf.conformance import spec_of
from lwsconf.timeouts import Timeouts


def _optional_fixture(request: pytest.FixtureRequest, name: str) -> object | None:
    try:
        value: object = request.getfixturevalue(name)
        return value
    except pytest.FixtureLookupError:
        return None


@pytest.fixture
def lws(request: pytest.FixtureRequest, implementation: object, api_client: client.ApiClient, namespace: str,
        timeout_config: Timeouts) -> LWSHarness:
    """Create and inspect LeaderWorkerSets in this test's namespace (the implementation is running)."""
    artifacts = _optional_fixture(request, "artifacts_dir")
    return LWSHarness(api_client, namespace, timeout_config,
                      Path(str(artifacts)) if artifacts is not None else None,
                      controller=getattr(implementation, "controller", None),
                      upgrade=getattr(implementation, "upgrade", None))


@pytest.fixture
def ds(lws: LWSHarness) -> DSHarness:
    """Create and inspect DisaggregatedSets in this test's namespace (on the `lws` harness's client and timeouts)."""
    return DSHarness(lws)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests conformance/divergences.yaml lists for the implementation version under test: strict xfail,
    the evidence as the reason (reported as KNOWN_DIVERGENCE); the row rides on the item so that a pass
    (XPASS) fails naming it (pytest_runtest_makereport)."""
    which = divergences.implementation_version(str(settings.of(config).implementation))
    if which is None:
        return
    try:
        rows = divergences.expected(divergences.load(), *which)
    except (ValueError, OSError) as exc:
        raise pytest.UsageError(f"the known-divergence table: {exc}") from None
    for item in items:
        spec = spec_of(item)
        if spec is None:
            continue
        case = getattr(item, "callspec", None)  # a parametrised case is listed as ShortName[case-id]
        row = rows.get(f"{spec.short_name}[{case.id}]") if case is not None else None
        row = row or rows.get(spec.short_name)
        if row is not None:
            item.stash[_DIVERGENCE] = (row, which[1])
            item.add_marker(pytest.mark.xfail(
                strict=True, raises=AssertionError,
                reason=f"known divergence '{row.id}' of {which[0]} {which[1]} (class {row.klass}; "
                       f"{row.describe_range()}; evidence: conformance/divergences.yaml line {row.line})"))


_DIVERGENCE = pytest.StashKey[tuple[divergences.Divergence, str]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outside pytest's skipping wrapper, which writes the XPASS
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                            pytest.TestReport]:
    """A listed test that passed: pytest's strict XPASS, told as the stale row it is (which row, which
    version, what to change), so the run fails saying what to fix rather than "[XPASS(strict)] <evidence>"."""
    report = yield
    listed = item.stash.get(_DIVERGENCE, None)
    if (listed is not None and report.when == "call" and report.failed and isinstance(report.longrepr, str)
            and report.longrepr.startswith("[XPASS(strict)]")):
        report.longrepr = divergences.stale_message(*listed)
    return report
