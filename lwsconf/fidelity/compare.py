"""Pairing each step's two answers and judging them: identical, accepted difference, or different."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    sim_erased: Mapping[str, int] = field(default_factory=dict)
    real_erased: Mapping[str, int] = field(default_factory=dict)
    """How many values each normalisation rule erased from each answer (by rule name)."""
    ran_out: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    """The step's waits whose bound ran out on the sim and on kube-apiserver (`StepRecord.ran_out`)."""

    @property
    def identical(self) -> bool:
        return not self.lines



def compare(scenarios: Sequence[Scenario], sim: Mapping[str, Sequence[StepRecord]],
            real: Mapping[str, Sequence[StepRecord]],
            accepted: Mapping[str, str]) -> list[Result]:
    """One Result per step of every scenario, in corpus order."""
    results = []
    for scenario in scenarios:
        sim_history, real_history = normalise.History(), normalise.History()
        for i, step in enumerate(scenario.steps):
            a, b = sim[scenario.name][i], real[scenario.name][i]
            with normalise.counting() as sim_erased:
                sim_view = normalise.normalise(a.answer, step, a.saved, sim_history)
            with normalise.counting() as real_erased:
                real_view = normalise.normalise(b.answer, step, b.saved, real_history)
            if step.until is not None:  # the way there, not only the state reached (issue 33 item 2)
                sim_view["until-states"], real_view["until-states"] = until_states(a.states, b.states)
                for erased, states, view in ((sim_erased, a.states, sim_view), (real_erased, b.states, real_view)):
                    if len(states) > len(view["until-states"]):
                        erased["until-suffix"] += len(states) - len(view["until-states"])
            lines = diff.summary(sim_view, real_view)
            ident = f"{scenario.topic}/{scenario.name}/{step.name}"
            results.append(Result(ident, step, a.request, sim_view, real_view, lines,
                                  accepted.get(ident) if lines else None, dict(sim_erased), dict(real_erased),
                                  (a.ran_out, b.ran_out)))
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


def until_states(sim: Sequence[Any], real: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Rule `until-suffix`: a step with `until` is compared by the values its paths went through on each server,
    each counted once in a row; when one sequence ends the other, both read as the shorter. Why: the first poll
    of the slower server saw states the faster one had already left (`[1, 2]` and `[2]`); any other pair is
    compared as it is (a state one server went through and the other did not: `[1, 2]` and `[None, 2]`)."""
    a, b = list(sim), list(real)
    shorter = a if len(a) <= len(b) else b
    longer = b if shorter is a else a
    if diff.same(longer[len(longer) - len(shorter):], shorter):
        return list(shorter), list(shorter)
    return a, b


def erasures(results: Sequence[Result]) -> dict[str, tuple[int, int]]:
    """Per normalisation rule, how many values it erased over all `results`: (on the sim, on kube-apiserver)."""
    out: dict[str, tuple[int, int]] = {}
    for r in results:
        for name in set(r.sim_erased) | set(r.real_erased):
            sim, real = out.get(name, (0, 0))
            out[name] = (sim + r.sim_erased.get(name, 0), real + r.real_erased.get(name, 0))
    return out


def waits_ran_out(results: Sequence[Result]) -> str | None:
    """One line counting, per server and kind, the waits whose bound ran out (None when none did): each is a step
    compared as the server stood when its wait gave up, so many of them say the bounds are short for this machine
    (LWSCONF_FIDELITY_UNTIL) or a server never reached what the step waited for."""
    sides = []
    for name, index in (("sim", 0), ("kube-apiserver", 1)):
        counts = Counter(kind for r in results for kind in r.ran_out[index])
        if counts:
            sides.append(f"{name}: " + ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())))
    return "waits that ran out: " + "; ".join(sides) if sides else None


def totals(results: Sequence[Result]) -> Totals:
    identical = sum(r.identical for r in results)
    accepted = sum(1 for r in results if not r.identical and r.accepted)
    return Totals(len(results), identical, accepted, len(results) - identical - accepted)
