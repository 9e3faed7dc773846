"""One orderly shutdown for every way a run can end: normal exit, an exception, SIGINT, SIGTERM, SIGHUP.

Why: a run starts things that outlive a careless exit: a simulated cluster's temp folders, container
processes in sessions of their own (`sim/nodes/runtime/runtime.py`), xdist workers, namespaces on a real
cluster. Python turns SIGINT into KeyboardInterrupt, so `finally` blocks and pytest's fixture
finalizers run; SIGTERM (CI cancellation, `kill`, `make` passing it on) kills the process at once by
default, and a second Ctrl-C during teardown aborts whichever finalizer it lands in. This module
gives every signal Ctrl-C's meaning, once:

* `install()` (pytest processes; `lwsconf run` and `lwsconf sim up` forward or handle signals
  themselves): SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt the first time. Later signals do
  not interrupt the cleanup that is running: they print what is going on, and the `FORCE_AFTER`-th
  abandons it (runs the `at_exit` hooks, then exits at once), so a stuck teardown can still be left.
  Signals closer than `SAME_PRESS` seconds count once: a terminal's Ctrl-C reaches a process both
  from the terminal and from a parent that forwards it.
* A KeyboardInterrupt can be lost on its way: a handler runs wherever the main thread is, and one
  raised inside a finalizer (`__del__`, a weakref or GC callback; an asyncio transport's `__del__` runs
  on the main thread) is printed as "Exception ignored" and dropped, as is one caught by an `except
  BaseException` that does not re-raise. The process then went on as if never told, and every later
  signal counted as a repeat during a cleanup that was not happening (a `--cluster=local` run kept
  passing tests through two more SIGINTs). So a process that says when the interrupt arrived
  (`install(reports_receipt=True)`, then `received()`: pytest's `pytest_keyboard_interrupt`) raises it
  again on the next press outside a `deferred` block, and `redeliver_lost()` holds a lost one again
  where its caller knows none can be in flight (pytest's per-test teardown).
* `deferred(what)`: a block that must not be cut in half (starting or stopping a cluster): a signal
  arriving inside it is held and takes effect when the block ends, unless the block ends with a
  KeyboardInterrupt already (it ends with another exception: the KeyboardInterrupt replaces it, which
  stays its context). Without `install()` it holds the signal and re-delivers it to the previous
  handler afterwards.
* `at_exit(hook)`: last-resort cleanups (kill container process groups, remove temp folders), run
  at interpreter exit and when the cleanup is abandoned; `remove_at_exit` when done orderly.
* Marking: `run_id()` puts LWSCONF_RUN_ID in the environment, so every process the run starts
  carries it; `marked_processes(run_id)` finds them (the interruption test counts leftovers so).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

log = logging.getLogger("lwsconf")

RUN_ID_ENV = "LWSCONF_RUN_ID"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
FORCE_AFTER = 3
"""Signals (presses) after which a cleanup in progress is abandoned."""
SAME_PRESS = 0.3
"""Seconds within which repeated signals count as one press (terminal + forwarding parent)."""
REMOVE_TIMEOUT = float(os.environ.get("LWSCONF_REMOVE_TIMEOUT", "5"))
"""Seconds `remove_tree` keeps removing a folder that something still writes into."""

Notify = Callable[[str], None]
Handlers = dict[signal.Signals, Callable[[int, FrameType | None], Any] | int | None]


def _stderr(message: str) -> None:
    print(message, file=sys.__stderr__ or sys.stderr, flush=True)


class _State:
    def __init__(self) -> None:
        self.installed = False
        self.notify: Notify | None = _stderr
        self.presses = 0
        self.last_press = -1.0
        self.interrupting = False
        """KeyboardInterrupt has been raised (or is held): the process is shutting down."""
        self.held: int | None = None
        self.raised: int | None = None
        """The signal whose KeyboardInterrupt was raised and not yet `received()` (`reports_receipt` only)."""
        self.reports_receipt = False
        self.depth = 0
        self.what: list[str] = []
        self.hooks: list[Callable[[], None]] = []


_state = _State()
_lock = threading.Lock()


def run_id() -> str:
    """This run's id, created on first use and put into the environment so child processes inherit it."""
    value = os.environ.get(RUN_ID_ENV)
    if not value:
        value = secrets.token_hex(4)
        os.environ[RUN_ID_ENV] = value
    return value


def temp_prefix(what: str) -> str:
    """`lwsconf-<what>-<tag>-`, the tag 8 hex digits of the run id: temp folders a killed process left
    (an xdist worker killed with SIGKILL) are found by `sweep_temp`; short, as socket paths under them are capped."""
    return f"lwsconf-{what}-{_tag(run_id())}-"


def _tag(rid: str) -> str:
    return hashlib.sha256(rid.encode()).hexdigest()[:8]


