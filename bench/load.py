"""A bounded CPU load beside a run: N busy processes that stop by themselves (issue 30's soak).

A flake that shows only when the machine is busy is the kind CI meets (a 2-core runner with a neighbour), so the
soak runs the suites with two busy processes beside them. Each busy process is bounded three ways, so none can
outlive the soak even when the soak itself is killed with SIGKILL: it exits at its own deadline, it exits when its
parent is gone (it polls getppid, every ~50 ms of work), and `CpuLoad.__exit__` terminates and reaps it.

    with CpuLoad(workers=2, max_seconds=3600):
        ...  # the measured runs

Why not `stress` or `stress-ng`: one more system package for a ten-line loop, and neither stops when its parent
dies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import TracebackType

BUSY = """
import os, sys, time
deadline, parent = time.monotonic() + float(sys.argv[1]), int(sys.argv[2])
while time.monotonic() < deadline and os.getppid() == parent:
    for _ in range(200_000):
        pass
"""
"""The busy loop: spins until its deadline or until its parent (the soak) is gone."""


class CpuLoad:
    """`workers` busy processes for at most `max_seconds`; started on enter, terminated and reaped on exit."""

    def __init__(self, workers: int, max_seconds: float) -> None:
        if workers < 0 or max_seconds <= 0:
            raise ValueError(f"CpuLoad wants workers >= 0 and max_seconds > 0, got {workers} and {max_seconds}")
        self.workers = workers
        self.max_seconds = max_seconds
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuLoad:
        for _ in range(self.workers):
            self.procs.append(subprocess.Popen([sys.executable, "-c", BUSY, str(self.max_seconds), str(os.getpid())],
                                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        return self

    def alive(self) -> int:
        """How many busy processes still run (they stop at their deadline)."""
        return sum(1 for p in self.procs if p.poll() is None)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 5.0
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
