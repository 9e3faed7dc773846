"""The comparison's values: scenarios and their steps (data), snapshots, differences. No I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class PatchLWS:
    """A JSON merge patch to the scenario's LeaderWorkerSet (a template change, a scale)."""

    patch: Obj


@dataclass(frozen=True)
class DeletePod:
    """Delete one pod by name (a worker: the group is recreated under RecreateGroupOnPodRestart)."""

    name: str


Action = PatchLWS | DeletePod


@dataclass(frozen=True)
class Step:
    """One change made after the previous steady state; the objects are snapshotted at the next one."""

    name: str
    action: Action


@dataclass(frozen=True)
class Scenario:
    """An LWS created in namespace `namespace`, snapshotted at steady state (`STEADY`), then after each step.

    `lws` is the manifest (no namespace); `expected_pods` is how many Ready pods steady state has after
    creation and after each step, in order (1 + len(steps) entries).
    """

    name: str
    description: str
    lws: Obj
    expected_pods: tuple[int, ...]
    steps: tuple[Step, ...] = ()

    @property
    def namespace(self) -> str:
        return f"dimp-{self.name}"

    @property
    def lws_name(self) -> str:
        name: str = self.lws["metadata"]["name"]
        return name

    def __post_init__(self) -> None:
        if len(self.expected_pods) != 1 + len(self.steps):
            raise ValueError(f"scenario {self.name}: expected_pods needs {1 + len(self.steps)} entries (steady "
                             f"state after creation and after each step), got {len(self.expected_pods)}")


STEADY = "steady"
"""The name of the first snapshot: steady state after the LWS is created."""

Snapshot = dict[str, Obj]
"""Normalised objects by key (`Kind/name`; ControllerRevisions `ControllerRevision/<owner>#<revision>`)."""


@dataclass(frozen=True, eq=False)
class Difference:
    """One leaf where side a and side b differ, at one snapshot of one scenario.

    `path` is `(object)` when the object exists on one side only; `a`/`b` are the values (`ABSENT`
    when missing on that side).
    """

    scenario: str
    snapshot: str
    kind: str
    obj: str
    path: str
    a: Any
    b: Any


ABSENT = "(absent)"


@dataclass(frozen=True)
class Row:
    """Differences with the same scenario, snapshot, kind, path and values, over every object they occur on."""

    scenario: str
    snapshot: str
    kind: str
    path: str
    a: Any
    b: Any
    objects: tuple[str, ...]
    disposition: str | None = None
    """The matching disposition's key (`dispositions.DISPOSITIONS`), or None: unlisted."""


@dataclass(frozen=True)
class SideRun:
    """What one implementation produced: normalised snapshots by scenario, then by snapshot name (in order)."""

    impl: str
    snapshots: dict[str, dict[str, Snapshot]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    """Scenario name -> why it did not reach a steady state (its later snapshots are missing)."""
