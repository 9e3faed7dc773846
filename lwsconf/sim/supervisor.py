"""Controllers run as supervised asyncio tasks, each with its own API client.

Shared by `SimCluster` (our API server) and `lwsconf.localcluster.LocalCluster` (a real one): node
agents, device plugins and kube-proxy do not care which API server they talk to, only that each has
its own client and that a crash restarts it after a pause instead of leaving the node dead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from lwsconf import kubeclient

log = logging.getLogger("lwsconf.sim")

RESTART_PAUSE = 1.0
"""Seconds before a crashed controller is started again."""

Runner = Callable[[asyncio.Event], Awaitable[None]]
ControllerFactory = Callable[[kubeclient.Client], Runner]
"""Given a client of the API server (the controller's own), an async `run(stop_event)`."""
ClientFactory = Callable[[str], kubeclient.Client]
"""client_factory(user_agent) -> a new client of the API server."""


class Supervisor:
    """Starts (name, factory) controllers as tasks on the running loop; `stop` ends them all."""

    def __init__(self, client_factory: ClientFactory) -> None:
        self._client_factory = client_factory
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._clients: list[kubeclient.Client] = []

    def start(self, controllers: list[tuple[str, ControllerFactory]]) -> None:
        for name, factory in controllers:
            client = self._client_factory(name)
            self._clients.append(client)
            self._tasks.append(asyncio.create_task(self._supervise(name, factory, client), name=name))

    async def _supervise(self, name: str, factory: ControllerFactory, client: kubeclient.Client) -> None:
        """Keep a controller running: a crash is logged and a fresh instance started after a pause."""
        while not self._stop.is_set():
            try:
                await factory(client)(self._stop)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller %s crashed; restarting in %.0f s", name, RESTART_PAUSE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=RESTART_PAUSE)

    async def stop(self, grace: float) -> None:
        """Cancel every controller, wait up to `grace` seconds, close the clients.

        A controller still stopping after `grace` is logged by name and left to the loop's final
        cancellation, so a stuck one cannot hang the run.
        """
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=grace)
            if pending:
                log.warning("still stopping after %.0f s, left behind: %s", grace,
                            ", ".join(sorted(t.get_name() for t in pending)))
        self._tasks.clear()
        for client in self._clients:
            await client.close()
        self._clients.clear()
