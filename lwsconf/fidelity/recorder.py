"""Recording what real clients send to a real kube-apiserver: a loopback HTTPS proxy in front of it (issue 33).

Why a proxy and not kube-apiserver's audit log: the held-out corpus replays requests byte for byte, and
the audit log does not have them. At RequestResponse level it logs the request object as the server
decoded it (a create's body re-encoded, a YAML apply re-serialised), it has no Content-Type (a merge patch,
a strategic-merge patch and an apply patch are all "patch"), it logs no watch events (only that a watch
started and ended) and no body that is not an object (logs, Table rows are kept, but `kubectl logs` text is
not). A proxy sees exactly what the client sent and what it got back, in the client's order, with its
User-Agent; it keeps each answer's `Audit-Id`, so a recording can still be matched to an audit log line
should one be wanted.

How: the proxy listens on 127.0.0.1 with a serving certificate from the cluster's CA (so a client's
kubeconfig changes only in its server URL), asks each client for a certificate from that CA (nobody else
gets through), and forwards each request over its own TLS connection to kube-apiserver with the admin
certificate: every client that reaches it holds the admin kubeconfig of `--cluster=local`, so the identity
kube-apiserver sees is the one the client would have had. A client's own `Authorization` header is
forwarded but never recorded (kube-apiserver authenticates the certificate first). HTTP/1.1 only (ALPN
offers nothing else, so Go clients do not try HTTP/2). Streaming answers (watches, `logs -f`) are passed on
chunk by chunk as they arrive; upgrades (exec, attach, port-forward) are tunnelled byte for byte and
recorded as the request and its 101, without the stream. One JSON line per finished interaction is
appended to the recording, scrubbed first (`scrub.py`); `seq` is the order of arrival, which the converter
sorts by (a long watch ends after requests that came later).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import gzip
import http.client
import http.server
import itertools
import json
import socket
import ssl
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from lwsconf.fidelity import scrub

if TYPE_CHECKING:
    from lwsconf.controlplane.local import LocalControlPlane

MAX_BODY = 4 * 1024 * 1024
"""Bytes of one body a recording keeps; a longer one is recorded as truncated (the converter drops it)."""
UPSTREAM_TIMEOUT = 600.0
"""Seconds the proxy waits on kube-apiserver for one read (a watch's own timeout is at most this long)."""
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length"})


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


PROTOBUF = "application/vnd.kubernetes.protobuf"


def decode(data: bytes, content_type: str | None) -> tuple[Any, str]:
    """A body as recorded: decoded JSON; a Kubernetes protobuf object as its JSON form ("protobuf": kubectl sends and
    reads built-in kinds so; decoded with the schema the sim's API server serves, `lwsconf.sim.apiserver.protobuf`,
    so that it can be scrubbed, read and replayed with each server's own values, re-encoded then); text; or base64
    (any other binary), and which of these."""
    if not data:
        return None, "none"
    if content_type and content_type.startswith(PROTOBUF):
        from lwsconf.sim.apiserver.protobuf import envelope

        try:
            return envelope.decode_object(data), "protobuf"
        except (ValueError, LookupError):
            return base64.b64encode(data).decode(), "base64"
    if content_type and "json" in content_type:
        try:
            return json.loads(data), "json"
        except ValueError:
            pass
    try:
        return data.decode(), "text"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode(), "base64"


def watch_events(data: bytes) -> list[Any]:
    """A JSON watch stream (one object per line) as its events; an unreadable line is kept as text."""
    out: list[Any] = []
    for line in data.split(b"\n"):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"type": "UNREADABLE", "object": line.decode(errors="replace")[:500]})
    return out


