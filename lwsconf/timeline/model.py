"""The timeline data model and its file, `timeline.json`.

A `Timeline` is what a recorder saw of one LeaderWorkerSet while a test acted on it: a `GroupSample`
each time a group's observed state changed (its live pods, their revisions and readiness), a
`LeaderSample` each time the leader StatefulSet's replicas, partition, maxUnavailable or revision
changed, the test's own `Step`s ("template updated", "pod demo-0-1 deleted") and, for serving tests,
each `Request` sent through the Service meanwhile (when, how long, the answer and who gave it). Times
are seconds since recording began. The file carries `version` (2 has no requests; 3 adds them);
`from_dict` rejects any other with a ValueError that says what was expected, so a reader never
guesses at an old or foreign shape.
No I/O except `save`/`load`, no clock, no Kubernetes client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["FILENAME", "VERSION", "GroupSample", "LeaderSample", "PodState", "Request", "Step", "Timeline", "load",
           "save"]

FILENAME = "timeline.json"
VERSION = 3
"""Version 1 (samples of {t, group, revision, ready, pods: count, note}) was never written by a recorder;
version 2 is version 3 without `requests`, and is still read."""
READABLE = (2, 3)

T = TypeVar("T")


def _get(data: Mapping[str, Any], key: str, kind: type[T] | tuple[type, ...], where: str) -> Any:
    """data[key] checked against `kind` (int accepted for float); errors name the field and what was found."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
    if key not in data:
        raise ValueError(f"{where}: missing field {key!r}")
    value = data[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise ValueError(f"{where}.{key}: expected {names}, got {type(value).__name__} {value!r}")
    return value


def _list(data: Mapping[str, Any], key: str, where: str) -> list[Any]:
    return list(_get(data, key, list, where))


@dataclass(frozen=True)
class PodState:
    """One live pod of a group: name, template revision, Ready, the first 8 characters of its UID."""

    name: str
    revision: str | None
    ready: bool
    uid: str
    leader: bool

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "revision": self.revision, "ready": self.ready, "uid": self.uid,
                "leader": self.leader}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> PodState:
        return cls(_get(data, "name", str, where), _get(data, "revision", (str, type(None)), where),
                   _get(data, "ready", bool, where), _get(data, "uid", str, where), _get(data, "leader", bool, where))


@dataclass(frozen=True)
class GroupSample:
    """Group `group` from `t` until its next sample: its live pods (leader first) and whether it served.

    `seq` numbers the watch event the sample came from: samples of one event form one instant (e.g.
    every group at the start). A group is `ready` when its leader and all `size - 1` workers are
    Running and Ready; a group with no pods has `pods == ()` and is not ready.
    """

    t: float
    seq: int
    group: int
    revisions: tuple[str, ...]
    """The sorted distinct revisions of its pods: one when consistent, several when half-updated."""
    ready: bool
    pods: tuple[PodState, ...] = ()

    @property
    def revision(self) -> str | None:
        """The group's one revision, or None when it has no pods or mixes revisions."""
        return self.revisions[0] if len(self.revisions) == 1 else None

    @property
    def mixed(self) -> bool:
        return len(self.revisions) > 1

    @property
    def leader(self) -> PodState | None:
        return next((p for p in self.pods if p.leader), None)

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "seq": self.seq, "group": self.group, "revisions": list(self.revisions),
                "ready": self.ready, "pods": [p.to_dict() for p in self.pods]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> GroupSample:
        revisions = _list(data, "revisions", where)
        if not all(isinstance(r, str) for r in revisions):
            raise ValueError(f"{where}.revisions: expected a list of strings, got {revisions!r}")
        pods = tuple(PodState.from_dict(p, f"{where}.pods[{i}]") for i, p in enumerate(_list(data, "pods", where)))
        return cls(_get(data, "t", float, where), _get(data, "seq", int, where), _get(data, "group", int, where),
                   tuple(revisions), _get(data, "ready", bool, where), pods)


@dataclass(frozen=True)
class LeaderSample:
    """The leader StatefulSet from `t` on: replicas (R plus any surge), partition, its maxUnavailable, revision."""

    t: float
    replicas: int
    partition: int
    max_unavailable: int | str | None
    revision: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "replicas": self.replicas, "partition": self.partition,
                "maxUnavailable": self.max_unavailable, "revision": self.revision}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> LeaderSample:
        return cls(_get(data, "t", float, where), _get(data, "replicas", int, where),
                   _get(data, "partition", int, where), _get(data, "maxUnavailable", (int, str, type(None)), where),
                   _get(data, "revision", (str, type(None)), where))


