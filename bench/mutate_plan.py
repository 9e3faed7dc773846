"""The pure parts of `make mutate` (bench/mutate.py): which mutants run, which tests run for each, what the run says.

No I/O and no cosmic-ray import here, so tests/test_mutate_plan.py checks them directly:

* `sample`: a seeded random choice of mutants, the same for the same seed and population whatever order the
  session database lists them in (cosmic-ray's job ids are random uuids, so mutants are ordered by what they are).
  Mutants that do not compile are passed over (a syntax error tests nothing).
* `covering_lines` and `select_tests`: the conformance tests to run against a mutant are those whose coverage
  context (coverage.py, one context per test, recorded once on the unmutated code) covered the statement the
  mutation is in, fastest first, so a fail-fast run (`-x`) stops at the cheapest test that kills it. Coverage
  records a statement under its first line, and a mutation can sit on a continuation line, hence the statement.
  Code run only at import is covered by no test context, so its effect is followed: a mutated signature default or
  decorator selects the tests that ran the function's body, a mutated module constant the tests that ran a line
  reading it; failing that, every test that covered some line of the module (each imported it).
* `in_annotation`: mutants inside annotations of a module with postponed annotations change nothing; passed over.
* `equivalent_reason`: a mutant triaged as equivalent is matched by its file and its diff (the line before and
  after), not by cosmic-ray's occurrence number, which changes whenever code above it changes.
* `summarise`: the counts and the killed share of the non-equivalent sampled mutants (the issue's target: 90%).
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TARGET_PERCENT = 90.0
"""Issue 28: at least this share of non-equivalent sampled mutants killed."""

OUTCOMES = ("killed", "timeout", "survived", "equivalent", "incompetent", "no_test")
"""Every outcome a mutant gets in the results. `timeout` counts as killed (cosmic-ray's convention:
`cosmic_ray.testing.run_tests` returns KILLED with the output "timeout"), but is counted apart so a run whose kills
are mostly timeouts shows it. Not in the killed share: `equivalent` (triaged so, with a reason), `incompetent` (the
test command could not run: a fault of the run, not of the suite) and `no_test` (cosmic-ray could not apply it)."""


@dataclass(frozen=True)
class Mutant:
    """One mutation cosmic-ray's `init` found: where, which operator, which occurrence of it in the module."""

    job_id: str
    path: str
    """Relative to the repository root, e.g. lwsconf/reconciler/rollout.py."""
    operator: str
    occurrence: int
    line: int
    end_line: int
    col: int = 0
    """Column of the mutation's start (0-based, as ast's col_offset)."""

    def order_key(self) -> tuple[str, int, str, int]:
        return (self.path, self.line, self.operator, self.occurrence)


def seeded_order(population: Iterable[Mutant], seed: int) -> list[Mutant]:
    """Every mutant in a random order given by `seed`: the run takes the first `--sample` of them that compile.

    The population is sorted by what each mutant is before shuffling, so the order depends only on the mutants and
    the seed, not on the order cosmic-ray stored them in or their random job ids."""
    ordered = sorted(population, key=Mutant.order_key)
    random.Random(seed).shuffle(ordered)
    return ordered


def sample(population: Iterable[Mutant], size: int, seed: int,
           valid: Callable[[Mutant], bool] = lambda _: True) -> tuple[list[Mutant], int]:
    """The first `size` mutants of the seeded order for which `valid` holds (cosmic-ray makes some mutants that
    are not Python, e.g. `*` of a keyword-only signature replaced by `-`: a syntax error is no test of the suite),
    and how many invalid ones were passed over. They stay in the seeded order, so a run cut short by its time
    budget has still run a random sample (the first ones), not the first files."""
    chosen: list[Mutant] = []
    invalid = 0
    for mutant in seeded_order(population, seed):
        if len(chosen) == size:
            break
        if valid(mutant):
            chosen.append(mutant)
        else:
            invalid += 1
    return chosen, invalid


def _innermost_statement(tree: ast.Module, line: int) -> ast.stmt | None:
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        # A compound statement contains its body: the narrowest one wins (an `if` test on its own line gives the
        # `if`, whose body starts below it).
        if isinstance(node, ast.stmt) and node.lineno <= line <= _end(node) and (
                best is None or _end(node) - node.lineno <= _end(best) - best.lineno):
            best = node
    return best


def _end(node: ast.stmt | ast.expr) -> int:
    return node.end_lineno if node.end_lineno is not None else node.lineno


def statement_line(source: str, line: int) -> int:
    """The first line of the innermost statement that contains `line` (coverage.py records a statement there).

    A line outside every statement (a blank or comment line) is returned as it is."""
    best = _innermost_statement(ast.parse(source), line)
    return best.lineno if best is not None else line


