"""The process runtime with real subprocesses, in both modes.

"namespaces" (root + unshare: private mounts, /etc/hosts, hostname, PID namespace) runs only as
root; "shim" (the non-root fallback: path rewriting and a sitecustomize) is forced with
`ProcessRuntime(mode="shim")`, so both are tested on a root machine. Every address used is a
random 127.X.Y.Z, every wait is a bounded poll, and each test checks that no process it started
is left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import socket
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from lwsconf.sim.nodes.kubelet import env
from lwsconf.sim.nodes.network import dns
from lwsconf.sim.nodes.runtime import runtime

HELLO = Path(runtime.__file__).parents[1] / "testdata" / "hello_http.py"
MODES = [pytest.param(runtime.MODE_NAMESPACES, marks=pytest.mark.skipif(
    runtime.detect_mode() != runtime.MODE_NAMESPACES, reason="namespaces mode needs root and a working unshare")),
    runtime.MODE_SHIM]


def pod_ip() -> str:
    """A random pod IP (never the 127.96/16 Service range) with nothing bound on it."""
    second = random.choice([x for x in range(100, 250) if x != 96])
    return f"127.{second}.{random.randint(1, 250)}.{random.randint(2, 254)}"


def free_port(ip: str) -> int:
    with socket.socket() as sock:
        sock.bind((ip, 0))
        return int(sock.getsockname()[1])


def pids_with(marker: str) -> list[int]:
    """Host PIDs of live (non-zombie) processes whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


UNTIL_TIMEOUT = 30.0
"""Seconds `until` waits for a state that must come (a process started under nsenter, a group reaped): 5 s held on
an idle machine, and an exec test failed once beside a soak at load 11-37, where starting python under nsenter alone
can take seconds. Waiting longer only costs time when the state never comes, which the test then reports."""


async def until(what: str, check: Callable[[], Awaitable[Any]], timeout: float = UNTIL_TIMEOUT) -> Any:
    """Poll `check` until it returns something truthy; fail naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await check()
        except (OSError, urllib.error.URLError) as exc:
            last = exc
        else:
            if last:
                return last
        await asyncio.sleep(0.02)
    raise AssertionError(f"{what} not reached within {timeout}s; last observed: {last!r}")


async def get(ip: str, port: int, path: str = "/") -> Any:
    def fetch() -> Any:
        with urllib.request.urlopen(f"http://{ip}:{port}{path}", timeout=1) as resp:
            body = resp.read()
        return json.loads(body) if body[:1] in (b"{", b"[") else body.decode()
    return await asyncio.to_thread(fetch)


class Pod:
    """A pod's worth of launch inputs under `tmp_path`."""

    def __init__(self, tmp_path: Path, mode: str) -> None:
        self.tmp, self.ip = tmp_path, pod_ip()
        self.port = free_port(self.ip)
        self.runtime = runtime.ProcessRuntime(tmp_path / "runtime", mode=mode)
        self.app = tmp_path / "volumes" / "app"
        self.app.mkdir(parents=True)
        shutil.copy(HELLO, self.app / "hello_http.py")
        self.hosts = tmp_path / "etc-hosts"
        self.hosts.write_text("127.0.0.1\tlocalhost\n")
        self.log = tmp_path / "logs" / "main.log"
        self.mounts: dict[str, Path] = {"/app": self.app}

    def launch(self, argv: list[str], environ: dict[str, str] | None = None, *, hostname: str = "web-0",
               read_only: tuple[str, ...] = (), working_dir: str = "") -> runtime.ContainerLaunch:
        return runtime.ContainerLaunch("team", "web-0", "uid-1", "main", argv, environ or {}, self.ip, hostname,
                                       self.mounts, working_dir, self.log, self.hosts, read_only)

    async def start_hello(self, *extra: str, environ: dict[str, str] | None = None) -> runtime.Process:
        process = await self.runtime.start(self.launch(
            ["python3", "/app/hello_http.py", "--port", str(self.port), *extra], environ))
        await until(f"hello_http answering on {self.ip}:{self.port} (log: {self.log})",
                    lambda: get(self.ip, self.port, "/healthz"))
        return process

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


