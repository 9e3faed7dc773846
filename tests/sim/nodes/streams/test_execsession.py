"""ExecSession on its own: pipes, exit codes, a terminal with resize and more input than its buffer holds."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable

from lwsconf.sim.nodes.streams.execsession import ExecSession

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def run(coro: Awaitable[None]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coro, 60)
    asyncio.run(bounded())


def test_pipes_keep_stdout_and_stderr_apart_and_report_the_exit_code() -> None:
    async def scenario() -> None:
        session = await ExecSession.start(
            [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(5)"],
            env=ENV, cwd=None, stdin=False, tty=False)
        assert session.stderr is not None
        out, err = await asyncio.gather(session.stdout.read(), session.stderr.read())
        assert (out, err, await session.wait()) == (b"out\n", b"err\n", 5)

    run(scenario())


def test_without_stdin_a_reader_sees_eof_and_with_it_gets_the_bytes() -> None:
    async def scenario() -> None:
        code = "import sys; print(repr(sys.stdin.read()))"
        closed = await ExecSession.start([sys.executable, "-c", code], env=ENV, cwd=None, stdin=False, tty=False)
        assert await closed.stdout.read() == b"''\n" and await closed.wait() == 0
        fed = await ExecSession.start([sys.executable, "-c", code], env=ENV, cwd=None, stdin=True, tty=False)
        await fed.write_stdin(b"abc")
        fed.close_stdin()
        assert await fed.stdout.read() == b"'abc'\n" and await fed.wait() == 0

    run(scenario())


def test_a_terminal_takes_resizes_and_more_input_than_its_buffer() -> None:
    code = ("import os, sys, termios\n"
            "fd = sys.stdin.fileno(); attrs = termios.tcgetattr(fd); attrs[3] &= ~termios.ECHO\n"
            "termios.tcsetattr(fd, termios.TCSANOW, attrs)\n"
            "print('ready', flush=True); size = None; total = 0\n"
            "for line in sys.stdin:\n"
            "    size = size or os.get_terminal_size(); total += len(line)\n"
            "print('size', size.columns, size.lines, 'total', total, flush=True)")

    async def scenario() -> None:
        session = await ExecSession.start([sys.executable, "-c", code], env=ENV, cwd=None, stdin=True, tty=True)
        assert session.stderr is None, "a terminal merges stderr into stdout"
        assert b"ready" in await asyncio.wait_for(session.stdout.readuntil(b"ready"), 30)
        session.resize(101, 33)
        lines = b"123456789\n" * 30000  # 300 kB: far more than a pty buffers, so writes must wait
        await session.write_stdin(lines)
        session.close_stdin()
        rest = await session.stdout.read()
        assert b"size 101 33 total 300000" in rest, rest[-300:]
        assert await session.wait() == 0

    run(scenario())


def test_kill_ends_the_command() -> None:
    async def scenario() -> None:
        session = await ExecSession.start([sys.executable, "-c", "import time; time.sleep(600)"], env=ENV,
                                          cwd=None, stdin=False, tty=False)
        session.kill()
        assert await session.wait() == 128 + 9

    run(scenario())
