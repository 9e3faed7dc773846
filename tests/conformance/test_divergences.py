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


MADE_UP_ROW = """divergences:
- id: made-up-group-key
  implementation: upstream
  test: GroupKeyIsPortableAndStable
  class: c
  since: v0.9.0
  evidence: >-
    none: tests/conformance/test_divergences.py makes this row up; upstream v0.9.0 passes the test
  seen:
  - version: v0.9.0
    cluster: sim
    message: made up
"""


def _go_or_skip() -> None:
    from lwsconf.controlplane import build as gobuild
    from lwsconf.upstream import build
    try:
        gobuild.find_go(**build.NO_GO)
    except gobuild.GoMissing as exc:
        if os.environ.get("LWSCONF_REQUIRE_GO") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def test_a_row_whose_test_now_passes_fails_the_run_as_stale(tmp_path: Path) -> None:
    """End to end: a table claiming that upstream v0.9.0 departs in a test it passes (a row made up here) makes the
    run on the sim fail, saying which row is stale. v0.9.0, the manager `make test` builds anyway: the test once
    used a real row fixed in v0.10.0 against main, and so built main (about 150 s) inside the unit tests."""
    _go_or_skip()
    assert not [r for r in divergences.load(divergences.TABLE) if r.test == "GroupKeyIsPortableAndStable"], \
        "the real table lists GroupKeyIsPortableAndStable: pick another test that v0.9.0 passes"
    table = tmp_path / "stale.yaml"
    table.write_text(MADE_UP_ROW)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance", "-k", "test_group_key_is_portable_and_stable", "-p",
         "no:cacheprovider", "-n", "0", "--lws-impl=upstream-local:v0.9.0", "--lwsconf-reports",
         str(tmp_path / "reports"), "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=840,
        env={**os.environ, divergences.TABLE_ENV: str(table)}, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "1 failed" in out, out[-3000:]
    assert (f"stale known divergence: {table} row 'made-up-group-key' (line 2) expects "
            "GroupKeyIsPortableAndStable to fail on upstream v0.9.0 (v0.9.0 and later (no fix known))") in out, \
        out[-3000:]
