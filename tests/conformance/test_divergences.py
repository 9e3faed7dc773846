"""The known-divergence table: well-formed, naming real tests, applied only to the versions it lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import divergences
from lwsconf.conformance import spec_of

CONFORMANCE = Path(__file__).resolve().parents[2] / "conformance"


def _short_names() -> set[str]:
    import importlib

    names = set()
    for path in CONFORMANCE.glob("test_*.py"):
        module = importlib.import_module(f"conformance.{path.stem}")
        names |= {spec.short_name for obj in vars(module).values() if (spec := spec_of(obj)) is not None}
    return names


def test_every_row_names_a_conformance_test_and_carries_evidence() -> None:
    rows = divergences.load()
    assert rows, "the table is empty: then delete it rather than keep a file that cannot fail"
    known = _short_names()
    for row in rows:
        assert row.test.split("[")[0] in known, f"{row.test} is not the short name of any conformance test"
        assert row.implementation == "upstream" and all(v.startswith("v") for v in row.versions)
        assert len(row.evidence) > 40


@pytest.mark.parametrize(("value", "which"), [
    ("upstream-local", ("upstream", "v0.9.0")), ("upstream-local:0.9.0", ("upstream", "v0.9.0")),
    ("upstream:v0.8.0", ("upstream", "v0.8.0")), ("upstream-local:/src/lws", None), ("reference", None),
    ("installed", None)])
def test_which_implementation_version_a_run_names(value: str, which: tuple[str, str] | None) -> None:
    assert divergences.implementation_version(value, "v0.9.0") == which


def test_rows_apply_only_to_their_implementation_and_versions(tmp_path: Path) -> None:
    table = tmp_path / "d.yaml"
    table.write_text("divergences:\n- {implementation: upstream, versions: [v0.9.0], test: T, class: c, "
                     "evidence: upstream file.go:1 does otherwise}\n")
    rows = divergences.load(table)
    assert set(divergences.expected(rows, "upstream", "v0.9.0")) == {"T"}
    assert divergences.expected(rows, "upstream", "v0.10.0") == {}


def test_a_malformed_row_names_itself(tmp_path: Path) -> None:
    table = tmp_path / "d.yaml"
    table.write_text("divergences:\n- {implementation: upstream, versions: [v0.9.0], test: T, class: z, evidence: e}\n")
    with pytest.raises(ValueError, match=r"d.yaml: divergences\[0\]: class must be one of"):
        divergences.load(table)
