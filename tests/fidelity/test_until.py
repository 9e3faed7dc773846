"""An `until` step is compared by the way it went, not only by where it ended (issue 33 item 2)."""

from __future__ import annotations

from lwsconf.fidelity import compare, run
from lwsconf.fidelity.model import Scenario, Step, Until
from tests.fidelity.fake_servers import Changing


def counting(values: list[int]) -> Changing:
    """A server whose `status.ready` goes through `values`, one per read (the last one repeats)."""
    return Changing([{"kind": "Thing", "status": {"ready": value}} for value in values])


STEP = Step("wait", "GET", "/x", until=Until("body.status.ready", 2, timeout=5))


def test_the_values_an_until_step_went_through_are_recorded_once_each() -> None:
    [record] = run.run_steps(counting([0, 0, 1, 1, 2]), [STEP], {})
    assert record.states == (0, 1, 2)
    assert record.answer.body == {"kind": "Thing", "status": {"ready": 2}}


def test_the_same_end_reached_another_way_is_a_difference() -> None:
    scenario = Scenario("t", "s", (STEP,))
    sim = run.run_steps(counting([0, 2]), [STEP], {})
    real = run.run_steps(counting([0, 1, 2]), [STEP], {})
    [result] = compare.compare([scenario], {"s": sim}, {"s": real}, {})
    assert result.lines == ["until-states: [0, 2] != [0, 1, 2]"]
    same = run.run_steps(counting([0, 0, 0, 1, 2]), [STEP], {})
    [result] = compare.compare([scenario], {"s": same}, {"s": real}, {})
    assert result.identical


def test_a_slower_first_look_is_no_difference_but_a_state_only_one_server_passed_is() -> None:
    assert compare.until_states([2], [1, 2]) == ([2], [2])
    assert compare.until_states([404], [200, 404]) == ([404], [404])
    assert compare.until_states([1, 2], [None, 2]) == ([1, 2], [None, 2])
    assert compare.until_states([True], [1]) == ([True], [1])   # strict JSON types here too
