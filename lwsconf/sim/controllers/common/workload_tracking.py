"""What a workload controller tells the world it did, and what it is still waiting to see.

* `EventRecorder`: core/v1 Events written the way client-go's legacy recorder writes them
  (`<object>.<hex nanoseconds>`, `source.component`, `reportingComponent`, count 1), in the
  background so that a slow or failed event never holds up a reconcile;
* `Expectations`: the creations/deletions a controller has asked for and not yet seen in its cache
  (`ControllerExpectations`), so that a reconcile running on a stale cache does not create the same
  pods twice. Controllers that name pods with `generateName` need it; the StatefulSet controller,
  whose pod names are fixed, does not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.kubeclient import informer as informer_mod

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]
EVENTS = kc.GVR("", "v1", "events")


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- events ----------------------------------------------------------------------------------------

class EventRecorder:
    """Writes core/v1 Events about objects, as client-go's `record` package does, without blocking.

    Args:
        client: the controller's client.
        component: `source.component` and `reportingComponent` (e.g. "statefulset-controller").
        kind, api_version: the involved object's kind and apiVersion when the object lacks them.
    """

    def __init__(self, client: kc.Client, component: str, *, kind: str = "", api_version: str = "apps/v1") -> None:
        self.client = client
        self.component = component
        self.kind = kind
        self.api_version = api_version
        self._pending: set[asyncio.Task[None]] = set()

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        """Record an event about `obj` (Normal or Warning) in the background."""
        task = asyncio.get_running_loop().create_task(self._write(self.make(obj, event_type, reason, message)))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def make(self, obj: Obj, event_type: str, reason: str, message: str) -> Obj:
        m = _meta(obj)
        stamp = _stamp()
        namespace = m.get("namespace") or "default"
        involved = {"kind": obj.get("kind") or self.kind, "namespace": m.get("namespace"), "name": m.get("name"),
                    "uid": m.get("uid"), "apiVersion": obj.get("apiVersion") or self.api_version,
                    "resourceVersion": m.get("resourceVersion")}
        return {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{m.get('name')}.{time.time_ns():x}", "namespace": namespace},
                "involvedObject": {k: v for k, v in involved.items() if v},
                "reason": reason, "message": message, "type": event_type, "count": 1,
                "firstTimestamp": stamp, "lastTimestamp": stamp,
                "source": {"component": self.component}, "reportingComponent": self.component,
                "reportingInstance": ""}

    async def _write(self, event: Obj) -> None:
        try:
            await self.client.create(EVENTS, event)
        except errors.KubeClientError as exc:  # events are best effort, as upstream's are
            log.info("%s: could not record event %s: %s", self.component, event["reason"], exc)

    async def close(self) -> None:
        """Wait for the events still being written."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


# --- expectations ----------------------------------------------------------------------------------

class Expectations:
    """Creations and deletions asked for but not yet observed, per controller key (`ControllerExpectations`).

    A reconcile skips pod-count decisions while its key has outstanding expectations; they are
    lowered by informer events and expire after `ttl` seconds in case an event was missed.
    """

    def __init__(self, ttl: float = 60.0) -> None:
        self.ttl = ttl
        self._adds: dict[Key, int] = {}
        self._deletes: dict[Key, set[str]] = {}
        self._since: dict[Key, float] = {}

    def expect(self, key: Key, *, adds: int = 0, delete_uids: Iterable[str] = ()) -> None:
        self._adds[key] = self._adds.get(key, 0) + adds
        self._deletes.setdefault(key, set()).update(delete_uids)
        self._since[key] = time.monotonic()

    def creation_observed(self, key: Key) -> None:
        if self._adds.get(key, 0) > 0:
            self._adds[key] -= 1

    def deletion_observed(self, key: Key, uid: str) -> None:
        self._deletes.get(key, set()).discard(uid)

    def satisfied(self, key: Key) -> bool:
        if self._adds.get(key, 0) <= 0 and not self._deletes.get(key):
            return True
        return time.monotonic() - self._since.get(key, 0.0) > self.ttl

    def forget(self, key: Key) -> None:
        self._adds.pop(key, None)
        self._deletes.pop(key, None)
        self._since.pop(key, None)

    def observe(self, key: Key, event_type: str, pod: Obj, old: Obj | None) -> None:
        """Lower expectations from one pod event (an `OwnerIndex` callback)."""
        if event_type == informer_mod.ADDED and not bool(_meta(pod).get("deletionTimestamp")):
            self.creation_observed(key)
        elif event_type == informer_mod.DELETED or bool(_meta(pod).get("deletionTimestamp")):
            self.deletion_observed(key, str(_meta(pod).get("uid")))