SHORT_TEMP = Path("/tmp")
"""Where a folder for Unix sockets goes when $TMPDIR is too deep for one (a socket path holds at most 107 bytes, and
pytest's tmp_path under xdist is deeper): /tmp is short on every Linux. `sweep_temp` looks here too."""


def short_temp_dir(limit: int) -> str:
    """The temp directory if its path is at most `limit` characters, else `SHORT_TEMP`: the base of a socket folder."""
    base = tempfile.gettempdir()
    return base if len(base) <= limit else str(SHORT_TEMP)


def sweep_temp(rid: str | None = None) -> list[Path]:
    """Remove this run's temp folders (`temp_prefix`) still in the temp directory or `SHORT_TEMP`; the ones removed.

    For the end of a run whose processes have all ended: a process killed with SIGKILL runs no cleanup. Both places:
    a worker with a deep $TMPDIR puts its socket folders in SHORT_TEMP (`short_temp_dir`), and a sweep of $TMPDIR
    alone left them there (6 device-plugin folders per run of tests/fixtures/test_worker_crash.py).
    """
    pattern = f"lwsconf-*-{_tag(rid or run_id())}-*"
    places = dict.fromkeys([Path(tempfile.gettempdir()), SHORT_TEMP])
    found = sorted(p for place in places for p in place.glob(pattern) if p.is_dir())
    for folder in found:
        shutil.rmtree(folder, ignore_errors=True)
    return found


def remove_tree(folder: Path, *, timeout: float | None = None) -> bool:
    """Remove `folder` until it stays gone (at most `timeout`, default `REMOVE_TIMEOUT`); True when gone.

    Why not one `shutil.rmtree(ignore_errors=True)`: a container process killed a moment ago may still
    be finishing a `mkdir` under its node's folder (SIGKILL waits for the syscall), and the PID
    namespace's inner processes outlive the reaped outer one by a few milliseconds. One pass then
    fails with ENOTEMPTY, the error is ignored, and the folder is left behind (CI saw it once in
    `tests/test_interrupts.py`). What is still there when the time is up is logged by name.
    """
    deadline = time.monotonic() + (REMOVE_TIMEOUT if timeout is None else timeout)
    pause = 0.01
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            return True
        if time.monotonic() >= deadline:
            left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))[:10] if folder.is_dir() else []
            log.warning("lwsconf: could not remove %s within %.1f s; still there: %s", folder,
                        REMOVE_TIMEOUT if timeout is None else timeout, ", ".join(left) or "(the folder itself)")
            return False
        time.sleep(pause)  # polling: a folder has no event for "nobody writes here any more"
        pause = min(pause * 2, 0.2)


def interrupting() -> bool:
    """True once this process was told to stop (the first signal was raised or is held)."""
    return _state.interrupting


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install(*, notify: Notify | None = _stderr, reports_receipt: bool = False) -> None:
    """Make SIGINT, SIGTERM and SIGHUP one orderly shutdown (main thread; idempotent).

    Args:
        notify: where to say that a repeated signal is held or the cleanup abandoned; None for silence
            (xdist workers: their controller speaks for them).
        reports_receipt: the caller calls `received()` once its KeyboardInterrupt reaches the code that shuts
            down; until then a new press outside a `deferred` block raises it again (the first was lost).
    """
    run_id()
    _state.notify = notify
    _state.reports_receipt = reports_receipt
    if _state.installed or not _on_main_thread():
        return
    for signum in SIGNALS:
        signal.signal(signum, _handle)
    _state.installed = True


def uninstall() -> None:
    """Restore the default handlers (tests of this module)."""
    if _state.installed and _on_main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
    _state.installed = False
    _state.presses, _state.last_press, _state.interrupting, _state.held = 0, -1.0, False, None
    _state.raised, _state.reports_receipt = None, False


def received() -> None:
    """The KeyboardInterrupt reached the code that shuts down (pytest: `pytest_keyboard_interrupt`): later
    presses are repeats during the cleanup (`reports_receipt`)."""
    _state.raised = None


def redeliver_lost() -> bool:
    """Inside a `deferred` block where no KeyboardInterrupt can be in flight (pytest's per-test teardown: a
    propagating one skips it), hold again an interrupt raised but never `received()`: it was lost on its way
    (module docstring), and the block's end delivers it. True if there was one."""
    if _state.raised is None or _state.depth == 0 or isinstance(sys.exc_info()[1], KeyboardInterrupt):
        return False
    if _state.held is None:
        _state.held = _state.raised
    _state.raised = None
    return True


def _say(text: str) -> None:
    if _state.notify is not None:
        _state.notify(text)


