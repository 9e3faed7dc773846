"""`lwsconf run`: the conformance suite with pytest's and the suite's options, from any directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lwsconf import cli, suite_run

REPO = Path(__file__).resolve().parents[2]


def test_the_suite_is_found_in_the_source_checkout() -> None:
    assert suite_run.suite_root() == REPO


def test_outside_a_checkout_the_suite_is_not_found(tmp_path: Path) -> None:
    fake = tmp_path / "site-packages" / "lwsconf" / "__init__.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("")
    assert suite_run.suite_root(str(fake)) is None


@pytest.mark.parametrize(("args", "workers"), [
    ([], ["-n", "2"]),
    (["-n", "0"], []),
    (["-n4"], []),
    (["--numprocesses=3"], []),
    (["-p", "no:xdist"], []),
])
def test_two_workers_unless_the_arguments_choose(args: list[str], workers: list[str]) -> None:
    argv = suite_run.pytest_command(REPO, ["--all-features", *args], python="py")
    assert argv == ["py", "-m", "pytest", str(REPO / "conformance"), "--rootdir", str(REPO), *workers,
                    "--all-features", *args]


def test_without_a_checkout_it_says_what_to_do(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(suite_run, "suite_root", lambda: None)
    assert cli.main(["run", "--all-features"]) == 2
    err = capsys.readouterr().err
    assert "not installed with this lwsconf" in err and "pip wheel" in err and "make conformance" in err, err


def test_help_lists_the_suite_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--cluster", "--lws-impl", "--profiles", "--run-test", "--timeout-overrides"):
        assert option in out, out


def test_a_bad_suite_option_is_a_usage_error_with_the_reason(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "lwsconf.cli", "run", "--cluster=nope", "-n", "0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "nope" in done.stderr + done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_one_conformance_test_runs_from_another_directory_and_writes_its_reports(tmp_path: Path) -> None:
    # --profiles=LWS-CORE: the other profiles would be not-run (none of their tests ran), which fails the gate
    done = subprocess.run([sys.executable, "-m", "lwsconf.cli", "run", "--run-test=HeadlessServiceShape",
                           "--profiles=LWS-CORE", "-n", "0", "-q", "-p", "no:randomly"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert "1 passed" in done.stdout, done.stdout[-3000:]
    assert (tmp_path / "reports" / "latest" / "junit.xml").is_file(), sorted(p.name for p in tmp_path.rglob("*"))
