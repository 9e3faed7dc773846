"""lwsconf.shutdown: every signal is Ctrl-C once, held inside critical blocks, abandoned on the third press.

Signal handling is process-wide, so each scenario runs in a fresh interpreter and reports what it saw.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from lwsconf import shutdown

REPO = Path(__file__).resolve().parents[1]


def scenario(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `code` (after `from lwsconf import shutdown`) in a new interpreter; its last line is JSON."""
    program = "import json, os, signal, sys, time\nfrom lwsconf import shutdown\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if k != shutdown.RUN_ID_ENV})


def last_json(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    lines = done.stdout.strip().splitlines()
    assert lines, (done.returncode, done.stdout, done.stderr)
    result: dict[str, object] = json.loads(lines[-1])
    return result


def test_sigterm_and_sighup_raise_keyboard_interrupt_once_installed() -> None:
    done = scenario("""
        shutdown.install(notify=None)
        seen = []
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            try:
                os.kill(os.getpid(), signum)
                time.sleep(1)
            except KeyboardInterrupt as exc:
                seen.append(str(exc))
            shutdown.uninstall()
            shutdown.install(notify=None)
        print(json.dumps({"seen": seen, "run_id": os.environ.get(shutdown.RUN_ID_ENV)}))
    """)
    result = last_json(done)
    assert result["seen"] == ["SIGTERM", "SIGHUP", "SIGINT"], done.stderr
    assert result["run_id"], "install() gives the process a run id its children inherit"


def test_a_signal_inside_a_deferred_block_interrupts_when_the_block_ends() -> None:
    done = scenario("""
        shutdown.install(notify=print)
        steps = []
        try:
            with shutdown.deferred("stopping the simulated cluster"):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)
                steps.append("block finished")
            steps.append("after the block")
        except KeyboardInterrupt as exc:
            steps.append(f"interrupted: {exc}")
        print(json.dumps({"steps": steps}))
    """)
    assert last_json(done)["steps"] == ["block finished", "interrupted: SIGTERM"], done.stdout
    assert "stopping the simulated cluster, please wait" in done.stdout


def test_without_install_a_held_signal_goes_to_the_previous_handler_afterwards() -> None:
    done = scenario("""
        steps = []
        try:
            with shutdown.deferred("starting the simulated cluster"):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
                steps.append("block finished")
        except KeyboardInterrupt:
            steps.append("KeyboardInterrupt from the default SIGINT handler")
        steps.append(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        print(json.dumps({"steps": steps}))
    """)
    assert last_json(done)["steps"] == ["block finished", "KeyboardInterrupt from the default SIGINT handler",
                                        True], done.stderr


def test_later_presses_do_not_cut_the_cleanup_and_the_third_abandons_it(tmp_path: Path) -> None:
    marker = tmp_path / "exit-hook-ran"
    done = scenario(f"""
        shutdown.install(notify=print)
        shutdown.at_exit(lambda: open({str(marker)!r}, "w").close())
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            print("first press: cleaning up", flush=True)
        os.kill(os.getpid(), signal.SIGINT)          # the same press (terminal + forwarding parent)
        time.sleep(shutdown.SAME_PRESS + 0.2)
        os.kill(os.getpid(), signal.SIGTERM)         # second press: held, cleanup goes on
        time.sleep(shutdown.SAME_PRESS + 0.2)
        print("still cleaning up", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)         # third press: abandon
        time.sleep(5)
        print("not reached", flush=True)
    """)
    assert done.returncode == 128 + signal.SIGTERM, (done.returncode, done.stdout, done.stderr)
    assert "still cleaning up" in done.stdout and "not reached" not in done.stdout, done.stdout
    assert "1 more time abandons it" in done.stdout and "abandoning the cleanup" in done.stdout, done.stdout
    assert marker.exists(), "the last-resort exit hooks run when the cleanup is abandoned"


def test_a_held_signal_interrupts_even_when_the_block_runs_inside_an_except_clause() -> None:
    """A caller handling some other exception (the block in an `except` or `finally` clause) used to make the
    block's end drop the held signal: `sys.exc_info()` inside the generator shows the caller's exception."""
    done = scenario("""
        shutdown.install(notify=None)
        steps = []
        try:
            raise ValueError("handled by the caller")
        except ValueError:
            try:
                with shutdown.deferred("starting the local cluster"):
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.2)
                steps.append("block ended, not interrupted")
            except KeyboardInterrupt as exc:
                steps.append(f"interrupted: {exc}")
        print(json.dumps({"steps": steps}))
    """)
    assert last_json(done)["steps"] == ["interrupted: SIGINT"], done.stderr


def test_a_block_failing_with_another_error_while_a_signal_is_held_ends_in_keyboard_interrupt() -> None:
    done = scenario("""
        shutdown.install(notify=None)
        try:
            with shutdown.deferred("starting the local cluster"):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)
                raise RuntimeError("etcd did not start")
        except BaseException as exc:
            print(json.dumps({"raised": type(exc).__name__, "context": repr(exc.__context__)}))
    """)
    assert last_json(done) == {"raised": "KeyboardInterrupt", "context": "RuntimeError('etcd did not start')"}


LOST = """
    shutdown.install(notify=print, reports_receipt=True)

    class Transport:  # a finalizer running on the main thread when the signal arrives
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)  # the handler runs here: its KeyboardInterrupt is "ignored" by the interpreter

    steps = []
    try:
        Transport()
        steps.append("went on: the interrupt was lost")
        time.sleep(shutdown.SAME_PRESS + 0.2)
        %s
    except KeyboardInterrupt as exc:
        shutdown.received()
        steps.append(f"interrupted: {exc}")
    print(json.dumps({"steps": steps}))
"""


def test_an_interrupt_lost_in_a_finalizer_is_raised_again_by_the_next_press() -> None:
    done = scenario(LOST % """
        os.kill(os.getpid(), signal.SIGTERM)  # the next press: it used to count as a repeat during a cleanup
        time.sleep(1)
        steps.append("second press ignored")
    """)
    assert last_json(done)["steps"] == ["went on: the interrupt was lost", "interrupted: SIGTERM"], done.stdout
    assert "please wait" not in done.stdout


def test_an_interrupt_lost_in_a_finalizer_is_delivered_by_redeliver_lost_at_the_end_of_the_block() -> None:
    done = scenario(LOST % """
        with shutdown.deferred("tearing down a test"):
            steps.append(f"lost one held again: {shutdown.redeliver_lost()}")
        steps.append("not interrupted")
    """)
    assert last_json(done)["steps"] == ["went on: the interrupt was lost", "lost one held again: True",
                                        "interrupted: SIGINT"], done.stdout


def test_a_received_interrupt_makes_the_next_press_a_repeat_during_the_cleanup() -> None:
    done = scenario("""
        shutdown.install(notify=print, reports_receipt=True)
        steps = []
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            shutdown.received()
            steps.append("first press: cleaning up")
        time.sleep(shutdown.SAME_PRESS + 0.2)
        os.kill(os.getpid(), signal.SIGTERM)  # a second press: held, the cleanup goes on
        time.sleep(0.2)
        with shutdown.deferred("tearing down a test"):
            steps.append(f"lost: {shutdown.redeliver_lost()}")
        steps.append("cleanup went on")
        print(json.dumps({"steps": steps}))
    """)
    assert last_json(done)["steps"] == ["first press: cleaning up", "lost: False", "cleanup went on"], done.stderr
    assert "please wait" in done.stdout


def test_a_pytest_run_whose_interrupt_is_lost_in_a_test_stops_after_that_tests_teardown(tmp_path: Path) -> None:
    """fixtures/interrupts.py in a real pytest run: the SIGINT lands in a finalizer during the first test."""
    (tmp_path / "test_lost.py").write_text(textwrap.dedent("""
        import os, signal, time

        class Transport:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.3)

        def test_first():
            Transport()
            time.sleep(0.2)

        def test_second():
            pass
    """))
    env = {k: v for k, v in os.environ.items() if k not in (shutdown.RUN_ID_ENV, "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "fixtures.interrupts", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-q", "test_lost.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, (done.returncode, done.stdout, done.stderr)
    assert "KeyboardInterrupt: SIGINT" in done.stdout and "1 passed" in done.stdout, done.stdout


def test_exit_hooks_run_newest_first_and_removed_ones_not_at_all() -> None:
    done = scenario("""
        order = []
        shutdown.at_exit(lambda: order.append("first"))
        removed = shutdown.at_exit(lambda: order.append("removed"))
        shutdown.at_exit(lambda: order.append("last"))
        shutdown.remove_at_exit(removed)
        shutdown.run_exit_hooks()
        shutdown.run_exit_hooks()
        print(json.dumps({"order": order}))
    """)
    assert last_json(done)["order"] == ["last", "first"], done.stderr


def test_marked_processes_are_found_by_the_run_id_in_their_environment() -> None:
    rid = f"test-{os.getpid()}-{time.monotonic_ns()}"
    marked = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              env={**os.environ, shutdown.RUN_ID_ENV: rid})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={**os.environ, shutdown.RUN_ID_ENV: rid + "-other"})
    try:
        deadline = time.monotonic() + 10
        found: list[shutdown.MarkedProcess] = []
        while time.monotonic() < deadline and not found:  # the child's environment appears once it has exec'd
            found = shutdown.marked_processes(rid)
        assert [p.pid for p in found] == [marked.pid], found
        assert found[0].ppid == os.getpid() and "time.sleep(60)" in found[0].cmdline
        assert marked.pid in shutdown.children() and other.pid in shutdown.children()
    finally:
        for proc in (marked, other):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert shutdown.marked_processes(rid) == []


def test_sweep_removes_this_runs_temp_folders_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the temp directory and in SHORT_TEMP, where socket folders go when the temp directory is too deep."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "short").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(shutdown, "SHORT_TEMP", tmp_path / "short")
    monkeypatch.setenv(shutdown.RUN_ID_ENV, "run-a")
    ours = [Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix(what))) for what in ("sim", "nodes")]
    ours.append(Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("dp"), dir=shutdown.short_temp_dir(1))))
    assert ours[-1].parent == tmp_path / "short"
    monkeypatch.setenv(shutdown.RUN_ID_ENV, "run-b")
    theirs = Path(tempfile.mkdtemp(prefix=shutdown.temp_prefix("sim")))
    assert sorted(shutdown.sweep_temp("run-a")) == sorted(ours)
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == [theirs.name]
    assert list((tmp_path / "short").iterdir()) == []


