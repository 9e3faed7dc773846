"""The known-divergence table (conformance/divergences.yaml) as the suite reads it: which rows apply to the
implementation version under test (conformance/conftest.py marks those tests strict xfail, and turns a
listed test that passes into a failure naming its stale row). The model is `lwsconf.divergences`."""

from __future__ import annotations

import os
from pathlib import Path

from fixtures import implementations
from lwsconf import divergences as model

TABLE = Path(__file__).with_name("divergences.yaml")
TABLE_ENV = "LWSCONF_DIVERGENCES"
"""Reads another table instead (an implementer's own, or a test's)."""

Divergence = model.Divergence


def table_path() -> Path:
    override = os.environ.get(TABLE_ENV)
    return Path(override) if override else TABLE


def load(path: Path | None = None) -> list[Divergence]:
    """Every row; ValueError naming the row and field when the table is malformed."""
    where = path or table_path()
    return model.read(where.read_text(), where.name)


def implementation_version(lws_impl: str) -> tuple[str, str] | None:
    """(implementation, version) that --lws-impl names a release or pinned snapshot of, or None (reference,
    installed, a checkout: nothing to place in version order). Each implementation says where its rows are
    recorded (`fixtures.implementations`, `ImplementationKind.divergence_key`)."""
    return implementations.divergence_key(lws_impl)


def expected(table: list[Divergence], implementation: str, version: str) -> dict[str, Divergence]:
    """The rows that apply to this implementation version, by test short name."""
    return model.applicable(table, implementation, version)


def _shown(path: Path) -> str:
    return "conformance/divergences.yaml" if path == TABLE else str(path)


def stale_message(row: Divergence, version: str, table: Path | None = None) -> str:
    """What a run says when a listed test passes: the row no longer describes the version under test."""
    return (f"stale known divergence: {_shown(table or table_path())} row '{row.id}' (line {row.line}) expects "
            f"{row.test} to fail on {row.implementation} {version} ({row.describe_range()}), but it passed: the "
            f"behaviour is fixed in {version}. Give the row `fixed: {{in: <first fixed version>, commit: <upstream "
            f"commit>, pr: <number>}}`, or delete it")
