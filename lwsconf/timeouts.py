"""Named timeouts for every wait in the conformance suite (Gateway API's TimeoutConfig).

Each field bounds one kind of wait and says what it bounds. Values separate *function* from
*performance*: a slow but correct implementation passes once its timeouts are raised, which is what
`--timeout-config FILE` (YAML: `fieldName: seconds` or `FieldName: 30s`) and
`--timeout-overrides "LwsAvailable:300;GroupRecreated:120"` are for (overrides win over the file,
the file over the backend's defaults). Unknown names and bad durations are errors naming the source.
No I/O here except reading the file you name.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml


@dataclass(frozen=True)
class Timeouts:
    create: float = 10.0
    """An object the test created is visible (and a created LWS has its leader StatefulSet)."""
    delete: float = 30.0
    """An object (and its dependents, for foreground deletion) is gone."""
    pods_running: float = 30.0
    """Pods of a workload are Running and Ready."""
    lws_available: float = 60.0
    """A LeaderWorkerSet reports Available=True with every group ready."""
    group_recreated: float = 60.0
    """A group is replaced after a failure: new pod UIDs, Ready again."""
    rollout_complete: float = 120.0
    """A rolling update finishes: every group on the new revision and Available."""
    scale_complete: float = 60.0
    """A scale up or down settles."""
    service_endpoints: float = 30.0
    """A Service's EndpointSlices list the expected addresses."""
    namespace_deleted: float = 60.0
    """A test namespace is fully removed at cleanup."""
    max_time_to_consistency: float = 30.0
    """Eventually consistent checks (traffic routing) must hold this long at most to converge."""
    required_consecutive_successes: int = 3
    """How many consecutive passes an eventually consistent check needs."""
    request_timeout: float = 10.0
    """One HTTP request to a workload through the API server proxy."""
    poll_interval: float = 0.1
    """Between two polls of a wait (watches wake earlier)."""
    stays_true: float = 2.0
    """How long a 'never happens' claim is observed (e.g. no worker StatefulSet before the leader is Ready)."""
    controller_restart: float = 30.0
    """The implementation's controller is stopped and started again (a process, or a Deployment's rollout)."""
    model_ready: float = 1200.0
    """GPU smoke: a vLLM server loads its model and answers (GPU clusters only)."""


TimeoutName = Literal[
    "create", "delete", "pods_running", "lws_available", "group_recreated", "rollout_complete", "scale_complete",
    "service_endpoints", "namespace_deleted", "max_time_to_consistency", "request_timeout", "stays_true",
    "controller_restart", "model_ready",
]
"""The name of a timeout a wait may be bounded by (every field in seconds), so a call site names its timeout
(`lws.wait(check, within="rollout_complete")`) and mypy catches a misspelt one."""

FIELDS = {f.name for f in dataclasses.fields(Timeouts)}
_SECONDS = FIELDS - {"required_consecutive_successes", "poll_interval"}
if set(get_args(TimeoutName)) != _SECONDS:  # a field added without its name here, or the reverse
    raise RuntimeError(f"TimeoutName {sorted(get_args(TimeoutName))} != Timeouts' wait fields {sorted(_SECONDS)}")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def field_name(name: str) -> str:
    """Accept `lws_available`, `LwsAvailable` or `LWSAvailable` for the same field."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip()).lower()
    return snake.replace("l_w_s", "lws")


def parse_duration(value: Any, *, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"invalid duration {value!r} in {where}; use seconds (30) or 30s, 500ms, 5m, 1h")
    number, unit = float(match.group(1)), match.group(2) or "s"
    return number * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def _apply(base: Timeouts, values: dict[str, Any], where: str) -> Timeouts:
    changes: dict[str, Any] = {}
    for raw, value in values.items():
        name = field_name(raw)
        if name not in FIELDS:
            raise ValueError(f"unknown timeout {raw!r} in {where}; known timeouts: {', '.join(sorted(FIELDS))}")
        seconds = parse_duration(value, where=f"{where} ({raw})")
        changes[name] = int(seconds) if name == "required_consecutive_successes" else seconds
    return dataclasses.replace(base, **changes)


def load(defaults: Timeouts, *, config_file: Path | None = None, overrides: str | None = None) -> Timeouts:
    """The backend's defaults (`ClusterBackend.default_timeouts`), then the YAML file, then the
    `Name:seconds;...` overrides."""
    result = defaults
    if config_file is not None:
        data = yaml.safe_load(Path(config_file).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"--timeout-config {config_file}: expected a mapping of timeout names to durations")
        result = _apply(result, data, f"--timeout-config {config_file}")
    if overrides:
        pairs = {}
        for item in filter(None, (p.strip() for p in overrides.split(";"))):
            if ":" not in item:
                raise ValueError(f"--timeout-overrides: {item!r} is not Name:seconds")
            key, _, value = item.partition(":")
            pairs[key] = value
        result = _apply(result, pairs, "--timeout-overrides")
    return result
