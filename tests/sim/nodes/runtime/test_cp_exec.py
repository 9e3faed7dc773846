"""`tar` over exec with stdin, as `kubectl cp` runs it (kubectl pkg/cmd/cp/cp.go), in a container of the runtime.

kubectl copies in with `tar -xmf - -C DIR` fed the archive on stdin, which it then closes (the v5 close
signal, here `close_stdin`), and out with `tar cf - PATH`, reading the archive from stdout. Each test builds
the archive the way kubectl does (Python's `tarfile` standing in for Go's archive/tar) and checks the file
from inside the container and that nothing was written on the host outside the container's own directories.
"""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
import uuid
from pathlib import Path

import pytest

from lwsconf.sim.nodes.runtime import runtime
from lwsconf.sim.nodes.streams.execsession import ExecSession
from tests.sim.nodes.runtime.test_runtime import Pod, get, run, until

NAMESPACES_ONLY = pytest.mark.skipif(runtime.detect_mode() != runtime.MODE_NAMESPACES,
                                     reason="tar runs only in namespaces mode (root and a working unshare)")
EXEC_TIMEOUT = 10.0
"""Seconds one tar or cat may take in the container (a loaded 2-core machine)."""


def archive(files: dict[str, bytes]) -> bytes:
    """A tar stream of `files` (member name -> content), as kubectl's makeTar writes one."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), 0o644
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


async def run_exec(process: runtime.Process, argv: list[str], stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of `argv` exec'd in the container, `stdin` streamed then closed."""
    command, cwd = process.exec_command(argv)
    session = await ExecSession.start(command, env=process.environment, cwd=cwd, stdin=stdin is not None, tty=False)
    assert session.stderr is not None
    if stdin is not None:
        await session.write_stdin(stdin)
        session.close_stdin()  # kubectl cp's end of input: tar sees EOF and finishes
    out, err = await asyncio.wait_for(asyncio.gather(session.stdout.read(), session.stderr.read()), EXEC_TIMEOUT)
    return await asyncio.wait_for(session.wait(), EXEC_TIMEOUT), out, err


async def start(pod: Pod, read_only: tuple[str, ...] = ()) -> runtime.Process:
    """The pod's HTTP server container, with `read_only` mountPaths, once it answers."""
    launch = pod.launch(["python3", "/app/hello_http.py", "--port", str(pod.port)], read_only=read_only)
    process = await pod.runtime.start(launch)
    await until(f"hello_http answering (log: {pod.log})", lambda: get(pod.ip, pod.port, "/healthz"))
    return process


@NAMESPACES_ONLY
def test_tar_with_stdin_copies_into_the_container_tmp_and_an_emptydir_but_not_a_read_only_mount(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        cache = tmp_path / "volumes" / "cache"
        cache.mkdir()
        pod.mounts["/cache"] = cache                 # an emptyDir: the sim's directory, writable
        process = await start(pod, read_only=("/app",))
        name = f"lwsconf-cp-{uuid.uuid4().hex}.txt"
        content = b"hello from kubectl cp\n"

        code, _, err = await run_exec(process, ["tar", "-xmf", "-", "-C", "/tmp"], archive({name: content}))
        assert code == 0, err
        assert await run_exec(process, ["cat", f"/tmp/{name}"]) == (0, content, b"")
        assert not Path("/tmp", name).exists(), "tar wrote the host's /tmp, not the container's"

        code, _, err = await run_exec(process, ["tar", "-xmf", "-", "-C", "/cache"], archive({"sub/f": b"x"}))
        assert (code, (cache / "sub" / "f").read_bytes()) == (0, b"x"), err

        code, _, err = await run_exec(process, ["tar", "-xmf", "-", "-C", "/app"], archive({"evil.py": b"1"}))
        assert code == 2 and err.startswith(b"tar: evil.py: Cannot open: Read-only file system"), (code, err)
        assert not (pod.app / "evil.py").exists()
        await pod.runtime.close()
    run(scenario, timeout=60)


@NAMESPACES_ONLY
def test_tar_cf_streams_a_file_and_a_directory_out_of_the_container(tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        process = await start(pod)
        files = {"dir/a.txt": b"a\n", "dir/nested/b.txt": b"b\n"}
        assert (await run_exec(process, ["tar", "-xmf", "-", "-C", "/tmp"], archive(files)))[0] == 0

        code, out, err = await run_exec(process, ["tar", "cf", "-", "/tmp/dir"])
        assert code == 0, err
        with tarfile.open(fileobj=io.BytesIO(out)) as tar:
            got = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
        assert got == {"tmp/dir/a.txt": b"a\n", "tmp/dir/nested/b.txt": b"b\n"}

        code, out, err = await run_exec(process, ["tar", "cf", "-", "/tmp/missing"])
        assert code == 2 and b"tar: /tmp/missing: Cannot stat: No such file or directory" in err, (code, err)
        await pod.runtime.close()
    run(scenario, timeout=60)


def test_shim_mode_refuses_tar_saying_it_would_touch_the_host(tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_SHIM)
        process = await pod.start_hello()
        with pytest.raises(runtime.UnsupportedCommand, match=r"runs 'tar' \(kubectl cp\) only in containers with "
                                                             r"a root of their own.*shim mode"):
            process.exec_command(["tar", "-xmf", "-", "-C", "/tmp"])
        with pytest.raises(runtime.UnsupportedCommand, match=r"does not run \['rm'\].*tail, tar in a container"):
            process.exec_command(["rm", "-rf", "/"])
        await pod.runtime.close()
    run(scenario, timeout=30)


@NAMESPACES_ONLY
def test_tar_is_the_host_binary_never_a_file_of_that_name_in_a_volume(tmp_path: Path) -> None:
    async def scenario() -> None:
        pod = Pod(tmp_path, runtime.MODE_NAMESPACES)
        (pod.app / "tar").write_text("#!/bin/sh\necho not tar\n")
        os.chmod(pod.app / "tar", 0o755)
        process = await start(pod)
        command, _ = process.exec_command(["/app/tar", "--version"])
        assert "/app/tar" not in command and any(a.startswith(("/usr/", "/bin/")) and a.endswith("/tar")
                                                 for a in command), command
        code, out, _ = await run_exec(process, ["/app/tar", "--version"])
        assert code == 0 and b"tar" in out and b"not tar" not in out, out
        await pod.runtime.close()
    run(scenario, timeout=30)
