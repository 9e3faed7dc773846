"""Standard 5-field cron schedules (`lwsconf.sim.cron`), as robfig/cron's standard parser reads them."""

from __future__ import annotations

from datetime import datetime

import pytest

from lwsconf.sim import cron


def test_every_five_minutes_and_descriptors() -> None:
    t = datetime(2026, 1, 1, 12, 3)
    assert cron.parse("*/5 * * * *").next_after(t) == datetime(2026, 1, 1, 12, 5)
    assert cron.parse("@hourly").next_after(t) == datetime(2026, 1, 1, 13, 0)
    assert cron.parse("@daily").next_after(t) == datetime(2026, 1, 2, 0, 0)


def test_names_ranges_lists_and_weekday_or_day_of_month() -> None:
    s = cron.parse("30 9 * jan-mar mon,fri")
    assert s.next_after(datetime(2026, 1, 1, 0, 0)) == datetime(2026, 1, 2, 9, 30)  # 2026-01-02 is a Friday
    both = cron.parse("0 0 13 * 5")  # the 13th or any Friday
    assert both.next_after(datetime(2026, 1, 10, 0, 0)) == datetime(2026, 1, 13, 0, 0)
    assert cron.parse("0 0 * * 7").next_after(datetime(2026, 1, 1)) == datetime(2026, 1, 4)  # 7 is Sunday


@pytest.mark.parametrize("bad", ["61 * * * *", "* * * *", "@every", "@every 5", "TZ=UTC * * * * *", "*/0 * * * *",
                                 "5-1 * * * *", "x * * * *"])
def test_refused_schedules(bad: str) -> None:
    with pytest.raises(cron.ScheduleError):
        cron.parse(bad)


def test_a_schedule_that_never_fires_answers_none() -> None:
    assert cron.parse("0 0 30 2 *").next_after(datetime(2026, 1, 1)) is None


def test_every_is_a_constant_delay_in_whole_seconds() -> None:
    """robfig/cron's ConstantDelaySchedule: kube-apiserver 1.37.2 accepts `@every 90s` and `@every 0s`
    (lwsconf fidelity batch/batch-api/every-schedule, every-zero); under a second counts as one."""
    t = datetime(2026, 1, 1, 12, 0, 0, 400_000)
    assert cron.parse("@every 90s").next_after(t) == datetime(2026, 1, 1, 12, 1, 30)
    assert cron.parse("@every 1h30m").next_after(t) == datetime(2026, 1, 1, 13, 30)
    assert cron.parse("@every 1.5s").next_after(t) == datetime(2026, 1, 1, 12, 0, 1)
    assert cron.parse("@every 0s").next_after(t) == datetime(2026, 1, 1, 12, 0, 1)


@pytest.mark.parametrize(("text", "message"), [
    ("@every ninety", 'failed to parse duration @every ninety: time: invalid duration "ninety"'),
    ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
    ("@every 5d", 'failed to parse duration @every 5d: time: unknown unit "d" in duration "5d"'),
])
def test_every_duration_errors_read_as_go(text: str, message: str) -> None:
    with pytest.raises(cron.ScheduleError) as refused:
        cron.parse(text)
    assert str(refused.value) == message


def test_go_durations() -> None:
    assert cron.go_duration("1h2m3.5s") == 3_723_500_000_000
    assert cron.go_duration("-1.5ms") == -1_500_000
    assert cron.go_duration("0") == 0
    assert cron.go_duration("300us") == 300_000
