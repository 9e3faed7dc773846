"""The recording proxy on a tiny fake kube-apiserver (HTTPS, client certificates, a watch, an upgrade).

What it must do: pass every answer through unchanged (a watch chunk by chunk), record each interaction in
arrival order with the client's User-Agent, Content-Type and body, and never write a credential or a
Secret's data to the recording.
"""

from __future__ import annotations

import gzip
import http.server
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from lwsconf.controlplane import pki
from lwsconf.fidelity import recorder, scrub
from lwsconf.waits.core import NotYet, wait_until

SECRET_VALUE = "aHVudGVyMg=="  # noqa: S105 - the value the recording must not keep
RECORDED = 10.0
"""Seconds for the proxy to write an interaction whose streams just closed."""
TOKEN = "eyJhbGciOiJSUzI1NiJ9.secret-token"  # noqa: S105


class FakeApiServer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen_users: list[str] = []  # noqa: RUF012 - one server per test module run

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, code: int, body: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Audit-Id", f"audit-{self.path}")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        peer = self.connection.getpeercert()  # type: ignore[attr-defined]
        self.seen_users.append(dict(x[0] for x in peer["subject"])["commonName"])
        if "watch=true" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for name in ("a", "b"):
                event = json.dumps({"type": "ADDED", "object": {"kind": "ConfigMap", "metadata": {"name": name}}})
                line = (event + "\n").encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/api/v1/namespaces/a/secrets/s"):
            self._send(200, {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"},
                             "data": {"password": SECRET_VALUE}})
            return
        if "/exec?" in self.path:
            self.send_response(101)
            self.send_header("Connection", "Upgrade")
            self.send_header("Upgrade", "websocket")
            self.end_headers()
            self.wfile.write(b"hello from exec")
            self.wfile.flush()
            return
        if self.path.startswith("/api/v1/namespaces/a/configmaps?limit"):
            listed = {"kind": "ConfigMapList", "items": [{"data": {"big": "x" * 1000}}]}
            data = gzip.compress(json.dumps(listed).encode())
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        if body.get("kind") == "TokenRequest":
            self._send(201, {**body, "status": {"token": TOKEN, "expirationTimestamp": "2030-01-01T00:00:00Z"}})
            return
        self._send(201, {**body, "metadata": {**body["metadata"], "uid": "u-1", "resourceVersion": "7"}},
                   {"Warning": '299 - "a warning"'})


@pytest.fixture
def pki_dir(tmp_path: Path) -> tuple[pki.Authority, pki.Pair]:
    ca = pki.Authority(tmp_path)
    return ca, ca.issue("admin", "lwsconf-admin", org="system:masters")


@pytest.fixture
def upstream(pki_dir: tuple[pki.Authority, pki.Pair]) -> Iterator[str]:
    ca, _ = pki_dir
    serving = ca.issue("upstream", "kube-apiserver", server_ips=("127.0.0.1",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(serving.cert), str(serving.key))
    context.load_verify_locations(str(ca.pair.cert))
    context.verify_mode = ssl.CERT_REQUIRED
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeApiServer)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    FakeApiServer.seen_users = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(tmp_path: Path, pki_dir: tuple[pki.Authority, pki.Pair], upstream: str) -> Iterator[recorder.RecordingProxy]:
    ca, admin = pki_dir
    serving = ca.issue("recorder", "lwsconf-recorder", server_ips=("127.0.0.1",))
    with recorder.RecordingProxy(upstream=upstream, ca_pem=ca.pair.cert.read_bytes(),
                                 client_cert=(admin.cert, admin.key), serving_cert=(serving.cert, serving.key),
                                 out=tmp_path / "rec.jsonl") as running:
        yield running


def _session(pki_dir: tuple[pki.Authority, pki.Pair]) -> requests.Session:
    ca, admin = pki_dir
    session = requests.Session()
    session.trust_env = False
    session.verify = str(ca.pair.cert)
    session.cert = (str(admin.cert), str(admin.key))
    session.headers["User-Agent"] = "test-client/1.0"
    session.headers["Authorization"] = f"Bearer {TOKEN}"
    return session


def _records(path: Path, count: int = 1) -> list[dict[str, Any]]:
    """The recording once it has `count` interactions (each is written just after its answer went out)."""
    return wait_until(lambda: _read(path, count), what=f"{count} interactions in {path}", timeout=RECORDED)


def _read(path: Path, count: int) -> list[dict[str, Any]]:
    if not path.exists() or len(path.read_text().splitlines()) < count:
        raise NotYet(f"{path}: fewer than {count} interactions yet")
    return sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda r: r["seq"])


