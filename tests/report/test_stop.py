"""How a session's end becomes the report's verdict (lwsconf/report/stop.py), without running pytest."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from lwsconf.report import build, stop

OK, INTERRUPTED = pytest.ExitCode.OK, pytest.ExitCode.INTERRUPTED


def session(shouldfail: Any = False, shouldstop: Any = False) -> Any:
    return SimpleNamespace(shouldfail=shouldfail, shouldstop=shouldstop)


def excinfo(exc: BaseException) -> pytest.ExceptionInfo[BaseException]:
    try:
        raise exc
    except BaseException:  # noqa: BLE001 - building the argument pytest passes to pytest_keyboard_interrupt
        return pytest.ExceptionInfo.from_current()


def test_a_real_keyboard_interrupt_is_named_as_such_and_a_stop_request_by_its_reason() -> None:
    assert stop.reason_of(excinfo(KeyboardInterrupt())) == "KeyboardInterrupt (Ctrl-C, SIGINT or SIGTERM)"
    assert stop.reason_of(excinfo(KeyboardInterrupt("signal 15"))).endswith(": signal 15")
    from _pytest.main import Interrupted  # what pytest raises for session.shouldstop (xdist has its own)

    reason = stop.reason_of(excinfo(Interrupted("--fail-fast: t.py::test_a failed")))
    assert reason == "--fail-fast: t.py::test_a failed"


def test_a_completed_run_is_not_interrupted_even_if_stopped_after_its_last_test() -> None:
    assert stop.run_stop(session(), OK, "", "", unfinished=0, collected=3) == build.COMPLETED
    assert stop.run_stop(session(shouldfail="stopping after 1 failures"), 1, "", "", 0, 3) == build.COMPLETED
    assert stop.run_stop(session(), pytest.ExitCode.NO_TESTS_COLLECTED, "", "", 0, 0) == build.COMPLETED


def test_stops_with_unfinished_tests_are_interrupted_with_their_reason() -> None:
    assert stop.run_stop(session(), INTERRUPTED, "KeyboardInterrupt", "", 2, 5) == build.RunStop(
        True, "KeyboardInterrupt")
    assert stop.run_stop(session(shouldfail="stopping after 1 failures"), 1, "", "", 4, 5).reason == \
        "stopping after 1 failures"
    assert stop.run_stop(session(), INTERRUPTED, "KeyboardInterrupt", "", 0, 0).interrupted, "before collection ended"
    lost = stop.run_stop(session(), pytest.ExitCode.TESTS_FAILED, "", "", 2, 5)
    assert lost.interrupted and lost.reason.startswith("2 selected test(s) have no result")


def test_a_run_error_wins_and_is_the_stop_reason() -> None:
    end = stop.run_stop(session(shouldfail="x"), INTERRUPTED, "gw0 received keyboard-interrupt",
                        "implementation reference never became ready: boom", 3, 3)
    assert end == build.RunStop(True, "implementation reference never became ready: boom",
                                "implementation reference never became ready: boom")


@pytest.mark.parametrize(("option", "status", "writes"), [
    ("collectonly", OK, False), ("help", OK, False), ("markers", OK, False), (None, pytest.ExitCode.USAGE_ERROR, False),
    (None, pytest.ExitCode.NO_TESTS_COLLECTED, True), (None, INTERRUPTED, True), (None, OK, True)])
def test_which_sessions_write_a_report(option: str | None, status: int, writes: bool) -> None:
    config: Any = SimpleNamespace(option=SimpleNamespace(**({option: True} if option else {})))
    assert stop.writes_no_report(config, status) is not writes


def test_a_usage_error_status_after_tests_ran_still_gets_its_report() -> None:
    config: Any = SimpleNamespace(option=SimpleNamespace())
    assert not stop.writes_no_report(config, pytest.ExitCode.USAGE_ERROR, ran=True)
    listing: Any = SimpleNamespace(option=SimpleNamespace(collectonly=True))
    assert stop.writes_no_report(listing, OK, ran=True)
