"""A command run for `kubectl exec`: its stdin, stdout and stderr as pipes, or one terminal.

The command line comes from the container's process (`runtime.Process.exec_command`: the same
restriction to Python and a few readers as exec probes, plus `tar` for kubectl cp where the container
has a root of its own; entered into the container's namespaces or shimmed), so an exec sees what the
container sees. Without a tty, stdout and stderr are separate pipes and stdin a pipe only when the
client sends it (else /dev/null, so a command reading stdin ends at once as in a container without
`-i`); the client's close of stdin (v5's close signal, which kubectl cp sends to end tar's archive)
closes the pipe. With a tty the command gets a pseudo-terminal on all
three (stderr merged, as a terminal does), and resize events set its window size. The command is its
own process group; `kill` ends the group, and so does the end of the exec (the agent's stop included),
and the sim's exit hook (`shutdown.at_exit`) kills any session still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence

from lwsconf import shutdown

_READ = 32 * 1024
_live: set[ExecSession] = set()
"""Sessions not yet waited for: killed by the exit hook should the sim end without ending them."""


def _kill_leftovers() -> None:
    for session in list(_live):
        session.kill()


shutdown.at_exit(_kill_leftovers)


class ExecSession:
    """One running exec; `stdout` and `stderr` (None under a tty or when not asked) are readers."""

    def __init__(self, proc: asyncio.subprocess.Process, stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader | None, master: int | None) -> None:
        self._proc, self.stdout, self.stderr, self._master = proc, stdout, stderr, master
        _live.add(self)

    @classmethod
    async def start(cls, command: Sequence[str], *, env: Mapping[str, str], cwd: str | None, stdin: bool,
                    tty: bool) -> ExecSession:
        """Start `command`; OSError when it cannot be started."""
        if tty:
            return await cls._start_tty(command, env, cwd)
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=dict(env), cwd=cwd, start_new_session=True)
        assert proc.stdout is not None and proc.stderr is not None
        return cls(proc, proc.stdout, proc.stderr, None)

    @classmethod
    async def _start_tty(cls, command: Sequence[str], env: Mapping[str, str], cwd: str | None) -> ExecSession:
        master, slave = pty.openpty()
        try:
            proc = await asyncio.create_subprocess_exec(
                *command, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": env.get("TERM", "xterm")},
                cwd=cwd, start_new_session=True)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        return cls(proc, _pty_reader(master), None, master)

    async def write_stdin(self, data: bytes) -> None:
        """Bytes for the command's stdin (ignored once it closed or exited)."""
        with contextlib.suppress(OSError, RuntimeError):
            if self._master is not None:
                await _write_all(self._master, data)
            elif self._proc.stdin is not None and not self._proc.stdin.is_closing():
                self._proc.stdin.write(data)
                await self._proc.stdin.drain()

    def close_stdin(self) -> None:
        """End of input: EOF on the pipe, or the terminal's EOF character (^D)."""
        with contextlib.suppress(OSError, RuntimeError):
            if self._master is not None:
                os.write(self._master, b"\x04")
            elif self._proc.stdin is not None:
                self._proc.stdin.close()

    def resize(self, width: int, height: int) -> None:
        if self._master is not None:
            with contextlib.suppress(OSError):
                fcntl.ioctl(self._master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    async def wait(self) -> int:
        """The exit code (128+N when killed by signal N); the terminal is released."""
        code = await self._proc.wait()
        self.kill()  # what the command left in its group dies with it
        _live.discard(self)
        if self._master is not None:
            asyncio.get_running_loop().remove_reader(self._master)
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None
        return code if code >= 0 else 128 - code

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)


async def _write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to a non-blocking fd, waiting for writability when its buffer is full."""
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            writable: asyncio.Future[None] = loop.create_future()
            loop.add_writer(fd, _resolve, writable)
            try:
                await writable
            finally:
                loop.remove_writer(fd)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _pty_reader(master: int) -> asyncio.StreamReader:
    """A StreamReader fed from the terminal's master side; EOF when the last writer closes (EIO)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()

    def readable() -> None:
        try:
            data = os.read(master, _READ)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            reader.feed_data(data)
        else:
            loop.remove_reader(master)
            reader.feed_eof()

    loop.add_reader(master, readable)
    return reader