def test_answers_pass_through_and_are_recorded_in_order(proxy: recorder.RecordingProxy,
                                                        pki_dir: tuple[pki.Authority, pki.Pair]) -> None:
    session = _session(pki_dir)
    created = session.post(proxy.url + "/api/v1/namespaces/a/configmaps", params={"fieldManager": "me"},
                           json={"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}})
    assert created.status_code == 201 and created.json()["metadata"]["uid"] == "u-1"
    assert created.headers["Warning"] == '299 - "a warning"'
    watch = session.get(proxy.url + "/api/v1/namespaces/a/configmaps", params={"watch": "true"}, stream=True)
    lines = [json.loads(line) for line in watch.iter_lines() if line]
    assert [e["object"]["metadata"]["name"] for e in lines] == ["a", "b"]
    missing = session.get(proxy.url + "/api/v1/namespaces/a/configmaps/nope")
    assert missing.status_code == 404
    big = session.get(proxy.url + "/api/v1/namespaces/a/configmaps", params={"limit": "500"},
                      headers={"Accept-Encoding": "gzip"})
    assert big.json()["items"][0]["data"]["big"] == "x" * 1000  # the client decompresses what it gets, as before
    rec = _records(proxy.recording.path, 4)
    assert rec.pop()["response"]["items"][0]["data"]["big"] == "x" * 1000  # recorded decompressed
    assert [(r["method"], r["path"], r["code"]) for r in rec] == [
        ("POST", "/api/v1/namespaces/a/configmaps", 201), ("GET", "/api/v1/namespaces/a/configmaps", 200),
        ("GET", "/api/v1/namespaces/a/configmaps/nope", 404)]
    first = rec[0]
    assert first["client"] == "test-client/1.0" and first["contentType"] == "application/json"
    assert first["query"] == [["fieldManager", "me"]]
    assert first["body"] == {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    assert first["response"]["metadata"]["resourceVersion"] == "7" and first["warnings"] == ['299 - "a warning"']
    assert first["auditId"] == "audit-/api/v1/namespaces/a/configmaps?fieldManager=me"
    assert [e["object"]["metadata"]["name"] for e in rec[1]["events"]] == ["a", "b"]
    assert set(FakeApiServer.seen_users) == {"lwsconf-admin"}


def test_no_credential_or_secret_reaches_the_recording(proxy: recorder.RecordingProxy,
                                                       pki_dir: tuple[pki.Authority, pki.Pair]) -> None:
    session = _session(pki_dir)
    got = session.get(proxy.url + "/api/v1/namespaces/a/secrets/s")
    assert got.json()["data"]["password"] == SECRET_VALUE  # the client gets the real answer
    token = session.post(proxy.url + "/api/v1/namespaces/a/serviceaccounts/default/token",
                         json={"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "spec": {}})
    assert token.json()["status"]["token"] == TOKEN
    session.post(proxy.url + "/api/v1/namespaces/a/secrets",
                 json={"kind": "Secret", "metadata": {"name": "t"}, "stringData": {"password": "hunter2"}})
    rec = _records(proxy.recording.path, 3)
    text = proxy.recording.path.read_text()
    for leaked in (SECRET_VALUE, TOKEN, "hunter2", "Bearer", "Authorization"):
        assert leaked not in text
    assert rec[0]["response"]["data"] == {"password": scrub.DATA_PLACEHOLDER}
    assert rec[1]["response"]["status"]["token"] == scrub.PLACEHOLDER
    assert rec[2]["body"]["stringData"] == {"password": scrub.PLACEHOLDER}


def test_an_upgrade_is_tunnelled_and_recorded_as_101(proxy: recorder.RecordingProxy,
                                                     pki_dir: tuple[pki.Authority, pki.Pair]) -> None:
    ca, admin = pki_dir
    context = ssl.create_default_context(cafile=str(ca.pair.cert))
    context.load_cert_chain(str(admin.cert), str(admin.key))
    port = int(proxy.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"GET /api/v1/namespaces/a/pods/p/exec?command=ls HTTP/1.1\r\nHost: x\r\n"
                    b"Connection: Upgrade\r\nUpgrade: websocket\r\nUser-Agent: kubectl/v1\r\n\r\n")
        received = b""
        while b"hello from exec" not in received:
            data = tls.recv(4096)
            if not data:
                break
            received += data
    assert received.startswith(b"HTTP/1.1 101") and received.endswith(b"hello from exec")
    # recorded once the tunnel is over: both sides closed
    rec = _records(proxy.recording.path)
    assert (rec[0]["code"], rec[0]["upgraded"], rec[0]["client"]) == (101, True, "kubectl/v1")
