"""The LWS API's names are defined once, in lwsconf/lwsapi.py (issue 19, point 3).

A second definition (a module constant assigned a `leaderworkerset.sigs.k8s.io/...` key or the API group)
lets two layers drift apart silently; this walks every module of lwsconf, fixtures and conformance and
names any such assignment. The emulator is exempt: it is mounted alone into a stock image and imports only
the standard library (its own import contract).
"""

from __future__ import annotations

import ast
from pathlib import Path

from lwsconf import lwsapi

REPO = Path(__file__).resolve().parents[1]
EXEMPT = {Path("lwsconf/lwsapi.py"), Path("lwsconf/serving/emulator.py")}


def _is_lws_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value.startswith(lwsapi.PREFIX) or node.value in (lwsapi.GROUP, lwsapi.API_VERSION))


def second_definitions(root: Path) -> list[str]:
    found = []
    for folder in ("lwsconf", "fixtures", "conformance"):
        for path in sorted((root / folder).rglob("*.py")):
            if path.relative_to(root) in EXEMPT:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                    if any(_is_lws_name(v) for v in values):
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_lws_names_are_assigned_only_in_lwsapi() -> None:
    assert second_definitions(REPO) == [], "define LWS keys in lwsconf/lwsapi.py and import them"


def test_the_check_finds_a_second_definition(tmp_path: Path) -> None:
    (tmp_path / "lwsconf").mkdir()
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "conformance").mkdir()
    (tmp_path / "conformance" / "x.py").write_text('A, B = 1, "leaderworkerset.sigs.k8s.io/name"\n')
    (tmp_path / "lwsconf" / "y.py").write_text('G = "leaderworkerset.x-k8s.io"\n'
                                               'DOC = "mentions leaderworkerset.sigs"\n')
    assert second_definitions(tmp_path) == ["lwsconf/y.py:1", "conformance/x.py:1"]
