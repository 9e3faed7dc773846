"""A real HTTPS admission webhook server on loopback for tests: http.server + ssl, certificates from a CA made here.

`WebhookServer(ca, host, port, names)` serves every POST with `handler(path, review) -> response dict or
None` (None: allow). Responses are wrapped into a v1 AdmissionReview echoing the request's uid unless the
handler returns a whole review (`{"raw": {...}}`) to test bad answers; `{"sleep": s}` delays the answer.
Every review received is kept in `reviews` (path, review) for the tests to assert on.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lwsconf.controlplane.pki import Authority

Handler = Callable[[str, dict[str, Any]], dict[str, Any] | None]


def json_patch(*ops: dict[str, Any]) -> dict[str, Any]:
    """A response field set carrying a JSONPatch (base64 as AdmissionReview v1 wants)."""
    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(list(ops)).encode()).decode()}


class WebhookServer:
    def __init__(self, folder: Path, host: str = "127.0.0.1", port: int = 0, *, names: tuple[str, ...] = (),
                 ca: Authority | None = None, handler: Handler | None = None) -> None:
        self.ca = ca or Authority(folder)
        pair = self.ca.issue(f"webhook-{host}-{port}", "webhook", server_names=names or ("localhost",),
                             server_ips=() if names else (host,))
        self.reviews: list[tuple[str, dict[str, Any]]] = []
        self.handler: Handler = handler or (lambda path, review: None)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(pair.cert), str(pair.key))
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as webhook servers (controller-runtime's) do
            def do_POST(self) -> None:  # noqa: N802 -- http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                review = json.loads(self.rfile.read(length))
                owner.reviews.append((self.path, review))
                answer = owner.handler(self.path.split("?")[0], review) or {}
                if "sleep" in answer:
                    time.sleep(answer.pop("sleep"))
                body = answer["raw"] if "raw" in answer else {
                    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": review["request"]["uid"], "allowed": True, **answer}}
                data = json.dumps(body).encode()
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                # One write: no Nagle/delayed-ACK stall on keep-alive. A broken pipe means the API server gave up
                # (timeoutSeconds): nobody reads the answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    self.wfile.write(head.encode() + data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- quiet in tests
                pass

        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.host, self.port = host, self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.pair.cert.read_bytes()).decode()

    def url(self, path: str = "/") -> str:
        return f"https://{self.host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [p.split("?")[0] for p, _ in self.reviews]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)
