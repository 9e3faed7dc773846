"""A `kubectl get` Table column and the cell helpers every column uses: Age cells and kubectl's `HumanDuration`
(`5s`, `3m2s`, `2d4h`), timestamps, values at a path.

Kept apart from `columns` (each built-in kind's columns) so that `tables` (custom resources' printer columns)
and `columns` share them without `tables` reaching into the built-in kinds' table. Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

Obj = dict[str, Any]
Cell = Callable[[Obj, datetime], Any]
"""Computes one cell from the object and the clock for Age-like cells."""

_AGE_DESC = "CreationTimestamp is a timestamp representing the server time when this object was created."


@dataclass(frozen=True)
class Column:
    """One Table column: its `columnDefinitions` entry plus how to compute the cell."""

    name: str
    type: str
    cell: Cell
    priority: int = 0
    format: str = ""
    description: str = ""

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


def human_duration(seconds: float) -> str:
    """Render an age as kubectl does (`HumanDuration`): `45s`, `3m2s`, `15m`, `5h3m`, `2d4h`, `3y10d`."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 120:
        return f"{max(s, 0)}s"
    m, h, d = s // 60, s // 3600, s // 86400
    if m < 10:
        return _two_units(m, "m", s % 60, "s")
    if h < 3:
        return f"{m}m"
    if h < 8:
        return _two_units(h, "h", m % 60, "m")
    if h < 48:
        return f"{h}h"
    if d < 8:
        return _two_units(d, "d", h % 24, "h")
    if d < 365 * 2:
        return f"{d}d"
    if d < 365 * 8:
        return _two_units(d // 365, "y", d % 365, "d")
    return f"{d // 365}y"


def _two_units(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" if small == 0 else f"{big}{big_unit}{small}{small_unit}"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp, or None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(value: Any, now: datetime) -> str | None:
    """How long before `now` the timestamp `value` was, as kubectl prints it; None if not a timestamp."""
    stamp = parse_time(value)
    return None if stamp is None else human_duration((now - stamp).total_seconds())


def value_at(obj: Any, *keys: str | int) -> Any:
    """The value under `keys` (map keys and list indexes), or None where the path stops."""
    for key in keys:
        if isinstance(key, int):
            obj = obj[key] if isinstance(obj, list) and -len(obj) <= key < len(obj) else None
        else:
            obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


AGE = Column("Age", "string", lambda o, now: age(value_at(o, "metadata", "creationTimestamp"), now),
              description=_AGE_DESC)
