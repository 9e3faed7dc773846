"""bench/mutate_plan.py, the pure parts of `make mutate`: sampling, test selection, triage matching, the summary."""

from __future__ import annotations

import random

import pytest

from bench import mutate_plan
from bench.mutate_plan import Mutant


def _population(n: int = 50) -> list[Mutant]:
    return [Mutant(job_id=f"job{i}", path=f"lwsconf/reconciler/m{i % 3}.py", operator=f"core/Op{i % 4}",
                   occurrence=i, line=1 + i % 17, end_line=1 + i % 17) for i in range(n)]


def test_sample_is_the_same_for_the_same_seed_whatever_order_and_job_ids() -> None:
    population = _population()
    shuffled = population[:]
    random.Random(1).shuffle(shuffled)
    renamed = [Mutant(f"other{m.occurrence}", m.path, m.operator, m.occurrence, m.line, m.end_line) for m in shuffled]
    first, _ = mutate_plan.sample(population, 10, seed=7)
    second, _ = mutate_plan.sample(renamed, 10, seed=7)
    assert [m.order_key() for m in first] == [m.order_key() for m in second]
    assert len({m.order_key() for m in first}) == 10


def test_sample_differs_between_seeds_and_a_smaller_sample_is_a_prefix_of_a_larger() -> None:
    population = _population()
    assert mutate_plan.sample(population, 10, seed=1)[0] != mutate_plan.sample(population, 10, seed=2)[0]
    small, _ = mutate_plan.sample(population, 5, seed=3)
    large, _ = mutate_plan.sample(population, 20, seed=3)
    assert large[:5] == small  # a run cut short by its budget has run a random sample


def test_sample_passes_over_invalid_mutants_and_counts_them() -> None:
    population = _population()
    chosen, invalid = mutate_plan.sample(population, 10, seed=4, valid=lambda m: m.occurrence % 2 == 0)
    assert len(chosen) == 10 and all(m.occurrence % 2 == 0 for m in chosen)
    assert invalid > 0
    everything, none_invalid = mutate_plan.sample(population, 500, seed=4)
    assert len(everything) == 50 and none_invalid == 0


SOURCE = '''\
LIMIT = 2**31 - 1


def f(a, b):
    if (a > 1
            and b):
        return [a,
                b]
    return None
'''


@pytest.mark.parametrize(("line", "statement"), [(1, 1), (5, 5), (6, 5), (7, 7), (8, 7), (9, 9), (3, 3)])
def test_statement_line_is_the_first_line_of_the_innermost_statement(line: int, statement: int) -> None:
    assert mutate_plan.statement_line(SOURCE, line) == statement


def test_select_tests_takes_the_tests_that_covered_the_line_fastest_first() -> None:
    contexts = {5: ["t.py::slow|run", "t.py::fast|setup", "t.py::fast|run", ""], 7: ["t.py::other|run"]}
    durations = {"t.py::slow": 9.0, "t.py::fast": 1.0, "t.py::other": 2.0}
    assert mutate_plan.select_tests([5], contexts, durations) == ["t.py::fast", "t.py::slow"]
    assert mutate_plan.select_tests([7], contexts, durations) == ["t.py::other"]


def test_select_tests_for_import_time_code_takes_every_test_of_the_module_and_none_for_unrun_lines() -> None:
    contexts = {1: [""], 5: ["t.py::a|run"], 7: ["t.py::b|run"]}
    assert mutate_plan.select_tests([1], contexts, {"t.py::a": 1.0, "t.py::b": 2.0}) == ["t.py::a", "t.py::b"]
    assert mutate_plan.select_tests([9], contexts, {}) == []  # no test ran it: nothing can kill it


DIFF = """--- mutation diff ---
--- alwsconf/reconciler/status.py
+++ blwsconf/reconciler/status.py
@@ -63,1 +63,1 @@
-    if size > 1 and sts is None:
+    if size > 2 and sts is None:
"""


def test_equivalent_reason_matches_by_file_and_diff_not_by_occurrence() -> None:
    equivalents = mutate_plan.load_equivalents({"equivalent": [
        {"path": "lwsconf/reconciler/status.py", "before": "if size > 1 and sts is None:",
         "after": "if size > 2 and sts is None:", "reason": "size 2\n  behaves the same"}]})
    assert mutate_plan.equivalent_reason("lwsconf/reconciler/status.py", DIFF, equivalents) == "size 2 behaves the same"
    assert mutate_plan.equivalent_reason("lwsconf/reconciler/other.py", DIFF, equivalents) is None
    assert mutate_plan.equivalent_reason("lwsconf/reconciler/status.py", DIFF.replace("> 2", ">= 2"),
                                         equivalents) is None


def test_an_equivalent_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="missing reason"):
        mutate_plan.load_equivalents({"equivalent": [{"path": "p", "before": "a", "after": "b", "reason": " "}]})


def test_summary_counts_timeouts_as_killed_and_leaves_out_equivalent_and_incompetent() -> None:
    summary = mutate_plan.summarise(["killed"] * 7 + ["timeout"] * 2 + ["survived", "equivalent", "incompetent"])
    assert summary["counts"]["timeout"] == 2 and summary["counts"]["equivalent"] == 1
    assert summary["non_equivalent"] == 10 and summary["killed_including_timeouts"] == 9
    assert summary["killed_percent_of_non_equivalent"] == 90.0 and summary["met"] is True
    assert mutate_plan.summarise(["killed"] * 8 + ["survived"] * 2)["met"] is False
    assert mutate_plan.summarise([])["killed_percent_of_non_equivalent"] is None
    with pytest.raises(ValueError, match="unknown mutant outcome"):
        mutate_plan.summarise(["maybe"])


POSTPONED = '''\
from __future__ import annotations

LIMIT = 2**31 - 1
NAMES: dict[str, int] = {}


def f(a: str | None = None, b: int = LIMIT) -> int | None:
    x: int | None = 1 | 2
    return x


def g():
    return NAMES
'''


@pytest.mark.parametrize(("line", "col", "inside"), [
    (7, 10, True),    # a: str | None
    (7, 52, True),    # -> int | None
    (8, 7, True),     # x: int | None
    (8, 20, False),   # = 1 | 2 runs
    (3, 8, False),    # a module constant
    (7, 36, False),   # b's default, LIMIT, runs at import
])
def test_in_annotation_only_under_postponed_annotations(line: int, col: int, inside: bool) -> None:
    assert mutate_plan.in_annotation(POSTPONED, line, col) is inside
    assert mutate_plan.in_annotation(POSTPONED.replace("from __future__ import annotations", ""), line, col) is False


def test_covering_lines_follow_import_time_code_to_where_it_takes_effect() -> None:
    assert mutate_plan.covering_lines(POSTPONED, 3) == [3, 7]          # LIMIT: read by f's signature
    assert mutate_plan.covering_lines(POSTPONED, 4) == [4, 13]         # NAMES: read in g
    assert mutate_plan.covering_lines(POSTPONED, 7) == [7, 8, 9]       # f's signature: f's lines
    assert mutate_plan.covering_lines(POSTPONED, 8) == [8]             # a statement in a body: itself
