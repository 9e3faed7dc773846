"""A client that keeps sending completions through a Service while a test changes the LWS behind it.

Why: a serving guarantee ("no request fails during the rollout", "serving resumes after a member
failure") is about the requests users send while the change happens, not about the end state. The
`Traffic` client sends completions through the API server's `services/<svc>:<port>/proxy` (the only
path that works on every backend, and the one tests already use) from `workers` threads, one request
after another each, `interval` seconds apart, until stopped; each answer becomes a
`lwsconf.timeline.model.Request` on the clock the caller gives (the timeline recorder's, so requests
are drawn on the test's timeline). Pacing is a rate, not a wait for a condition.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kubernetes import client

from lwsconf.serving import servers
from lwsconf.timeline.model import Request
from lwsconf.waits import proxy

COMPLETIONS = "/v1/completions"


class Traffic:
    """Completions through Service `service` of `namespace`, until `stop()`; `requests` is what was seen."""

    def __init__(self, api: client.ApiClient, namespace: str, service: str, server: servers.ServingServer, *,
                 request_timeout: float, interval: float = 0.1, workers: int = 2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api, self.namespace, self.service, self.server = api, namespace, service, server
        self.request_timeout, self.interval, self.workers, self.clock = request_timeout, interval, workers, clock
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._counter = itertools.count()

    def start(self) -> Traffic:
        self._threads = [threading.Thread(target=self._loop, name=f"traffic-{n}", daemon=True)
                         for n in range(self.workers)]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> list[Request]:
        """Stop sending; in-flight requests finish (each is bounded by the request timeout)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.request_timeout + 5)
        return self.snapshot()

    def snapshot(self) -> list[Request]:
        with self._lock:
            return sorted(self.requests, key=lambda r: r.t)

    def since(self, t: float) -> list[Request]:
        """Requests sent at or after `t` (the caller's clock)."""
        return [r for r in self.snapshot() if r.t >= t]

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._record(self.send_one())
            self._stop.wait(self.interval)

    def send_one(self) -> Request:
        n = next(self._counter)
        body = servers.completion_request(self.server.model, f"request {n}: what does a leader do?")
        started = self.clock()
        reply = proxy.service_post(self.api, self.namespace, self.service, self.server.port, COMPLETIONS, body,
                                   timeout=self.request_timeout)
        seconds = self.clock() - started
        answer = self.server.answer(reply.body) if reply.ok else None
        error = None
        if not reply.ok:
            error = _why(reply)
        elif answer is None:
            error = f"HTTP {reply.status} but not a completion: {str(reply.body)[:200]}"
        return Request(started, seconds, reply.status, answer.pod if answer else None,
                       answer.revision if answer else None, error)

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)


def _why(reply: proxy.Reply) -> str:
    """A failed answer in one line: the OpenAI error's message, a Status's message, else the body."""
    body, message = reply.body, None
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else body.get("message")
    return f"HTTP {reply.status}: {message or str(body)[:200]}"


@contextmanager
def running(traffic: Traffic) -> Iterator[Traffic]:
    """`traffic` sends while the block runs, and is stopped however the block ends."""
    traffic.start()
    try:
        yield traffic
    finally:
        traffic.stop()
