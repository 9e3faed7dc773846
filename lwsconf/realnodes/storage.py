"""The cluster's default StorageClass and its volume provisioner, beside real nodes.

Why: kube-scheduler does not place a pod whose PersistentVolumeClaim is unbound, and nothing binds a claim without a
provisioner (a kind cluster ships local-path-provisioner for this). Real nodes use the same provisioner as the
local cluster's simulated nodes (`lwsconf.localcluster.provisioner`: class `standard`, a pre-bound `hostPath` volume
per claim), with its volumes in a folder of the run's: the real kubelet creates each volume's folder there, and it
goes with the run. It runs on an event loop of its own, as the API server's client with the admin certificate.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lwsconf import _loopthread, kubeclient
from lwsconf.controlplane import local
from lwsconf.localcluster import provisioner

log = logging.getLogger(__name__)

STOP_GRACE = 10.0
"""Seconds the provisioner has to stop its informers when the cluster stops."""


class VolumeProvisioner:
    """`start()` runs the provisioner against `controlplane` with volumes under `root`; `stop()` ends it."""

    def __init__(self, controlplane: local.LocalControlPlane, root: Path) -> None:
        self._controlplane, self.root = controlplane, root
        self._loop = _loopthread.LoopThread("lwsconf-realnodes-storage")
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: kubeclient.Client | None = None
        self.error = ""
        """Why the provisioner ended before stop() (empty while it runs or after a clean stop)."""

    def start(self) -> VolumeProvisioner:
        cp, admin = self._controlplane, self._controlplane.admin
        assert admin is not None, "the control plane must be started first"
        self.root.mkdir(parents=True, exist_ok=True)
        self._loop.start()

        async def begin() -> None:
            self._client = kubeclient.Client(cp.url, None, ca_pem=cp.ca_pem, user_agent="lwsconf-local-path",
                                             client_cert=(admin.cert.read_bytes(), admin.key.read_bytes()))
            self._stop = asyncio.Event()
            self._task = asyncio.create_task(provisioner.Provisioner(self._client, str(self.root)).run(self._stop),
                                             name="local-path-provisioner")
            self._task.add_done_callback(self._ended)

        self._loop.run(begin())
        return self

    def _ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None and (self._stop is None or not self._stop.is_set()):
            self.error = f"the volume provisioner stopped: {task.exception()!r}"
            log.error("%s", self.error)

    def stop(self) -> None:
        async def end() -> None:
            assert self._stop is not None and self._task is not None
            self._stop.set()
            try:
                await asyncio.wait_for(asyncio.shield(self._task), STOP_GRACE)
            except TimeoutError:
                log.warning("the volume provisioner did not stop within %gs; cancelled with its loop", STOP_GRACE)
            except Exception as exc:  # noqa: BLE001  # it failed: say so, and stop the rest all the same
                log.warning("the volume provisioner ended with %r", exc)
            if self._client is not None:
                await self._client.close()

        try:
            if self._task is not None:
                self._loop.run(end(), timeout=STOP_GRACE + 10)
        finally:
            self._task = None
            self._loop.stop()
