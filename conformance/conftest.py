"""Fixtures shared by the conformance modules: the `lws` harness and small manifest helpers.

`lws` is bound to the test's fresh namespace and the run's timeouts, and requests the session's
`implementation` so the LWS implementation under test is installed before any LWS is created. When
the run provides an artifacts directory (`artifacts_dir`), whole-timeline recordings land there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from conformance.harness import LWSHarness
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
                      controller=getattr(implementation, "controller", None))
