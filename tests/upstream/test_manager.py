"""The manager process: its configuration, readiness wait, a manager that exits, stop and restart.

A fake manager (a Python script) stands in for upstream's binary: it reads the --config file lwsconf
wrote and answers /readyz on the health port, or exits at once when told to."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest
import yaml

from lwsconf.upstream import manager
from lwsconf.waits import core

FAKE_MANAGER = """#!{python}
import http.server, os, sys, yaml
args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
config = yaml.safe_load(open(args["config"]))
print("fake manager", os.getpid(), "config", config, flush=True)
if os.environ.get("FAKE_MANAGER_EXIT"):
    print("unable to load the configuration: boom", flush=True)
    sys.exit(3)
host, port = config["health"]["healthProbeBindAddress"].split(":")
class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
http.server.HTTPServer((host, int(port)), Ready).serve_forever()
"""


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    binary = tmp_path / "manager"
    binary.write_text(FAKE_MANAGER.format(python=sys.executable))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return binary


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "a",
                                    "contexts": [{"name": "a"}, {"name": "b"}]}))
    return path


def test_configuration_keeps_everything_on_loopback_with_our_certificate(tmp_path: Path) -> None:
    config = manager.configuration(manager.Ports(webhook=1, metrics=2, health=3), tmp_path)
    assert config == {"apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration",
                      "leaderElection": {"leaderElect": True, "leaseDuration": "60s", "renewDeadline": "45s",
                                         "retryPeriod": "5s"},
                      "internalCertManagement": {"enable": False},
                      "webhook": {"host": "127.0.0.1", "port": 1, "certDir": str(tmp_path)},
                      "metrics": {"bindAddress": "127.0.0.1:2"}, "health": {"healthProbeBindAddress": "127.0.0.1:3"}}


def test_configuration_with_gang_scheduling_names_volcano(tmp_path: Path) -> None:
    config = manager.configuration(manager.Ports(webhook=1, metrics=2, health=3), tmp_path, gang_scheduling=True)
    assert config["gangSchedulingManagement"] == {"schedulerProvider": "volcano"}
    assert "gangSchedulingManagement" not in manager.configuration(manager.Ports(1, 2, 3), tmp_path)


def test_a_kubeconfig_without_a_cluster_serves_no_podgroups(kubeconfig: Path, tmp_path: Path) -> None:
    assert manager.serves_podgroups(kubeconfig, "b", tmp_path) is False


def _seconds(duration: object) -> float:
    text = str(duration)
    assert text.endswith("s") and text[:-1].isdigit(), f"{duration!r}: not a whole-seconds Go duration"
    return float(text[:-1])


def test_leader_election_durations_are_ones_client_go_accepts_and_outlast_a_slow_api_server() -> None:
    """client-go's NewLeaderElector refuses leaseDuration <= renewDeadline and renewDeadline <=
    JitterFactor (1.2) x retryPeriod; the renew deadline is what a slow API server must beat, 10s upstream."""
    election = manager.LEADER_ELECTION
    lease, renew, retry = (_seconds(election[k]) for k in ("leaseDuration", "renewDeadline", "retryPeriod"))
    assert election["leaderElect"] is True
    assert lease > renew > 1.2 * retry
    assert renew >= 45


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_start_waits_for_readyz_and_stop_leaves_nothing(fake: Path, kubeconfig: Path) -> None:
    proc = manager.ManagerProcess(fake, kubeconfig, "b", ready_timeout=30).start()
    try:
        assert proc.component is not None
        pid = proc.component.pid
        certs = proc.folder / "certs"
        assert sorted(p.name for p in certs.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
        assert proc.ca == (certs / "ca.crt").read_bytes()
        assert yaml.safe_load((proc.folder / "kubeconfig").read_text())["current-context"] == "b"
        assert proc.webhook_url == f"https://127.0.0.1:{proc.ports.webhook}"
        proc.restart()
        assert proc.component.pid != pid and not _alive(pid)
        assert "fake manager" in (proc.folder / "manager.previous.log").read_text()
        pid = proc.component.pid
    finally:
        proc.stop()
    assert not _alive(pid)
    assert not proc.folder.exists()


def test_a_manager_that_exits_fails_at_once_with_its_log_tail(fake: Path, kubeconfig: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MANAGER_EXIT", "1")
    proc = manager.ManagerProcess(fake, kubeconfig, ready_timeout=60)
    began = time.monotonic()
    with pytest.raises(core.WaitTimeout, match=r"(?s)gave up early: upstream's LWS manager exited with status 3\n"
                                               r".*lws-manager \(pid \d+\) exited with status 3; last lines of .*"
                                               r"unable to load the configuration: boom"):
        proc.start()
    assert time.monotonic() - began < proc.ready_timeout  # "gave up early": not after sitting out the wait
    assert not proc.folder.exists()


def test_failure_artifacts_get_the_manager_log_lines_about_the_namespace(tmp_path: Path) -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from lwsconf.timeouts import Timeouts
    from lwsconf.upstream.run import Running

    (tmp_path / "manager.previous.log").write_text('{"namespace":"ns-a","msg":"before"}\n{"namespace":"ns-b"}\n')
    (tmp_path / "manager.log").write_text('{"msg":"other"}\n{"namespace":"ns-a","msg":"after"}\n')
    running = Running(cast(Any, None), cast(Any, SimpleNamespace(folder=tmp_path)), cast(Any, None), Timeouts(), [])
    assert running.log_for("ns-a") == '{"namespace":"ns-a","msg":"before"}\n{"namespace":"ns-a","msg":"after"}\n'


def test_the_manager_dies_with_a_parent_killed_by_sigkill(fake: Path, kubeconfig: Path, tmp_path: Path) -> None:
    import signal
    import subprocess

    script = ("import sys, time\nfrom pathlib import Path\nfrom lwsconf.upstream.manager import ManagerProcess\n"
              "m = ManagerProcess(Path(sys.argv[1]), Path(sys.argv[2]), ready_timeout=30).start()\n"
              "print(m.component.pid, flush=True)\ntime.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script, str(fake), str(kubeconfig)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "TMPDIR": str(tmp_path)})  # what it leaves stays here
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert _alive(pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()

    def gone() -> None:
        if _alive(pid):
            raise core.NotYet(f"manager {pid} still alive after its parent was killed")

    core.wait_until(gone, what="the manager to die with its parent (PR_SET_PDEATHSIG)", timeout=10, poll=0.1)
