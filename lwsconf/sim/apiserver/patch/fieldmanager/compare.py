"""structured-merge-diff's comparison of two objects: which fields were added, modified and removed.

A port of `typed.compareWalker` (sigs.k8s.io/structured-merge-diff typed/compare.go), on JSON values with
`types.FieldType` for the schema:

* a scalar, an atomic map or list, and a map or list empty (or null) on both sides is a leaf: added when
  absent on the left, removed when absent on the right, modified when the values differ;
* a granular map compares key by key, an associative list or set element by element (matched by their
  `k:{...}` / `v:...` path element, not by position);
* any other field absent on one side is itself added or removed as well as everything beneath it, which is
  why a map a write brings shows as a `.` member in FieldsV1 while a struct already present in the
  empty object does not. A field present but null on the left (a nil Go slice) is not "added".

Path elements are the FieldsV1 ones `apply` uses (`f:name`, `k:{"name":"a"}`, `v:"x"`). No I/O here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lwsconf.sim.apiserver.patch import merge_patches
from lwsconf.sim.apiserver.patch.fieldmanager.types import FieldType, Path

MISSING: Any = object()
"""A field absent from one side (as opposed to present and null)."""


@dataclass
class Comparison:
    """The fields that differ between two objects, as FieldsV1 paths."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    @property
    def changed(self) -> set[Path]:
        """Added or modified: what a write sets, and what it takes from other managers."""
        return self.added | self.modified


def compare(lhs: Any, rhs: Any, root: FieldType) -> Comparison:
    """Compare the object `lhs` (before) with `rhs` (after)."""
    out = Comparison()
    _compare(lhs, rhs, root, (), out)
    return out


def element(item: Any, t: FieldType) -> str | None:
    """The path element of an element of the associative list or set `t`; None when it has none (an element
    lacking a key field without a schema default: structured-merge-diff refuses such a list)."""
    if t.as_set:
        if isinstance(item, (dict, list)):
            return None
        return "v:" + json.dumps(item, separators=(",", ":"))
    if not isinstance(item, dict):
        return None
    key: dict[str, Any] = {}
    for name in t.keys:
        if name in item:
            key[name] = item[name]
        elif name in t.key_defaults:
            key[name] = t.key_defaults[name]
        else:
            return None
    return "k:" + json.dumps(key, separators=(",", ":"), sort_keys=True)


def _compare(lhs: Any, rhs: Any, t: FieldType, path: Path, out: Comparison) -> None:
    if lhs is not MISSING and type(lhs) is type(rhs) and lhs == rhs:
        return  # equal on both sides: nothing added, modified or removed beneath (most of an update)
    if not _descend(lhs, rhs, t, path, out):
        _leaf(lhs, rhs, path, out)
        return
    if lhs is MISSING:
        out.added.add(path)
    elif rhs is MISSING:
        out.removed.add(path)


def _leaf(lhs: Any, rhs: Any, path: Path, out: Comparison) -> None:
    if lhs is MISSING:
        out.added.add(path)
    elif rhs is MISSING:
        out.removed.add(path)
    elif merge_patches.identity(lhs) != merge_patches.identity(rhs):
        out.modified.add(path)


def _descend(lhs: Any, rhs: Any, t: FieldType, path: Path, out: Comparison) -> bool:
    """Compare the members of a granular map or list; False when the field is a leaf."""
    if t.atomic:
        return False
    if _shape(lhs, dict) and _shape(rhs, dict) and (isinstance(lhs, dict) or isinstance(rhs, dict)):
        left, right = _as(lhs, dict), _as(rhs, dict)
        if not left and not right:
            return False
        for key in [*left, *(k for k in right if k not in left)]:
            _compare(left.get(key, MISSING), right.get(key, MISSING), t.child(key), (*path, f"f:{key}"), out)
        return True
    if _shape(lhs, list) and _shape(rhs, list) and (isinstance(lhs, list) or isinstance(rhs, list)):
        left_items, right_items = _as(lhs, list), _as(rhs, list)
        if not t.granular_list or (not left_items and not right_items):
            return False
        item_type = t.item()
        left_by, right_by = _index(left_items, t), _index(right_items, t)
        if left_by is None or right_by is None:
            return False
        for pe in [*left_by, *(k for k in right_by if k not in left_by)]:
            lefts, rights = left_by.get(pe, []), right_by.get(pe, [])
            here = (*path, pe)
            if len(lefts) <= 1 and len(rights) <= 1:
                _compare(lefts[0] if lefts else MISSING, rights[0] if rights else MISSING, item_type, here, out)
            elif len(lefts) >= 2 and len(rights) >= 2:
                if [merge_patches.identity(v) for v in lefts] != [merge_patches.identity(v) for v in rights]:
                    out.modified.add(here)
            elif len(lefts) >= 2:
                out.removed.add(here)
            else:
                out.added.add(here)
        return True
    return False


def _shape(value: Any, kind: type) -> bool:
    """`value` may stand for a `kind` (a dict or list): it is one, or absent, or null."""
    return value is MISSING or value is None or isinstance(value, kind)


def _as(value: Any, kind: type) -> Any:
    return value if isinstance(value, kind) else kind()


def _index(items: list[Any], t: FieldType) -> dict[str, list[Any]] | None:
    by: dict[str, list[Any]] = {}
    for item in items:
        pe = element(item, t)
        if pe is None:
            return None
        by.setdefault(pe, []).append(item)
    return by
