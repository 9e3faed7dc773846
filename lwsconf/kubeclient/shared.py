"""Shared informers: one LIST+WATCH per resource for all the controllers of one component.

kube-controller-manager builds one `SharedInformerFactory` and hands it to every controller it starts, so its
StatefulSet, ReplicaSet, Job, DaemonSet, disruption and node-lifecycle controllers share one watch of pods
(client-go's `informers.NewSharedInformerFactory`, used from cmd/kube-controller-manager's ControllerContext).
The sim's controllers did not: each opened its own, so every pod change was encoded, sent over TLS and decoded
seven times in the sim's one process, which runs on the same few cores as the suite (py-spy: informers and
watch serving were about a fifth of that process's CPU). `SharedInformers` restores the real shape.

A controller gets a `SharedInformer` handle with the `Informer` surface it already used. What sharing changes:

* a handler added after the shared informer synced first gets ADDED for every cached object, as client-go's
  `AddEventHandler` does, so a controller restarted by the supervisor sees the world as a new one would;
* `stop()` on a handle removes that handle's handlers; the watch stops when the last handle stops;
* cached objects are shared: no controller may change one (the `Informer.get` rule, now for real).

Informers are keyed by resource, namespace, label selector and transform; the first caller's watch timeout
is used for all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from lwsconf.kubeclient import client as client_mod
from lwsconf.kubeclient import informer as informer_mod

Key = tuple[client_mod.GVR, str | None, str | None, Callable[..., Any] | None]


@dataclasses.dataclass
class _Entry:
    informer: informer_mod.Informer
    owner: SharedInformers
    users: int = 0


class SharedInformers:
    """The informers of one component. `informer()` must be called inside the event loop that runs them.

    Args:
        user_agent: what the shared LIST and WATCH requests are sent as (kube-controller-manager sends them
            as "kube-controller-manager/... shared-informers"); the client is a copy of the first caller's.
    """

    def __init__(self, user_agent: str) -> None:
        self.user_agent = user_agent
        self._client: client_mod.Client | None = None
        self._entries: dict[Key, _Entry] = {}

    def informer(self, client: client_mod.Client, gvr: client_mod.GVR, *, namespace: str | None = None,
                 label_selector: str | None = None, transform: informer_mod.Transform | None = None,
                 watch_timeout: float = 300.0) -> SharedInformer:
        """A handle on the shared informer for these arguments (created on first use)."""
        if self._client is None:
            self._client = client.with_user_agent(self.user_agent)
        key: Key = (gvr, namespace, label_selector, transform)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(informer_mod.Informer(
                self._client, gvr, namespace=namespace, label_selector=label_selector, transform=transform,
                watch_timeout=watch_timeout), self)
        return SharedInformer(entry)

    @property
    def running(self) -> int:
        """How many handles have started and not stopped, over all informers."""
        return sum(entry.users for entry in self._entries.values())

    async def close(self) -> None:
        """Close the shared client (its informers are stopped by their last handle); a later informer reopens it."""
        if self._client is not None:
            await self._client.close()


class SharedInformer:
    """One controller's view of a shared informer: the `Informer` surface, with its own handlers."""

    def __init__(self, entry: _Entry) -> None:
        self._entry = entry
        self._handlers: list[informer_mod.Handler] = []
        self._started = False

    @property
    def shared(self) -> informer_mod.Informer:
        return self._entry.informer

    def __repr__(self) -> str:
        return f"Shared{self.shared!r}"

    def add_handler(self, handler: informer_mod.Handler) -> None:
        """Register a callback; if the informer synced already, it first gets ADDED for each cached object."""
        self._handlers.append(handler)
        self.shared.add_handler(handler)
        if self.shared.has_synced:
            for obj in self.shared.list():
                handler(informer_mod.ADDED, obj, None)

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._entry.users += 1
        self.shared.start()

    def stop(self) -> None:
        for handler in self._handlers:
            self.shared.remove_handler(handler)
        self._handlers.clear()
        if self._started:
            self._started = False
            self._entry.users -= 1
            if self._entry.users == 0:
                self.shared.stop()

    async def join(self) -> None:
        """Wait for the shared informer to end if this was its last user; the last user of all closes the client."""
        if self._entry.users == 0:
            await self.shared.join()
            if self._entry.owner.running == 0:
                await self._entry.owner.close()

    @property
    def has_synced(self) -> bool:
        return self.shared.has_synced

    async def wait_synced(self, timeout: float | None = None) -> None:
        await self.shared.wait_synced(timeout)

    def get(self, name: str, namespace: str | None = None) -> informer_mod.Obj | None:
        return self.shared.get(name, namespace)

    def list(self, namespace: str | None = None) -> list[informer_mod.Obj]:
        return self.shared.list(namespace)

    def keys(self) -> informer_mod.ObjKeys:
        return self.shared.keys()


def informer(shared: SharedInformers | None, client: client_mod.Client, gvr: client_mod.GVR, *,
             namespace: str | None = None, label_selector: str | None = None,
             transform: informer_mod.Transform | None = None,
             watch_timeout: float = 300.0) -> informer_mod.Cache:
    """The shared informer when the controller runs in a component with `shared` informers, else its own."""
    if shared is None:
        return informer_mod.Informer(client, gvr, namespace=namespace, label_selector=label_selector,
                                     transform=transform, watch_timeout=watch_timeout)
    return shared.informer(client, gvr, namespace=namespace, label_selector=label_selector, transform=transform,
                           watch_timeout=watch_timeout)
