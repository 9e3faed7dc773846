"""The CronJob controller's schedule arithmetic (`due_time`, `job_name`) as cronjob_controllerv2.go and
utils.go compute it: the most recent time in (last, now], Job names in minutes since the epoch."""

from __future__ import annotations

from datetime import UTC, datetime

from lwsconf.sim import cron
from lwsconf.sim.controllers.batch import cronjob


def test_due_time_is_the_most_recent_missed_time_not_the_first() -> None:
    every5 = cron.parse("*/5 * * * *")
    assert cronjob.due_time(every5, datetime(2026, 1, 1, 12, 0), datetime(2026, 1, 1, 12, 17)) == \
        datetime(2026, 1, 1, 12, 15)
    assert cronjob.due_time(every5, datetime(2026, 1, 1, 12, 15), datetime(2026, 1, 1, 12, 17)) is None

    every90 = cron.parse("@every 90s")  # a constant delay counts from the last schedule time, not the clock
    assert cronjob.due_time(every90, datetime(2026, 1, 1, 12, 0), datetime(2026, 1, 1, 12, 4)) == \
        datetime(2026, 1, 1, 12, 3)


def test_job_name_counts_minutes_since_the_epoch() -> None:
    assert cronjob.job_name("tick", datetime(2026, 1, 1, 0, 1, tzinfo=UTC)) == "tick-29453761"  # 1767225660 s / 60


def test_time_zone_defaults_to_utc_and_reads_spec_time_zone() -> None:
    assert cronjob.zone_of({"spec": {}}) is UTC
    assert str(cronjob.zone_of({"spec": {"timeZone": "Europe/Paris"}})) == "Europe/Paris"
