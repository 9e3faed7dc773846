"""The lwsconf probe workload: a stdlib-only HTTP program that conformance workloads run.

It runs unchanged on every backend: from a stock `python` image with this file mounted from a
ConfigMap (kind, real clusters) and as a real process in the simulator. Tests reach it through the
API server's `pods/NAME:PORT/proxy` and `services/NAME:PORT/proxy`, so nothing depends on network
access from the test machine.

Endpoints (all GET, JSON answers):
  /               identity: pod, namespace, node, IP, hostname, the LWS_* variables, start time
  /env            the whole environment
  /healthz        liveness: always 200 while the process runs
  /readyz         readiness: 200, or 503 after /ready?value=false
  /ready?value=   flip readiness (true|false); the portable way to hold a pod unready
  /exit?code=N    answer, then exit with code N (the portable way to crash a container)
  /peer?host=H&port=P&path=/   resolve H, connect, GET path from it; reports the address and answer
  /callers        who has called this process (remote address and X-Lwsconf-Caller header)
  /file?path=P    the content of file P (JSON-decoded when it parses), e.g. what an init container wrote

Configuration: --port (default 8080) and the bind address from $LWSCONF_BIND, else $POD_IP, else all
interfaces. Binding the pod IP matters in the simulator, where every pod is a process on one host.
--start-unready (or LWSCONF_START_UNREADY=1) starts with /readyz failing until /ready?value=true, so a
test can hold a pod unready from its first instant. --tag VALUE (repeatable) is echoed in the identity
as `tags` (with `argv`), so `$(VAR)` expansion in command and args can be observed. --dump-env PATH
writes the environment as JSON to PATH and exits 0: the init-container mode.
SIGTERM ends the program at once with exit code 143 (128 + 15), as a serving program that handles it would. In a
container the program is PID 1, and the kernel drops a signal PID 1 has no handler for: without this handler the
kubelet waits out the grace period and kills with SIGKILL (137), which made every pod deletion on real nodes wait
terminationGracePeriodSeconds before the container stopped.
Keep this file dependency-free (Python >= 3.9): it is mounted into arbitrary python images.
"""

from __future__ import annotations

import os
import socket
import sys

LISTEN_BACKLOG = 5
"""As `socketserver.TCPServer.request_queue_size`, which the server used when it bound the port itself."""


def listen_early(argv: list[str], environ: dict[str, str]) -> socket.socket | None:
    """The port, bound and listening before the program imports `http.server` (or None: let `main` bind).

    A readiness probe that runs before the program listens fails, and the kubelet tries again only one
    period later (a second, for every workload here). Importing `http.server` and the rest takes about as
    long as the interpreter's own start (on the sim's 2-core machines: listening 75 ms after exec when bound
    after the imports, 37 ms when bound before them), and in a conformance run about one pod in ten had
    its first readiness probe refused. Connections that arrive before the server runs wait in the backlog.
    Only `--port`/`LWSCONF_PORT` are read here, as `main` reads them; a bind error is left to `main`'s
    bind, which reports it. The `--dump-env` mode (init containers) serves nothing and binds nothing.
    """
    if "--dump-env" in argv or any(a.startswith("--dump-env=") for a in argv) or "-h" in argv or "--help" in argv:
        return None
    port_text = environ.get("LWSCONF_PORT", "8080")
    for i, arg in enumerate(argv):
        if arg == "--port" and i + 1 < len(argv):
            port_text = argv[i + 1]
        elif arg.startswith("--port="):
            port_text = arg.split("=", 1)[1]
    bind = environ.get("LWSCONF_BIND") or environ.get("POD_IP") or ""
    sock = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as HTTPServer.allow_reuse_address
        sock.bind((bind, int(port_text)))
        sock.listen(LISTEN_BACKLOG)
    except (OSError, ValueError):
        sock.close()
        return None
    return sock


EARLY_SOCKET = listen_early(sys.argv[1:], dict(os.environ)) if __name__ == "__main__" else None

import argparse  # noqa: E402 - after the early bind, on purpose (see listen_early)
import contextlib  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import parse_qs, urlparse  # noqa: E402

STATE: dict[str, Any] = {"ready": True, "callers": [], "started": time.time()}
LOCK = threading.Lock()


def identity() -> dict[str, Any]:
    env = os.environ
    return {
        "pod": env.get("POD_NAME") or socket.gethostname(),
        "namespace": env.get("POD_NAMESPACE", ""),
        "node": env.get("NODE_NAME", ""),
        "ip": env.get("POD_IP", ""),
        "hostname": socket.gethostname(),
        "lws": {k: v for k, v in env.items() if k.startswith("LWS_")},
        "started": STATE["started"],
        "pid": os.getpid(),
        "tags": list(STATE.get("tags", [])),
        "argv": sys.argv[1:],
    }


