"""Leader election through a coordination.k8s.io/v1 Lease, so two reconciler replicas can run safely.

The algorithm is client-go's: a candidate takes the Lease when it is free or its holder has not
renewed it within `leaseDurationSeconds`, using the Lease's resourceVersion so that two candidates
cannot both win; the leader renews every `retry_period` and steps down (cancelling its work) if it
cannot renew within `renew_deadline`. Only the leader runs reconcilers.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from lwsconf import kubeclient

log = logging.getLogger("lwsconf.reconciler.leaderelection")

LEASES = kubeclient.GVR("coordination.k8s.io", "v1", "leases")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _micro(ts: datetime.datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(ts: str | None) -> datetime.datetime | None:
    if not ts:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        with contextlib.suppress(ValueError):
            return datetime.datetime.strptime(ts, fmt).replace(tzinfo=datetime.UTC)
    return None


class LeaderElector:
    """Campaigns for one Lease and runs `lead(stop_leading)` while holding it."""

    def __init__(self, client: kubeclient.Client, *, namespace: str, name: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election timings must satisfy retry_period < renew_deadline < lease_duration")
        self.client = client
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.is_leader = False

    def _spec(self, acquired: str | None, transitions: int) -> dict[str, Any]:
        now = _micro(_now())
        return {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                "acquireTime": acquired or now, "renewTime": now, "leaseTransitions": transitions}

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        try:
            lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
        except kubeclient.ApiError as exc:
            if not exc.is_not_found:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": self._spec(None, 0)}
            try:
                await self.client.create(LEASES, body, namespace=self.namespace)
            except kubeclient.ApiError as create_exc:
                if create_exc.is_already_exists:
                    return False
                raise
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        renewed = _parse(spec.get("renewTime"))
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        expired = renewed is None or (_now() - renewed).total_seconds() > duration
        if holder not in (None, "", self.identity) and not expired:
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.identity else 1)
        lease["spec"] = self._spec(spec.get("acquireTime") if holder == self.identity else None, transitions)
        try:
            await self.client.replace(LEASES, lease, namespace=self.namespace)
        except kubeclient.ApiError as exc:
            if exc.is_conflict:
                return False
            raise
        return True

    async def run(self, stop: asyncio.Event, lead: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> None:
        """Campaign until `stop`; while leading, run `lead(stop_leading)` and renew the Lease."""
        while not stop.is_set():
            if await self._attempt():
                await self._lead(stop, lead)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.retry_period)

    async def _attempt(self) -> bool:
        try:
            return await self.try_acquire_or_renew()
        except kubeclient.KubeClientError as exc:
            log.warning("leader election %s/%s: %s", self.namespace, self.name, exc)
            return False

    async def _lead(self, stop: asyncio.Event, lead: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> None:
        self.is_leader = True
        log.info("%s became leader of %s/%s", self.identity, self.namespace, self.name)
        stop_leading = asyncio.Event()
        work: asyncio.Task[None] = asyncio.create_task(lead(stop_leading))
        last_renew = asyncio.get_running_loop().time()
        try:
            while not stop.is_set() and not work.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.retry_period)
                if await self._attempt():
                    last_renew = asyncio.get_running_loop().time()
                elif asyncio.get_running_loop().time() - last_renew > self.renew_deadline:
                    log.warning("%s lost the lease %s/%s", self.identity, self.namespace, self.name)
                    break
        finally:
            self.is_leader = False
            stop_leading.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(work, timeout=self.renew_deadline)
            if not work.done():
                work.cancel()
