"""The stage interpreter: which stage applies to an object, after how long, and what it does. No I/O.

A pod's life in the simulated kubelet is data (KWOK's idea: its Stage resources, kubernetes-sigs/kwok): YAML
`Stage` objects in `stages/<set>/`, each with a selector over the object, a delay and ordered
steps. This module only decides; the kubelet's `podworker` performs the resulting actions. Two kinds of object
are looked at:

* `Pod`: the pod as the agent sees it (its spec and the status the agent would write), plus a
  `sim` section with the agent's own facts (`.sim.admitted`, `.sim.sandbox`, `.sim.terminal`);
* `Container`: `{"pod": <that pod view>, "container": <the container spec>, "status": <its
  containerStatus>, "sim": {"emulated", "init", "sidecar", "state", "probes", "startAttempt"}}`, where `.sim.state`
  is the agent's container state (`pending`, `created`, `running`, `exited`, `backoff`, `done`).

Stage file fields (see README.md beside this module for the full reference):

    kind: Stage
    metadata: {name: container-start}
    spec:
      resourceRef: {kind: Container}           # Pod or Container
      selector:
        matchExpressions:                      # all must hold
        - {key: .sim.state, operator: In, values: [created]}
        - {key: .container.name, operator: In, valueFrom: '.pod.metadata.annotations["x"]', default: ""}
      weight: 0                                # among matching stages: weighted choice; all 0: first
      delay: {durationMilliseconds: 0, jitterDurationMilliseconds: 0, durationFrom: <path>}
      steps:                                   # each a one-key mapping; strings may use {.path},
                                               # a value {from: <path>, default: x} reads the object
      - event: {type: Normal, reason: Started, message: "Container started"}
      - start: {}

Operators: In, NotIn (also true when the field is missing), Exists, DoesNotExist, Gt, Lt (integers).
`valueFrom` reads the comparison values from the object (comma-separated for In/NotIn).
Per-object overrides: pod annotations `<stage>.stage.lwsconf.dev/delay`, `/jitter` (like "250ms",
"2s" or a number of milliseconds) and `/weight`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lwsconf.sim.nodes.stages import paths

OVERRIDE_PREFIX = "stage.lwsconf.dev"
KINDS = ("Pod", "Container")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
STEP_OPS: dict[str, frozenset[str]] = {
    "Pod": frozenset({"event", "createSandbox", "terminate", "fail", "delete"}),
    "Container": frozenset({"event", "start", "terminate", "probe", "log"}),
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_TEMPLATE = re.compile(r"\{(\.[^{}]*)\}")
_UNITS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0, None: 1.0}


class StageError(ValueError):
    """A stage file or a value read through a stage that cannot be used; the message says where."""


@dataclass(frozen=True)
class Expression:
    """One selector requirement."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    value_from: str | None = None
    default: str | None = None

    def holds(self, obj: Any) -> bool:
        actual = paths.render(paths.evaluate(self.key, obj))
        if self.operator == "Exists":
            return actual is not None
        if self.operator == "DoesNotExist":
            return actual is None
        wanted = self._values(obj)
        if wanted is None:
            return False
        if self.operator == "In":
            return actual is not None and actual in wanted
        if self.operator == "NotIn":
            return actual is None or actual not in wanted
        return _compare(actual, wanted[0] if wanted else None, self.operator)

    def _values(self, obj: Any) -> tuple[str, ...] | None:
        if self.value_from is None:
            return self.values
        raw = paths.render(paths.evaluate(self.value_from, obj))
        if raw is None:
            raw = self.default
        if raw is None:
            return None
        if self.operator in ("In", "NotIn"):
            return tuple(v.strip() for v in raw.split(","))
        return (raw,)


def _compare(actual: str | None, wanted: str | None, operator: str) -> bool:
    try:
        left, right = int(actual or ""), int(wanted or "")
    except ValueError:
        return False
    return left > right if operator == "Gt" else left < right


@dataclass(frozen=True)
class Delay:
    duration_ms: float = 0.0
    jitter_ms: float = 0.0
    duration_from: str | None = None
    jitter_from: str | None = None


