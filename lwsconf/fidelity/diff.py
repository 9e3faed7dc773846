"""Where two normalised answers differ: a list of `path: sim value != real value` lines."""

from __future__ import annotations

import json
from typing import Any

MAX_LINES = 20
"""A page lists at most this many differing paths per interaction (the full answers follow them)."""


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def differences(sim: Any, real: Any, path: str = "") -> list[str]:
    """Every leaf where `sim` and `real` differ; a key on one side only is `(absent)` on the other."""
    if isinstance(sim, dict) and isinstance(real, dict):
        out: list[str] = []
        for key in sorted(set(sim) | set(real), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in sim:
                out.append(f"{sub}: (absent) != {_short(real[key])}")
            elif key not in real:
                out.append(f"{sub}: {_short(sim[key])} != (absent)")
            else:
                out.extend(differences(sim[key], real[key], sub))
        return out
    if isinstance(sim, list) and isinstance(real, list) and len(sim) == len(real):
        out = []
        for i, (a, b) in enumerate(zip(sim, real, strict=True)):
            out.extend(differences(a, b, f"{path}.{i}" if path else str(i)))
        return out
    if isinstance(sim, list) and isinstance(real, list) and (sim or real) and _named(sim) and _named(real):
        return _named_lists(sim, real, path)
    if same(sim, real):
        return []
    return [f"{path or '(answer)'}: {_short(sim)} != {_short(real)}"]


def same(a: Any, b: Any) -> bool:
    """JSON equality with types compared strictly: Python's `True == 1` and `1 == 1.0` are differences here
    (`true` and `1`, `1` and `1.0` are different JSON a client decodes differently), at any depth."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _name(item: Any) -> str | None:
    meta = item.get("metadata") if isinstance(item, dict) else None
    return meta.get("name") if isinstance(meta, dict) and isinstance(meta.get("name"), str) else None


def _named(items: list[Any]) -> bool:
    names = [_name(i) for i in items]
    return None not in names and len(set(names)) == len(names)


def _named_lists(sim: list[Any], real: list[Any], path: str) -> list[str]:
    """Lists of objects of different lengths, every object named (a list's items): the names on one side only,
    then the differences of the objects both have, by name, so a page says which objects a list lacked and
    whether the others agree (a list read while a controller was still creating is told from one that differs)."""
    where = path or "(answer)"
    by_sim = {str(_name(i)): i for i in sim}
    by_real = {str(_name(i)): i for i in real}
    out = [f"{where}: names {sorted(n for n in by_sim if n not in by_real)} != "
           f"{sorted(n for n in by_real if n not in by_sim)} (on one side only)"]
    for name in (n for n in by_sim if n in by_real):
        out.extend(differences(by_sim[name], by_real[name], f"{where}[{name}]"))
    return out


def summary(sim: Any, real: Any) -> list[str]:
    """`differences`, cut to MAX_LINES with a count of the rest."""
    lines = differences(sim, real)
    if len(lines) > MAX_LINES:
        return [*lines[:MAX_LINES], f"... and {len(lines) - MAX_LINES} more"]
    return lines
