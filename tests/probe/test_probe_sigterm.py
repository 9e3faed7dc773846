"""The probe ends on SIGTERM with 143, also as PID 1, where the kernel drops signals that have no handler.

In a container the probe is PID 1 of its PID namespace. A signal sent to a namespace's init from outside it is
dropped unless init installed a handler (signal(7); kernel/signal.c sig_task_ignored with SIGNAL_UNKILLABLE),
so without one the kubelet's SIGTERM did nothing and every deletion waited out terminationGracePeriodSeconds
before SIGKILL (exit 137).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lwsconf import probe
from lwsconf.ports import reserve_port
from tests.probe.test_probe import wait_listening

EXIT_WAIT = 30.0
"""How long the probe may take to end after SIGTERM; the failure it rules out is not ending at all."""


def _stop(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(timeout=EXIT_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"the probe still ran {EXIT_WAIT:.0f} s after SIGTERM (pid {proc.pid})") from None


def test_sigterm_ends_the_probe_with_143() -> None:
    held = reserve_port("127.0.0.1")
    try:
        proc = subprocess.Popen([sys.executable, str(probe.PROGRAM), "--port", str(held.port)],
                                env={**os.environ, "POD_IP": "127.0.0.1"}, stderr=subprocess.DEVNULL)
        wait_listening(f"http://127.0.0.1:{held.port}", proc)
        proc.send_signal(signal.SIGTERM)
        # -15 would be the default action (killed by the signal); 143 is the probe's own exit.
        assert _stop(proc) == 143
    finally:
        held.release()


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a PID namespace needs root and util-linux's unshare")
def test_sigterm_ends_the_probe_as_pid_1_of_its_namespace(tmp_path: Path) -> None:
    held = reserve_port("127.0.0.1")
    try:
        proc = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", sys.executable, str(probe.PROGRAM),
                                 "--port", str(held.port)],
                                env={**os.environ, "POD_IP": "127.0.0.1"}, stderr=subprocess.DEVNULL)
        wait_listening(f"http://127.0.0.1:{held.port}", proc)
        (init,) = _children(proc.pid)  # unshare's only child: PID 1 inside, `init` outside
        nspid = next(line for line in Path(f"/proc/{init}/status").read_text().splitlines()
                     if line.startswith("NSpid:"))
        assert nspid.split()[-1] == "1", f"the probe is not PID 1 of its namespace: {nspid}"
        os.kill(init, signal.SIGTERM)
        assert _stop(proc) == 143  # unshare --fork exits with its child's status
    finally:
        held.release()
