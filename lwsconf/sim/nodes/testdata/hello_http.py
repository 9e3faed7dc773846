"""A tiny HTTP workload for the simulated cluster's own tests (stdlib only).

Run by the sim's process runtime as a container (`python3 /app/hello_http.py --port 8080`):

    GET /               JSON: pod name, the address served on, hostname, argv, cwd, environment
    GET /healthz        200 "ok"
    GET /resolve?name=N JSON list of the IPv4 addresses N resolves to (404 when it does not)
    GET /file?path=P    the file's content (404 when missing)
    GET /exit?code=N    answers, then exits with status N

It binds `--host` (default: all addresses, which the sim maps to the pod IP) and prints one
"listening on HOST:PORT" line. SIGTERM closes the server and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    server_version = "hello_http/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        sys.stdout.write(f"{self.address_string()} {format % args}\n")
        sys.stdout.flush()

    def reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/":
            self.reply(200, json.dumps(describe(self.server.server_address)).encode())
        elif url.path == "/healthz":
            self.reply(200, b"ok", "text/plain")
        elif url.path == "/resolve":
            self.resolve(query.get("name", ""))
        elif url.path == "/file":
            try:
                with open(query.get("path", ""), "rb") as handle:
                    self.reply(200, handle.read(), "application/octet-stream")
            except OSError as exc:
                self.reply(404, json.dumps({"error": str(exc)}).encode())
        elif url.path == "/exit":
            code = int(query.get("code", "0"))
            self.reply(200, json.dumps({"exiting": code}).encode())
            self.wfile.flush()
            os._exit(code)
        else:
            self.reply(404, b'{"error": "not found"}')

    def resolve(self, name: str) -> None:
        try:
            infos = socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)
        except OSError as exc:
            self.reply(404, json.dumps({"error": str(exc)}).encode())
            return
        self.reply(200, json.dumps(sorted({info[4][0] for info in infos})).encode())


def describe(address: Any) -> dict[str, Any]:
    return {"pod": os.environ.get("POD_NAME") or socket.gethostname(), "ip": address[0], "port": address[1],
            "hostname": socket.gethostname(), "argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}


def main() -> None:
    parser = argparse.ArgumentParser(description="A tiny HTTP workload for lwsconf's sim tests.")
    parser.add_argument("--host", default="", help="address to bind (default: all)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    options, _ = parser.parse_known_args()
    server = ThreadingHTTPServer((options.host, options.port), Handler)
    address: Any = server.server_address
    print(f"listening on {address[0]}:{address[1]}", flush=True)

    def on_term(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    server.serve_forever(poll_interval=0.1)
    server.server_close()


if __name__ == "__main__":
    main()
