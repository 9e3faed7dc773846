"""Fixtures shared by the conformance modules: the `lws` harness and small manifest helpers.

`lws` is bound to the test's fresh namespace and the run's timeouts, and requests the session's
`implementation` so the LWS implementation under test is installed before any LWS is created. When
the run provides an artifacts directory (`artifacts_dir`), whole-timeline recordings land there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from conformance import divergences
from conformance.harness import LWSHarness
from fixtures.plugin import option
from lwsconf.conformance import spec_of
from lwsconf.timeouts import Timeouts
from lwsconf.upstream.versions import DEFAULT as DEFAULT_UPSTREAM


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
                      controller=getattr(implementation, "controller", None))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests conformance/divergences.yaml lists for the implementation version under test: strict xfail,
    the evidence as the reason (reported as KNOWN_DIVERGENCE)."""
    which = divergences.implementation_version(str(option(config, "lws_impl")), DEFAULT_UPSTREAM.version)
    if which is None:
        return
    try:
        rows = divergences.expected(divergences.load(), *which)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    for item in items:
        spec = spec_of(item)
        if spec is None:
            continue
        case = getattr(item, "callspec", None)  # a parametrised case is listed as ShortName[case-id]
        row = rows.get(f"{spec.short_name}[{case.id}]") if case is not None else None
        row = row or rows.get(spec.short_name)
        if row is not None:
            item.add_marker(pytest.mark.xfail(
                strict=True, raises=AssertionError,
                reason=f"known divergence of {which[0]} {which[1]} ({row.klass}): {row.evidence}"))
