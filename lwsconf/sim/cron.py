"""Standard 5-field cron schedules, as the CronJob API and controller read them.

kube-apiserver validates `spec.schedule` with robfig/cron's standard parser (minute, hour, day of month,
month, day of week; `*`, lists, ranges, `/step`, month and weekday names, and the `@hourly`-style
descriptors; pkg/apis/batch/validation `validateScheduleFormat`), and kube-controller-manager's CronJob
controller asks the same schedule for the next time after the last one (pkg/controller/cronjob/utils.go
`mostRecentScheduleTime`). Day of month and day of week combine as cron does: when both are restricted, a
day matching either one counts. `@every <Go duration>` is robfig/cron's constant-delay schedule (accepted by
kube-apiserver 1.37.2: lwsconf fidelity batch/batch-api/every-schedule); `TZ=` prefixes are refused, as
validation does (the zone goes to `spec.timeZone`). Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                             "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = ((0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS),
                                                        (0, 6, _DAYS))
_SEARCH_LIMIT = timedelta(days=366 * 5)
"""How far ahead `next_after` looks before saying the schedule never fires (e.g. `0 0 30 2 *`)."""


class ScheduleError(ValueError):
    """A schedule the standard parser refuses; the message says which field and why."""


class Schedule(Protocol):
    """What the CronJob controller asks of a schedule (robfig/cron's `Schedule` interface)."""

    def next_after(self, t: datetime) -> datetime | None:
        """The first time strictly after `t` that the schedule fires at, or None if it never does."""
        ...


@dataclass(frozen=True)
class EverySchedule:
    """`@every <duration>`: robfig/cron's ConstantDelaySchedule. The delay is whole seconds (sub-second parts
    dropped, anything under a second made one second: `cron.Every`); the next time is `t` without its
    fraction of a second plus the delay."""

    seconds: int

    def next_after(self, t: datetime) -> datetime | None:
        return t.replace(microsecond=0) + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class FieldSchedule:
    """The allowed values of each field; `dom_star`/`dow_star` record an unrestricted day field."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    dom_star: bool
    dow_star: bool

    def matches(self, t: datetime) -> bool:
        if t.minute not in self.minutes or t.hour not in self.hours or t.month not in self.months:
            return False
        dom, dow = t.day in self.days, (t.isoweekday() % 7) in self.weekdays
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow

    def next_after(self, t: datetime) -> datetime | None:
        """The first whole minute strictly after `t` that the schedule fires at, or None within 5 years."""
        cur = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
        end = t + _SEARCH_LIMIT
        while cur <= end:
            if cur.month not in self.months:
                cur = (cur.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self.matches(cur.replace(hour=0, minute=0)) and not self._day_ok(cur):
                cur = cur.replace(hour=0, minute=0) + timedelta(days=1)
                continue
            if cur.hour not in self.hours:
                cur = cur.replace(minute=0) + timedelta(hours=1)
                continue
            if self.matches(cur):
                return cur
            cur += timedelta(minutes=1)
        return None

    def _day_ok(self, t: datetime) -> bool:
        dom, dow = t.day in self.days, (t.isoweekday() % 7) in self.weekdays
        return (dom and dow) if (self.dom_star or self.dow_star) else (dom or dow)


def parse(schedule: str) -> FieldSchedule | EverySchedule:
    """Parse a standard schedule; raises `ScheduleError` worded like robfig/cron's errors."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        raise ScheduleError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    if text.startswith("@every "):
        try:
            nanoseconds = go_duration(text[len("@every "):])
        except ValueError as exc:
            raise ScheduleError(f"failed to parse duration {text}: {exc}") from None
        return EverySchedule(max(1, nanoseconds // 1_000_000_000))
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {text}")
        text = _DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {schedule}")
    sets = [_field(value, *bounds) for value, bounds in zip(fields, _BOUNDS, strict=True)]
    weekdays = frozenset(7 % 7 if d == 7 else d for d in sets[4])
    return FieldSchedule(sets[0], sets[1], sets[2], sets[3], weekdays,
                    dom_star=fields[2] in ("*", "?"), dow_star=fields[4] in ("*", "?"))


def _field(text: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        out |= _range(part, low, high, names)
    return frozenset(out)


def _range(part: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    span, _, step_text = part.partition("/")
    step = _number(step_text, names) if step_text else 1
    if step <= 0:
        raise ScheduleError(f"step of range should be a positive number: {part}")
    if span in ("*", "?"):
        start, end = low, high
    elif "-" in span:
        a, _, b = span.partition("-")
        start, end = _number(a, names), _number(b, names)
    else:
        start = _number(span, names)
        end = high if step_text else start
    top = 7 if names is _DAYS else high  # 7 is Sunday too
    if start < low or end > top or start > end:
        raise ScheduleError(f"end of range ({end}) above maximum ({high}): {part}" if end > top else
                            f"beginning of range ({start}) below minimum ({low}): {part}" if start < low else
                            f"beginning of range ({start}) beyond end of range ({end}): {part}")
    return set(range(start, end + 1, step))


def _number(text: str, names: dict[str, int]) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if not text.isdigit():
        raise ScheduleError(f"failed to parse int from {text}: strconv.Atoi: parsing {text!r}: invalid syntax")
    return int(text)


_UNITS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
          "m": 60_000_000_000, "h": 3_600_000_000_000}
_TERM = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")


def go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string (`time.ParseDuration`: signed, terms like `1h30m`, `1.5s`), raising
    ValueError worded as Go's: `time: invalid duration "x"`, `time: missing unit in duration "5"`,
    `time: unknown unit "d" in duration "5d"`."""
    quoted = '"' + text + '"'
    rest, sign = text, 1
    if rest[:1] in ("+", "-"):
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"time: invalid duration {quoted}")
    total = 0
    while rest:
        match = _TERM.match(rest)
        number, unit = match.groups() if match else ("", "")
        if number in ("", "."):
            raise ValueError(f"time: invalid duration {quoted}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration {quoted}')
        whole, _, fraction = number.partition(".")
        scale = _UNITS[unit]
        total += int(whole or "0") * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
        rest = rest[len(number) + len(unit):]
    return sign * total
