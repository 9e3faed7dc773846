"""The probe's test-control modes: start unready, echo tags, dump the env (init containers), serve files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lwsconf import probe
from lwsconf.ports import Reserved, reserve_port
from tests.probe.test_probe import get, wait_listening


@pytest.fixture
def start(tmp_path: Path) -> Iterator[object]:
    procs: list[subprocess.Popen[bytes]] = []
    held: list[Reserved] = []

    def run(*args: str, env: dict[str, str] | None = None) -> str:
        ip = "127.0.0.1"
        held.append(reserve_port(ip))  # held while the probe runs, not picked and released (lwsconf/ports.py)
        port = held[-1].port
        proc = subprocess.Popen([sys.executable, str(probe.PROGRAM), "--port", str(port), *args],
                                env={**os.environ, "POD_IP": ip, **(env or {})}, stderr=subprocess.DEVNULL)
        procs.append(proc)
        url = f"http://{ip}:{port}"
        wait_listening(url, proc)
        return url

    yield run
    for proc in procs:
        proc.kill()
        proc.wait()
    for port in held:
        port.release()


def test_start_unready_fails_readiness_until_released(start: object) -> None:
    url = start("--start-unready")  # type: ignore[operator]
    assert get(url + "/readyz")[0] == 503
    get(url + "/ready?value=true")
    assert get(url + "/readyz")[0] == 200


def test_start_unready_can_come_from_the_environment(start: object) -> None:
    url = start(env={"LWSCONF_START_UNREADY": "1"})  # type: ignore[operator]
    assert get(url + "/readyz")[0] == 503


def test_tags_and_argv_are_echoed_in_the_identity(start: object) -> None:
    url = start("--tag", "leader=demo-0.demo.ns", "--tag", "size=3")  # type: ignore[operator]
    body = get(url + "/")[1]
    assert body["tags"] == ["leader=demo-0.demo.ns", "size=3"]
    assert "--tag" in body["argv"]  # type: ignore[operator]


def test_dump_env_writes_the_environment_and_exits_zero(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    done = subprocess.run([sys.executable, str(probe.PROGRAM), "--dump-env", str(out)],
                          env={**os.environ, "LWS_GROUP_SIZE": "4"}, timeout=10, check=False)
    assert done.returncode == 0
    assert json.loads(out.read_text())["LWS_GROUP_SIZE"] == "4"


def test_file_serves_json_content_and_reports_missing_files(start: object, tmp_path: Path) -> None:
    url = start()  # type: ignore[operator]
    data = tmp_path / "init-env.json"
    data.write_text(json.dumps({"LWS_WORKER_INDEX": "2"}))
    code, body = get(f"{url}/file?path={data}")
    assert code == 200 and body["content"] == {"LWS_WORKER_INDEX": "2"}
    assert get(f"{url}/file?path={tmp_path / 'missing'}")[0] == 404
