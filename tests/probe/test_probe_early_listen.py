"""The probe program binds its port before its slow imports, so a readiness probe finds it listening sooner."""

from __future__ import annotations

import importlib.util
import json
import socket
import threading
import urllib.request
from types import ModuleType

from lwsconf import probe
from tests.probe.test_probe import free_port

IP = "127.0.0.1"


def load_program() -> ModuleType:
    """probe.py as the module a container runs (by path, not `lwsconf.probe`), without running `main`."""
    spec = importlib.util.spec_from_file_location("probe_program", probe.PROGRAM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_port_listens_before_main_runs() -> None:
    program, port = load_program(), free_port(IP)
    early = program.listen_early(["--port", str(port)], {"POD_IP": "127.0.0.1"})
    assert early is not None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # accepted into the backlog: nothing serves yet
    finally:
        early.close()


def test_port_from_the_environment_and_from_the_equals_form() -> None:
    program = load_program()
    for argv, env in (([], {"LWSCONF_PORT": str(free_port(IP))}), ([f"--port={free_port(IP)}"], {})):
        early = program.listen_early(argv, {"LWSCONF_BIND": "127.0.0.1", **env})
        assert early is not None
        wanted = int(env["LWSCONF_PORT"]) if env else int(argv[0].split("=")[1])
        assert early.getsockname() == ("127.0.0.1", wanted)
        early.close()


def test_no_early_bind_for_dump_env_or_help_or_a_taken_port() -> None:
    program, port = load_program(), free_port(IP)
    env = {"POD_IP": "127.0.0.1"}
    assert program.listen_early(["--dump-env", "/tmp/x.json", "--port", str(port)], env) is None
    assert program.listen_early(["--help"], env) is None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen(1)
        assert program.listen_early(["--port", str(port)], env) is None, "main's own bind reports the error"


def test_the_server_serves_on_the_early_socket() -> None:
    program, port = load_program(), free_port(IP)
    early = program.listen_early(["--port", str(port)], {"POD_IP": "127.0.0.1"})
    assert early is not None
    with socket.create_connection(("127.0.0.1", port), timeout=2) as waiting:  # arrives before the server runs
        waiting.sendall(b"GET /readyz HTTP/1.0\r\n\r\n")
        server = program.ProbeServer(("127.0.0.1", port), early)
        assert server.socket is early
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            head, _, body = waiting.makefile("rb").read().partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.0 200"), head
            assert json.loads(body) == {"ready": True}
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
                assert reply.status == 200 and json.loads(reply.read())
        finally:
            server.shutdown()
            server.server_close()


def test_an_early_socket_for_another_port_is_closed_and_the_server_binds_its_own() -> None:
    program, port, other = load_program(), free_port(IP), free_port(IP)
    early = program.listen_early(["--port", str(other)], {"POD_IP": "127.0.0.1"})
    assert early is not None
    server = program.ProbeServer(("127.0.0.1", port), early)
    try:
        assert server.socket is not early and early.fileno() == -1
        assert server.socket.getsockname() == ("127.0.0.1", port)
    finally:
        server.server_close()
