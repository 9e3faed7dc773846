"""The page and the JSON (pure): every row with its disposition, unlisted ones marked, the hand-kept part kept."""

from __future__ import annotations

import json

from lwsconf.implcompare import render, scenarios
from lwsconf.implcompare.dispositions import Disposition
from lwsconf.implcompare.model import Row

ENTRY = Disposition("env", ("Pod",), ("spec.env",), ("basic",), "tested", "EnvVarsInEveryContainer")


def run(rows: list[Row]) -> render.Run:
    return render.Run("reference", "upstream-local", scenarios.by_name(["basic"]), rows, [], 12.0, "now", [ENTRY])


def test_rows_carry_their_disposition_or_are_marked_unlisted() -> None:
    rows = [Row("basic", "steady", "Pod", "spec.env", "a|b", None, ("p-0",), "env"),
            Row("basic", "steady", "Service", "spec.x", 1, 2, ("s",), None)]
    text = render.page(run(rows))
    assert "| env | Pod | `spec.env` | basic/steady | p-0 |" in text and "**UNLISTED** | Service" in text
    assert "**env** (Pod `spec.env`; scenarios basic): tested by EnvVarsInEveryContainer" in text
    assert "`a\\|b`" in text  # a pipe in a value does not break the table
    assert "1 unlisted" in text.replace("(", " ").replace(")", " ")


def test_no_rows_says_so_and_the_part_below_the_marker_is_kept() -> None:
    existing = "old generated\n" + render.MARKER + "\n\n## Notes\nkept by hand\n"
    text = render.page(run([]), existing)
    assert "No differences." in text and text.endswith("## Notes\nkept by hand\n") and "old generated" not in text


def test_json_has_every_row_whole() -> None:
    long = "x" * 500
    doc = json.loads(render.to_json(run([Row("basic", "steady", "Pod", "p", long, None, ("p-0",), None)])))
    assert doc["rows"][0]["a"] == long and doc["scenarios"] == ["basic"]
