"""Fixtures for the report tests: the sample report, its run directory, and golden-file comparison.

Golden files live in tests/report/golden/. After an intended change to a writer, regenerate them
with `LWSCONF_UPDATE_GOLDEN=1 pytest tests/report` and review the diff.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lwsconf.report import schema
from tests.report import sample

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def report() -> schema.Report:
    return sample.report()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return sample.write_run_dir(tmp_path / "20261129-093000-ab12")


@pytest.fixture
def golden() -> Callable[[str, str], None]:
    """golden(name, text): text must equal tests/report/golden/<name> (LWSCONF_UPDATE_GOLDEN=1 rewrites it)."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if os.environ.get("LWSCONF_UPDATE_GOLDEN"):
            path.write_text(text)
            return
        assert path.exists(), f"no golden file {path}; create it with LWSCONF_UPDATE_GOLDEN=1 and review it"
        expected = path.read_text()
        if text != expected:
            diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "actual"))
            raise AssertionError(f"{name} differs from its golden file (LWSCONF_UPDATE_GOLDEN=1 to accept):\n"
                                 f"{diff[:4000]}")

    return check