def read_file(query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
    path = query.get("path", [""])[0]
    if not path:
        return 400, {"error": "pass ?path=FILE"}
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        return 404, {"path": path, "error": f"cannot read: {exc}"}
    try:
        return 200, {"path": path, "content": json.loads(text)}
    except ValueError:
        return 200, {"path": path, "content": text}


def peer(query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
    host = query.get("host", [""])[0]
    port = int(query.get("port", ["8080"])[0])
    path = query.get("path", ["/"])[0]
    if not host:
        return 400, {"error": "pass ?host=NAME&port=PORT"}
    try:
        address = socket.gethostbyname(host)
    except OSError as exc:
        return 200, {"host": host, "resolved": None, "error": f"resolve failed: {exc}"}
    import urllib.request  # here, not at the top: it costs a third of the probe's start-up CPU, paid by every pod

    try:
        request = urllib.request.Request(f"http://{address}:{port}{path}",
                                         headers={"X-Lwsconf-Caller": identity()["pod"]})
        with urllib.request.urlopen(request, timeout=5) as reply:  # noqa: S310 - a peer pod we were told about
            body = json.loads(reply.read().decode() or "null")
        return 200, {"host": host, "resolved": address, "status": reply.status, "answer": body}
    except (OSError, ValueError) as exc:
        return 200, {"host": host, "resolved": address, "error": f"connect failed: {exc}"}


class Handler(BaseHTTPRequestHandler):
    server_version = "lwsconf-probe/1"

    def log_message(self, fmt: str, *args: Any) -> None:  # one line per request on stderr = the pod log
        sys.stderr.write(f"{self.address_string()} {fmt % args}\n")

    def reply(self, code: int, body: Any) -> None:
        data = json.dumps(body, sort_keys=True).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        url = urlparse(self.path)
        query = parse_qs(url.query)
        with LOCK:
            STATE["callers"].append({"from": self.client_address[0], "caller": self.headers.get("X-Lwsconf-Caller"),
                                     "path": url.path, "at": time.time()})
            del STATE["callers"][:-200]
        route = url.path.rstrip("/") or "/"
        if route == "/":
            self.reply(200, identity())
        elif route == "/env":
            self.reply(200, dict(os.environ))
        elif route == "/healthz":
            self.reply(200, {"ok": True})
        elif route == "/readyz":
            self.reply(200 if STATE["ready"] else 503, {"ready": STATE["ready"]})
        elif route == "/ready":
            STATE["ready"] = query.get("value", ["true"])[0].lower() == "true"
            self.reply(200, {"ready": STATE["ready"]})
        elif route == "/exit":
            code = int(query.get("code", ["1"])[0])
            self.reply(200, {"exiting": code})
            self.wfile.flush()
            threading.Timer(0.05, os._exit, args=(code,)).start()
        elif route == "/peer":
            self.reply(*peer(query))
        elif route == "/file":
            self.reply(*read_file(query))
        elif route == "/callers":
            with LOCK:
                self.reply(200, {"callers": list(STATE["callers"])})
        else:
            self.reply(404, {"error": f"no route {url.path}"})


class ProbeServer(ThreadingHTTPServer):
    """The HTTP server, on the socket `listen_early` bound when there is one for this address."""

    def __init__(self, address: tuple[str, int], early: socket.socket | None) -> None:
        usable = early is not None and early.getsockname()[1] == address[1]
        super().__init__(address, Handler, bind_and_activate=not usable)
        if early is not None and usable:
            self.socket.close()
            self.socket = early
            host, port = early.getsockname()[:2]
            self.server_address = (host, port)
            self.server_name, self.server_port = socket.getfqdn(host), port  # as HTTPServer.server_bind
        elif early is not None:
            early.close()


SIGTERM_EXIT = 128 + signal.SIGTERM
"""What a container runtime reports for a process SIGTERM killed; the probe exits with it on purpose."""


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.stderr.write("lwsconf probe: SIGTERM, exiting\n")
    sys.stderr.flush()
    os._exit(SIGTERM_EXIT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="lwsconf probe workload")
    parser.add_argument("--port", type=int, default=int(os.environ.get("LWSCONF_PORT", "8080")))
    parser.add_argument("--start-unready", action="store_true",
                        default=os.environ.get("LWSCONF_START_UNREADY", "") in ("1", "true"),
                        help="fail /readyz until /ready?value=true")
    parser.add_argument("--tag", action="append", default=[], help="a value echoed in the identity (repeatable)")
    parser.add_argument("--dump-env", metavar="PATH", help="write the environment as JSON to PATH and exit")
    args = parser.parse_args(argv)
    if args.dump_env:
        with open(args.dump_env, "w", encoding="utf-8") as handle:
            json.dump(dict(os.environ), handle, sort_keys=True)
        return 0
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    STATE["ready"] = not args.start_unready
    STATE["tags"] = list(args.tag)
    bind = os.environ.get("LWSCONF_BIND") or os.environ.get("POD_IP") or ""
    server = ProbeServer((bind, args.port), EARLY_SOCKET)
    sys.stderr.write(f"lwsconf probe listening on {bind or '*'}:{args.port} as {identity()['pod']}\n")
    sys.stderr.flush()
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
