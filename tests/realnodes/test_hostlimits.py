"""The inotify instance limit: raised while real nodes run, the value found first put back by the last to stop."""

from __future__ import annotations

from pathlib import Path

from lwsconf.realnodes import hostlimits


def test_a_low_limit_is_raised_and_the_first_value_found_is_put_back(tmp_path: Path) -> None:
    limit = tmp_path / "max_user_instances"
    limit.write_text("128\n")
    assert hostlimits.raise_limit(tmp_path, limit, wanted=1024) == ""
    assert limit.read_text() == "1024\n"
    assert hostlimits.raise_limit(tmp_path, limit, wanted=1024) == ""  # a second cluster: already high enough
    assert hostlimits.restore_limit(tmp_path, limit) == []
    assert limit.read_text() == "128\n" and not (tmp_path / hostlimits.MARKER).exists()
    assert hostlimits.restore_limit(tmp_path, limit) == []  # nothing remembered: nothing to do
    assert limit.read_text() == "128\n"


def test_a_limit_left_raised_by_a_killed_run_is_put_back_to_the_value_before_it(tmp_path: Path) -> None:
    limit = tmp_path / "max_user_instances"
    limit.write_text("128\n")
    hostlimits.raise_limit(tmp_path, limit, wanted=1024)  # that run is killed: no restore
    hostlimits.raise_limit(tmp_path, limit, wanted=1024)  # the next run finds 1024 and keeps the marker
    assert hostlimits.restore_limit(tmp_path, limit) == []
    assert limit.read_text() == "128\n"


def test_a_high_enough_limit_is_left_alone(tmp_path: Path) -> None:
    limit = tmp_path / "max_user_instances"
    limit.write_text("8192\n")
    assert hostlimits.raise_limit(tmp_path, limit, wanted=1024) == ""
    assert limit.read_text() == "8192\n" and not (tmp_path / hostlimits.MARKER).exists()


def test_a_limit_that_cannot_be_written_is_one_warning_not_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "file"
    message = hostlimits.raise_limit(tmp_path, missing, wanted=1024)
    assert "could not raise" in message and "sysctl fs.inotify.max_user_instances" in message
