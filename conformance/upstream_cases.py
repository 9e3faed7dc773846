"""Upstream LeaderWorkerSet's own test cases, mapped to this suite's tests (conformance/upstream_cases.yaml).

Every ginkgo `It` and `Entry` of upstream's LWS test files (UPSTREAM_FILES, at the snapshot the table names) is one
row: `covered` by tests of ours (a conformance short name, `ShortName[case-id]` for one parametrised case, or a
unit-test node id `tests/...py::test_name`), a `gap` (what no test of ours checks yet), or `excluded` (the case
checks nothing an LWS user can observe through the API, with the reason). A case's name is upstream's, as its
source spells it: a fact to find it by, never copied prose.

`python -m conformance.upstream_cases` prints the counts; `--write-doc` regenerates docs/upstream-cases.md and
`--check` exits 1 when that page is stale. tests/test_upstream_cases.py checks the table against our tests and,
when the snapshot tarball is present, against upstream's source.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import itertools
import os
import re
import sys
import tarfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lwsconf.conformance import spec_of

ROOT = Path(__file__).resolve().parents[1]
TABLE = Path(__file__).with_name("upstream_cases.yaml")
DOC = ROOT / "docs" / "upstream-cases.md"
SNAPSHOT = "lws-main-060ab4d"
SNAPSHOTS_ENV = "LWSCONF_UPSTREAM_SNAPSHOTS"
DEFAULT_SNAPSHOTS = ROOT.parent / "shared" / "data" / "upstream-lws-source"
UPSTREAM_FILES = (
    "test/e2e/e2e_test.go",
    "test/e2e/e2e_gang_scheduling_test.go",
    "test/e2e/upgrade/upgrade_test.go",
    "test/integration/controllers/leaderworkerset_test.go",
    "test/integration/webhooks/leaderworkerset_test.go",
    "test/integration/webhooks/pod_test.go",
)
"""Upstream's LWS test files (its DisaggregatedSet tests, test/e2e/disaggregatedset and
test/integration/webhooks/disaggregatedset_test.go, test another API and are not mapped)."""
STATUSES = ("covered", "gap", "excluded")

_GO_STRING = r'"((?:[^"\\\n]|\\.)*)"'
_TABLE_RE = re.compile(r"\bDescribeTable\(\s*" + _GO_STRING)
_CASE_RE = re.compile(r"\b(?:ginkgo\.)?[FPX]?(It|Entry)\(\s*" + _GO_STRING)
_UNIT_ID = re.compile(r"^(tests/[\w/]+\.py)::(?:(\w+)::)?(\w+)(?:\[(.+)\])?$")
_CONFORMANCE_ID = re.compile(r"^([A-Z][A-Za-z0-9]+)(?:\[(.+)\])?$")


@dataclass(frozen=True)
class Case:
    file: str
    """The upstream file, relative to its repository root."""
    table: str | None
    """For an `Entry`, the description of its DescribeTable (names repeat across tables); None for an `It`."""
    case: str
    status: str
    tests: tuple[str, ...] = ()
    missing: str = ""
    reason: str = ""
    note: str = ""

    @property
    def key(self) -> tuple[str, str | None, str]:
        return self.file, self.table, self.case


def load(path: Path = TABLE) -> list[Case]:
    """Every row of the table; ValueError naming the row when one is malformed or repeated."""
    doc = yaml.safe_load(path.read_text()) or {}
    out: list[Case] = []
    seen: set[tuple[str, str | None, str]] = set()
    for n, row in enumerate(doc.get("cases") or []):
        where = f"{path.name}: cases[{n}]"
        try:
            item = Case(file=str(row["file"]), table=None if row.get("table") is None else str(row["table"]),
                        case=str(row["case"]), status=str(row["status"]),
                        tests=tuple(str(t) for t in row.get("tests") or ()), missing=str(row.get("missing") or ""),
                        reason=str(row.get("reason") or ""), note=str(row.get("note") or ""))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{where}: missing or malformed field {exc}") from None
        problem = _problem(item)
        if problem:
            raise ValueError(f"{where} ({item.case!r}): {problem}")
        if item.key in seen:
            raise ValueError(f"{where}: {item.case!r} of {item.file} listed twice")
        seen.add(item.key)
        out.append(item)
    return out


def _problem(item: Case) -> str:
    if item.file not in UPSTREAM_FILES:
        return f"file {item.file!r} is not one of the mapped upstream files"
    if item.status not in STATUSES:
        return f"status {item.status!r}, want one of {STATUSES}"
    if item.status == "covered" and not item.tests:
        return "covered needs tests"
    if item.status != "covered" and item.tests:
        return f"a {item.status} row names no tests (move them to a covered row, or say what is missing)"
    if item.status == "gap" and not item.missing:
        return "a gap says what is missing"
    if item.status == "excluded" and not item.reason:
        return "an exclusion needs its reason"
    return ""


def parse_go_cases(source: str) -> list[tuple[str | None, str]]:
    """(table, case) for every ginkgo It/Entry of a Go test file, in source order. An Entry's table is the
    DescribeTable it follows (upstream's tables do not nest); an It has none."""
    events: list[tuple[int, str, str]] = [(m.start(), "table", m.group(1)) for m in _TABLE_RE.finditer(source)]
    events += [(m.start(), m.group(1), m.group(2)) for m in _CASE_RE.finditer(source)]
    table: str | None = None
    out: list[tuple[str | None, str]] = []
    for _, kind, text in sorted(events):
        value = _go_unquote(text)
        if kind == "table":
            table = value
        else:
            out.append((table if kind == "Entry" else None, value))
    return out


def _go_unquote(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def snapshot_tarball() -> Path:
    """Where the upstream snapshot tarball is looked for: $LWSCONF_UPSTREAM_SNAPSHOTS/<snapshot>.tar.gz, by default
    in shared/data/upstream-lws-source beside the checkout."""
    folder = Path(os.environ.get(SNAPSHOTS_ENV) or DEFAULT_SNAPSHOTS)
    return folder / f"{SNAPSHOT}.tar.gz"


def upstream_cases(tarball: Path) -> list[tuple[str, str | None, str]]:
    """(file, table, case) of every case of UPSTREAM_FILES, read from the snapshot tarball (not extracted)."""
    out: list[tuple[str, str | None, str]] = []
    with tarfile.open(tarball) as tar:
        for rel in UPSTREAM_FILES:
            member = tar.extractfile(f"{SNAPSHOT}/{rel}")
            if member is None:
                raise FileNotFoundError(f"{tarball}: no {SNAPSHOT}/{rel}")
            out += [(rel, table, case) for table, case in parse_go_cases(member.read().decode())]
    return out


def compare(cases: list[Case], upstream: list[tuple[str, str | None, str]]) -> tuple[list[str], list[str]]:
    """(upstream cases the table lacks, rows that are no upstream case), each as 'file: [table] case'."""
    def show(key: tuple[str, str | None, str]) -> str:
        return f"{key[0]}: " + (f"[{key[1]}] " if key[1] else "") + key[2]
    ours = Counter(c.key for c in cases)
    theirs = Counter(upstream)
    return ([show(k) for k in upstream if theirs[k] > ours[k]],
            [show(c.key) for c in cases if ours[c.key] > theirs[c.key]])


def _param_ids(fn: Any) -> set[str] | None:
    """The ids of a parametrised test function's cases (None: it is not parametrised, or pytest would build the
    ids itself, which this does not reproduce)."""
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    if not marks:
        return None
    per_mark: list[list[str]] = []
    for mark in marks:
        values = mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues", [])
        ids = mark.kwargs.get("ids")
        if isinstance(ids, list | tuple) and len(ids) == len(values):
            per_mark.append([str(i) for i in ids])
        elif all(getattr(v, "id", None) for v in values):
            per_mark.append([str(v.id) for v in values])
        else:
            return None
    return {"-".join(parts) for parts in itertools.product(*per_mark)}


def conformance_ids() -> dict[str, set[str] | None]:
    """Every conformance test's short name -> its parametrised case ids (None: not parametrised)."""
    out: dict[str, set[str] | None] = {}
    for path in sorted((ROOT / "conformance").glob("test_*.py")):
        module = importlib.import_module(f"conformance.{path.stem}")
        for obj in vars(module).values():
            spec = spec_of(obj)
            if spec is not None:
                out[spec.short_name] = _param_ids(obj)
    return out


def unknown_tests(cases: Iterable[Case]) -> list[str]:
    """Test ids named by covered rows that name no test of ours, each with why."""
    known = conformance_ids()
    bad: list[str] = []
    for test in sorted({t for c in cases for t in c.tests}):
        why = _unknown_conformance(test, known) if _CONFORMANCE_ID.match(test) else _unknown_unit(test)
        if why:
            bad.append(f"{test}: {why}")
    return bad


def _unknown_conformance(test: str, known: dict[str, set[str] | None]) -> str:
    match = _CONFORMANCE_ID.match(test)
    assert match is not None
    name, case_id = match.groups()
    if name not in known:
        return "no conformance test has this short name"
    ids = known[name]
    if case_id is None:
        return ""
    if ids is None:
        return "the test has no parametrised case ids to name"
    return "" if case_id in ids else f"no such case id (its ids: {sorted(ids)})"


def _unknown_unit(test: str) -> str:
    match = _UNIT_ID.match(test)
    if match is None:
        return "neither a short name (UpperCamelCase[case-id]) nor a node id tests/...py::[Class::]test_name[id]"
    rel, klass, func, case_id = match.groups()
    path = ROOT / rel
    if not path.is_file():
        return f"no file {rel}"
    tree = ast.parse(path.read_text())
    scope: list[ast.stmt] = tree.body
    if klass:
        found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass]
        if not found:
            return f"no class {klass} in {rel}"
        scope = found[0].body
    if not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == func for n in scope):
        return f"no test function {func} in {rel}"
    if case_id is None:
        return ""
    module = importlib.import_module(rel[:-3].replace("/", "."))
    fn = getattr(getattr(module, klass), func) if klass else getattr(module, func)
    ids = _param_ids(fn)
    if ids is None:
        return "the test has no parametrised case ids to name"
    return "" if case_id in ids else f"no such case id (its ids: {sorted(ids)})"