SCENARIO_TIMEOUT = 4 * UNTIL_TIMEOUT
"""Seconds a whole scenario may take: above the `until` waits inside it (30 s each), so a slow machine fails on the
wait that names what did not come, never on this cap. It was 10 s, under the 30 s a scenario's own wait may take:
test_an_exec_cancelled_with_its_agent_leaves_no_process failed once at load 30-40 (starting the server, the exec
under nsenter and the reaping each took seconds) with a bare TimeoutError naming nothing."""


def run(scenario: Callable[[], Awaitable[None]], timeout: float = SCENARIO_TIMEOUT) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout))


@pytest.mark.parametrize("mode", MODES)
def test_hello_http_binds_the_pod_ip_and_answers_there(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        await pod.start_hello()                      # binds "" (all): the sim maps that to the pod IP
        info = await get(pod.ip, pod.port)
        assert (info["ip"], info["port"]) == (pod.ip, pod.port), info
        assert info["hostname"] == "web-0"
        await pod.runtime.close()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_peer_names_resolve_through_the_private_hosts_file_and_follow_updates(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        table = dns.ClusterDNS()
        me = {"metadata": {"name": "web-0", "namespace": "team"}, "spec": {"hostname": "web-0"}}
        table.open_hosts_file(pod.hosts, me, pod.ip)
        await pod.start_hello()
        assert await get(pod.ip, pod.port, "/resolve?name=web-0") == [pod.ip]
        table.on_service("ADDED", {"metadata": {"name": "lws", "namespace": "team"}, "spec": {
            "clusterIP": "None", "selector": {"app": "lws"}, "publishNotReadyAddresses": True}})
        table.on_pod("ADDED", {"metadata": {"name": "lws-0", "namespace": "team", "labels": {"app": "lws"}},
                               "spec": {"hostname": "lws-0", "subdomain": "lws"}, "status": {"podIP": "127.97.3.4"}})
        # The file is rewritten in place, so the process sees the new name without a restart.
        assert await until("the new name resolvable in the pod",
                           lambda: get(pod.ip, pod.port, "/resolve?name=lws-0.lws.team")) == ["127.97.3.4"]
        assert await get(pod.ip, pod.port, "/resolve?name=lws-0.lws") == ["127.97.3.4"]
        assert "lws-0" not in Path("/etc/hosts").read_text()     # the host's file is untouched
        await pod.runtime.close()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_environment_and_argv_arrive_expanded(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        container = {"name": "main", "image": "python:3.11", "command": ["python3", "/app/hello_http.py"],
                     "volumeMounts": [{"name": "app", "mountPath": "/app"}],
                     "args": ["--port", "$(PORT)", "--greeting=$(GREETING)", "$$(GREETING)"],
                     "env": [{"name": "PORT", "value": str(pod.port)},
                             {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                             {"name": "GREETING", "value": "hello $(NAME) on $(MY_NODE)"},
                             {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}
        spec = {"metadata": {"name": "web-0", "namespace": "team"},
                "spec": {"nodeName": "n1", "containers": [container]}}
        environ = env.resolve_env(spec, container, node_name="n1", host_ip="127.9.0.1", pod_ip=pod.ip,
                                  configmaps={}, secrets={})
        assert pod.runtime.runnable(container)
        await pod.runtime.start(pod.launch(env.expand_argv(container, environ), environ))
        info = await until("hello_http up", lambda: get(pod.ip, pod.port))
        assert info["env"]["GREETING"] == "hello web-0 on $(MY_NODE)"   # MY_NODE is declared later
        assert info["env"]["NAME"] == "web-0" and info["env"]["HOSTNAME"] == "web-0"
        assert info["argv"][1:] == ["--port", str(pod.port), "--greeting=hello web-0 on $(MY_NODE)", "$(GREETING)"]
        await pod.runtime.close()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_volumes_are_visible_at_their_mount_paths(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        config = tmp_path / "volumes" / "config"
        config.mkdir()
        (config / "app.yaml").write_text("answer: 42\n")
        pod.mounts["/lwsconf-test-config/nested"] = config
        await pod.start_hello()
        assert await get(pod.ip, pod.port, "/file?path=/lwsconf-test-config/nested/app.yaml") == "answer: 42\n"
        assert not os.path.exists("/lwsconf-test-config")      # never created on the host
        await pod.runtime.close()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_exit_code_is_reported(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        process = await pod.start_hello()
        await get(pod.ip, pod.port, "/exit?code=3")
        assert await asyncio.wait_for(process.wait(), UNTIL_TIMEOUT) == 3
        assert process.returncode == 3 and process.finished_at is not None
        assert not process.workdir.exists()                 # the runtime's scratch space is removed
        quick = await pod.runtime.start(pod.launch(["python3", "-c", "import sys; print('out'); "
                                                    "print('err', file=sys.stderr); sys.exit(7)"]))
        assert await asyncio.wait_for(quick.wait(), UNTIL_TIMEOUT) == 7
        assert "out\n" in pod.log_text() and "err\n" in pod.log_text()   # stdout and stderr both logged
    run(scenario)


STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import os, signal, time; {child}signal.signal(signal.SIGTERM, "
                  "signal.SIG_IGN); print('child up', flush=True); time.sleep(60)  # {marker}"])
time.sleep(60)  # {marker}
"""


async def start_stubborn(pod: Pod, marker: str, child: str = "") -> runtime.Process:
    process = await pod.runtime.start(pod.launch(["python3", "-c", STUBBORN.format(marker=marker, child=child)]))
    await until("parent and child running", lambda: _count(marker, 2))
    return process


async def _count(marker: str, expected: int) -> bool:
    return len(pids_with(marker)) == expected


async def _running(marker: str) -> bool:
    return bool(pids_with(marker))


@pytest.mark.parametrize("mode", MODES)
def test_stop_kills_the_whole_group_within_the_grace_period(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        marker = f"lwsconf-stubborn-{uuid.uuid4().hex}"
        process = await start_stubborn(pod, marker)
        started = time.monotonic()
        code = await process.stop(0.3)                    # SIGTERM is ignored: SIGKILL after 0.3 s
        elapsed = time.monotonic() - started
        assert code == 137, pod.log_text()
        # killed after the grace period and not a default one (Kubernetes' 30 s, or the 5 s another test uses):
        # the upper bound tells those apart without timing the loop (it was 1.5 s: design rule 7)
        assert 0.25 < elapsed < 4.5, elapsed
        await until("no process of the group left", lambda: _count(marker, 0))
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_graceful_stop_returns_the_workload_exit_code(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        process = await pod.start_hello()
        # 0, not 137: the workload's own exit on SIGTERM ended the stop, before the 5 s grace period's SIGKILL
        # (this is what the 1.5 s bound the test had meant, without timing the loop: design rule 7)
        assert await process.stop(5) == 0                 # hello_http exits 0 on SIGTERM
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_sent_while_the_container_starts_is_not_lost(tmp_path: Path, mode: str) -> None:
    """A pod deleted while its container is still starting: the SIGTERM must reach the workload (or the
    workload must not start), never be swallowed by the launcher on its way to exec, which left the workload
    running until SIGKILL at the end of the grace period (a 30 s serving test, 2026-12-03). Stopped at once
    after start, several times, since the window is short: each stop ends by SIGTERM (143: the workload had
    no handler yet; 0: hello_http's handler), never by the grace period's SIGKILL (137). The stops sweep the
    first 300 ms of the start, where the launcher stages run."""
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        codes = []
        for step in range(25):
            process = await pod.runtime.start(pod.launch(["python3", "/app/hello_http.py", "--port", str(pod.port)]))
            await asyncio.sleep(step * 0.012)
            codes.append(await process.stop(3))
        assert all(code in (0, 143) for code in codes), f"exit codes {codes} (137: SIGTERM lost, killed at the end " \
            f"of the grace period) after stops 0.012 s apart; log:\n{pod.log_text()[-2000:]}"
        await pod.runtime.close()
    run(scenario)


@pytest.mark.skipif(runtime.detect_mode() != runtime.MODE_NAMESPACES, reason="namespaces mode needs root and unshare")
@pytest.mark.parametrize("setpriv", [True, False], ids=["setpriv", "launcher-outer-stage"])
def test_namespaces_mode_starts_through_setpriv_or_the_launcher_outer_stage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setpriv: bool) -> None:
    """With util-linux's setpriv the runtime execs `setpriv --pdeathsig KILL unshare ...` itself; without it the
    launcher's outer Python stage does the same. Both run the workload in its namespaces and stop it cleanly."""
    if not setpriv:
        which = shutil.which
        monkeypatch.setattr(runtime.shutil, "which", lambda name: None if name == "setpriv" else which(name))
    elif shutil.which("setpriv") is None:
        pytest.skip("no setpriv on this machine")

    async def scenario() -> None:
        spec = runtime._spec(runtime.MODE_NAMESPACES, ["python3"], {}, tmp_path / "check", "h", [], None, "")
        first = Path(runtime.launch_command(spec)[0]).name
        assert first == ("setpriv" if setpriv else Path(sys.executable).name), runtime.launch_command(spec)
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        process = await pod.start_hello()
        info = await get(pod.ip, pod.port)
        assert info["hostname"] == "web-0", "the workload runs in its own UTS namespace"
        assert await process.stop(5) == 0
        await pod.runtime.close()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_no_process_survives_the_runtime_close(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        marker = f"lwsconf-close-{uuid.uuid4().hex}"
        await start_stubborn(pod, marker)
        await pod.start_hello(f"--tag={marker}")
        assert len(pod.runtime.processes) == 2
        await pod.runtime.close()
        await until("every process gone", lambda: _count(marker, 0))
        assert pod.runtime.processes == []
    run(scenario)


@pytest.mark.skipif(runtime.detect_mode() != runtime.MODE_NAMESPACES, reason="needs namespaces mode (root)")
def test_a_process_that_leaves_its_group_still_dies_with_the_container(tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        marker = f"lwsconf-escape-{uuid.uuid4().hex}"
        process = await start_stubborn(pod, marker, child="os.setsid(); ")
        assert await process.stop(0.2) == 137
        await until("the escaped child killed with the PID namespace", lambda: _count(marker, 0))
    run(scenario)


@pytest.mark.skipif(runtime.detect_mode() != runtime.MODE_NAMESPACES, reason="needs namespaces mode (root)")
def test_host_files_and_read_only_volumes_cannot_be_written(tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        scratch = f"lwsconf-scratch-{uuid.uuid4().hex}"
        code = ("import sys\n"
                "def writable(p):\n"
                "    try:\n        open(p, 'w').write('x'); return True\n"
                "    except OSError:\n        return False\n"
                "sys.exit(writable('/usr/lwsconf-probe-file') * 1 + writable('/app/x') * 2 + "
                f"(not writable('/tmp/{scratch}')) * 4)")
        process = await pod.runtime.start(pod.launch(["python3", "-c", code], read_only=("/app",)))
        assert await asyncio.wait_for(process.wait(), UNTIL_TIMEOUT) == 0, pod.log_text()
        assert not os.path.exists("/usr/lwsconf-probe-file") and not (pod.app / "x").exists()
        assert not os.path.exists(f"/tmp/{scratch}")       # /tmp is private to the container
    run(scenario)


@pytest.mark.skipif(runtime.detect_mode() != runtime.MODE_NAMESPACES, reason="needs namespaces mode (root)")
def test_dev_holds_the_oci_default_devices_and_a_shm_of_its_own_beside_a_termination_log(tmp_path: Path) -> None:
    """/dev as runc makes it: null, zero, full, random, urandom, tty work; the host's other devices are absent; a
    64 MiB /dev/shm of the container's own. Before, mounting the default terminationMessagePath
    (/dev/termination-log) shadowed /dev with its directories and files only: no /dev/urandom (torch, which
    seeds from it, failed: 'Unable to open /dev/urandom') and no /dev/null."""
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        log_file = tmp_path / "termination-log"
        log_file.touch()
        pod.mounts["/dev/termination-log"] = log_file
        marker = f"lwsconf-shm-{uuid.uuid4().hex}"
        code = ("import json, os\n"
                "open('/dev/null', 'w').write('gone')\n"
                f"open('/dev/shm/{marker}', 'w').write('x')\n"
                "st = os.statvfs('/dev/shm')\n"
                "print(json.dumps({'dev': sorted(os.listdir('/dev')), 'urandom': len(open('/dev/urandom', 'rb')"
                ".read(16)), 'zero': open('/dev/zero', 'rb').read(2).hex(), 'shm_kib': st.f_blocks * st.f_frsize"
                " // 1024}))\n")
        process = await pod.runtime.start(pod.launch(["python3", "-c", code]))
        assert await asyncio.wait_for(process.wait(), UNTIL_TIMEOUT) == 0, pod.log_text()
        seen = json.loads(pod.log_text().strip().splitlines()[-1])
        assert {"null", "zero", "full", "random", "urandom", "tty", "shm", "pts", "fd", "termination-log"} <= \
            set(seen["dev"]), seen
        host_only = {n for n in os.listdir("/dev") if n.startswith(("loop", "vd", "sd", "nvme", "kvm", "tty0"))}
        assert not host_only & set(seen["dev"]), f"host devices in the container: {host_only & set(seen['dev'])}"
        assert seen["urandom"] == 16 and seen["zero"] == "0000" and seen["shm_kib"] == 65536, seen
        assert not os.path.exists(f"/dev/shm/{marker}"), "the container wrote the host's /dev/shm"
    run(scenario)


@pytest.mark.skipif(runtime.detect_mode() != runtime.MODE_NAMESPACES, reason="needs namespaces mode (root)")
def test_a_container_that_cannot_start_reports_start_error_in_its_log(tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        pod.mounts["/data"] = tmp_path / "does-not-exist"
        process = await pod.runtime.start(pod.launch(["python3", "-c", "pass"]))
        assert await asyncio.wait_for(process.wait(), UNTIL_TIMEOUT) == 128
        assert "cannot start container" in pod.log_text()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_exec_runs_in_the_container_view(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        process = await pod.start_hello()
        code, output = await process.exec(["cat", "/app/hello_http.py"], 2)
        assert code == 0 and "hello_http" in output
        assert (await process.exec(["python3", "-c", "import sys; sys.exit(4)"], 2))[0] == 4
        assert (await process.exec(["test", "-e", "/app/missing"], 2))[0] == 1
        with pytest.raises(runtime.UnsupportedCommand):
            await process.exec(["rm", "-rf", "/app"], 2)
        await pod.runtime.close()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_an_exec_cancelled_with_its_agent_leaves_no_process(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, mode)
        process = await pod.start_hello()
        marker = f"lwsconf-exec-{uuid.uuid4().hex}"
        probe = asyncio.create_task(process.exec(["python3", "-c", f"import time; time.sleep(60)  # {marker}"], 30))
        await until("the exec command running", lambda: _running(marker))  # (under nsenter in namespaces mode)
        probe.cancel()
        with pytest.raises(asyncio.CancelledError):
            await probe
        await until("the exec command gone", lambda: _count(marker, 0))
        await pod.runtime.close()
    run(scenario)


@pytest.mark.parametrize(("container", "expected"), [
    ({"image": "python:3.11", "command": ["python3", "-c", "print(1)"]}, True),
    ({"image": "docker.io/library/python:3.12-slim", "command": ["python", "-u", "-m", "http.server"]}, True),
    ({"image": "python:3.11", "args": ["python3", "/app/x.py"], "volumeMounts": [{"mountPath": "/app"}]}, True),
    ({"image": "python:3.11"}, True),                                            # the image's default: python3
    ({"image": "registry.local/lwsconf-probe:dev", "command": ["python3", "-m", "lwsconf.probe"]}, True),
    ({"image": "python:3.11", "command": ["python3", "/elsewhere/x.py"], "volumeMounts": [{"mountPath": "/app"}]},
     False),                                                                     # script outside every volume
    ({"image": "python:3.11", "command": ["python3", "-m", "vllm.entrypoints"]}, False),   # not stdlib
    ({"image": "python:3.11", "command": ["python3", "-m", "lwsconf.probe"]}, False),      # only the probe image
    ({"image": "python:3.11", "command": ["sh", "-c", "python3 -c 1"]}, False),            # not the interpreter
    ({"image": "vllm/vllm-openai:latest", "command": ["python3", "-c", "print(1)"]}, False),
    ({"image": "busybox", "command": ["python3", "-c", "1"]}, False),
])
def test_only_python_programs_the_sim_can_vouch_for_are_runnable(container: dict[str, Any], expected: bool) -> None:
    assert runtime.runnable(container) is expected


def test_mode_is_detected_once_from_root_and_unshare(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runtime.MODE_ENV, raising=False)
    monkeypatch.setattr(runtime, "_detected", None)
    with caplog.at_level("INFO", logger=runtime.__name__):
        mode = runtime.detect_mode()
    assert f"process runtime: {mode} mode" in caplog.text
    assert mode == runtime.detect_mode()
    expected = runtime.MODE_NAMESPACES if os.geteuid() == 0 and shutil.which("unshare") else runtime.MODE_SHIM
    assert mode == expected
    assert runtime.ProcessRuntime(tmp_path).mode == mode
    with pytest.raises(ValueError, match="mode must be"):
        runtime.ProcessRuntime(tmp_path, mode="docker")


def test_the_mode_can_be_forced_to_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "_detected", None)
    monkeypatch.setenv(runtime.MODE_ENV, "shim")
    assert runtime.detect_mode() == runtime.MODE_SHIM
    monkeypatch.setattr(runtime, "_detected", None)
    monkeypatch.setenv(runtime.MODE_ENV, "podman")
    with pytest.raises(ValueError, match=runtime.MODE_ENV):
        runtime.detect_mode()
    monkeypatch.setattr(runtime, "_detected", None)     # the next caller detects afresh


def test_shim_mode_rewrites_argv_and_working_dir_under_mounts(tmp_path: Path) -> None:
    mounts = {"/app": tmp_path / "app", "/app/data": tmp_path / "data"}
    assert runtime.translate("/app/x.py", mounts) == f"{tmp_path}/app/x.py"
    assert runtime.translate("/app/data/f", mounts) == f"{tmp_path}/data/f"     # the longest prefix wins
    assert runtime.translate("/application", mounts) == "/application"
    assert runtime.translate("relative", mounts) == "relative"


def test_start_refuses_anything_but_the_python_interpreter(tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_SHIM)
        with pytest.raises(runtime.UnsupportedCommand, match="only the Python interpreter"):
            await pod.runtime.start(pod.launch(["sh", "-c", "echo hi"]))
        assert pod.runtime.processes == []
    run(scenario)


ORPHAN_SCRIPT = """
import asyncio, os, sys
from pathlib import Path
from lwsconf.sim.nodes.runtime import runtime

async def main():
    rt = runtime.ProcessRuntime(Path(sys.argv[1]), mode=sys.argv[2])
    code = "import time; time.sleep(60)  # " + os.environ["MARKER"]    # not in this process's own argv
    launch = runtime.ContainerLaunch("ns", "p", "u", "c", ["python3", "-c", code], {{}}, "", "p", {{}}, "",
                                     Path(sys.argv[1]) / "log", None)
    await rt.start(launch)
    print("started", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


@pytest.mark.parametrize("mode", MODES)
def test_processes_die_when_the_sim_process_is_killed(tmp_path: Path, mode: str) -> None:
    async def scenario() -> None:
        marker = f"lwsconf-orphan-{uuid.uuid4().hex}"
        repo = Path(runtime.__file__).resolve().parents[4]
        sim = await asyncio.create_subprocess_exec(
            sys.executable, "-c", ORPHAN_SCRIPT.format(), str(tmp_path), mode, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(repo), "MARKER": marker})
        assert sim.stdout is not None
        assert await asyncio.wait_for(sim.stdout.readline(), UNTIL_TIMEOUT) == b"started\n"
        await until("the workload running", lambda: _count(marker, 1))
        sim.kill()                                          # no close(), no exit hook: only the kernel
        await sim.wait()
        await until("the workload killed with the sim (PR_SET_PDEATHSIG)", lambda: _count(marker, 0))
    run(scenario)
