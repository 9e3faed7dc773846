"""kubectl exec, attach and port-forward against the sim, with the kubectl we build (controlplane build).

The kubectl of each pinned release comes from `lwsconf controlplane build`; without a build the test
skips saying what to run, and LWSCONF_REQUIRE_GO=1 (CI) turns that skip into a failure.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from lwsconf.controlplane import build, versions
from tests.sim.nodes import kubelet_sim as ks
from tests.sim.nodes.streams.test_streams import HTTP_SERVER, python_pod, start_pod

REQUIRE_ENV = "LWSCONF_REQUIRE_GO"
KUBECTL_TIMEOUT = 60.0
"""Seconds one kubectl command may take (a loaded 2-core machine starts a 60 MiB binary slowly)."""
pytestmark = pytest.mark.kubectl


def built_kubectl(release: versions.Release) -> Path:
    binaries = build.installed(release)
    if binaries is None or "kubectl" not in binaries:
        reason = (f"no kubectl {release.kubernetes} in {build.version_dir(release)}: run "
                  f"`lwsconf controlplane build --kubernetes-version {release.kubernetes}` (needs Go)")
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason}; {REQUIRE_ENV}=1 forbids skipping", pytrace=False)
        pytest.skip(reason)
    return binaries["kubectl"]


async def kubectl(binary: Path, kubeconfig: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(str(binary), "--kubeconfig", str(kubeconfig), *args,
                                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), KUBECTL_TIMEOUT)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        raise AssertionError(f"kubectl {' '.join(args)} still running after {KUBECTL_TIMEOUT}s; "
                             f"stdout {out[-2000:]!r}, stderr {err[-2000:]!r}") from None
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.parametrize("release", versions.under_test(), ids=lambda r: r.kubernetes)
def test_kubectl_exec_and_port_forward(tmp_path: Path, release: versions.Release) -> None:
    binary = built_kubectl(release)

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path / "nodes", processes=True) as sim:
            config = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
            await start_pod(sim, python_pod("p", HTTP_SERVER))
            code, out, err = await kubectl(binary, config, "exec", "p", "--", "python", "-c", "print(1)")
            assert (code, out) == (0, "1\n"), err
            code, out, err = await kubectl(binary, config, "exec", "p", "--", "python", "-c",
                                           "import sys; sys.exit(7)")
            assert code == 7 and "command terminated with exit code 7" in err, (code, out, err)
            code, out, err = await kubectl(binary, config, "exec", "-i", "p", "--", "python", "-c",
                                           "import sys; print(sys.stdin.read()[::-1], end='')", stdin=b"stressed")
            assert (code, out) == (0, "desserts"), err
            code, out, err = await kubectl(binary, config, "exec", "p", "--", "bash")
            assert code == 1 and "the sim does not run ['bash']" in err, (code, out, err)
            code, out, err = await kubectl(binary, config, "logs", "p")
            assert (code, out) == (0, "serving\n"), err
            await _port_forward(binary, config)
            await start_pod(sim, python_pod("ticker", TICKER, readinessProbe=None))
            await attach_sees_ticks(binary, config, "ticker")

    ks.run(scenario, timeout=240)


TICKER = "import itertools, time\nfor n in itertools.count():\n    print('tick', n, flush=True)\n    time.sleep(0.2)"


async def attach_sees_ticks(binary: Path, config: Path, pod: str) -> None:
    """`kubectl attach POD` prints the container's new output lines (two ticks), until stopped."""
    proc = await asyncio.create_subprocess_exec(str(binary), "--kubeconfig", str(config), "attach", pod,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[bytes] = []
    try:
        assert proc.stdout is not None
        while sum(line.startswith(b"tick") for line in lines) < 2:
            line = await asyncio.wait_for(proc.stdout.readline(), KUBECTL_TIMEOUT)
            assert line, f"kubectl attach ended after {lines!r}"
            lines.append(line)
    finally:
        proc.terminate()
        _, err = await proc.communicate()
    assert b"error" not in err.lower(), err.decode()[-2000:]


async def _port_forward(binary: Path, config: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(binary), "--kubeconfig", str(config), "port-forward", "--address", "127.0.0.1", "pod/p", ":8080",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), KUBECTL_TIMEOUT)).decode()
        found = re.search(r"Forwarding from 127\.0\.0\.1:(\d+) -> 8080", line)
        assert found, f"kubectl port-forward printed {line!r}"
        url = f"http://127.0.0.1:{found.group(1)}/"
        for _ in range(2):  # two connections over the one tunnel
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=KUBECTL_TIMEOUT).read())
            assert b"Directory listing" in body, body[:200]
    finally:
        proc.terminate()
        _, err = await proc.communicate()
    assert b"error" not in err.lower(), err.decode()[-2000:]


