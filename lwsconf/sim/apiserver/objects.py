"""Small helpers over object dicts: timestamps, uids, generated names, spec/status comparison. No I/O."""

from __future__ import annotations

import copy
import datetime
import json
import secrets
import uuid
from typing import Any

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The alphabet the apiserver uses for generateName suffixes (no vowels, no confusable digits)."""


def now_rfc3339() -> str:
    """UTC now with second precision, the form metav1.Time serializes to."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    """UTC now with microseconds, as metav1.MicroTime (events.k8s.io eventTime, Lease renewTime)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    """`generateName` + 5 random characters, as the apiserver's SimpleNameGenerator does."""
    return prefix + "".join(secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))


def deep_copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A private copy of a stored object; JSON round-trip is faster than copy.deepcopy for these."""
    try:
        return json.loads(json.dumps(obj))  # type: ignore[no-any-return]
    except (TypeError, ValueError):
        return copy.deepcopy(obj)


def without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether anything outside metadata and status differs: the rule for bumping `generation`."""
    return without(old, "metadata", "status") != without(new, "metadata", "status")


def get_path(obj: Any, path: str) -> Any:
    """Read a `.a.b.c` path (CRD scale paths); None when any step is missing."""
    cur = obj
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    """Write a `.a.b.c` path, creating intermediate objects."""
    parts = path.strip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[parts[-1]] = value