def in_annotation(source: str, line: int, col: int) -> bool:
    """Whether (line, col) is inside an annotation of a module with `from __future__ import annotations`: there
    annotations are never evaluated (PEP 563), so a mutant in one (`str | None` -> `str ** None`) cannot change
    what the code does; such mutants are passed over like those that do not compile."""
    tree = ast.parse(source)
    postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                    any(a.name == "annotations" for a in n.names) for n in tree.body)
    if not postponed:
        return False
    for node in ast.walk(tree):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.arg | ast.AnnAssign):
            annotations.append(node.annotation)
        for ann in annotations:
            if ann is not None and (ann.lineno, ann.col_offset) <= (line, col) and (line, col) < (
                    _end(ann), ann.end_col_offset if ann.end_col_offset is not None else col + 1):
                return True
    return False


def covering_lines(source: str, line: int) -> list[int]:
    """The lines whose tests can see a mutation at `line`: the first line of its statement, and, when that
    statement runs only at import, the lines where its effect shows:

    * the signature or a decorator of a `def` or `class` (defaults, decorators): every line of its body;
    * a module-level assignment (a constant): its line and every line that reads one of its names."""
    tree = ast.parse(source)
    stmt = _innermost_statement(tree, line)
    if stmt is None:
        return [line]
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and line < stmt.body[0].lineno:
        return list(range(stmt.lineno, _end(stmt) + 1))
    if stmt in tree.body and isinstance(stmt, ast.Assign | ast.AnnAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        reads = {n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                 and n.id in names}
        readers = {s.lineno for r in reads if (s := _innermost_statement(tree, r)) is not None}
        return sorted({stmt.lineno} | readers)
    return [stmt.lineno]


def test_of_context(context: str) -> str:
    """The test node id of a pytest-cov context (`conformance/test_x.py::test_y[p]|run`); "" for no test."""
    return context.rsplit("|", 1)[0] if "|" in context else context


def select_tests(lines: Iterable[int], lines_to_contexts: Mapping[int, Sequence[str]],
                 durations: Mapping[str, float]) -> list[str]:
    """The tests that covered any of `lines` (statements' first lines, `covering_lines`), fastest first (by their
    unmutated durations).

    When only import-time code covered them (no test context), every test that covered any line of the module is
    returned: each of them imported it, so each ran the mutated module-level code."""
    lines = list(lines)
    tests = {test_of_context(c) for line in lines for c in lines_to_contexts.get(line, ())} - {""}
    if not tests and any(line in lines_to_contexts for line in lines):
        tests = {test_of_context(c) for contexts in lines_to_contexts.values() for c in contexts} - {""}
    return sorted(tests, key=lambda t: (durations.get(t, float("inf")), t))


@dataclass(frozen=True)
class Equivalent:
    """A mutant argued equivalent (same behaviour as the unmutated code), read from bench/mutate_equivalent.toml."""

    path: str
    before: str
    after: str
    reason: str


def diff_lines(diff: str) -> tuple[str, str]:
    """The removed and the added lines of a mutant's unified diff, each stripped and joined by newlines."""
    removed, added = [], []
    for text in diff.splitlines():
        if text.startswith(("---", "+++")):
            continue
        if text.startswith("-"):
            removed.append(text[1:].strip())
        elif text.startswith("+"):
            added.append(text[1:].strip())
    return "\n".join(removed), "\n".join(added)


def load_equivalents(document: Mapping[str, Any]) -> list[Equivalent]:
    """The `[[equivalent]]` tables of the equivalents file; each must have path, before, after and a reason."""
    entries = []
    for i, entry in enumerate(document.get("equivalent", [])):
        missing = [k for k in ("path", "before", "after", "reason") if not str(entry.get(k, "")).strip()]
        if missing:
            raise ValueError(f"equivalent entry {i + 1}: missing {', '.join(missing)}: every equivalent mutant "
                             "needs path, before and after (the diff's lines, stripped) and the reason it is one")
        entries.append(Equivalent(entry["path"], entry["before"].strip(), entry["after"].strip(),
                                  " ".join(entry["reason"].split())))
    return entries


def equivalent_reason(path: str, diff: str, equivalents: Iterable[Equivalent]) -> str | None:
    """The recorded reason this mutant (file and diff) is equivalent, or None when it was not triaged so."""
    return reason_for(path, *diff_lines(diff), equivalents)


def reason_for(path: str, before: str, after: str, equivalents: Iterable[Equivalent]) -> str | None:
    """The recorded reason the mutant of `path` changing `before` into `after` (stripped lines) is equivalent."""
    for entry in equivalents:
        if entry.path == path and entry.before == before.strip() and entry.after == after.strip():
            return entry.reason
    return None


def summarise(outcomes: Iterable[str]) -> dict[str, Any]:
    """Counts per outcome and the killed share (killed + timeout) of the sampled mutants that are not equivalent."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes:
        if outcome not in counts:
            raise ValueError(f"unknown mutant outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}")
        counts[outcome] += 1
    judged = counts["killed"] + counts["timeout"] + counts["survived"]
    killed = counts["killed"] + counts["timeout"]
    percent = round(100.0 * killed / judged, 1) if judged else None
    return {"counts": counts, "non_equivalent": judged, "killed_including_timeouts": killed,
            "killed_percent_of_non_equivalent": percent, "target_percent": TARGET_PERCENT,
            "met": percent is not None and percent >= TARGET_PERCENT}