class Recording:
    """The recording file: one JSON line per interaction, appended under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self.count = 0

    def next_seq(self) -> int:
        with self._lock:
            return next(self._seq)

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
        with self._lock, self.path.open("a") as out:
            out.write(line)
            self.count += 1


def interaction(*, seq: int, started: str, seconds: float, method: str, target: str,
                request_headers: list[tuple[str, str]], request_body: bytes, code: int,
                response_headers: list[tuple[str, str]], response_body: bytes, streamed: bool,
                upgraded: bool = False, truncated: bool = False) -> dict[str, Any]:
    """One recorded interaction, scrubbed (`scrub`): what the converter reads. Pure, for the tests."""
    url = urllib.parse.urlsplit(target)
    path = url.path
    kept_request = scrub.kept_headers(request_headers, scrub.KEPT_REQUEST_HEADERS)
    kept_response = scrub.kept_headers(response_headers, scrub.KEPT_RESPONSE_HEADERS)
    warnings = [v for k, v in response_headers if k.lower() == "warning"]
    body, encoding = decode(request_body, kept_request.get("Content-Type"))
    body = scrub.opaque(body, encoding, path)
    record: dict[str, Any] = {
        "seq": seq, "started": started, "seconds": round(seconds, 6), "client": kept_request.get("User-Agent", ""),
        "method": method, "path": path, "query": urllib.parse.parse_qsl(url.query, keep_blank_values=True),
        "contentType": kept_request.get("Content-Type"), "accept": kept_request.get("Accept"),
        "body": scrub.body(body, path), "bodyEncoding": encoding, "code": code,
        "responseContentType": kept_response.get("Content-Type"), "auditId": kept_response.get("Audit-Id"),
        "warnings": warnings, "upgraded": upgraded}
    content_type = kept_response.get("Content-Type") or ""
    if any(k.lower() == "content-encoding" and "gzip" in v for k, v in response_headers):
        try:  # kube-apiserver compresses a large answer for a client that accepts gzip (every Go client does)
            response_body = gzip.decompress(response_body)
        except (OSError, EOFError):
            truncated = True  # a cut gzip stream (over MAX_BODY) cannot be read: dropped as truncated
    if streamed and code == 200 and "json" in content_type and _is_watch(method, path, record["query"]):
        record["events"] = scrub.events(watch_events(response_body), path)
        record["response"], record["responseEncoding"] = None, "none"
    else:
        answer, answer_encoding = decode(response_body, content_type)
        answer = scrub.opaque(answer, answer_encoding, path)
        record["response"], record["responseEncoding"] = scrub.body(answer, path), answer_encoding
    record["truncated"] = truncated
    return record


def _is_watch(method: str, path: str, query: list[tuple[str, str]]) -> bool:
    return method == "GET" and (dict(query).get("watch") in ("true", "1") or "/watch/" in path)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self._upstream: http.client.HTTPSConnection | None = None

    def finish(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Quiet: the recording is the log."""

    def _connection(self) -> http.client.HTTPSConnection:
        if self._upstream is None:
            host, port = self.server.upstream
            self._upstream = http.client.HTTPSConnection(host, port, context=self.server.upstream_context,
                                                         timeout=UPSTREAM_TIMEOUT)
        return self._upstream

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _relay(self) -> None:
        seq, started, clock = self.server.recording.next_seq(), now_iso(), time.monotonic()
        body = self._read_body()
        if "upgrade" in self.headers.get("Connection", "").lower():
            try:
                code, answer_headers, answer = self._tunnel(body)
            except OSError as exc:
                code, answer_headers, answer = 502, [], str(exc).encode()
            self._record(seq, started, clock, body, code, answer_headers, answer, streamed=False, upgraded=True)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            reply = self._send_upstream(body, headers)
        except OSError as exc:
            self.send_error(502, f"recording proxy: kube-apiserver: {exc}")
            self._record(seq, started, clock, body, 502, [], b"", streamed=False)
            return
        self._answer(seq, started, clock, body, reply)

    def _send_upstream(self, body: bytes, headers: dict[str, str]) -> http.client.HTTPResponse:
        """Send on the kept connection; once more on a fresh one if kube-apiserver had closed it meanwhile."""
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(self.command, self.path, body=body or None, headers=headers)
                return conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                self._upstream = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _answer(self, seq: int, started: str, clock: float, body: bytes, reply: http.client.HTTPResponse) -> None:
        response_headers = reply.getheaders()
        length = reply.getheader("Content-Length")
        streamed = length is None and self.command != "HEAD" and reply.status not in (204, 304)
        self.send_response_only(reply.status, reply.reason)
        for name, value in response_headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        if streamed:
            self.send_header("Transfer-Encoding", "chunked")
        elif length is not None:
            self.send_header("Content-Length", length)
        self.end_headers()
        kept = bytearray()
        truncated = False
        try:
            while True:
                chunk = reply.read1(65536) if streamed else reply.read()
                if not chunk:
                    break
                if len(kept) + len(chunk) <= MAX_BODY:
                    kept += chunk
                else:
                    truncated = True
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if streamed else chunk)
                if streamed:
                    self.wfile.flush()
                if not streamed:
                    break
            if streamed:
                self.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            # the client went away (a watch it stopped reading), or kube-apiserver ended a stream without its last
            # chunk (it stopped): the stream is dropped on both sides, and recorded as far as it went
            self.close_connection = True
            if self._upstream is not None:
                self._upstream.close()
                self._upstream = None
        finally:
            reply.close()
        if reply.will_close and self._upstream is not None:
            self._upstream.close()
            self._upstream = None
        self._record(seq, started, clock, body, reply.status, response_headers, bytes(kept), streamed=streamed,
                     truncated=truncated)

    def _tunnel(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        """An upgrade (exec, attach, port-forward): the request as received, then, once kube-apiserver answered
        101, both streams byte for byte until either side closes; any other answer is passed on and the
        connection closed. Returns the answer's code, headers and (not 101) body."""
        self.close_connection = True
        host, port = self.server.upstream
        raw = socket.create_connection((host, port), timeout=UPSTREAM_TIMEOUT)
        upstream = self.server.upstream_context.wrap_socket(raw, server_hostname=host)
        try:
            head = [f"{self.command} {self.path} HTTP/1.1", f"Host: {host}:{port}"]
            head += [f"{k}: {v}" for k, v in self.headers.items() if k.lower() != "host"]
            upstream.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            received = b""
            while b"\r\n\r\n" not in received:
                data = upstream.recv(65536)
                if not data:
                    break
                received += data
            status, _, rest = received.partition(b"\r\n\r\n")
            lines = status.decode(errors="replace").split("\r\n")
            try:
                code = int(lines[0].split(" ", 2)[1])
            except (IndexError, ValueError):
                code = 0
            headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
            self.wfile.write(received)
            if code != 101:
                length = int(dict((k.lower(), v) for k, v in headers).get("content-length") or 0)
                while len(rest) < length and (data := upstream.recv(65536)):
                    rest += data
                    self.wfile.write(data)
                return code, headers, rest
            self._pump(upstream)
            return code, headers, b""
        finally:
            upstream.close()

    def _pump(self, upstream: ssl.SSLSocket) -> None:
        def up() -> None:
            try:
                while data := self.rfile.read1(65536):
                    upstream.sendall(data)
            except OSError:
                pass
            finally:
                with contextlib.suppress(OSError):
                    upstream.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=up, daemon=True, name="recorder-tunnel")
        sender.start()
        try:
            while data := upstream.recv(65536):
                self.wfile.write(data)
        except OSError:
            pass

    def _record(self, seq: int, started: str, clock: float, body: bytes, code: int,
                response_headers: list[tuple[str, str]], response: bytes, *, streamed: bool,
                upgraded: bool = False, truncated: bool = False) -> None:
        self.server.recording.write(interaction(
            seq=seq, started=started, seconds=time.monotonic() - clock, method=self.command, target=self.path,
            request_headers=list(self.headers.items()), request_body=body, code=code,
            response_headers=response_headers, response_body=response, streamed=streamed, upgraded=upgraded,
            truncated=truncated or len(body) > MAX_BODY))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _relay


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a burst of new connections (a test's clients, the reconciler's informers)

    def __init__(self, recording: Recording, upstream: tuple[str, int], upstream_context: ssl.SSLContext,
                 serving_context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.recording, self.upstream, self.upstream_context = recording, upstream, upstream_context
        self.serving_context = serving_context

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        return self.serving_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:  # the handshake in the request's own thread: a slow or failing client never blocks accept()
            request.do_handshake()
        except (OSError, ssl.SSLError):
            return
        super().finish_request(request, client_address)


class RecordingProxy:
    """The recording proxy in front of one kube-apiserver.

    Args:
        upstream: kube-apiserver's URL (https://127.x.x.x:port; nothing else is accepted).
        ca_pem: the cluster CA: kube-apiserver's certificate is checked against it, and so are clients'.
        client_cert: the (cert, key) files the proxy presents to kube-apiserver (the admin's).
        serving_cert: the (cert, key) files it presents to clients (issued by the cluster CA for 127.0.0.1).
        out: the recording (JSON lines, appended).
    """

    def __init__(self, *, upstream: str, ca_pem: bytes, client_cert: tuple[Path, Path],
                 serving_cert: tuple[Path, Path], out: Path) -> None:
        url = urllib.parse.urlsplit(upstream)
        if url.scheme != "https" or not (url.hostname or "").startswith("127.") or url.port is None:
            raise ValueError(f"recording proxy: {upstream} is not an https loopback address")
        self.upstream = (url.hostname or "", url.port)
        self.recording = Recording(out)
        upstream_context = ssl.create_default_context(cadata=ca_pem.decode())
        upstream_context.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
        serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        serving.load_cert_chain(str(serving_cert[0]), str(serving_cert[1]))
        serving.load_verify_locations(cadata=ca_pem.decode())
        serving.verify_mode = ssl.CERT_REQUIRED
        serving.set_alpn_protocols(["http/1.1"])
        self._server = _Server(self.recording, self.upstream, upstream_context, serving)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> RecordingProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        daemon=True, name="lwsconf-recorder")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting; connections still open (a watch) end with the process or their own timeout."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def kubeconfig_through(kubeconfig: Path, proxy_url: str, out: Path) -> Path:
    """A copy of `kubeconfig` whose clusters' server is the proxy (credentials and CA unchanged)."""
    config = yaml.safe_load(kubeconfig.read_text())
    for cluster in config.get("clusters") or []:
        cluster["cluster"]["server"] = proxy_url
    out.touch(mode=0o600)
    out.write_text(yaml.safe_dump(config))
    return out


def start_for(controlplane: LocalControlPlane, out: Path) -> tuple[RecordingProxy, Path]:
    """A recording proxy in front of a started local control plane, and the admin kubeconfig through it (in the
    control plane's private folder, so it goes when the control plane does). Its serving certificate comes from
    the cluster CA, so the kubeconfig differs from the control plane's only in its server URL."""
    ca, admin = controlplane.ca, controlplane.admin
    if ca is None or admin is None:
        raise ValueError("recording proxy: start the control plane first")
    serving = ca.issue("recorder", "lwsconf-recorder", server_ips=("127.0.0.1",))
    proxy = RecordingProxy(upstream=controlplane.url, ca_pem=controlplane.ca_pem, client_cert=(admin.cert, admin.key),
                           serving_cert=(serving.cert, serving.key), out=out).start()
    try:
        config = kubeconfig_through(controlplane.kubeconfig, proxy.url, controlplane.folder / "recorder.kubeconfig")
    except BaseException:
        proxy.stop()
        raise
    return proxy, config
