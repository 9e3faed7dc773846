"""The probe program as a real process on a loopback address."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from lwsconf import probe
from lwsconf.ports import reserve_port


def free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_listening(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the probe exited during startup"
        try:
            get(url + "/healthz")
            return
        except OSError:
            time.sleep(0.02)
    raise AssertionError(f"probe at {url} did not start within 10 s")


@pytest.fixture
def running() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    ip = "127.0.0.1"
    held = reserve_port(ip)  # held while the probe runs, not picked and released (lwsconf/ports.py)
    port = held.port
    env = {**os.environ, "POD_IP": ip, "POD_NAME": "demo-0-1", "LWS_LEADER_ADDRESS": "demo-0.demo.ns",
           "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1"}
    proc = subprocess.Popen([sys.executable, str(probe.PROGRAM), "--port", str(port)], env=env,
                            stderr=subprocess.DEVNULL)
    url = f"http://{ip}:{port}"
    wait_listening(url, proc)
    yield url, proc
    proc.kill()
    proc.wait()
    held.release()


def test_identity_reports_pod_and_lws_env(running: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, _ = running
    code, body = get(url + "/")
    assert code == 200 and body["pod"] == "demo-0-1"
    assert body["lws"] == {"LWS_LEADER_ADDRESS": "demo-0.demo.ns", "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1"}


def test_readiness_can_be_flipped(running: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, _ = running
    assert get(url + "/readyz")[0] == 200
    get(url + "/ready?value=false")
    assert get(url + "/readyz")[0] == 503
    get(url + "/ready?value=true")
    assert get(url + "/readyz")[0] == 200


def test_peer_resolves_and_calls_another_probe(running: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, _ = running
    port = url.rsplit(":", 1)[1]
    code, body = get(f"{url}/peer?host=localhost&port={port}")
    assert code == 200 and body["resolved"] == "127.0.0.1" and body["answer"]["pod"] == "demo-0-1"
    callers = get(url + "/callers")[1]["callers"]
    assert any(c["caller"] == "demo-0-1" for c in callers)  # type: ignore[union-attr]


def test_exit_ends_the_process_with_the_requested_code(running: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, proc = running
    assert get(url + "/exit?code=7") == (200, {"exiting": 7})
    assert proc.wait(timeout=5) == 7
