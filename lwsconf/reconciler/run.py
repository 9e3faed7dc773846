"""Ways to run the reference reconciler: in-process for fixtures, or as `lwsconf reconciler`.

`serve(client, stop)` runs the Manager, behind Lease-based leader election when asked, so two replicas (a
Deployment with 2 replicas, or a test) can run safely; with `disaggregated`, also the DisaggregatedSet controller
(`lwsconf.reconciler.disaggregated.runtime`, issue 34), which needs its CRDs. `RunningReconciler` runs it on a
background event loop for sync callers:

    with RunningReconciler(kubeconfig_path) as rec:
        ...  # the cluster now has a reconciling LWS controller
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from pathlib import Path
from types import TracebackType

from lwsconf import _loopthread, kubeclient
from lwsconf.reconciler import controller, leaderelection

log = logging.getLogger("lwsconf.reconciler")
LEASE_NAME = "lwsconf-reference-reconciler"
DEFAULT_LEASE_NAMESPACE = "kube-system"


def default_identity() -> str:
    """`<hostname>_<uuid>`: unique per candidate, even for two candidates in one process.

    As kube-controller-manager builds its Lease identity ("add a uniquifier so that two processes on
    the same host don't accidentally both become active"). Host name and pid alone are not enough:
    two `RunningReconciler`s in one process would both hold (and renew) the same Lease.
    """
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def make_elector(client: kubeclient.Client, *, lease_namespace: str = DEFAULT_LEASE_NAMESPACE,
                 identity: str | None = None) -> leaderelection.LeaderElector:
    """The candidate for the reconciler's Lease (`default_identity()` unless one is given)."""
    return leaderelection.LeaderElector(client, namespace=lease_namespace, name=LEASE_NAME,
                                        identity=identity or default_identity())


async def serve(client: kubeclient.Client, stop: asyncio.Event, *, leader_election: bool = False,
                lease_namespace: str = DEFAULT_LEASE_NAMESPACE, identity: str | None = None,
                namespace: str | None = None, elector: leaderelection.LeaderElector | None = None,
                gang_scheduling: str | None = None, disaggregated: bool = False) -> None:
    """Run the reconciler until `stop` is set (only while holding the Lease, with leader election).

    `elector` (implies leader election) lets the caller watch `elector.is_leader`. `gang_scheduling` names the
    gang-scheduling provider (`volcano`; None: off), as upstream's configuration does (`gang`).
    """
    async def lead(stop_leading: asyncio.Event) -> None:
        managers = [controller.Manager(client, namespace=namespace, gang_scheduling=gang_scheduling).run(stop_leading)]
        if disaggregated:
            from lwsconf.reconciler.disaggregated import runtime as disaggregated_runtime

            managers.append(disaggregated_runtime.DisaggregatedManager(client, namespace=namespace).run(stop_leading))
        await asyncio.gather(*managers)

    if not leader_election and elector is None:
        await lead(stop)
        return
    if elector is None:
        elector = make_elector(client, lease_namespace=lease_namespace, identity=identity)

    async def lead_until_stopped(stop_leading: asyncio.Event) -> None:
        both = asyncio.Event()

        async def relay(event: asyncio.Event) -> None:
            await event.wait()
            both.set()

        relays = [asyncio.create_task(relay(stop)), asyncio.create_task(relay(stop_leading))]
        try:
            await lead(both)
        finally:
            for task in relays:
                task.cancel()

    await elector.run(stop, lead_until_stopped)


class RunningReconciler:
    """The reconciler on a background loop, against the cluster of a kubeconfig.

    With `leader_election`, it campaigns for the Lease as `identity` (default: `default_identity()`,
    unique per instance) and reconciles only while `is_leader`.
    """

    def __init__(self, kubeconfig: Path, *, leader_election: bool = False, identity: str | None = None,
                 gang_scheduling: str | None = None, disaggregated: bool = False) -> None:
        self.kubeconfig = kubeconfig
        self.disaggregated = disaggregated
        self.gang_scheduling = gang_scheduling
        self.leader_election = leader_election
        self.identity = identity or default_identity()
        self._elector: leaderelection.LeaderElector | None = None
        self._loop = _loopthread.LoopThread("lwsconf-reconciler")
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: kubeclient.Client | None = None

    def __enter__(self) -> RunningReconciler:
        self._loop.start()

        async def start() -> None:
            self._stop = asyncio.Event()
            self._client = kubeclient.Client.from_kubeconfig(self.kubeconfig, user_agent="lws-reference",
                                                             loopback_only=False)
            if self.leader_election:
                self._elector = make_elector(self._client, identity=self.identity)
            self._task = asyncio.create_task(serve(self._client, self._stop, elector=self._elector,
                                                   gang_scheduling=self.gang_scheduling,
                                                   disaggregated=self.disaggregated))

        self._loop.run(start())
        return self

    @property
    def is_leader(self) -> bool:
        """Whether this instance runs its controllers now (always, without leader election)."""
        if self._elector is not None:
            return self._elector.is_leader
        return self._task is not None and not self._task.done()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        async def stop() -> None:
            if self._stop is not None:
                self._stop.set()
            if self._task is not None:
                try:
                    await asyncio.wait_for(self._task, 15)
                except Exception:  # noqa: BLE001 - shutting down: log, never mask the test's outcome
                    log.exception("reconciler did not stop cleanly")
            if self._client is not None:
                await self._client.close()

        self._loop.run(stop(), timeout=30)
        self._loop.stop()
