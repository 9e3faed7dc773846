"""Every watch event on a namespace's pods matching a label selector, handed in order to a callback.

A strict watch for claims about what happened on the way (a pod as first created, the order of events): it lists
at `start()`, watches from that list's resourceVersion in a background thread, reopening each short watch from
the last version seen, and stops at `stop()`. Unlike `recorder`, which relists after a watch error, a broken
watch here (an ERROR event, 410 included, or any exception) ends the record and `stop()` fails: a missed event
could hide exactly what the test looks for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch

from lwsconf.waits import observe

__all__ = ["PodWatch"]

Obj = dict[str, Any]
WATCH_SECONDS = 1
"""Each watch asks the server to end it after this long (then it is opened again from the last version)."""


class PodWatch:
    """Hands `on_event(type, pod)` every non-ERROR watch event (BOOKMARK included) on the pods `selector` picks
    in `namespace`, from the list `start()` returns to `stop()`."""

    def __init__(self, api: client.ApiClient, namespace: str, selector: str,
                 on_event: Callable[[str, Obj], None], *, name: str = "pod-watch") -> None:
        self.core, self.namespace, self.selector = client.CoreV1Api(api), namespace, selector
        self.on_event = on_event
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._rv = ""

    def start(self) -> list[Obj]:
        """List the pods, start watching from that list's resourceVersion; the listed pods."""
        listed = observe.raw(self.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                           _preload_content=False))
        self._rv = str(listed["metadata"]["resourceVersion"])
        items: list[Obj] = listed["items"]
        self._thread.start()
        return items

    def stop(self, unknown: str) -> None:
        """End the watch; fail, saying `unknown` is unknown, if it broke."""
        self._stop.set()
        self._thread.join(timeout=10)
        assert not self.errors, f"the pod watch broke, so {unknown}: {self.errors}"

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                    self.core.list_namespaced_pod, self.namespace, label_selector=self.selector,
                    resource_version=self._rv, timeout_seconds=WATCH_SECONDS, _request_timeout=10)
                for event in stream:
                    obj = event["raw_object"]
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch error event: {obj}")
                    self._rv = obj["metadata"]["resourceVersion"]
                    self.on_event(event["type"], obj)
        except Exception as exc:  # noqa: BLE001 - reported by stop(): the record is incomplete
            self.errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
