"""Server-side Table printing (`meta.k8s.io/v1` `Table`) for `kubectl get`.

kubectl asks every list, get and watch for `application/json;as=Table;v=v1;g=meta.k8s.io,...` and
prints the rows it gets back; a plain list makes it fall back to a bare `NAME AGE` listing
(seen with kubectl 1.37 at -v=6). Rendering tables here lets `kubectl get lws` show a CRD's
`additionalPrinterColumns` and `kubectl get pods` show READY/STATUS/RESTARTS as a real cluster does,
which is what people debugging a conformance run look at. `kubectl get -w` also receives one-row
Tables per watch event.

This module renders the Table (content negotiation, rows, `includeObject`, watch events) and owns the
columns of custom resources; the columns of built-in kinds are in `columns`, the `Column` type and cell
helpers in `cells`. CRD cells are computed as kube-apiserver does: by a small JSONPath subset (`.a.b`,
`.a[0]`, `.a[*].b`, `.a[?(@.type=="Ready")].status`, `['dotted.key']`), first match only, typed by the
column `type`; `date` cells rendered like kubectl's Age (`5s`, `3m2s`, `2d4h`). Pure: no I/O here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lwsconf.sim.apiserver.storage import resources
from lwsconf.sim.apiserver.tables import cells
from lwsconf.sim.apiserver.tables import columns as tc

Obj = dict[str, Any]

_NAME_DESC = "Name must be unique within a namespace."


def wants_table(accept_header: str) -> bool:
    """Whether an `Accept` header asks for a `meta.k8s.io/v1` Table (as kubectl get does)."""
    for media in accept_header.split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in media.split(";")[1:])}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") == "v1":
            return True
    return False


def to_table(
    info: resources.ResourceInfo,
    objects: list[Obj],
    *,
    list_meta: dict[str, Any],
    include_object: str = "Metadata",
    now: datetime | None = None,
) -> dict[str, Any]:
    """Render objects as a `meta.k8s.io/v1` Table.

    Args:
        info: the resource type, which picks the columns.
        objects: the objects to print (a LIST's items, or the one object of a GET).
        list_meta: the list's `metadata` (`resourceVersion`, `continue`, ...), copied as is.
        include_object: the `includeObject` query parameter: `Metadata` (the default) embeds a
            `PartialObjectMetadata` per row, `Object` the full object, `None` nothing.
        now: the clock for Age cells; the current UTC time when None.

    Returns:
        The Table document.
    """
    clock = now or datetime.now(UTC)
    columns = columns_for(info)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
        "columnDefinitions": [c.definition() for c in columns],
        "rows": [_row(columns, obj, clock, include_object) for obj in objects],
    }


def to_table_watch_event(
    info: resources.ResourceInfo, event_type: str, obj: Obj, *, now: datetime | None = None
) -> dict[str, Any]:
    """Wrap one watch event for a watch that asked for Tables (`kubectl get -w`).

    ADDED/MODIFIED/DELETED carry a Table with one row; a BOOKMARK carries an empty Table holding the
    bookmark's resourceVersion; an ERROR keeps its `Status` object.
    """
    if event_type == "ERROR":
        return {"type": event_type, "object": obj}
    rv = obj.get("metadata", {}).get("resourceVersion", "")
    if event_type == "BOOKMARK":
        table = to_table(info, [], list_meta={"resourceVersion": rv}, now=now)
        table["columnDefinitions"] = []
    else:
        table = to_table(info, [obj], list_meta={"resourceVersion": rv}, now=now)
    return {"type": event_type, "object": table}


def columns_for(info: resources.ResourceInfo) -> list[cells.Column]:
    """Name first, then the CRD's printer columns, a built-in's usual columns, or Age (events: their own)."""
    if (info.group, info.plural) in tc.FULL_COLUMNS:
        return tc.FULL_COLUMNS[(info.group, info.plural)]
    name = cells.Column("Name", "string", lambda o, _: o.get("metadata", {}).get("name", ""),
                     format="name", description=_NAME_DESC)
    if info.printer_columns:
        return [name, *(_crd_column(spec) for spec in info.printer_columns)]
    return [name, *tc.BUILTIN_COLUMNS.get((info.group, info.plural), [cells.AGE])]


def jsonpath(obj: Any, path: str) -> list[Any]:
    """Evaluate a CRD printer-column JSONPath subset; returns every match (possibly none).

    Raises:
        ValueError: the path uses syntax outside the supported subset.
    """
    values = [obj]
    for step in _parse_path(path):
        values = [v for current in values for v in step(current)]
    return values


# --- custom resource columns -------------------------------------------------------------------


def _crd_column(spec: dict[str, Any]) -> cells.Column:
    col_type = str(spec.get("type", "string"))
    path = str(spec.get("jsonPath", ""))

    def cell(obj: Obj, now: datetime) -> Any:
        try:
            found = jsonpath(obj, path)
        except ValueError:
            return None
        return _typed_cell(col_type, found[0], now) if found else None

    return cells.Column(str(spec.get("name", "")), col_type, cell, priority=int(spec.get("priority", 0)),
                     format=str(spec.get("format", "")), description=str(spec.get("description", "")))


def _typed_cell(col_type: str, value: Any, now: datetime) -> Any:
    if col_type == "date":
        return cells.age(value, now)
    if col_type == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if col_type == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if col_type == "integer" else value


def _row(columns: list[cells.Column], obj: Obj, now: datetime, include_object: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": [c.cell(obj, now) for c in columns]}
    if include_object == "Object":
        row["object"] = obj
    elif include_object != "None":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": obj.get("metadata", {})}
    return row


# --- JSONPath subset ---------------------------------------------------------------------------

_Step = Callable[[Any], list[Any]]
_TOKEN = re.compile(
    r"""\.(?P<field>(?:[^.\[\]\\]|\\.)+)"""
    r"""|\[(?P<index>-?\d+|\*)\]"""
    r"""|\[['"](?P<key>[^'"]+)['"]\]"""
    r"""|\[\?\(@\.(?P<fpath>[\w.\-/]+)\s*==\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<num>-?\d+))\)\]"""
)


def _parse_path(path: str) -> list[_Step]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.removeprefix("$")
    steps: list[_Step] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"unsupported JSONPath {path!r} at offset {pos}")
        steps.append(_step(match))
        pos = match.end()
    return steps


def _step(match: re.Match[str]) -> _Step:
    if match["field"] is not None or match["key"] is not None:
        key = match["key"] or re.sub(r"\\(.)", r"\1", match["field"])
        return lambda v: [v[key]] if isinstance(v, dict) and key in v else []
    if match["index"] == "*":
        return lambda v: list(v) if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else []
    if match["index"] is not None:
        index = int(match["index"])
        return lambda v: [x] if (x := cells.value_at(v, index)) is not None else []
    fpath = match["fpath"].split(".")
    want = match["dq"] if match["dq"] is not None else match["sq"]
    num = match["num"]

    def keep(item: Any) -> bool:
        got = cells.value_at(item, *fpath)
        return bool(got == int(num)) if num is not None else bool(got == want)

    return lambda v: [x for x in v if keep(x)] if isinstance(v, list) else []
