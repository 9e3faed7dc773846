"""The LWS API's names are defined once, in lwsconf/lwsapi.py (issue 19, point 3; issue 35, item 6).

A second definition lets two layers drift apart silently. This walks the Python source of lwsconf/,
fixtures/, conformance/ and bench/ and names every string literal that spells out an LWS name: the API group
`leaderworkerset.x-k8s.io` and so everything built on it (the apiVersion `leaderworkerset.x-k8s.io/v1`, the CRD
name `leaderworkersets.leaderworkerset.x-k8s.io`, `/apis/...` paths), and every label and annotation key
(`leaderworkerset.sigs.k8s.io/...`), wherever the literal stands: a constant, a dict key or value, a call
argument, a comparison, a part of an f-string. Such code imports the name from lwsapi instead (an f-string
around `lwsapi.GROUP` is fine: it names the group once). The bare version `v1` is too common to look for; it
is caught where it matters, inside the apiVersion.

Docstrings and comments may name them: they document, and nothing reads them. So may data files, docs, the
tests and the upstream-comparison material outside these folders (recorded traffic, upstream's manifests),
which must hold the API's bytes as they are. The serving emulator is exempt: it is mounted alone into a stock
image and imports only the standard library (its own import contract).
"""

from __future__ import annotations

import ast
from pathlib import Path

from lwsconf import lwsapi

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("lwsconf", "fixtures", "conformance", "bench")
EXEMPT = {Path("lwsconf/lwsapi.py"), Path("lwsconf/emulator/emulator.py")}
SPELLED_OUT = (lwsapi.GROUP, lwsapi.PREFIX)
"""Every name to find contains one of these: the group (apiVersion, CRD name, paths) or the key prefix."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are documentation: docstrings and bare string statements."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def second_definitions(root: Path) -> list[str]:
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if path.relative_to(root) in EXEMPT:
                continue
            tree = ast.parse(path.read_text())
            docs = _docstrings(tree)
            hits = [node for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and any(name in node.value for name in SPELLED_OUT)]
            found += [f"{path.relative_to(root)}:{node.lineno}: {node.value[:80]!r}"
                      for node in sorted(hits, key=lambda n: (n.lineno, n.col_offset))]
    return found


def test_lws_names_are_spelled_out_only_in_lwsapi() -> None:
    assert second_definitions(REPO) == [], "import the LWS name from lwsconf/lwsapi.py instead of writing it out"


def test_the_check_finds_every_kind_of_second_definition(tmp_path: Path) -> None:
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "conformance" / "x.py").write_text('A, B = 1, "leaderworkerset.sigs.k8s.io/name"\n')
    (tmp_path / "lwsconf" / "y.py").write_text(
        '"""Docs may say leaderworkerset.x-k8s.io/v1."""\n'
        'G = "leaderworkerset.x-k8s.io"\n'
        'DOC = "mentions leaderworkerset.sigs"\n'
        'BODY = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "labels": {"leaderworkerset.sigs.k8s.io/size": "2"}}\n'
        'def f(crd, v):\n'
        '    """Reads leaderworkersets.leaderworkerset.x-k8s.io."""\n'
        '    return crd == "leaderworkersets.leaderworkerset.x-k8s.io" or f"/apis/leaderworkerset.x-k8s.io/{v}"\n')
    (tmp_path / "bench" / "z.py").write_text('SELECTOR = f"leaderworkerset.sigs.k8s.io/name={1}"\n'
                                             'JSONPATH = "[leaderworkerset.sigs.k8s.io/exclusive-topology]"\n')
    (tmp_path / "fixtures" / "ok.py").write_text('from lwsconf import lwsapi\nPATH = f"/apis/{lwsapi.GROUP}/v2"\n')
    assert [hit.split(": ")[0] for hit in second_definitions(tmp_path)] == [
        "lwsconf/y.py:2", "lwsconf/y.py:4", "lwsconf/y.py:4", "lwsconf/y.py:7", "lwsconf/y.py:7",
        "conformance/x.py:1", "bench/z.py:1", "bench/z.py:2"]
