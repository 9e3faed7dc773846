"""What an interaction is (a step of a scenario), and what a server answered to it.

Interactions are data so that one list drives both servers and the page can print each request
exactly. Strings in a step's path, query, body and headers may name variables as `${name}`: `${ns}`
is the scenario's namespace, other names were saved from an earlier answer (`save`), which is how a
script carries a server-generated uid or resourceVersion into a later request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True)
class Until:
    """Repeat the step until `path` (dotted, in the normalised answer: `code`, `body.status.x`) equals
    `value`, at most `timeout` seconds; for controller scenarios, where the outcome is awaited, not timed."""

    path: str
    value: Any
    timeout: float = 60.0
    also: tuple[tuple[str, Any], ...] = ()
    """More (path, value) pairs that must hold in the same answer (a restart count together with the state
    it is in: either alone is met by a passing moment of the other)."""

    def conditions(self) -> tuple[tuple[str, Any], ...]:
        return ((self.path, self.value), *self.also)


@dataclass(frozen=True)
class Step:
    """One API interaction.

    `body` is sent as JSON unless it is a `str` (sent as is: malformed bodies, YAML apply). `vary`
    lists dotted paths of the normalised answer dropped on both sides because the step expects them
    to differ (each use says why next to it). `save` maps a variable name to a dotted path of the raw
    answer body. `watch` reads the answer as a watch stream until the server ends it (the step's
    query must set timeoutSeconds). `events` chooses how watch events are compared: "objects" (type
    and normalised object) or "names" (type and object name, MODIFIED dropped: controller scenarios,
    whose status-update cadence is not behaviour).
    """

    name: str
    method: str = "GET"
    path: str = ""
    body: Any = None
    content_type: str = JSON
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    vary: tuple[str, ...] = ()
    save: dict[str, str] = field(default_factory=dict)
    watch: bool = False
    events: str = "objects"
    until: Until | None = None
    after: str = ""
    """A path that must answer 200 before the step is sent (waited for, not an interaction): the object, made by a
    controller, that a recorded client acted on once it had seen it (held-out controller scenarios)."""
    settle: bool = False
    """Read until the answer stops changing (held-out reads of controller-made state, `run.py`), then compare."""
    view: str = ""
    """How a list answer is compared: "" (as normalised) or "event-reasons" (a list of Events read as the
    ordered distinct `type reason component fieldPath` of what happened to one object: node scenarios, whose
    event times, counts and messages' durations are timing; see `normalise.event_reasons`)."""


@dataclass(frozen=True)
class Scenario:
    """Steps run in order in a fresh namespace `fid-<name>` (created, with its `default`
    ServiceAccount, before the first step and not counted as an interaction)."""

    topic: str
    name: str
    steps: tuple[Step, ...]
    controllers: bool = False
    """Needs the controllers (kube-controller-manager on the real side, the sim's own controllers)."""
    nodes: bool = False
    """Needs nodes that run pods (implies controllers): real kubelets with containerd on the real side
    (`lwsconf.realnodes`), the sim's simulated nodes on the other; the same node names and labels on both."""

    @property
    def namespace(self) -> str:
        return f"fid-{self.name}"


@dataclass
class Answer:
    """What a server said: status code (0: no HTTP answer, `body` says why), the decoded body (JSON,
    else text), the Warning headers' texts, and for a watch the decoded events."""

    code: int
    body: Any = None
    warnings: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] | None = None


@dataclass
class StepRecord:
    """One step as run on one server: the request sent (variables substituted), the answer, and the
    scenario's saved values (what `saved-values` normalisation substitutes back)."""

    step: Step
    request: dict[str, Any]
    answer: Answer
    saved: dict[str, str] = field(default_factory=dict)
    states: tuple[Any, ...] = ()
    """For a step with `until`: the distinct successive values its paths took while it was repeated."""
    ran_out: tuple[str, ...] = ()
    """The step's waits ("after", "until", "settle") whose bound ran out on this server."""
