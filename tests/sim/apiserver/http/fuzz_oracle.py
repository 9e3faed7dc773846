"""Send a `FuzzRequest` to a live sim API server over TLS and judge the answer (test_fuzz and the bench).

`FuzzServer` starts a bare `APIServer` in process, installs the LeaderWorkerSet CRD (so LWS requests go
through its structural schema and CEL rules), creates the `fuzz` namespace with the two targets and the
sentinel namespace with its objects, and remembers every one of them byte for byte.

`send` speaks raw HTTP/1.1 through `http.client`, so the path reaches the server exactly as drawn (no
client-side dot-segment removal or re-encoding), with a per-request timeout: no answer in time is a hang.
`judge` lists what is wrong with an answer: a 5xx, a refusal that is not a Kubernetes `Status` (kind
Status, apiVersion v1, status Failure, code equal to the HTTP status, a message naming the problem), a
bad input accepted, a missing Warning. `lost_writes` compares the targets and sentinels with the copies
taken at the start; `alive` asks /readyz.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import SimAPI, start_sim_api
from tests.sim.apiserver.http import fuzz_requests as fr

REQUEST_TIMEOUT_S = 10.0
"""An answer slower than this is a hang (the slowest legitimate answer, a refused 8 MiB body, takes < 1 s)."""
MAX_REQUEST_LINE = 8190
"""aiohttp's request-line limit: longer lines are refused by the HTTP parser with a plain-text 400 before
any handler runs (kube-apiserver's Go HTTP server likewise answers over-long headers with a bare 431)."""


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


class Hang(Exception):
    """The server did not answer within the timeout."""


@dataclass
class Tally:
    """What a fuzz run saw: requests sent, answers per status code and family, and every problem."""

    requests: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    by_family: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    server_errors: int = 0
    hangs: int = 0
    lost_writes: int = 0
    dead: int = 0

    def record(self, req: fr.FuzzRequest, reply: Reply | None, problems: list[str]) -> None:
        self.requests += 1
        self.by_family[req.family.split("/")[0]] += 1
        if reply is None:
            self.hangs += 1
        else:
            self.by_status[reply.status] += 1
            self.server_errors += reply.status >= 500
        self.problems += [f"{req.describe()}: {p}" for p in problems]


class FuzzServer:
    """A sim API server prepared for fuzzing, and raw HTTPS access to it."""

    def __init__(self, sim: SimAPI) -> None:
        self.sim = sim
        self.port = sim.server.ctx.port
        self.tls = ssl.create_default_context(cafile=str(sim.ca_file))
        self.auth = f"Bearer {sim.server.token}"
        self.target_rv: dict[str, str] = {}
        self.baseline: dict[str, bytes] = {}
        self._check_conn: http.client.HTTPSConnection | None = None

    @classmethod
    def start(cls, tmp: Path) -> FuzzServer:
        sim, _ = start_sim_api(tmp)
        server = cls(sim)
        server.populate()
        return server

    def stop(self) -> None:
        if self._check_conn is not None:
            self._check_conn.close()
        self.sim.api.close()  # type: ignore[no-untyped-call]
        self.sim.loop.run(self.sim.server.stop())
        self.sim.loop.stop()

    # --- setup ---------------------------------------------------------------------------------------

    def _must(self, method: str, path: str, obj: Any) -> dict[str, Any]:
        reply = self.request(method, path, json.dumps(obj).encode())
        if reply.status >= 300:
            raise RuntimeError(f"fuzz setup: {method} {path} answered {reply.status}: {reply.body[:500]!r}")
        out: dict[str, Any] = json.loads(reply.body)
        return out

    def populate(self) -> None:
        self._must("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", fr.CRD)
        for ns in (fr.NS, fr.SENTINEL_NS):
            self._must("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        for ns, name in ((fr.NS, fr.TARGET), (fr.SENTINEL_NS, "keep")):
            cm = fr.configmap(name, labels={"role": name})
            self._must("POST", f"/api/v1/namespaces/{ns}/configmaps", cm)
            lws = self._must("POST", f"/apis/{fr.GROUP_VERSION}/namespaces/{ns}/leaderworkersets",
                             fr.lws(name, labels={"role": name}))
            self._must("PUT", f"/apis/{fr.GROUP_VERSION}/namespaces/{ns}/leaderworkersets/{name}/status",
                       {**lws, "status": {"replicas": 1, "readyReplicas": 0, "hpaPodSelector": "a=b"}})
        self._must("POST", fr.PODS, {"metadata": {"name": fr.TARGET, "labels": {"role": fr.TARGET}},
                                     "spec": {"containers": [{"name": "main", "image": "registry.example/worker:1"}]}})
        self.target_rv = {path: json.loads(self.request("GET", path).body)["metadata"]["resourceVersion"]
                          for path in fr.TARGETS}
        self.baseline = self.snapshot()

    def watched_paths(self) -> list[str]:
        """The objects no fuzz request may change: targets, sentinels, their namespaces and the CRD."""
        return [*fr.TARGETS, fr.POD_TARGET, f"/api/v1/namespaces/{fr.SENTINEL_NS}/configmaps/keep",
                f"/apis/{fr.GROUP_VERSION}/namespaces/{fr.SENTINEL_NS}/leaderworkersets/keep",
                f"/api/v1/namespaces/{fr.SENTINEL_NS}", f"/api/v1/namespaces/{fr.NS}",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/leaderworkersets.leaderworkerset.x-k8s.io"]

    # --- HTTP ----------------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: bytes = b"", content_type: str | None = "application/json",
                extra: tuple[tuple[str, str], ...] = (), timeout: float = REQUEST_TIMEOUT_S,
                read_stream: bool = True) -> Reply:
        """One request on a fresh connection; `Hang` when no full answer arrives within `timeout`."""
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls, timeout=timeout)
        headers = {"Authorization": self.auth, "Content-Length": str(len(body))}
        if content_type is not None:
            headers["Content-Type"] = content_type
        headers.update(extra)
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            conn.endheaders()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                conn.send(body)  # the server may refuse (413) and close before reading the whole body
            response = conn.getresponse()
            data = response.read() if read_stream or response.status != 200 else b""
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        except TimeoutError as exc:
            raise Hang(f"no answer within {timeout:g}s") from exc
        finally:
            conn.close()

    def send(self, req: fr.FuzzRequest) -> Reply:
        body = req.body
        if fr.TARGET_RV.encode() in body:
            rv = self.target_rv[fr.TARGETS[0] if req.path.startswith(fr.LWS) else fr.TARGETS[1]]
            body = body.replace(fr.TARGET_RV.encode(), rv.encode())
        # An accepted watch streams until its timeoutSeconds; a bad one must be refused before streaming.
        streaming = "watch=true" in req.path and req.expect == fr.REJECT
        return self.request(req.method, req.path, body, req.content_type, req.extra_headers, read_stream=not streaming)

    def _read(self, path: str) -> Reply:
        """A GET on the kept-alive checking connection (reopened once if the server closed it)."""
        for attempt in (1, 2):
            if self._check_conn is None:
                self._check_conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls,
                                                               timeout=REQUEST_TIMEOUT_S)
            try:
                self._check_conn.request("GET", path, headers={"Authorization": self.auth})
                response = self._check_conn.getresponse()
                return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
            except TimeoutError as exc:
                self._check_conn.close()
                self._check_conn = None
                raise Hang(f"GET {path}: no answer within {REQUEST_TIMEOUT_S:g}s") from exc
            except (http.client.HTTPException, OSError):
                self._check_conn.close()
                self._check_conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def alive(self) -> bool:
        try:
            return self._read("/readyz").status == 200
        except (Hang, http.client.HTTPException, OSError):
            return False

    def snapshot(self) -> dict[str, bytes]:
        return {path: self._read(path).body for path in self.watched_paths()}

    def lost_writes(self) -> list[str]:
        """Watched objects whose stored bytes (resourceVersion included) differ from the start."""
        now = self.snapshot()
        return [f"{path} changed:\n  before {self.baseline[path][:400]!r}\n  after  {now[path][:400]!r}"
                for path in self.baseline if now[path] != self.baseline[path]]

    # --- one request, judged -------------------------------------------------------------------------

    def exercise(self, req: fr.FuzzRequest, tally: Tally | None = None, *, check_store: bool = True) -> list[str]:
        """Send `req`, judge the answer, check the server is alive and (optionally) the store intact."""
        try:
            sent = self.send(req)
        except Hang as exc:
            reply: Reply | None = None
            problems = [f"hang: {exc}"]
        else:
            reply, problems = sent, judge(req, sent)
        if not self.alive():
            problems.append("the server stopped answering /readyz after this request")
            if tally is not None:
                tally.dead += 1
        if check_store:
            lost = self.lost_writes()
            problems += [f"lost write: {lost_one}" for lost_one in lost]
            if tally is not None and lost:
                tally.lost_writes += len(lost)
                self.baseline = self.snapshot()  # count each loss once
        if tally is not None:
            tally.record(req, reply, problems)
        return problems