@dataclass(frozen=True)
class Action:
    """One step with every template and `{from: path}` value resolved against the object."""

    op: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {self.op: dict(self.args)}


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str
    selector: tuple[Expression, ...]
    weight: int = 0
    delay: Delay = Delay()
    steps: tuple[Mapping[str, Any], ...] = ()
    source: str = ""

    def matches(self, obj: Any) -> bool:
        return all(expr.holds(obj) for expr in self.selector)

    def effective_weight(self, obj: Any) -> int:
        override = _override(obj, self.name, "weight")
        if override is not None:
            try:
                return max(0, int(override))
            except ValueError:
                return self.weight
        return self.weight

    def delay_seconds(self, obj: Any, rng: random.Random) -> float:
        """Duration plus a uniform jitter in [0, jitter], in seconds; annotations override the file."""
        base = _ms(_override(obj, self.name, "delay"), None)
        if base is None:
            base = _ms(paths.render(paths.evaluate(self.delay.duration_from, obj)) if self.delay.duration_from
                       else None, self.delay.duration_ms)
        jitter = _ms(_override(obj, self.name, "jitter"), None)
        if jitter is None:
            jitter = _ms(paths.render(paths.evaluate(self.delay.jitter_from, obj)) if self.delay.jitter_from
                         else None, self.delay.jitter_ms)
        extra = rng.uniform(0.0, jitter) if jitter and jitter > 0 else 0.0
        return max(0.0, ((base or 0.0) + extra) / 1000.0)

    def actions(self, obj: Any) -> list[Action]:
        """The steps with values resolved against `obj`."""
        return [Action(op, _resolve(args, obj)) for step in self.steps for op, args in step.items()]


def _override(obj: Any, stage: str, knob: str) -> str | None:
    annotations = paths.evaluate(".metadata.annotations // .pod.metadata.annotations", obj)
    if not isinstance(annotations, dict):
        return None
    value = annotations.get(f"{stage}.{OVERRIDE_PREFIX}/{knob}")
    return str(value) if value is not None else None


def _ms(text: str | None, fallback: float | None) -> float | None:
    if text is None:
        return fallback
    match = _DURATION.match(text)
    if match is None:
        return fallback
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_duration_ms(text: str) -> float:
    """"250ms", "2s", "1.5m", "1h" or a bare number of milliseconds.

    Raises:
        StageError: anything else.
    """
    value = _ms(text, None)
    if value is None:
        raise StageError(f"duration {text!r}: use a number of milliseconds or a value like 250ms, 2s, 1m")
    return value


def _resolve(value: Any, obj: Any) -> Any:
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: paths.render(paths.evaluate(m.group(1), obj)) or "", value)
    if isinstance(value, dict):
        if set(value) <= {"from", "default"} and "from" in value:
            found = paths.evaluate(str(value["from"]), obj)
            default = value.get("default")
            if found is None:
                return default
            if isinstance(default, int) and not isinstance(default, bool):
                try:  # the value takes its default's type: exit codes from annotations become ints
                    return int(str(found).strip())
                except ValueError:
                    return default
            return found
        return {k: _resolve(v, obj) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, obj) for v in value]
    return value


