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
Keep this file dependency-free (Python >= 3.9): it is mounted into arbitrary python images.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

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
    STATE["ready"] = not args.start_unready
    STATE["tags"] = list(args.tag)
    bind = os.environ.get("LWSCONF_BIND") or os.environ.get("POD_IP") or ""
    server = ThreadingHTTPServer((bind, args.port), Handler)
    sys.stderr.write(f"lwsconf probe listening on {bind or '*'}:{args.port} as {identity()['pod']}\n")
    sys.stderr.flush()
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
