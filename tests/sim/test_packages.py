"""The sim's API server, controllers and nodes stay split into concept packages, without import cycles.

`.importlinter` checks that each package imports only the layers below it (`apiserver-layers`,
`controllers-layers`, `nodes-layers`); these tests hold the rest of that shape, which a layers contract cannot
see: no module creeps back into the flat folders, every package says what it may import, and no import cycle
forms between modules anywhere in lwsconf, fixtures or conformance (a cycle inside one package is
invisible to a layers contract).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

import lwsconf

SIM = Path(lwsconf.__file__).parent / "sim"
TREES = ("apiserver", "controllers", "nodes")
TOP_MODULES = {"nodes": ["aio.py", "fleet.py", "layout.py"]}
"""The modules a tree keeps beside its packages on purpose, each a layer of its own in `.importlinter`: the nodes'
fleet (every agent of a cluster: the top layer), layout (which nodes exist, read by callers outside the sim too)
and aio (the asyncio helper at the bottom)."""


def _cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("lwsconf", "fixtures", "conformance")


def test_the_cycle_finder_finds_a_cycle_and_nothing_else() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert _cycles(edges) == [["a", "b", "c"]]


@pytest.mark.parametrize("tree", TREES)
def test_no_module_sits_outside_a_concept_package(tree: str) -> None:
    flat = sorted(p.name for p in (SIM / tree).glob("*.py")
                  if p.name != "__init__.py" and p.name not in TOP_MODULES.get(tree, []))
    assert flat == [], (f"lwsconf/sim/{tree}/ holds modules outside its packages: {flat}; "
                        "move each into the package of its concept")


@pytest.mark.parametrize("tree", TREES)
def test_every_package_says_what_it_may_import(tree: str) -> None:
    silent = []
    for init in sorted((SIM / tree).rglob("__init__.py")):
        if "testdata" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        if "import" not in doc:
            silent.append(str(init.relative_to(SIM)))
    assert silent == [], f"package docstrings that do not say what the package may import: {silent}"


@pytest.mark.parametrize("top", ["lwsconf", "fixtures", "conformance"])
def test_no_import_cycle_between_modules(graph: grimp.ImportGraph, top: str) -> None:
    """Imports inside functions and under TYPE_CHECKING count too: a cycle hidden that way is still one."""
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules if m.split(".")[0] == top}
    assert _cycles(edges) == []


@pytest.mark.parametrize("tree", TREES)
def test_no_import_cycle_between_the_concept_packages(graph: grimp.ImportGraph, tree: str) -> None:
    top = f"lwsconf.sim.{tree}"
    depth = top.count(".") + 2

    def package(module: str) -> str | None:
        parts = module.split(".")
        return ".".join(parts[:depth]) if module.startswith(top + ".") and len(parts) >= depth else None

    edges: dict[str, set[str]] = {}
    for module in graph.find_descendants(top):
        source = package(module)
        for imported in graph.find_modules_directly_imported_by(module):
            target = package(imported)
            if source and target and target != source:
                edges.setdefault(source, set()).add(target)
    assert len(edges) > 3, f"expected the packages of {top} to import each other; found {sorted(edges)}"
    assert _cycles(edges) == []
