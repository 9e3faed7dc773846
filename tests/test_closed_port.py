"""tests/conftest.py's closed_port: what tests of "nothing listens there" rely on, checked against the kernel."""

from __future__ import annotations

import errno
import socket

import pytest


def test_a_closed_port_refuses_connections(closed_port: int) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", closed_port), timeout=5).close()


def test_no_other_server_can_bind_a_closed_port_even_with_so_reuseaddr(closed_port: int) -> None:
    """Servers (http.server, asyncio, the emulator) set SO_REUSEADDR; it must not get them onto the port."""
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError) as info:
            other.bind(("127.0.0.1", closed_port))
    assert info.value.errno == errno.EADDRINUSE
