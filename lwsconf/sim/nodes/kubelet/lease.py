"""The node's heartbeat: a coordination.k8s.io Lease in kube-node-lease, renewed on a timer.

As the kubelet's node lease controller does (pkg/kubelet/nodelease, component-helpers
apimachinery/lease): the Lease is named after the node, holderIdentity is the node name,
leaseDurationSeconds 40, and it is owned by the Node so it goes away with it. renewTime is a
MicroTime. A failed renewal is retried with a short back-off; a conflict re-reads the Lease.
While `suspended` (the node is cut off by chaos, see `nodechaos`) nothing is renewed; `wake()`
renews at once (the node is back).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors

log = logging.getLogger(__name__)
LEASES = kc.GVR("coordination.k8s.io", "v1", "leases")
NAMESPACE = "kube-node-lease"


def micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class NodeLease:
    """Keeps `kube-node-lease/<node>` fresh while `run` runs."""

    def __init__(self, client: kc.Client, node_name: str, *, duration_seconds: int = 40,
                 renew_interval: float = 10.0) -> None:
        self.client = client
        self.node_name = node_name
        self.duration_seconds = duration_seconds
        self.renew_interval = renew_interval
        self.node_uid: str | None = None
        self.renewals = 0
        self.suspended = False
        """True: do not renew (the node is cut off from the control plane)."""
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Renew now rather than at the next interval."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        failures = 0
        while not stop.is_set():
            wait = self.renew_interval
            if not self.suspended:
                try:
                    await self.renew()
                    failures = 0
                except errors.KubeClientError as exc:
                    failures += 1
                    wait = min(self.renew_interval, 0.2 * 2 ** failures)
                    log.info("node %s: lease renewal failed (%s); retrying in %.1fs", self.node_name, exc, wait)
            await self._pause(stop, wait)

    async def _pause(self, stop: asyncio.Event, seconds: float) -> None:
        """Until `seconds` passed, `stop` is set or `wake()` is called."""
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
        self._wake.clear()

    async def renew(self) -> dict[str, Any]:
        """Create the Lease or move its renewTime to now; returns the stored Lease."""
        try:
            lease = await self.client.get(LEASES, self.node_name, namespace=NAMESPACE)
        except errors.ApiError as exc:
            if not exc.is_not_found:
                raise
            created = await self.client.create(LEASES, self._new(), namespace=NAMESPACE)
            self.renewals += 1
            return created
        lease.setdefault("spec", {}).update({"holderIdentity": self.node_name,
                                             "leaseDurationSeconds": self.duration_seconds,
                                             "renewTime": micro_now()})
        if self.node_uid and not lease["metadata"].get("ownerReferences"):
            lease["metadata"]["ownerReferences"] = [self._owner()]
        updated = await self.client.replace(LEASES, lease, namespace=NAMESPACE)
        self.renewals += 1
        return updated

    def _new(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.node_name, "namespace": NAMESPACE}
        if self.node_uid:
            meta["ownerReferences"] = [self._owner()]
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": {"holderIdentity": self.node_name, "leaseDurationSeconds": self.duration_seconds,
                         "renewTime": micro_now()}}

    def _owner(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Node", "name": self.node_name, "uid": self.node_uid}
