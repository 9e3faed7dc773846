"""Pairing each step's two answers and judging them: identical, accepted difference, or different."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lwsconf.fidelity import diff, normalise
from lwsconf.fidelity.model import Scenario, Step, StepRecord


@dataclass(frozen=True)
class Result:
    """One interaction compared: `lines` empty means identical after normalisation."""

    id: str
    step: Step
    request: dict[str, Any]
    sim: dict[str, Any]
    real: dict[str, Any]
    lines: list[str]
    accepted: str | None = None
    """Why this difference is acceptable (from `accepted.ACCEPTED`), or None."""

    @property
    def identical(self) -> bool:
        return not self.lines



def compare(scenarios: Sequence[Scenario], sim: Mapping[str, Sequence[StepRecord]],
            real: Mapping[str, Sequence[StepRecord]],
            accepted: Mapping[str, str]) -> list[Result]:
    """One Result per step of every scenario, in corpus order."""
    results = []
    for scenario in scenarios:
        for i, step in enumerate(scenario.steps):
            a, b = sim[scenario.name][i], real[scenario.name][i]
            sim_view = normalise.normalise(a.answer, step, a.saved)
            real_view = normalise.normalise(b.answer, step, b.saved)
            lines = diff.summary(sim_view, real_view)
            ident = f"{scenario.topic}/{scenario.name}/{step.name}"
            results.append(Result(ident, step, a.request, sim_view, real_view, lines,
                                  accepted.get(ident) if lines else None))
    return results


@dataclass(frozen=True)
class Totals:
    interactions: int
    identical: int
    accepted: int
    different: int

    @property
    def percent(self) -> float:
        return 100.0 * self.identical / self.interactions if self.interactions else 0.0

    def line(self, label: str = "fidelity") -> str:
        return f"{label}: {self.interactions} interactions, {self.identical} identical ({self.percent:.1f}%)"


def totals(results: Sequence[Result]) -> Totals:
    identical = sum(r.identical for r in results)
    accepted = sum(1 for r in results if not r.identical and r.accepted)
    return Totals(len(results), identical, accepted, len(results) - identical - accepted)
