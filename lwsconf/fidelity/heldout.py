"""The held-out corpus: scenarios recorded from real traffic (`heldout/*.json`), read as `model` values.

The in-sample corpus (`corpus/`) was written alongside the sim's fixes, so its figure says how well the sim
answers what it was fitted to. The held-out files were made by `lwsconf fidelity record` from what real
clients (the conformance suite with the reference, kubectl, the official Python client) sent to a real
kube-apiserver, converted by `convert.py`; nobody writes or edits them (each carries the command and the
recording it came from), and nobody fixes the sim by reading them one by one without recording again.
`lwsconf fidelity --corpus held-out` replays them; what they leave out is counted in each file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lwsconf.fidelity.model import JSON, Scenario, Step, Until

FOLDER = Path(__file__).parent / "heldout"
"""Where the generated files live (package data)."""
TOPIC_PREFIX = "held-out"


@dataclass(frozen=True)
class HeldOut:
    """Every held-out file: prelude steps (cluster-scoped setup, run before the scenarios on each server),
    scenarios, and what the conversion left out or rewrote (summed over files)."""

    prelude: tuple[Step, ...]
    scenarios: tuple[Scenario, ...]
    files: tuple[str, ...] = ()
    recorded: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    rewritten: Counter[str] = field(default_factory=Counter)

    def summary(self) -> list[str]:
        """What the corpus is made of, one line each, for the run's output."""
        steps = len(self.prelude) + sum(len(s.steps) for s in self.scenarios)
        lines = [f"held-out corpus: {steps} steps in {len(self.scenarios)} scenarios (+ a prelude of "
                 f"{len(self.prelude)}) from {self.recorded} recorded interactions ({', '.join(self.files)})"]
        lines += [f"  left out {n}: {why}" for why, n in self.skipped.most_common()]
        lines += [f"  rewritten {n}: {why}" for why, n in self.rewritten.most_common()]
        return lines


def step_from(data: dict[str, Any]) -> Step:
    """One stored step as the model's Step (the recorded code and client stay in the file, for readers)."""
    until = data.get("until")
    return Step(
        name=data["name"], method=data["method"], path=data["path"], body=data.get("body"),
        content_type=data.get("contentType", JSON), query=dict(data.get("query") or {}),
        headers=dict(data.get("headers") or {}), vary=tuple(data.get("vary") or ()), save=dict(data.get("save") or {}),
        watch=bool(data.get("watch")), events=data.get("events") or "objects", after=data.get("after") or "",
        settle=bool(data.get("settle")),
        until=Until(until["path"], until["value"], float(until.get("timeout", 20.0))) if until else None)


def scenarios_from(document: dict[str, Any]) -> tuple[list[Step], list[Scenario]]:
    topic = f"{TOPIC_PREFIX}-{document['source']}"
    prelude = [step_from(s) for s in document.get("prelude") or []]
    scenarios = [Scenario(topic, s["name"], tuple(step_from(x) for x in s["steps"]), controllers=bool(s["controllers"]))
                 for s in document.get("scenarios") or []]
    return prelude, scenarios


def load(folder: Path | None = None, sources: Sequence[str] | None = None) -> HeldOut:
    """Every `*.json` of `folder` (default FOLDER; or those whose source is in `sources`); ValueError when there is
    none, or for an unknown source (naming the known ones)."""
    folder = FOLDER if folder is None else folder
    documents = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    if not documents:
        raise ValueError(f"no held-out corpus in {folder}: make one with `lwsconf fidelity record --out {folder}`")
    known = [d["source"] for d in documents]
    if sources:
        unknown = sorted(set(sources) - set(known))
        if unknown:
            raise ValueError(f"unknown held-out source(s) {', '.join(unknown)}; choose from {', '.join(known)}")
        documents = [d for d in documents if d["source"] in sources]
    prelude: list[Step] = []
    scenarios: list[Scenario] = []
    skipped: Counter[str] = Counter()
    rewritten: Counter[str] = Counter()
    for document in documents:
        pre, scen = scenarios_from(document)
        prelude += [Step(**{**s.__dict__, "name": f"{document['source']}-{s.name}"}) for s in pre]
        scenarios += scen
        skipped.update(document.get("skipped") or {})
        rewritten.update(document.get("rewritten") or {})
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ValueError("held-out scenario names must be unique (each is a namespace); record again")
    return HeldOut(tuple(prelude), tuple(scenarios), tuple(d["source"] for d in documents),
                   sum(int(d.get("recordedInteractions") or 0) for d in documents), skipped, rewritten)