class Lifecycle:
    """An ordered collection of stages; `match` picks the one to apply to an object."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)

    def __len__(self) -> int:
        return len(self.stages)

    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def match(self, kind: str, obj: Any, rng: random.Random) -> Stage | None:
        """The stage to apply now, or None: a weighted choice among matching stages of `kind`.

        Stages of weight > 0 are chosen with probability proportional to their weight; when every
        matching stage has weight 0, the first in load order wins (deterministic without a seed).
        """
        candidates = [s for s in self.stages if s.kind == kind and s.matches(obj)]
        if not candidates:
            return None
        weights = [s.effective_weight(obj) for s in candidates]
        if sum(weights) <= 0:
            return candidates[0]
        pick = rng.uniform(0, sum(weights))
        for stage, weight in zip(candidates, weights, strict=True):
            if weight <= 0:
                continue
            pick -= weight
            if pick <= 0:
                return stage
        return [s for s, w in zip(candidates, weights, strict=True) if w > 0][-1]


# --- loading ------------------------------------------------------------------------------------

STAGES_DIR = Path(__file__).parent
"""The stage sets: one folder per set, beside this module."""


def available_sets() -> list[str]:
    return sorted(p.name for p in STAGES_DIR.iterdir() if p.is_dir() and any(p.glob("*.yaml")))


def load_sets(names: Sequence[str]) -> Lifecycle:
    """The stages of the named sets, in set order then file-name order (e.g. ["fast", "chaos"]).

    Raises:
        StageError: an unknown set name or an invalid stage file.
    """
    stages: list[Stage] = []
    for name in names:
        folder = STAGES_DIR / name
        if not folder.is_dir():
            raise StageError(f"unknown stage set {name!r}; available: {available_sets()}")
        for path in sorted(folder.glob("*.yaml")):
            stages.extend(load_file(path))
    return Lifecycle(stages)


def load_file(path: Path) -> list[Stage]:
    """Every `kind: Stage` document of one YAML file (other kinds are skipped)."""
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise StageError(f"{path}: cannot read stage file: {exc}") from None
    return [parse_stage(doc, where=str(path)) for doc in docs if isinstance(doc, dict) and doc.get("kind") == "Stage"]


def parse_stage(doc: Mapping[str, Any], *, where: str = "<stage>") -> Stage:
    """Validate one Stage document.

    Raises:
        StageError: naming the file, the stage and the bad field.
    """
    name = str((doc.get("metadata") or {}).get("name") or "")
    at = f"{where}: stage {name or '<unnamed>'}"
    if not name:
        raise StageError(f"{at}: metadata.name is required")
    spec = doc.get("spec") or {}
    kind = str((spec.get("resourceRef") or {}).get("kind") or "")
    if kind not in KINDS:
        raise StageError(f"{at}: spec.resourceRef.kind must be one of {list(KINDS)}, got {kind!r}")
    selector = tuple(_expression(e, f"{at}: spec.selector.matchExpressions[{i}]")
                     for i, e in enumerate((spec.get("selector") or {}).get("matchExpressions") or []))
    weight = spec.get("weight", 0)
    if not isinstance(weight, int) or weight < 0:
        raise StageError(f"{at}: spec.weight must be a non-negative integer, got {weight!r}")
    return Stage(name, kind, selector, weight, _delay(spec.get("delay") or {}, at),
                 _steps(spec.get("steps") or [], kind, at), where)


def _expression(raw: Any, at: str) -> Expression:
    if not isinstance(raw, dict):
        raise StageError(f"{at}: must be a mapping with key/operator/values")
    unknown = set(raw) - {"key", "operator", "values", "valueFrom", "default"}
    if unknown:
        raise StageError(f"{at}: unknown field(s) {sorted(unknown)}")
    key, operator = raw.get("key"), raw.get("operator")
    if not isinstance(key, str):
        raise StageError(f"{at}.key: a path like .status.phase is required")
    if operator not in OPERATORS:
        raise StageError(f"{at}.operator: must be one of {list(OPERATORS)}, got {operator!r}")
    values = tuple(paths.render(v) or "" for v in raw.get("values") or [])
    value_from = raw.get("valueFrom")
    try:
        paths.compile_path(key)
        if value_from is not None:
            paths.compile_path(str(value_from))
    except paths.PathError as exc:
        raise StageError(f"{at}: {exc}") from None
    if operator in ("In", "NotIn", "Gt", "Lt") and not values and value_from is None:
        raise StageError(f"{at}: operator {operator} needs values or valueFrom")
    default = raw.get("default")
    return Expression(key, str(operator), values, None if value_from is None else str(value_from),
                      None if default is None else str(default))


def _delay(raw: Any, at: str) -> Delay:
    if not isinstance(raw, dict):
        raise StageError(f"{at}: spec.delay must be a mapping")
    unknown = set(raw) - {"durationMilliseconds", "jitterDurationMilliseconds", "durationFrom", "jitterDurationFrom"}
    if unknown:
        raise StageError(f"{at}: spec.delay has unknown field(s) {sorted(unknown)}")
    for key in ("durationMilliseconds", "jitterDurationMilliseconds"):
        if not isinstance(raw.get(key, 0), (int, float)) or raw.get(key, 0) < 0:
            raise StageError(f"{at}: spec.delay.{key} must be a non-negative number, got {raw.get(key)!r}")
    return Delay(float(raw.get("durationMilliseconds", 0)), float(raw.get("jitterDurationMilliseconds", 0)),
                 raw.get("durationFrom"), raw.get("jitterDurationFrom"))


def _steps(raw: Any, kind: str, at: str) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(raw, list):
        raise StageError(f"{at}: spec.steps must be a list of one-key mappings")
    steps = []
    for i, step in enumerate(raw):
        if not isinstance(step, dict) or len(step) != 1:
            raise StageError(f"{at}: spec.steps[{i}] must be a mapping with exactly one key, got {step!r}")
        op, args = next(iter(step.items()))
        if op not in STEP_OPS[kind]:
            raise StageError(f"{at}: spec.steps[{i}]: {kind} stages cannot {op!r}; allowed: {sorted(STEP_OPS[kind])}")
        if args is not None and not isinstance(args, dict):
            raise StageError(f"{at}: spec.steps[{i}].{op} must be a mapping (use {{}} for none)")
        steps.append({op: args or {}})
    return tuple(steps)
