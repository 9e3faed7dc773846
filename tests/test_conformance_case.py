"""`conformance.case`: one parametrised case of a conformance test claimed and reported by its own features.

Why: the GPU smoke test's `[emulator]` case belongs to LWS-SERVING and its `[vllm]` case to GPU-SMOKE; the
suite selects, reports and claims each case through `spec_of(item)`, so that is where the case must show.
"""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.conformance import case, conformance, spec_of
from lwsconf.features import Feature


@conformance(short_name="CaseExample", description="d", features={Feature.VLLM_MULTI_NODE})
def example() -> None:
    """A conformance function whose cases override its features."""


class Item:
    """What spec_of reads of a pytest item: its function, callspec, and closest marker."""

    def __init__(self, param: Any | None) -> None:
        self.function = example
        self._marks = list(param.marks) if param is not None else []
        if param is not None:
            self.callspec = object()

    def get_closest_marker(self, name: str) -> Any:
        return next((m for m in self._marks if m.name == name), None)


def test_a_case_carries_its_own_features_and_profiles_and_keeps_the_short_name() -> None:
    emulated = spec_of(Item(case("emulator", id="emulator",
                                 features={Feature.SERVING_RENDEZVOUS, Feature.LEADER_SERVICE})))
    assert emulated is not None and emulated.short_name == "CaseExample"
    assert emulated.features == {Feature.SERVING_RENDEZVOUS, Feature.LEADER_SERVICE}
    assert emulated.profiles == ("LWS-SERVING",)
    plain = spec_of(Item(None))
    assert plain is not None and plain.features == {Feature.VLLM_MULTI_NODE} and plain.profiles == ("GPU-SMOKE",)


def test_a_case_without_features_is_refused() -> None:
    with pytest.raises(ValueError, match="conformance case 'x' must declare at least one feature"):
        case("x", id="x", features=())
