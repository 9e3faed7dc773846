"""One control-plane component as a child process: started, watched, stopped, its log kept.

Each component writes to its own log file (its tail is what a failure shows). It runs in a session of
its own, so a terminal's Ctrl-C reaches only us and we stop the components in order (the API server
before etcd), and with PR_SET_PDEATHSIG, so that none outlives us even when we are killed with SIGKILL.

The death signal is set by util-linux's `setpriv --pdeathsig KILL`, which execs the component, when it is on
PATH; only without it by a `preexec_fn`, which runs Python in the forked child and is unsafe once this process
has other threads (Python's subprocess documentation says so): started while a local cluster's node agents
and kube-proxy ran on their threads, upstream's LWS manager died of SIGSEGV before its first instruction in
3 of 6 starts, and in 0 of 6 through setpriv.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

STOP_TIMEOUT = 20.0
"""Seconds a component has to exit after SIGTERM before it is killed."""
LOG_TAIL_LINES = 40
PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Component:
    """A started component; `tail()` for its log, `exited()` for its status, `stop()` to end it."""

    def __init__(self, name: str, argv: Sequence[str], log: Path, cwd: Path,
                 env: Mapping[str, str] | None = None) -> None:
        """`env`: variables set on top of this process's environment."""
        self.name, self.argv, self.log = name, tuple(argv), log
        setpriv = shutil.which("setpriv")
        launch = (setpriv, "--pdeathsig", "KILL", "--", *self.argv) if setpriv else self.argv
        with open(log, "wb") as out:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(launch, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, **env} if env else None,
                                         preexec_fn=None if setpriv else _die_with_parent)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exited(self) -> int | None:
        """The exit status when it has stopped, else None."""
        return self.proc.poll()

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError as exc:
            return f"(no log at {self.log}: {exc.strerror})"
        return "\n".join(text.splitlines()[-lines:])

    def describe(self) -> str:
        """Its state and log tail, for a failure message."""
        code = self.exited()
        state = "running" if code is None else f"exited with status {code}"
        return f"{self.name} (pid {self.pid}) {state}; last lines of {self.log}:\n{self.tail()}"

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM, then SIGKILL after `timeout`; always reaps the process."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
