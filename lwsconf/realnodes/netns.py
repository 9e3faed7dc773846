"""Sockets in another network namespace: listen inside a node's namespace, dial on the host's loopback.

A real node of ours is a network namespace the run creates (`lwsconf.realnodes.network`); its kubelet, containerd
and kube-proxy run inside it, where 127.0.0.1 is the namespace's own loopback. The control plane stays on the
host's loopback. `listening_socket_in` opens a listening socket inside a namespace and returns to the host's at
once: a socket keeps the namespace it was created in, so one process can accept inside the node and dial the
host's 127.0.0.1 (`lwsconf.realnodes.forward`). setns(2) changes the calling thread only, and the switch back
happens before any other code of that thread runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import socket
from collections.abc import Iterator
from pathlib import Path

CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")
"""Where `ip netns add NAME` bind-mounts a namespace (iproute2's convention)."""

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class NamespaceError(OSError):
    """A namespace that cannot be entered (missing, or no CAP_SYS_ADMIN); the message names it."""


def _setns(fd: int, what: str) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise NamespaceError(errno, f"cannot enter the network namespace {what}: {os.strerror(errno)}")


@contextlib.contextmanager
def entered(path: Path) -> Iterator[None]:
    """This thread in the namespace at `path` (e.g. /run/netns/<name>) for the block, then back in its own."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            target = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise NamespaceError(exc.errno, f"no network namespace at {path}: {exc.strerror}") from exc
        try:
            _setns(target, str(path))
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own, "of this process (returning)")
    finally:
        os.close(own)


def listening_socket_in(path: Path, host: str, port: int, backlog: int = 128) -> socket.socket:
    """A TCP socket listening on host:port inside the namespace at `path` (this thread stays where it was)."""
    with entered(path):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
