"""Loopback ports for a process we start, held for it until it listens, instead of picked and released.

Why: picking a free port (bind to port 0, read it, close) and handing the number to a child process leaves a
window in which the port is free: a parallel test's bind to port 0 or any process's outgoing connection
(connect() takes its local port from the same range) can take it, and the child then fails with EADDRINUSE
or, worse, a client reaches someone else's server. `reserve_port()` keeps the port bound for as long as the
caller holds the `Reserved`: bound with SO_REUSEADDR and never listening, so the kernel neither hands it out
to another bind to port 0 nor to an outgoing connection (Linux inet_csk_find_open_port and
__inet_hash_connect skip ports in the bind table), while the child's own bind and listen with SO_REUSEADDR
succeed beside it (inet_csk_bind_conflict: two SO_REUSEADDR sockets conflict only when one listens).

The child must set SO_REUSEADDR on its listening socket: Go's net package does for every TCP listener
(etcd, kube-apiserver, controller-runtime managers), as do Python's socketserver.TCPServer subclasses with
`allow_reuse_address` (http.server) and our own listeners. A child that does not fails at once with
EADDRINUSE, every time, rather than now and then.
"""

from __future__ import annotations

import socket
from types import TracebackType

LOOPBACK = "127.0.0.1"


class Reserved:
    """A port held bound (not listening) until `release()`; `port` is its number."""

    def __init__(self, host: str = LOOPBACK) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind((host, 0))
        except BaseException:
            self._sock.close()
            raise
        self.host = host
        self.port = int(self._sock.getsockname()[1])

    def release(self) -> None:
        """Stop holding the port (idempotent); call once the child listens on it or is gone."""
        self._sock.close()

    def __enter__(self) -> Reserved:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()


def reserve_port(host: str = LOOPBACK) -> Reserved:
    """A port on `host` held for a child that binds it with SO_REUSEADDR (see the module docstring)."""
    return Reserved(host)
