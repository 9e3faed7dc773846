"""The two waiting primitives, on tenacity, with failures that show what was last observed.

A check is a function that returns a value when the expectation holds and raises `NotYet` (or
`AssertionError`) with the reason when it does not. `wait_until` polls it until it passes or the
named timeout expires; `must_converge` demands `successes` consecutive passes (resetting on any
failure), as Gateway API's AwaitConvergence does for traffic. `Terminal` stops a wait early when
the state can no longer turn good (lightkube's raise_for_conditions).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import tenacity

T = TypeVar("T")

progress: Callable[[str], None] | None = None
"""Where long waits report that they are still waiting (the pytest plugin prints a line); None: silent."""
PROGRESS_AFTER = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Seconds into a wait at which one progress line is emitted."""


class NotYet(Exception):
    """The expectation does not hold yet; the message says why (shown when the wait times out)."""


class Terminal(Exception):
    """The expectation can never hold now (e.g. the object was deleted): stop waiting."""


class WaitTimeout(AssertionError):
    """A named wait ran out of time; the message carries the last reason and observed state."""

    def __init__(self, what: str, timeout: float, elapsed: float, attempts: int, reason: str, state: str) -> None:
        self.what, self.timeout, self.elapsed, self.attempts = what, timeout, elapsed, attempts
        self.reason, self.state = reason, state
        text = (f"timed out after {elapsed:.1f}s (limit {timeout:g}s, {attempts} attempts) waiting for {what}\n"
                f"last reason: {reason}")
        if state:
            text += f"\nlast observed state:\n{state}"
        super().__init__(text)


def _describe(describe: Callable[[], str] | None) -> str:
    if describe is None:
        return ""
    try:
        return describe()
    except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the real failure
        return f"(could not describe the state: {type(exc).__name__}: {exc})"


def wait_until(check: Callable[[], T], *, what: str, timeout: float, poll: float = 0.1,
               describe: Callable[[], str] | None = None) -> T:
    """Poll `check` until it returns; raise WaitTimeout (with `describe()`'s output) when time runs out."""
    started = time.monotonic()
    reason = "not checked yet"
    milestones = list(PROGRESS_AFTER)

    def attempt() -> T:
        nonlocal reason
        try:
            return check()
        except (NotYet, AssertionError) as exc:
            reason = str(exc) or type(exc).__name__
            elapsed = time.monotonic() - started
            if progress is not None and milestones and elapsed >= milestones[0]:
                while milestones and elapsed >= milestones[0]:
                    milestones.pop(0)
                progress(f"still waiting for {what} after {elapsed:.0f}s (limit {timeout:g}s): {reason[:120]}")
            raise NotYet(reason) from None

    retrying = tenacity.Retrying(stop=tenacity.stop_after_delay(timeout), wait=tenacity.wait_fixed(poll),
                                 retry=tenacity.retry_if_exception_type(NotYet), reraise=True)
    try:
        return retrying(attempt)
    except NotYet:
        attempts = retrying.statistics.get("attempt_number", 0)
        raise WaitTimeout(what, timeout, time.monotonic() - started, attempts, reason, _describe(describe)) from None
    except Terminal as exc:
        raise WaitTimeout(what, timeout, time.monotonic() - started, retrying.statistics.get("attempt_number", 0),
                          f"gave up early: {exc}", _describe(describe)) from None


def must_converge(check: Callable[[], T], *, what: str, successes: int, within: float, poll: float = 0.1,
                  describe: Callable[[], str] | None = None) -> T:
    """Require `successes` consecutive passes of `check` within `within` seconds; returns the last value."""
    streak = 0
    last: list[T] = []

    def consecutive() -> T:
        nonlocal streak
        try:
            value = check()
        except (NotYet, AssertionError):
            streak = 0
            raise
        streak += 1
        last[:] = [value]
        if streak < successes:
            raise NotYet(f"{streak}/{successes} consecutive successes")
        return value

    return wait_until(consecutive, what=f"{what} ({successes} consecutive successes)", timeout=within, poll=poll,
                      describe=describe)


def must_hold(check: Callable[[], T], *, what: str, duration: float, poll: float = 0.1,
              describe: Callable[[], str] | None = None) -> T:
    """Require `check` to pass at every poll for `duration` seconds ("X never happens"); returns the last value.

    The first failing poll raises AssertionError at once, with the reason and `describe()`'s output.
    """
    started = time.monotonic()
    polls = 0
    value: list[T] = []

    def attempt() -> None:
        nonlocal polls
        polls += 1
        try:
            value[:] = [check()]
        except (NotYet, AssertionError) as exc:
            elapsed = time.monotonic() - started
            text = f"{what} stopped holding after {elapsed:.1f}s (poll {polls}): {exc}"
            state = _describe(describe)
            raise AssertionError(text + (f"\nobserved state:\n{state}" if state else "")) from None
        if time.monotonic() - started < duration:
            raise NotYet("still observing")

    tenacity.Retrying(wait=tenacity.wait_fixed(poll), retry=tenacity.retry_if_exception_type(NotYet),
                      reraise=True)(attempt)
    return value[0]
