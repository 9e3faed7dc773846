"""A pytest plugin for `make mutate`'s baseline run: each test's duration (setup + call + teardown), as JSON.

Loaded with `-p bench.mutate_durations`; writes to the file named by $LWSCONF_MUTATE_DURATIONS at the end of the
session, on the xdist controller only (it receives every worker's reports). bench/mutate.py orders the tests it runs
against a mutant fastest first from these figures, so a fail-fast run stops at the cheapest test that kills it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ENV = "LWSCONF_MUTATE_DURATIONS"
_durations: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get(ENV)
    if out and not hasattr(session.config, "workerinput"):
        Path(out).write_text(json.dumps({k: round(v, 3) for k, v in sorted(_durations.items())}, indent=1))