def test_remove_tree_outlasts_a_writer_that_is_still_finishing(tmp_path: Path) -> None:
    """A just-killed container may create entries for a moment more; one rmtree pass then leaves the folder."""
    import threading

    folder = tmp_path / "nodes"
    (folder / "node-0").mkdir(parents=True)
    stop_writing = threading.Event()
    created: list[int] = []

    def writer() -> None:
        while not stop_writing.is_set():
            target = folder / "node-0" / f"f{len(created)}"
            try:  # into the folder it already has open, as a container does: never re-creating its parents
                target.write_text("x")
                created.append(1)
            except OSError:
                pass

    thread = threading.Thread(target=writer)
    thread.start()
    timer = threading.Timer(0.3, stop_writing.set)
    timer.start()
    try:
        assert shutdown.remove_tree(folder, timeout=10.0)
    finally:
        stop_writing.set()
        thread.join()
    assert created, "the writer never wrote: the race was not exercised"
    assert not folder.exists()


def test_remove_tree_gives_up_after_its_timeout_and_names_what_is_left(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "kept"
    (folder / "inner").mkdir(parents=True)
    (folder / "inner" / "file").write_text("x")
    passes: list[Path] = []
    monkeypatch.setattr(shutil, "rmtree", lambda path, **_: passes.append(path))  # a folder that stays
    assert not shutdown.remove_tree(folder, timeout=0.2)
    assert len(passes) > 1, "it retried"
    assert "inner/file" in caplog.text and "0.2 s" in caplog.text