@dataclass(frozen=True)
class Step:
    """What the test did at `t` ("template updated", "scaled to 3"): a marker on the picture."""

    t: float
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "text": self.text}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Step:
        return cls(_get(data, "t", float, where), _get(data, "text", str, where))


@dataclass(frozen=True)
class Request:
    """One request sent through a Service at `t`, answered after `seconds`: `status` 0 when no HTTP answer
    came (connection refused, timeout); `pod`/`revision` name who served it when the server says so;
    `error` is why it failed (a non-2xx answer's message, or an answer that was not a completion)."""

    t: float
    seconds: float
    status: int
    pod: str | None = None
    revision: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and 200 <= self.status < 300

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "seconds": self.seconds, "status": self.status, "pod": self.pod,
                "revision": self.revision, "error": self.error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Request:
        optional = (str, type(None))
        return cls(_get(data, "t", float, where), _get(data, "seconds", float, where), _get(data, "status", int, where),
                   _get(data, "pod", optional, where), _get(data, "revision", optional, where),
                   _get(data, "error", optional, where))


def _parse(items: Sequence[Any], name: str, parse: Any) -> list[Any]:
    return [parse(item, f"{name}[{i}]") for i, item in enumerate(items)]


@dataclass
class Timeline:
    """One LWS observed over time. A recorder appends while it runs; read it after recording stops."""

    namespace: str = ""
    name: str = ""
    """The LeaderWorkerSet's name."""
    title: str = ""
    samples: list[GroupSample] = field(default_factory=list)
    leader_sts: list[LeaderSample] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """What went wrong while recording (a watch error, then a relist): the timeline may miss an instant."""
    end: float | None = None
    """When recording stopped (None while it runs)."""
    requests: list[Request] = field(default_factory=list)
    """Requests a serving test sent through its Service while recording, in the order they were sent."""

    @property
    def groups(self) -> list[int]:
        return sorted({s.group for s in self.samples})

    @property
    def revisions(self) -> list[str]:
        """Every revision seen on a pod, in order of first appearance (the picture's legend order)."""
        seen: dict[str, None] = {}
        for s in sorted(self.samples, key=lambda s: (s.t, s.seq)):
            for pod in s.pods:
                if pod.revision:
                    seen.setdefault(pod.revision, None)
        return list(seen)

    @property
    def stop(self) -> float:
        """The right edge of the picture: `end`, or a little after the last sample or step."""
        last = max([s.t for s in self.samples] + [s.t for s in self.steps] + [r.t + r.seconds for r in self.requests]
                   + [0.0])
        return self.end if self.end is not None and self.end > last else last + max(1.0, 0.05 * last)

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION, "namespace": self.namespace, "lws": self.name, "title": self.title,
                "end": self.end, "samples": [s.to_dict() for s in self.samples],
                "leaderStatefulSet": [s.to_dict() for s in self.leader_sts],
                "steps": [s.to_dict() for s in self.steps], "errors": list(self.errors),
                "requests": [r.to_dict() for r in self.requests]}

    @classmethod
    def from_dict(cls, data: Any) -> Timeline:
        """Parse a timeline document; ValueError names the first bad field, e.g. `samples[3].ready`."""
        where = "timeline"
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        version = data.get("version")
        if version not in READABLE:
            raise ValueError(f"timeline version {version!r}: this lwsconf reads versions "
                             f"{', '.join(map(str, READABLE))} (written by lwsconf.waits.recorder); re-run the test "
                             "to record it again")
        end = _get(data, "end", (float, type(None)), where)
        errors = _list(data, "errors", where)
        return cls(_get(data, "namespace", str, where), _get(data, "lws", str, where), _get(data, "title", str, where),
                   _parse(_list(data, "samples", where), "samples", GroupSample.from_dict),
                   _parse(_list(data, "leaderStatefulSet", where), "leaderStatefulSet", LeaderSample.from_dict),
                   _parse(_list(data, "steps", where), "steps", Step.from_dict), [str(e) for e in errors], end,
                   _parse(_list(data, "requests", where), "requests", Request.from_dict) if version >= 3 else [])


def save(timeline: Timeline, path: Path) -> Path:
    """Write `path` (creating its folder): the one writer of timeline.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(timeline.to_dict(), indent=1) + "\n")
    return path


def load(path: Path) -> Timeline:
    """Read a timeline.json; ValueError names the file and what is wrong with it."""
    try:
        return Timeline.from_dict(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