def count_press() -> int | None:
    """Count a signal as a press: its number (1, 2, ...), or None when it repeats the last one (`SAME_PRESS`)."""
    now = time.monotonic()
    new_press = now - _state.last_press > SAME_PRESS
    _state.last_press = now
    if not new_press:
        return None
    _state.presses += 1
    return _state.presses


def _handle(signum: int, _frame: FrameType | None) -> None:
    new_press = count_press() is not None
    name = signal.Signals(signum).name
    if _state.presses >= FORCE_AFTER and new_press and _state.installed:
        abandon(signum)
    if _state.raised is not None and _state.depth == 0:  # the last KeyboardInterrupt was lost (or is on its way)
        if new_press:
            _interrupt(signum)
        return
    if _state.interrupting or _state.depth > 0:
        if _state.held is None and (not _state.interrupting or _state.raised is not None):
            _state.held, _state.raised = signum, None  # (raised: the last one was lost; this block's end delivers it)
        _state.interrupting = True
        if new_press:
            doing = _state.what[-1] if _state.what else "cleaning up what this run started"
            left = FORCE_AFTER - _state.presses
            more = f"; {name} {left} more time{'s' if left != 1 else ''} abandons it" if _state.installed else ""
            _say(f"lwsconf: {name}: {doing}, please wait{more}")
        return
    _interrupt(signum)


def _interrupt(signum: int) -> NoReturn:
    _state.interrupting = True
    if _state.reports_receipt:
        _state.raised = signum
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def deferred(what: str) -> Iterator[None]:
    """Hold signals for the block; a held signal interrupts (KeyboardInterrupt) when it ends.

    Nesting is fine; off the main thread the block runs unprotected (signals reach only the main thread).
    """
    if not _on_main_thread():
        yield
        return
    previous = None if _state.installed else {s: signal.signal(s, _handle) for s in SIGNALS}
    _state.depth += 1
    _state.what.append(what)
    ending: BaseException | None = None
    try:
        yield
    except BaseException as exc:
        ending = exc
        raise
    finally:
        _state.what.pop()
        _state.depth -= 1
        if _state.depth == 0:
            _release(previous, ending)


def _release(previous: Handlers | None, ending: BaseException | None = None) -> None:
    held, _state.held = _state.held, None
    if previous is not None:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        _state.interrupting, _state.presses = False, 0
        if held is not None:
            signal.raise_signal(held)  # to whoever handled it before: KeyboardInterrupt, exit, ...
        return
    # Not `sys.exc_info()`: inside this generator it also shows an exception a caller is handling (a block run in
    # an `except` or `finally` clause), and a held signal was dropped for it.
    if held is not None and not isinstance(ending, KeyboardInterrupt):
        _interrupt(held)


def at_exit(hook: Callable[[], None]) -> Callable[[], None]:
    """Run `hook` at interpreter exit, or when a cleanup is abandoned (last registered runs first)."""
    with _lock:
        _state.hooks.append(hook)
    return hook


def remove_at_exit(hook: Callable[[], None]) -> None:
    with _lock, contextlib.suppress(ValueError):
        _state.hooks.remove(hook)


@atexit.register
def run_exit_hooks() -> None:
    """Run (and forget) every `at_exit` hook, newest first; one failing does not stop the others."""
    while True:
        with _lock:
            if not _state.hooks:
                return
            hook = _state.hooks.pop()
        try:
            hook()
        except Exception:  # noqa: BLE001 - a last-resort cleanup must not stop the next one
            log.exception("lwsconf: exit cleanup %r failed", hook)


def abandon(signum: int) -> None:
    """Leave a cleanup that takes too long: last-resort hooks (kill, remove), then exit at once."""
    _say(f"lwsconf: {signal.Signals(signum).name} again: abandoning the cleanup; killing this run's processes and "
         "removing its temp folders (namespaces or clusters still being deleted may be left)")
    run_exit_hooks()
    sys.stdout.flush()
    os._exit(128 + signum)


# --- finding a run's processes --------------------------------------------------------------------

@dataclass(frozen=True)
class MarkedProcess:
    pid: int
    ppid: int
    cmdline: str

    def __str__(self) -> str:
        return f"pid {self.pid} (parent {self.ppid}): {self.cmdline[:200]}"


def marked_processes(rid: str, *, exclude: Collection[int] = ()) -> list[MarkedProcess]:
    """Live processes whose environment carries LWSCONF_RUN_ID=`rid` (zombies and `exclude` left out)."""
    needle = f"{RUN_ID_ENV}={rid}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            found.append(MarkedProcess(int(entry.name), int(fields[1]), cmdline))
    return sorted(found, key=lambda p: p.pid)


def children(pid: int | None = None) -> list[int]:
    """The direct children of `pid` (default: this process), whichever of its threads started them."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{os.getpid() if pid is None else pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return sorted(found)
