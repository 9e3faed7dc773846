"""Applying a mutating webhook's JSON patch as kube-apiserver does, with `gopkg.in/evanphx/json-patch.v4`.

kube-apiserver applies webhook patches with json-patch v4 (`mutating/dispatcher.go`), whose rules differ from
RFC 6902 in ways a webhook can observe, so they are followed here for objects and arrays (`patch.go`):
`replace` of a missing object key adds it; `test` of a missing key passes when the value is null; a patch
that does not apply fails with the library's own words (`error in remove for path: '/data/x': Unable to
remove nonexistent key: x: missing value`, `add operation does not apply: doc is missing path: "/a/b":
missing value`, `testing value /x failed: test failed`...), which kube-apiserver returns as a 500
`Internal error occurred: <words>` whatever the webhook's failurePolicy. `move` and `copy` run through the
`jsonpatch` library (RFC 6902), an error there worded by that library. No I/O here.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer


class PatchFailed(Exception):
    """The patch does not apply; the message is json-patch v4's."""


def apply(obj: dict[str, Any], ops: list[Any]) -> Any:
    """The patched copy of `obj` (which is left alone)."""
    doc: Any = copy.deepcopy(obj)
    for op in ops:
        if not isinstance(op, dict):
            raise PatchFailed("Unexpected kind: unknown")
        kind = op.get("op")
        if kind in ("add", "remove", "replace", "test"):
            doc = _ONE[kind](doc, op)
        elif kind in ("move", "copy"):
            try:
                doc = jsonpatch.JsonPatch([op]).apply(doc)
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
                raise PatchFailed(f"{kind} operation does not apply: {exc}") from None
        else:
            raise PatchFailed(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
    return doc


def _path(op: dict[str, Any], kind: str) -> str:
    path = op.get("path")
    if not isinstance(path, str):
        raise PatchFailed(f"{kind} operation failed to decode path: missing value")
    return path


def _find(doc: Any, path: str) -> tuple[Any, str] | None:
    """`findObject`: the container holding the path's last segment, and that segment; None when missing."""
    split = path.split("/")
    if len(split) < 2:
        return None
    for part in split[1:-1]:
        key = _decode(part)
        if isinstance(doc, dict):
            nxt = doc.get(key)
        elif isinstance(doc, list):
            index = _index(key, len(doc))
            nxt = doc[index] if index is not None and index < len(doc) else None
        else:
            return None
        if not isinstance(nxt, (dict, list)):
            return None
        doc = nxt
    return doc, _decode(split[-1])


def _decode(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _index(key: str, length: int) -> int | None:
    try:
        index = int(key)
    except ValueError:
        return None
    return index + length if index < 0 else index


def _invalid_index(key: str) -> str:
    return f"Unable to access invalid index: {key}: invalid index referenced"


def _add(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "add")
    found = _find(doc, path)
    if found is None:
        raise PatchFailed(f'add operation does not apply: doc is missing path: "{path}": missing value')
    con, key = found
    if isinstance(con, dict):
        con[key] = op.get("value")
        return doc
    index = len(con) if key == "-" else _index(key, len(con))
    if index is None or not 0 <= index <= len(con):
        raise PatchFailed(f"error in add for path: '{path}': {_invalid_index(key)}")
    con.insert(index, op.get("value"))
    return doc


def _remove(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "remove")
    found = _find(doc, path)
    if found is None:
        raise PatchFailed(f'remove operation does not apply: doc is missing path: "{path}": missing value')
    con, key = found
    if isinstance(con, dict):
        if key not in con:
            raise PatchFailed(f"error in remove for path: '{path}': Unable to remove nonexistent key: {key}: "
                              "missing value")
        del con[key]
        return doc
    index = _index(key, len(con))
    if index is None or not 0 <= index < len(con):
        raise PatchFailed(f"error in remove for path: '{path}': {_invalid_index(key)}")
    del con[index]
    return doc


def _replace(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "replace")
    if path == "":
        value = op.get("value")
        if not isinstance(value, (dict, list)):
            raise PatchFailed("replace operation value must be object or array: <nil>")
        return value
    found = _find(doc, path)
    if found is None:
        raise PatchFailed(f"replace operation does not apply: doc is missing path: {path}: missing value")
    con, key = found
    if isinstance(con, dict):
        con[key] = op.get("value")  # v4: a missing key is set, not refused
        return doc
    index = _index(key, len(con))
    if index is None or not 0 <= index < len(con):
        raise PatchFailed(f"replace operation does not apply: doc is missing key: {path}: missing value")
    con[index] = op.get("value")
    return doc


def _test(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "test")
    if path == "":
        if doc != op.get("value"):
            raise PatchFailed(f"testing value {path} failed: test failed")
        return doc
    found = _find(doc, path)
    if found is None:
        raise PatchFailed(f"test operation does not apply: is missing path: {path}: missing value")
    con, key = found
    if isinstance(con, dict):
        current = con.get(key)
    else:
        index = _index(key, len(con))
        if index is None or not 0 <= index < len(con):
            raise PatchFailed(f"error in test for path: '{path}': {_invalid_index(key)}")
        current = con[index]
    if current != op.get("value"):
        raise PatchFailed(f"testing value {path} failed: test failed")
    return doc


_ONE = {"add": _add, "remove": _remove, "replace": _replace, "test": _test}