@pytest.mark.parametrize("release", versions.under_test(), ids=lambda r: r.kubernetes)
def test_kubectl_cp_both_ways_and_into_volumes(tmp_path: Path, release: versions.Release) -> None:
    """kubectl cp is tar over exec with stdin (kubectl pkg/cmd/cp/cp.go); the sim runs tar in the container's root."""
    binary = built_kubectl(release)
    local = tmp_path / "local"
    (local / "tree" / "nested").mkdir(parents=True)
    (local / "note.txt").write_text("a note\n")
    (local / "tree" / "a.txt").write_text("a\n")
    (local / "tree" / "nested" / "b.txt").write_text("b\n")
    volumes = [{"name": "cache", "emptyDir": {}}, {"name": "locked", "emptyDir": {}}]
    mounts = [{"name": "cache", "mountPath": "/cache"}, {"name": "locked", "mountPath": "/locked", "readOnly": True}]

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path / "nodes", processes=True) as sim:
            config = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
            body = python_pod("p", HTTP_SERVER, volumeMounts=mounts)
            body["spec"]["volumes"] = volumes
            await start_pod(sim, body)

            async def ok(*args: str) -> str:
                code, out, err = await kubectl(binary, config, *args)
                assert code == 0, (args, code, out, err)
                return out

            for target in ("/tmp/note.txt", "/cache/note.txt"):
                await ok("cp", str(local / "note.txt"), f"p:{target}")
                assert await ok("exec", "p", "--", "cat", target) == "a note\n"
            await ok("exec", "p", "--", "python", "-c", "import os; os.remove('/cache/note.txt')")
            code, out, err = await kubectl(binary, config, "cp", str(local / "note.txt"), "p:/locked/note.txt")
            assert code == 2 and "tar: note.txt: Cannot open: Read-only file system" in err, (code, out, err)

            await ok("cp", "--no-preserve", str(local / "note.txt"), "p:/cache")  # an existing directory: into it
            assert await ok("exec", "p", "--", "cat", "/cache/note.txt") == "a note\n"
            await ok("cp", "p:/tmp/note.txt", str(tmp_path / "back.txt"))
            assert (tmp_path / "back.txt").read_text() == "a note\n"
            await ok("cp", str(local / "tree"), "p:/tmp/tree")               # a directory: -r is implicit
            assert await ok("exec", "p", "--", "cat", "/tmp/tree/nested/b.txt") == "b\n"
            await ok("cp", "p:/tmp/tree", str(tmp_path / "tree-back"))
            assert sorted(str(f.relative_to(tmp_path / "tree-back")) for f in (tmp_path / "tree-back").rglob("*")
                          if f.is_file()) == ["a.txt", "nested/b.txt"]

            await start_pod(sim, ks.pod_body("emulated"))                    # nginx: no process to copy into
            code, out, err = await kubectl(binary, config, "cp", str(local / "note.txt"), "emulated:/tmp/note.txt")
            assert code != 0 and "is emulated by the simulator and has no process" in err, (code, out, err)

    ks.run(scenario, timeout=240)
