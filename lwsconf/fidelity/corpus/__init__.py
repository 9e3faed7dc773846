"""The differential corpus: scenarios grouped by topic, one module per topic.

Each module has `SCENARIOS`, a tuple of `Scenario`s whose steps are plain data (see `model.Step`).
Topics in `OPT_IN` run only when named (`--topic nodes`): they need more than API servers (real nodes: root and
`make nodes`) and measure another part of the sim, so the API-server figures of a plain run stay what they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from lwsconf.fidelity.corpus import (
    apply,
    batch,
    controllers,
    crd,
    crud,
    deletion,
    nodes,
    openapi,
    patches,
    policies,
    requests,
    selectors,
    subresources,
    versions,
    watch,
    webhooks,
)
from lwsconf.fidelity.model import Scenario

MODULES = (crud, crd, patches, apply, selectors, versions, watch, deletion, subresources, policies, requests,
           webhooks, controllers, batch, openapi, nodes)
OPT_IN = ("nodes",)
"""Topics left out unless named."""


def all_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for module in MODULES:
        out.extend(module.SCENARIOS)
    names = [s.name for s in out]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"scenario names must be unique (each is a namespace): {sorted(duplicates)}")
    return out


def topics() -> list[str]:
    return list(dict.fromkeys(s.topic for s in all_scenarios()))


def select(wanted: Sequence[str] | None) -> list[Scenario]:
    """Every scenario but the opt-in topics', or those of the topics named (ValueError naming the known ones
    otherwise)."""
    scenarios = all_scenarios()
    if not wanted:
        return [s for s in scenarios if s.topic not in OPT_IN]
    unknown = sorted(set(wanted) - set(topics()))
    if unknown:
        raise ValueError(f"unknown topic(s) {', '.join(unknown)}; choose from {', '.join(topics())}")
    return [s for s in scenarios if s.topic in wanted]
