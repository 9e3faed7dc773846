"""Recording Events about LeaderWorkerSets (core/v1 Events, which every cluster lists and `kubectl
describe` shows). Upstream writes events.k8s.io/v1; both APIs serve the same events on a real cluster,
so the observable result is the same. Recording never fails a reconcile: errors are logged.
"""

from __future__ import annotations

import datetime
import logging
import secrets
from typing import Any

from lwsconf import kubeclient
from lwsconf.reconciler import events

log = logging.getLogger("lwsconf.reconciler.events")
EVENTS = kubeclient.GVR("", "v1", "events")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, client: kubeclient.Client, *, component: str) -> None:
        self.client = client
        self.component = component

    async def record(self, regarding: dict[str, Any], event: events.Event) -> None:
        meta = regarding.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        stamp = now()
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta.get('name')}.{secrets.token_hex(8)}", "namespace": ns},
            "involvedObject": {"apiVersion": regarding.get("apiVersion"), "kind": regarding.get("kind"),
                               "name": meta.get("name"), "namespace": ns, "uid": meta.get("uid")},
            "type": event.type, "reason": event.reason, "message": event.note, "action": event.action,
            "source": {"component": self.component}, "reportingComponent": self.component,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }
        try:
            await self.client.create(EVENTS, body, namespace=ns)
        except kubeclient.KubeClientError as exc:
            log.warning("could not record event %s on %s/%s: %s", event.reason, ns, meta.get("name"), exc)
