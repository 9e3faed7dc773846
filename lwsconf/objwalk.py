"""Walking decoded JSON objects: the one traversal the differential tools' normalisers share.

`lwsconf fidelity` and `lwsconf diff-impls` both rewrite API objects in place (uids, times, generated names)
before they compare them; each rule sees every mapping of the object, parents first, so a rule may change a
mapping's children before they are visited. Pure: no I/O, stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def walk_dicts(value: Any, fn: Callable[[dict[str, Any]], None]) -> None:
    """Call `fn` on every dict inside `value` (depth first, parents before children)."""
    if isinstance(value, dict):
        fn(value)
        for child in value.values():
            walk_dicts(child, fn)
    elif isinstance(value, list):
        for child in value:
            walk_dicts(child, fn)