def coverage(cases: list[Case]) -> float:
    """Covered rows as a percentage of all rows (excluded ones count in the denominator)."""
    return 100.0 * sum(c.status == "covered" for c in cases) / len(cases) if cases else 0.0


def _unit_only(case: Case) -> bool:
    return case.status == "covered" and all(t.startswith("tests/") for t in case.tests)


def summary(cases: list[Case]) -> str:
    counts = Counter(c.status for c in cases)
    return (f"{len(cases)} upstream cases: {counts['covered']} covered ({coverage(cases):.1f}%), "
            f"{counts['gap']} gap, {counts['excluded']} excluded; "
            f"{sum(_unit_only(c) for c in cases)} covered by unit tests only")


def render_doc(cases: list[Case]) -> str:
    """docs/upstream-cases.md, generated from the table (`python -m conformance.upstream_cases --write-doc`)."""
    counts = Counter(c.status for c in cases)
    lines = [
        "# Upstream's LeaderWorkerSet test cases, mapped to this suite",
        "",
        "<!-- Generated from conformance/upstream_cases.yaml by `python -m conformance.upstream_cases "
        "--write-doc`; do not edit by hand. -->",
        "",
        f"`conformance/upstream_cases.yaml` lists every ginkgo `It` and `Entry` of upstream LeaderWorkerSet's own "
        f"LWS test files at snapshot `{SNAPSHOT}` (the DisaggregatedSet tests are another API and are left out), "
        "each with what checks the same observable outcome here:",
        "",
        "* `covered`: the tests that do (a conformance short name, `ShortName[case-id]` for one parametrised case, or "
        "a unit-test node id under `tests/` when only the reference is checked there);",
        "* `gap`: no test of ours checks it yet, and what is missing;",
        "* `excluded`: the case checks nothing an LWS user can observe through the API (the reason is given).",
        "",
        "`tests/test_upstream_cases.py` fails when a row names a test that does not exist and, when the snapshot "
        f"tarball is present (`${SNAPSHOTS_ENV}/{SNAPSHOT}.tar.gz`, by default "
        "`../shared/data/upstream-lws-source/`), when the table does not list exactly upstream's cases; it also "
        "holds the coverage floor and checks that this page is up to date. Counts: "
        "`.venv/bin/python -m conformance.upstream_cases`; after editing the table, "
        "`.venv/bin/python -m conformance.upstream_cases --write-doc`.",
        "",
        f"**{summary(cases)}.** Coverage is covered / all cases, excluded ones included.",
        "",
        "| Upstream file | Cases | Covered | Gap | Excluded |",
        "|---|---:|---:|---:|---:|",
    ]
    for rel in UPSTREAM_FILES:
        rows = [c for c in cases if c.file == rel]
        per = Counter(c.status for c in rows)
        lines.append(f"| `{rel}` | {len(rows)} | {per['covered']} | {per['gap']} | {per['excluded']} |")
    lines.append(f"| all | {len(cases)} | {counts['covered']} | {counts['gap']} | {counts['excluded']} |")
    lines += ["", "## Gaps", ""]
    lines += [f"* `{c.file}`: {_name(c)}: {c.missing}" for c in cases if c.status == "gap"] or ["None."]
    lines += ["", "## Exclusions", ""]
    lines += [f"* `{c.file}`: {_name(c)}: {c.reason}" for c in cases if c.status == "excluded"] or ["None."]
    unit = [c for c in cases if _unit_only(c)]
    if unit:
        lines += ["", "## Covered by unit tests only (the reference, not an implementation under test)", ""]
        lines += [f"* `{c.file}`: {_name(c)}: {', '.join(f'`{t}`' for t in c.tests)}" for c in unit]
    return "\n".join(lines) + "\n"


def _name(case: Case) -> str:
    return (f"[{case.table}] " if case.table else "") + f'"{case.case}"'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.upstream_cases", description=__doc__.split("\n")[0])
    parser.add_argument("--write-doc", action="store_true", help=f"regenerate {DOC.relative_to(ROOT)}")
    parser.add_argument("--check", action="store_true", help=f"exit 1 when {DOC.relative_to(ROOT)} is stale")
    args = parser.parse_args(argv)
    cases = load()
    print(summary(cases))
    doc = render_doc(cases)
    if args.write_doc:
        DOC.write_text(doc)
        print(f"wrote {DOC.relative_to(ROOT)}")
    if args.check and (not DOC.is_file() or DOC.read_text() != doc):
        print(f"{DOC.relative_to(ROOT)} is stale: run python -m conformance.upstream_cases --write-doc",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
