"""Path expressions that stages use to read fields of the object they look at. No I/O here.

A small subset of jq paths (KWOK's selectors use jq), enough for stage data:

    .status.phase                              a field
    .metadata.annotations["a.b/c"]             a key with dots or slashes
    .spec.containers[0].name                   a list index
    .status.conditions[type=Ready].status      the first list element whose field equals a value
    .pod.metadata.annotations["x"] // .pod.metadata.labels["x"]      the first non-null alternative
    .                                          the whole object

A missing field, a wrong type or an index out of range gives None, never an error: a stage that
asks about a field the object lacks simply does not match.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"""
    \.(?P<field>[A-Za-z_][A-Za-z0-9_-]*)             # .field
  | \[\s*"(?P<key>(?:[^"\\]|\\.)*)"\s*\]            # ["key"]
  | \[\s*(?P<index>-?\d+)\s*\]                      # [0]
  | \[\s*(?P<ffield>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"?(?P<fvalue>[^"\]]*)"?\s*\]   # [type=Ready]
""", re.VERBOSE)


class PathError(ValueError):
    """A path that cannot be parsed; the message shows where."""


@dataclass(frozen=True)
class _Step:
    kind: str  # "field", "index" or "filter"
    name: str = ""
    index: int = 0
    value: str = ""


@functools.lru_cache(maxsize=1024)
def compile_path(text: str) -> tuple[tuple[_Step, ...], ...]:
    """Parse `text` into alternatives of steps (cached).

    Raises:
        PathError: the text is not a path; the message shows the unparsed rest.
    """
    alternatives = []
    for part in text.split("//"):
        alternatives.append(_compile_one(part.strip(), text))
    return tuple(alternatives)


def _compile_one(part: str, whole: str) -> tuple[_Step, ...]:
    if not part.startswith("."):
        raise PathError(f"path {whole!r}: each alternative must start with '.', got {part!r}")
    if part == ".":
        return ()
    steps: list[_Step] = []
    pos = 0
    while pos < len(part):
        match = _TOKEN.match(part, pos)
        if match is None:
            raise PathError(f"path {whole!r}: cannot parse {part[pos:]!r}; use .field, [\"key\"], [0] or "
                            "[field=value]")
        if match.group("field") is not None:
            steps.append(_Step("field", match.group("field")))
        elif match.group("key") is not None:
            steps.append(_Step("field", match.group("key").replace('\\"', '"')))
        elif match.group("index") is not None:
            steps.append(_Step("index", index=int(match.group("index"))))
        else:
            steps.append(_Step("filter", match.group("ffield"), value=match.group("fvalue")))
        pos = match.end()
    return tuple(steps)


def evaluate(text: str, obj: Any) -> Any:
    """The value at path `text` in `obj`, or None."""
    for alternative in compile_path(text):
        value = _walk(alternative, obj)
        if value is not None:
            return value
    return None


def _walk(steps: Sequence[_Step], obj: Any) -> Any:
    current = obj
    for step in steps:
        if step.kind == "field":
            current = current.get(step.name) if isinstance(current, dict) else None
        elif step.kind == "index":
            ok = isinstance(current, list) and -len(current) <= step.index < len(current)
            current = current[step.index] if ok else None
        else:
            current = _first_with(current, step.name, step.value)
        if current is None:
            return None
    return current


def _first_with(items: Any, field: str, value: str) -> Any:
    if not isinstance(items, list):
        return None
    for item in items:
        if isinstance(item, dict) and render(item.get(field)) == value:
            return item
    return None


def render(value: Any) -> str | None:
    """A value as selectors compare it: booleans as true/false, None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return "" if not value else str(value)
    return str(value)
