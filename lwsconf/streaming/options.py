"""Which streams an exec or attach asks for, in the API server's and the kubelet's query forms.

kubectl asks the API server `pods/NAME/exec?command=..&stdin=true&stdout=true&stderr=true&tty=false
&container=C`; the API server asks the kubelet `/exec/NS/POD/C?command=..&input=1&output=1&error=1
&tty=1` (pkg/registry/core/pod/strategy.go, `streamParams`). The kubelet drops stderr under a tty and
refuses a request with no stream at all (the remotecommand server's `NewOptions`); the API server
refuses an exec without a command. Port-forward names its ports per stream, not in the query.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

_TRUE = ("true", "1", "yes")


class BadOptions(ValueError):
    """A request whose options no kubelet or API server would accept; the message says what to fix."""


@dataclass(frozen=True)
class StreamOptions:
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool
    command: tuple[str, ...] = ()

    def kubelet_query(self) -> list[tuple[str, str]]:
        """The query the API server sends the kubelet (order as strategy.go builds it)."""
        query = [(name, "1") for name, on in (("input", self.stdin), ("output", self.stdout),
                                                ("error", self.stderr), ("tty", self.tty)) if on]
        return query + [("command", c) for c in self.command]


def _last(pairs: list[tuple[str, str]], name: str) -> str:
    values = [v for k, v in pairs if k == name]
    return values[-1] if values else ""


def from_api_query(items: Iterable[tuple[str, str]], *, exec_: bool) -> StreamOptions:
    """PodExecOptions/PodAttachOptions from an API-server query; BadOptions as the API server says it."""
    pairs = list(items)
    flags = {name: _last(pairs, name).lower() in _TRUE for name in ("stdin", "stdout", "stderr", "tty")}
    command = tuple(v for k, v in pairs if k == "command")
    if exec_ and not command:
        raise BadOptions("you must specify at least one command for the container")
    if not (flags["stdin"] or flags["stdout"] or flags["stderr"]):
        raise BadOptions("you must specify at least 1 of stdin, stdout, stderr")
    return StreamOptions(flags["stdin"], flags["stdout"], flags["stderr"], flags["tty"], command)


def from_kubelet_query(items: Iterable[tuple[str, str]]) -> StreamOptions:
    """The kubelet's reading of `input`/`output`/`error`/`tty` ("1" is true) and `command`."""
    pairs = list(items)
    stdin, stdout, stderr, tty = (_last(pairs, name) == "1" for name in ("input", "output", "error", "tty"))
    if tty:
        stderr = False  # a terminal merges stderr into stdout
    if not (stdin or stdout or stderr):
        raise BadOptions("you must specify at least 1 of stdin, stdout, stderr")
    return StreamOptions(stdin, stdout, stderr, tty, tuple(v for k, v in pairs if k == "command"))
