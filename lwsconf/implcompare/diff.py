"""Where two normalised snapshots differ: one `Difference` per leaf, grouped into `Row`s. No I/O here.

Lists of objects that carry a `name` (containers, env, volumes, ports, claim templates) are aligned by
name, so one extra env entry is one row and not a whole-list row; conditions are aligned by `type`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lwsconf.implcompare.model import ABSENT, Difference, Row, SideRun, Snapshot

_ALIGN_KEYS = ("name", "type")


def _segment(key: str) -> str:
    return f"[{key}]" if "." in key or "/" in key else key


def _join(path: str, segment: str) -> str:
    if segment.startswith("["):
        return path + segment
    return f"{path}.{segment}" if path else segment


def _align_key(a: list[Any], b: list[Any]) -> str | None:
    for k in _ALIGN_KEYS:
        items = a + b
        keyed = bool(items) and all(isinstance(x, dict) and isinstance(x.get(k), str) for x in items)
        if keyed and len({x[k] for x in a}) == len(a) and len({x[k] for x in b}) == len(b):
            return k
    return None


def _dict_leaves(a: dict[Any, Any], b: dict[Any, Any], path: str, *, bracket: bool) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for k in sorted(set(a) | set(b), key=str):
        sub = path + f"[{k}]" if bracket else _join(path, _segment(str(k)))
        if k not in a:
            out.append((sub, ABSENT, b[k]))
        elif k not in b:
            out.append((sub, a[k], ABSENT))
        else:
            out.extend(leaves(a[k], b[k], sub))
    return out


def leaves(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every `(path, a value, b value)` where `a` and `b` differ; a key on one side only has ABSENT on the other.

    Elements of lists aligned by name read `containers[probe]`, other list elements `args[2]`."""
    if isinstance(a, dict) and isinstance(b, dict):
        return _dict_leaves(a, b, path, bracket=False)
    if isinstance(a, list) and isinstance(b, list):
        align = _align_key(a, b)
        if align is not None:
            return _dict_leaves({x[align]: x for x in a}, {x[align]: x for x in b}, path, bracket=True)
        if len(a) == len(b):
            out = []
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                out.extend(leaves(x, y, f"{path}[{i}]"))
            return out
    return [] if a == b else [(path or "(object)", a, b)]


def differences(scenario: str, snapshot: str, a: Snapshot, b: Snapshot) -> list[Difference]:
    """Every difference between two snapshots of one scenario; an object on one side only is one difference."""
    out = []
    for key in sorted(set(a) | set(b)):
        kind, _, name = key.partition("/")
        if key not in a or key not in b:
            out.append(Difference(scenario, snapshot, kind, name, "(object)", "present" if key in a else ABSENT,
                                  "present" if key in b else ABSENT))
            continue
        for path, x, y in leaves(a[key], b[key]):
            out.append(Difference(scenario, snapshot, kind, name, path, x, y))
    return out


def compare(a: SideRun, b: SideRun) -> list[Difference]:
    """Every difference over the scenarios and snapshots both sides have; a snapshot one side lacks (a
    scenario that failed there) is one difference saying so."""
    out: list[Difference] = []
    for scenario in sorted(set(a.snapshots) | set(b.snapshots)):
        sa, sb = a.snapshots.get(scenario, {}), b.snapshots.get(scenario, {})
        for snap in list(dict.fromkeys([*sa, *sb])):
            if snap not in sa or snap not in sb:
                out.append(Difference(scenario, snap, "(snapshot)", "", "(snapshot)",
                                      "taken" if snap in sa else a.failures.get(scenario, ABSENT),
                                      "taken" if snap in sb else b.failures.get(scenario, ABSENT)))
                continue
            out.extend(differences(scenario, snap, sa[snap], sb[snap]))
    return out


def rows(diffs: Sequence[Difference], keys: Sequence[str | None] | None = None) -> list[Row]:
    """Differences with equal scenario, snapshot, kind, path and values as one row naming every object; `keys`
    (aligned with `diffs`) are their dispositions."""
    groups: dict[tuple[str, str, str, str, str, str], list[tuple[Difference, str | None]]] = {}
    for i, d in enumerate(diffs):
        groups.setdefault((d.scenario, d.snapshot, d.kind, d.path, repr(d.a), repr(d.b)), []).append(
            (d, keys[i] if keys is not None else None))
    out = []
    for (scenario, snapshot, kind, path, _, _), items in groups.items():
        first, disposition = items[0]
        out.append(Row(scenario, snapshot, kind, path, first.a, first.b,
                       tuple(sorted({d.obj for d, _ in items})), disposition))
    return out
