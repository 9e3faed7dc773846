"""The kubelet's event recorder: core/v1 Events about pods, sent in the background.

Events are advisory (Kubernetes records them best-effort, so no conformance verdict rests on a
kubelet's), so recording one never
blocks or fails a pod's lifecycle: `record` only queues, one task sends in order, and a failed send
is logged and dropped. A repeat of the same (pod, reason, message) within the correlator window
becomes a count bump on the existing Event, as client-go's EventCorrelator does, so a crash loop
does not flood the namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors

log = logging.getLogger(__name__)
EVENTS = kc.GVR("", "v1", "events")
_CORRELATION_WINDOW = 600.0

Obj = dict[str, Any]


@dataclass(frozen=True)
class _Pending:
    pod: Obj
    event_type: str
    reason: str
    message: str
    field_path: str
    at_ns: int = field(default_factory=time.time_ns)
    """When it was recorded (the kubelet names the event after it, `event_name`)."""


class EventRecorder:
    """Queue-backed sender of Events on behalf of one node's kubelet."""

    def __init__(self, client: kc.Client, node_name: str, *, max_queue: int = 1000) -> None:
        self._client = client
        self._node = node_name
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(max_queue)
        self._seen: dict[tuple[str, str, str, str], tuple[str, int, float]] = {}
        self._task: asyncio.Task[None] | None = None
        self.sent = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"events {self._node}")

    async def stop(self) -> None:
        """Send what is queued (briefly), then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), 2.0)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    def record(self, pod: Obj, event_type: str, reason: str, message: str, *, container: str | None = None) -> None:
        """Queue one event about `pod` (a container's events carry its fieldPath)."""
        path = ""
        if container is not None:
            inits = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or []}
            path = f"spec.{'initContainers' if container in inits else 'containers'}{{{container}}}"
        try:
            self._queue.put_nowait(_Pending(pod, event_type, reason, message, path))
        except asyncio.QueueFull:
            log.warning("event queue of node %s is full; dropping %s %s", self._node, reason, message)

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self._send(item)
                self.sent += 1
            except errors.KubeClientError as exc:
                log.info("node %s: could not record event %s: %s", self._node, item.reason, exc)
            finally:
                self._queue.task_done()

    async def _send(self, item: _Pending) -> None:
        meta = item.pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        key = (str(meta.get("uid")), item.reason, item.message, item.field_path)
        now_iso = _now()
        seen = self._seen.get(key)
        if seen is not None and time.monotonic() - seen[2] < _CORRELATION_WINDOW:
            name, count, _ = seen
            try:
                await self._client.patch(EVENTS, name, {"count": count + 1, "lastTimestamp": now_iso},
                                         namespace=namespace)
                self._seen[key] = (name, count + 1, time.monotonic())
                return
            except errors.ApiError as exc:
                if not exc.is_not_found:
                    raise
        name = event_name(str(meta.get("name")), item.at_ns)
        involved: Obj = {"kind": "Pod", "namespace": namespace, "name": meta.get("name"), "uid": meta.get("uid"),
                         "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion")}
        if item.field_path:
            involved["fieldPath"] = item.field_path
        body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
                "involvedObject": involved, "reason": item.reason, "message": item.message,
                "source": {"component": "kubelet", "host": self._node}, "firstTimestamp": now_iso,
                "lastTimestamp": now_iso, "count": 1, "type": item.event_type,
                "reportingComponent": "kubelet", "reportingInstance": self._node}
        await self._client.create(EVENTS, body, namespace=namespace)
        if len(self._seen) > 4096:
            self._seen.clear()
        self._seen[key] = (name, 1, time.monotonic())


def event_name(object_name: str, at_ns: int) -> str:
    """`<object>.<hex nanoseconds>`, as client-go names an event after when it was recorded
    (k8s.io/client-go@v0.37.2 tools/record/event.go:501, tools/record/util/util.go:50-57): a list of one object's
    events, sorted by name, is then in the order they happened."""
    return f"{object_name}.{at_ns:x}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
