"""Small helpers over object dicts: timestamps, uids, generated names, spec/status comparison. No I/O."""

from __future__ import annotations

import datetime
import re
import secrets
import uuid
from typing import Any

from lwsconf import jsoncodec
from lwsconf.sim.apiserver.apimachinery import errors

MAX_NESTING = 200
"""Objects nested deeper are refused (400). kube-apiserver's JSON decoder stops at 10000 levels; the sim's
handlers recurse over objects, so it stops earlier, far beyond any real object (a CRD schema nests ~40)."""
MAX_VALUES = 1_000_000
"""A decoded body may hold at most this many values (each counted once per reference). Only YAML aliases get
there from a body under the 3 MiB cap (a "billion laughs" body) short of a list of a million numbers, which
no Kubernetes object is; kube-apiserver's YAML decoder likewise refuses "excessive aliasing". Counting stops
at the cap, so refusing a bomb costs a bounded walk."""

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


MAX_GENERATED_PREFIX = 58
"""apiserver names.SimpleNameGenerator's maxGeneratedNameLength: 63 less the 5 random characters."""


def generated_name(prefix: str) -> str:
    """`generateName` (cut to its first 58 characters, so the name fits 63) + 5 random characters, as the
    apiserver's SimpleNameGenerator does; a longer prefix made a 64+ character name before (issue 33's probe:
    a 70-character prefix gave 75 characters, kube-apiserver 63)."""
    return prefix[:MAX_GENERATED_PREFIX] + "".join(secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))


def admission_name(obj: dict[str, Any] | None, name: str = "") -> str:
    """The name an admission refusal gives a request's object (apiserver admission `extractResourceName`): the
    request's `name`, else the object's, else its generateName (a name has not been generated yet), else
    "Unknown"."""
    meta = (obj or {}).get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    given = [v for v in (name, meta.get("name"), meta.get("generateName")) if isinstance(v, str) and v]
    return given[0] if given else "Unknown"


def deep_copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A private copy of a stored object (a JSON round-trip through orjson: lwsconf.jsoncodec)."""
    return jsoncodec.copy(obj)  # type: ignore[no-any-return]


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


def check_size(obj: Any) -> None:
    """400 when a decoded body nests deeper than `MAX_NESTING` or expands to more than `MAX_VALUES` values.

    Run before anything recurses over a decoded body. Walks without recursion, counting a value each time
    it is reached, so shared (YAML-aliased) values count once per reference, as they would once serialized.
    """
    stack: list[tuple[Any, int]] = [(obj, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if depth > MAX_NESTING:
            raise errors.bad_request(f"the body is nested more than {MAX_NESTING} levels deep; flatten it")
        if count > MAX_VALUES:
            raise errors.bad_request(f"the body expands to more than {MAX_VALUES} values (YAML aliases?); "
                                     "send it without anchors and aliases")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


_YAML_QUOTED = re.compile(rb'"(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'')
_YAML_BRACKETS = re.compile(rb"[\[\]{}]")


def check_yaml_depth(data: bytes) -> None:
    """400 when YAML flow collections ([...] and {...}) nest deeper than `MAX_NESTING`, before parsing.

    PyYAML's scanner is slow on deep flow nesting (seconds for 100,000 levels, blocking the event loop),
    so the depth is read from the bracket characters outside quoted scalars first. Brackets inside plain
    scalars or comments can only overcount, which matters only to bodies far deeper than any object.
    """
    depth = deepest = 0
    for match in _YAML_BRACKETS.finditer(_YAML_QUOTED.sub(b"", data)):
        depth += 1 if match.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            raise errors.bad_request(f"the body is nested more than {MAX_NESTING} levels deep; flatten it")
