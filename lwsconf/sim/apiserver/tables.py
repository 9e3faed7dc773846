"""Server-side Table printing (`meta.k8s.io/v1` `Table`) for `kubectl get`.

kubectl asks every list, get and watch for `application/json;as=Table;v=v1;g=meta.k8s.io,...` and
prints the rows it gets back; a plain list makes it fall back to a bare `NAME AGE` listing
(design/sim-wire-facts.md section 3a). Rendering tables here lets `kubectl get lws` show a CRD's
`additionalPrinterColumns` and `kubectl get pods` show READY/STATUS/RESTARTS as a real cluster does,
which is what people debugging a conformance run look at. `kubectl get -w` also receives one-row
Tables per watch event.

Cells are computed as kube-apiserver does: CRD columns by a small JSONPath subset (`.a.b`, `.a[0]`,
`.a[*].b`, `.a[?(@.type=="Ready")].status`, `['dotted.key']`), first match only, typed by the column
`type`; `date` cells and Age rendered like kubectl (`5s`, `3m2s`, `2d4h`). Pure: no I/O here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lwsconf.sim.apiserver import resources, selectors

Obj = dict[str, Any]
Cell = Callable[[Obj, datetime], Any]

_NAME_DESC = "Name must be unique within a namespace."
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


def columns_for(info: resources.ResourceInfo) -> list[Column]:
    """Name first, then the CRD's printer columns, a built-in's usual columns, or Age."""
    name = Column("Name", "string", lambda o, _: o.get("metadata", {}).get("name", ""),
                  format="name", description=_NAME_DESC)
    if info.printer_columns:
        return [name, *(_crd_column(spec) for spec in info.printer_columns)]
    return [name, *_BUILTIN_COLUMNS.get((info.group, info.plural), [_AGE])]


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


def jsonpath(obj: Any, path: str) -> list[Any]:
    """Evaluate a CRD printer-column JSONPath subset; returns every match (possibly none).

    Raises:
        ValueError: the path uses syntax outside the supported subset.
    """
    values = [obj]
    for step in _parse_path(path):
        values = [v for current in values for v in step(current)]
    return values


# --- cells and columns ------------------------------------------------------------------------


def _two_units(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" if small == 0 else f"{big}{big_unit}{small}{small_unit}"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _age(value: Any, now: datetime) -> str | None:
    stamp = _parse_time(value)
    return None if stamp is None else human_duration((now - stamp).total_seconds())


def _get(obj: Any, *keys: str | int) -> Any:
    for key in keys:
        if isinstance(key, int):
            obj = obj[key] if isinstance(obj, list) and -len(obj) <= key < len(obj) else None
        else:
            obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


_AGE = Column("Age", "string", lambda o, now: _age(_get(o, "metadata", "creationTimestamp"), now),
              description=_AGE_DESC)


def _crd_column(spec: dict[str, Any]) -> Column:
    col_type = str(spec.get("type", "string"))
    path = str(spec.get("jsonPath", ""))

    def cell(obj: Obj, now: datetime) -> Any:
        try:
            found = jsonpath(obj, path)
        except ValueError:
            return None
        return _typed_cell(col_type, found[0], now) if found else None

    return Column(str(spec.get("name", "")), col_type, cell, priority=int(spec.get("priority", 0)),
                  format=str(spec.get("format", "")), description=str(spec.get("description", "")))


def _typed_cell(col_type: str, value: Any, now: datetime) -> Any:
    if col_type == "date":
        return _age(value, now)
    if col_type == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if col_type == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if col_type == "integer" else value


def _row(columns: list[Column], obj: Obj, now: datetime, include_object: str) -> dict[str, Any]:
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
        return lambda v: [x] if (x := _get(v, index)) is not None else []
    fpath = match["fpath"].split(".")
    want = match["dq"] if match["dq"] is not None else match["sq"]
    num = match["num"]

    def keep(item: Any) -> bool:
        got = _get(item, *fpath)
        return bool(got == int(num)) if num is not None else bool(got == want)

    return lambda v: [x for x in v if keep(x)] if isinstance(v, list) else []


# --- built-in columns ---------------------------------------------------------------------------


def _pod_ready(pod: Obj, _: datetime) -> str:
    statuses = _get(pod, "status", "containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    return f"{ready}/{len(_get(pod, 'spec', 'containers') or [])}"


def _pod_status(pod: Obj, _: datetime) -> str:
    reason = str(_get(pod, "status", "reason") or _get(pod, "status", "phase") or "Unknown")
    running = False
    for status in reversed(_get(pod, "status", "containerStatuses") or []):
        waiting = _get(status, "state", "waiting", "reason")
        terminated = _get(status, "state", "terminated", "reason")
        if waiting:
            reason = waiting
        elif terminated:
            reason = terminated
        elif status.get("ready") and _get(status, "state", "running") is not None:
            running = True
    if reason == "Completed" and running:
        reason = "Running"
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Terminating"
    return reason


def _pod_restarts(pod: Obj, now: datetime) -> int | str:
    statuses = _get(pod, "status", "containerStatuses") or []
    total = sum(int(s.get("restartCount", 0)) for s in statuses)
    finished = [t for s in statuses if (t := _parse_time(_get(s, "lastState", "terminated", "finishedAt")))]
    if total and finished:
        return f"{total} ({human_duration((now - max(finished)).total_seconds())} ago)"
    return total


def _pod_readiness_gates(pod: Obj, _: datetime) -> str:
    """`<true>/<gates>` over spec.readinessGates, `<none>` without gates (printPod in printers.go)."""
    gates = _get(pod, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in _get(pod, "status", "conditions") or []}
    met = sum(1 for gate in gates if conditions.get(gate.get("conditionType")) == "True")
    return f"{met}/{len(gates)}"


def _sts_ready(sts: Obj, _: datetime) -> str:
    return f"{_get(sts, 'status', 'readyReplicas') or 0}/{_get(sts, 'spec', 'replicas') or 0}"


def _svc_external_ip(svc: Obj, _: datetime) -> str:
    spec = svc.get("spec", {})
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        return str(spec.get("externalName", "<none>"))
    ips = list(spec.get("externalIPs", []))
    if kind == "LoadBalancer":
        ingress = _get(svc, "status", "loadBalancer", "ingress") or []
        ips += [i.get("ip") or i.get("hostname", "") for i in ingress]
        return ",".join(ips) or "<pending>"
    return ",".join(ips) or "<none>"


def _svc_ports(svc: Obj, _: datetime) -> str:
    out = []
    for port in _get(svc, "spec", "ports") or []:
        node = f":{port['nodePort']}" if port.get("nodePort") else ""
        out.append(f"{port.get('port')}{node}/{port.get('protocol', 'TCP')}")
    return ",".join(out) or "<none>"


def _node_status(node: Obj, _: datetime) -> str:
    ready = [c for c in _get(node, "status", "conditions") or [] if c.get("type") == "Ready"]
    status = "Unknown" if not ready else "Ready" if ready[0].get("status") == "True" else "NotReady"
    return status + (",SchedulingDisabled" if _get(node, "spec", "unschedulable") else "")


def _node_roles(node: Obj, _: datetime) -> str:
    prefix = "node-role.kubernetes.io/"
    labels = _get(node, "metadata", "labels") or {}
    roles = sorted(k.removeprefix(prefix) for k in labels if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _param_cell(obj: Obj, _: datetime) -> str:
    """A policy's `apiVersion/kind` of params, or a binding's `namespace|*/name` (or selector) of its param."""
    kind, ref = _get(obj, "spec", "paramKind"), _get(obj, "spec", "paramRef")
    if isinstance(kind, dict):
        return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"
    if isinstance(ref, dict) and (ref.get("name") or isinstance(ref.get("selector"), dict)):
        return (f"{ref.get('namespace') or '*'}/{ref['name']}" if ref.get("name")
                else str(selectors.LabelSelector.from_dict(ref["selector"])))
    return "<unset>"


def _field(*keys: str | int, default: Any = None) -> Cell:
    return lambda o, _: v if (v := _get(o, *keys)) is not None else default


_BUILTIN_COLUMNS: dict[tuple[str, str], list[Column]] = {
    ("", "pods"): [
        Column("Ready", "string", _pod_ready), Column("Status", "string", _pod_status),
        Column("Restarts", "string", _pod_restarts), _AGE,
        Column("IP", "string", _field("status", "podIP", default="<none>"), priority=1),
        Column("Node", "string", _field("spec", "nodeName", default="<none>"), priority=1),
        # kube-apiserver prints these two as well (pkg/printers/internalversion/printers.go,
        # podColumnDefinitions), so `kubectl get pods -o wide` has the same header as on a real cluster.
        Column("Nominated Node", "string", _field("status", "nominatedNodeName", default="<none>"), priority=1),
        Column("Readiness Gates", "string", _pod_readiness_gates, priority=1),
    ],
    ("apps", "statefulsets"): [Column("Ready", "string", _sts_ready), _AGE],
    ("", "services"): [
        Column("Type", "string", _field("spec", "type", default="ClusterIP")),
        Column("Cluster-IP", "string", _field("spec", "clusterIP", default="<none>")),
        Column("External-IP", "string", _svc_external_ip), Column("Port(s)", "string", _svc_ports), _AGE,
    ],
    ("", "nodes"): [
        Column("Status", "string", _node_status), Column("Roles", "string", _node_roles), _AGE,
        Column("Version", "string", _field("status", "nodeInfo", "kubeletVersion", default="")),
    ],
    ("", "namespaces"): [Column("Status", "string", _field("status", "phase", default="Active")), _AGE],
    # pkg/printers/internalversion/printers.go: printValidatingAdmissionPolicy(Binding).
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): [
        Column("Validations", "integer", lambda o, _: len(_get(o, "spec", "validations") or [])),
        Column("ParamKind", "string", _param_cell), _AGE,
    ],
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): [
        Column("PolicyName", "string", _field("spec", "policyName", default="")),
        Column("ParamRef", "string", _param_cell), _AGE,
    ],
    # printMutatingAdmissionPolicy(Binding): the same columns, with Mutations for Validations.
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): [
        Column("Mutations", "integer", lambda o, _: len(_get(o, "spec", "mutations") or [])),
        Column("ParamKind", "string", _param_cell), _AGE,
    ],
}
_BUILTIN_COLUMNS[("admissionregistration.k8s.io", "mutatingadmissionpolicybindings")] = _BUILTIN_COLUMNS[
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings")]
