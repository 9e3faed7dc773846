"""How a run ended, as the report must say it: completed, stopped early (and why), or failed as a whole.

pytest ends a session early in several ways, and each leaves a different trace: Ctrl-C or SIGINT
raises KeyboardInterrupt in the process (exit status 2, `pytest_keyboard_interrupt`); a stop request
(--fail-fast through `session.shouldstop`, -x/--maxfail through `session.shouldfail`) ends the test
loop, and under pytest-xdist the controller turns a worker's request or keyboard interrupt into its
own `Interrupted` (a KeyboardInterrupt subclass carrying the reason); `pytest.exit` raises `Exit`.
A run-wide error (the implementation never became ready) is recorded by the plugin in `RUN_ERROR`
and travels to the xdist controller on the test reports. `run_stop` folds all of that into one
`build.RunStop`. No I/O.
"""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.report import build

__all__ = ["RUN_ERROR", "lists_only", "reason_of", "run_stop", "writes_no_report"]

RUN_ERROR = pytest.StashKey[str]()
"""config.stash: one line saying why the run failed as a whole (set by the plugin's setup fixtures)."""


def reason_of(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """One line naming what interrupted the session (the argument of `pytest_keyboard_interrupt`)."""
    exc = excinfo.value
    if type(exc) is KeyboardInterrupt:  # the real thing, not pytest's or xdist's Interrupted subclass
        detail = str(exc).strip()
        return "KeyboardInterrupt (Ctrl-C, SIGINT or SIGTERM)" + (f": {detail}" if detail else "")
    if isinstance(exc, pytest.exit.Exception):
        return f"pytest.exit: {exc.msg}"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def lists_only(config: pytest.Config) -> bool:
    """True for --collect-only, --help, --fixtures, --markers, --setup-plan: sessions that run no test."""
    return any(getattr(config.option, name, False) for name in (
        "collectonly", "help", "showfixtures", "show_fixtures_per_test", "markers", "setupplan"))


def writes_no_report(config: pytest.Config, exitstatus: int, *, ran: bool = False) -> bool:
    """True for sessions that ran no test on purpose or never properly started: --collect-only (and
    the other listing options) and usage errors leave no report and do not move reports/latest. A
    usage-error status after tests ran (pytest.exit at teardown) still gets its report: `ran`."""
    return lists_only(config) or (exitstatus == pytest.ExitCode.USAGE_ERROR and not ran)


def run_stop(session: pytest.Session, exitstatus: int, interrupt: str, run_error: str,
             unfinished: int, collected: int) -> build.RunStop:
    """The report's verdict on how the run ended.

    Args:
        interrupt: the reason recorded by `pytest_keyboard_interrupt`, or "".
        run_error: why the run failed as a whole, or "".
        unfinished: selected tests with no result.
        collected: selected tests known to the collector (0 if the stop came before collection ended).
    """
    if run_error:
        return build.RunStop(interrupted=True, reason=run_error, run_error=run_error)
    reason = interrupt or _requested_stop(session)
    if not reason and exitstatus == pytest.ExitCode.INTERRUPTED:
        reason = "interrupted (exit status 2)"
    if not reason and exitstatus == pytest.ExitCode.INTERNAL_ERROR:
        reason = "pytest internal error (see its traceback)"
    if not reason and unfinished:
        reason = f"{unfinished} selected test(s) have no result (did an xdist worker die for good?)"
    if reason and (unfinished or not collected):  # a stop after the last test changed nothing
        return build.RunStop(interrupted=True, reason=reason)
    return build.COMPLETED


def _requested_stop(session: Any) -> str:
    for value in (session.shouldfail, session.shouldstop):
        if value:
            return value if isinstance(value, str) else "the session was asked to stop"
    return ""
