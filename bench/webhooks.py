"""Admission webhook cost on the sim API server: ConfigMap creates per second with 0, 1 and 2 webhooks.

The API server runs on a background loop in this process and one client creates ConfigMaps one after
another (after an unmeasured warm-up); the webhooks are a keep-alive HTTPS server on loopback (a
thread here) answering at once, a JSON patch from the mutating one, an allow from the validating
one. So each figure is the sim's own cost of
calling webhooks (review, TLS, patch, decode) plus a minimal server's, not a webhook's work. Results go
to a JSON file under "webhooks"; no assertions (figures, not verdicts).

    python -m bench.webhooks --out bench/results.json [--creates 300]
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

from bench._simproc import load_average, machine, write_results
from lwsconf import _loopthread
from lwsconf.controlplane.pki import Authority
from lwsconf.sim.apiserver.http import app

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
PATCH = base64.b64encode(json.dumps([{"op": "add", "path": "/data/stamp", "value": "1"}]).encode()).decode()


class _Hook(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 -- http.server's name
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        if self.path.startswith("/mutate"):
            response |= {"patchType": "JSONPatch", "patch": PATCH}
        data = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.wfile.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                         .encode() + data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- quiet
        pass


def _webhook_server(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    ca = Authority(folder)
    pair = ca.issue("webhook", "webhook", server_ips=("127.0.0.1",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pair.cert), str(pair.key))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, base64.b64encode(ca.pair.cert.read_bytes()).decode()


def _configuration(kind: str, url: str, ca_bundle: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": kind.lower()},
            "webhooks": [{"name": "bench.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                          "clientConfig": {"url": url, "caBundle": ca_bundle},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                     "resources": ["configmaps"]}]}]}


def _creates(session: requests.Session, url: str, label: str, count: int) -> dict[str, float]:
    started = time.perf_counter()
    for i in range(count):
        reply = session.post(f"{url}/api/v1/namespaces/default/configmaps", timeout=30,
                             json={"metadata": {"name": f"{label}-{i}"}, "data": {"a": "1"}})
        if reply.status_code != 201:
            raise SystemExit(f"bench.webhooks: create answered {reply.status_code}: {reply.text[:500]}")
    seconds = time.perf_counter() - started
    return {"creates_per_s": round(count / seconds, 1), "ms_per_create": round(1000 * seconds / count, 2)}


def run(count: int) -> dict[str, Any]:
    loop = _loopthread.LoopThread("bench-webhooks").start()
    server = app.APIServer()
    loop.run(server.start())
    with tempfile.TemporaryDirectory(prefix="lwsconf-bench-webhooks-") as tmp:
        httpd, ca_bundle = _webhook_server(Path(tmp))
        (Path(tmp) / "api-ca.crt").write_bytes(server.ca_pem)
        session = requests.Session()
        session.trust_env = False
        session.verify = str(Path(tmp) / "api-ca.crt")
        session.headers["Authorization"] = f"Bearer {server.token}"
        base = f"https://127.0.0.1:{httpd.server_address[1]}"
        try:
            _creates(session, server.url, "warm-up", count // 5 + 1)  # connections, caches: not measured
            figures = {"no_webhook": _creates(session, server.url, "none", count)}
            session.post(f"{server.url}{ADMISSION}/mutatingwebhookconfigurations", timeout=30,
                         json=_configuration("MutatingWebhookConfiguration", f"{base}/mutate", ca_bundle))
            figures["one_mutating"] = _creates(session, server.url, "one", count)
            session.post(f"{server.url}{ADMISSION}/validatingwebhookconfigurations", timeout=30,
                         json=_configuration("ValidatingWebhookConfiguration", f"{base}/validate", ca_bundle))
            figures["mutating_and_validating"] = _creates(session, server.url, "two", count)
        finally:
            session.close()
            httpd.shutdown()
            loop.run(server.stop())
            loop.stop()
    return {"creates": count, **figures, "load_average": load_average(), "machine": machine()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--creates", type=int, default=300)
    args = parser.parse_args(argv)
    result = run(args.creates)
    write_results(args.out, "webhooks", result)
    print(f"webhooks: {json.dumps({k: v for k, v in result.items() if k != 'machine'})}; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