def judge(req: fr.FuzzRequest, reply: Reply) -> list[str]:
    """Everything wrong with `reply` as the answer to `req` (empty: a correct answer)."""
    code = reply.status
    if code >= 500:
        return [f"{code} server error: {reply.body[:500]!r}"]
    ok = {fr.REJECT: 400 <= code < 500, fr.ACCEPT: 200 <= code < 300, fr.WARN: 200 <= code < 300,
          fr.EITHER: 200 <= code < 300 or 400 <= code < 500}[req.expect]
    if not ok:
        return [f"expected {req.expect}, got {code}: {reply.body[:500]!r}"]
    if 400 <= code < 500:
        if len(req.path.encode()) > MAX_REQUEST_LINE and code in (400, 414, 431):
            return []  # refused by the HTTP parser before any handler (see MAX_REQUEST_LINE)
        return status_problems(req, code, reply.body)
    if req.expect == fr.WARN:
        warning = reply.headers.get("warning", "")
        return [f"Warning header {warning!r} does not name {name!r}" for name in req.names if name not in warning]
    return []


def status_problems(req: fr.FuzzRequest, code: int, body: bytes) -> list[str]:
    """A 4xx body must be a Kubernetes Status naming the problem."""
    try:
        status = json.loads(body)
    except ValueError:
        return [f"{code} body is not JSON: {body[:300]!r}"]
    if not isinstance(status, dict):
        return [f"{code} body is not a Status object: {body[:300]!r}"]
    problems = []
    for key, want in (("kind", "Status"), ("apiVersion", "v1"), ("status", "Failure"), ("code", code)):
        if status.get(key) != want:
            problems.append(f"Status.{key} is {status.get(key)!r}, expected {want!r}")
    message = status.get("message")
    if not isinstance(message, str) or not message.strip():
        problems.append(f"Status has no message: {status}")
    elif code not in (404, 405, 409):  # not found / not allowed / conflict messages name the object instead
        problems += [f"Status message {message[:300]!r} does not name {name!r}" for name in req.names
                     if not any(alt.lower() in message.lower() for alt in name.split("|"))]
    return problems
