"""The known-divergence table: well-formed, naming real tests, each row applied to exactly the versions of its
range, and a row whose test now passes failing the run as stale, naming the row."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import divergences
from lwsconf import divergences as model
from lwsconf.conformance import spec_of
from lwsconf.upstream import versions

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE = REPO / "conformance"


def _short_names() -> set[str]:
    import importlib

    names = set()
    for path in CONFORMANCE.glob("test_*.py"):
        module = importlib.import_module(f"conformance.{path.stem}")
        names |= {spec.short_name for obj in vars(module).values() if (spec := spec_of(obj)) is not None}
    return names


def test_every_row_names_a_conformance_test_and_carries_evidence_seen_in_its_range() -> None:
    rows = divergences.load(divergences.TABLE)
    assert rows, "the table is empty: then delete it rather than keep a file that cannot fail"
    known = _short_names()
    for row in rows:
        assert row.test.split("[")[0] in known, f"{row.id}: {row.test} is not the short name of any conformance test"
        assert row.implementation == "upstream"
        assert row.seen and all(row.applies_to("upstream", s.version) for s in row.seen)
        assert all(s.cluster in ("sim", "local") and len(s.message) > 20 for s in row.seen), row.id


def test_every_fixed_row_names_the_fix() -> None:
    for row in divergences.load(divergences.TABLE):
        if row.fixed is not None:
            assert row.fixed.pr > 0 and row.fixed.version in versions.known_versions(), row.id


@pytest.mark.parametrize(("value", "which"), [
    ("upstream-local", ("upstream", "v0.9.0")), ("upstream-local:0.9.0", ("upstream", "v0.9.0")),
    ("upstream-local:v0.10", ("upstream", "v0.10.0")), ("upstream-local:main", ("upstream", "main-060ab4d")),
    ("upstream:v0.8.0", ("upstream", "v0.8.0")), ("upstream-local:/src/lws", None), ("reference", None),
    ("installed", None)])
def test_which_implementation_version_a_run_names(value: str, which: tuple[str, str] | None) -> None:
    assert divergences.implementation_version(value) == which


ROWS = """divergences:
- id: fixed-in-010
  implementation: upstream
  test: T
  class: version
  since: v0.9.0
  fixed: {in: v0.10.0, commit: 1234567, pr: 1}
  evidence: upstream file.go:1 does otherwise, until the fix of PR 1.
  seen: [{version: v0.9.0, cluster: sim, message: the failure a run printed}]
- id: still-open
  implementation: upstream
  test: U
  class: c
  since: v0.10.0
  evidence: upstream file.go:2 panics on this input from v0.10.0 on.
  seen: [{version: main-060ab4d, cluster: local, message: the failure a run printed}]
- id: fixed-on-main
  implementation: upstream
  test: V
  class: c
  since: v0.9.0
  fixed: {in: main-060ab4d, commit: 89abcde, pr: 3}
  evidence: upstream file.go:3 uses the live spec, fixed on main by PR 3.
  seen: [{version: v0.10.0, cluster: sim, message: the failure a run printed}]
"""


@pytest.mark.parametrize(("version", "tests"), [
    ("v0.8.0", set()), ("v0.9.0", {"T", "V"}), ("v0.10.0", {"U", "V"}), ("main-060ab4d", {"U"}),
    ("v0.11.0", {"U"}), ("checkout-abc", set())])
def test_a_row_applies_to_every_version_of_its_range_and_no_other(version: str, tests: set[str]) -> None:
    rows = model.read(ROWS)
    assert set(divergences.expected(rows, "upstream", version)) == tests
    assert divergences.expected(rows, "someone-else", version) == {}


@pytest.mark.parametrize(("edit", "message"), [
    (("class: c", "class: z"), r"divergences\[1\]: class must be one of"),
    (("since: v0.10.0", "since: v0.10.0-rc1"), r"divergences\[1\]: since 'v0.10.0-rc1' is not a version"),
    (("fixed: {in: v0.10.0", "fixed: {in: v0.9.0"), r"divergences\[0\]: fixed.in 'v0.9.0' must be a version after"),
    (("version: main-060ab4d, cluster: local", "version: v0.9.0, cluster: local"),
     r"divergences\[1\]: seen on v0.9.0, which the row's range \(v0.10.0 and later"),
    (("id: fixed-on-main", "id: still-open"), r"row ids must be unique: \['still-open'\]"),
    (("  seen: [{version: v0.9.0, cluster: sim, message: the failure a run printed}]\n", ""),
     r"divergences\[0\]: seen must keep at least one failure"),
])
def test_a_malformed_row_names_itself_and_what_is_wrong(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model.read(ROWS.replace(*edit, 1))


def test_the_stale_message_names_the_row_version_and_what_to_change() -> None:
    row = model.read(ROWS)[1]
    text = divergences.stale_message(row, "main-060ab4d", divergences.TABLE)
    assert "conformance/divergences.yaml row 'still-open' (line 10)" in text
    assert "expects U to fail on upstream main-060ab4d" in text
    assert "fixed: {in:" in text


def _snapshot_or_skip() -> None:
    snapshot = next(s for s in versions.SNAPSHOTS if "main" in s.aliases)
    if not (versions.snapshot_dir() / snapshot.archive).is_file():
        if os.environ.get("LWSCONF_REQUIRE_GO") == "1":
            pytest.fail(f"upstream's main snapshot is not in {versions.snapshot_dir()} (CI needs it)")
        pytest.skip(f"upstream's main snapshot is not in {versions.snapshot_dir()}")


def test_a_row_whose_test_now_passes_fails_the_run_as_stale(tmp_path: Path) -> None:
    """End to end: upstream main on the sim passes LWSMetadataOnStatefulSets (fixed in v0.10.0 by lws#896); a table
    claiming that row still departs makes the run fail, saying which row is stale. main, not v0.10.0: `make test`
    builds main for conformance-sim-upstream, and v0.10.0 only in `make test-extended`."""
    _snapshot_or_skip()
    real = next(r for r in divergences.load(divergences.TABLE) if r.id == "statefulset-metadata")
    assert real.fixed is not None and real.fixed.version == "v0.10.0"
    text = divergences.TABLE.read_text()
    start = text.index("- id: statefulset-metadata")
    end = text.index("\n- id:", start + 1)
    row = text[start:end].replace("  fixed: {in: v0.10.0, commit: 68cee20, pr: 896}\n", "")
    assert "fixed:" not in row
    table = tmp_path / "stale.yaml"
    table.write_text("divergences:\n" + row + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance", "-k", "test_lws_metadata_on_statefulsets", "-p",
         "no:cacheprovider", "-n", "0", "--lws-impl=upstream-local:main", "--lwsconf-reports",
         str(tmp_path / "reports"), "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=840,
        env={**os.environ, divergences.TABLE_ENV: str(table)}, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "1 failed" in out, out[-3000:]
    assert (f"stale known divergence: {table} row 'statefulset-metadata' (line 2) expects "
            "LWSMetadataOnStatefulSets to fail on upstream main-060ab4d (v0.9.0 and later (no fix known))") in out, \
        out[-3000:]
