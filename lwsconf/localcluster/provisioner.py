"""A default StorageClass and its provisioner, as kind ships one (local-path-provisioner, class `standard`).

Why: on a real control plane a pod whose PersistentVolumeClaim is unbound is not scheduled
(kube-scheduler's VolumeBinding plugin), and nothing binds a claim without a provisioner; the sim's
scheduler ignores claims. A kind cluster has a default StorageClass whose provisioner makes a volume
on the node for each claim; this is ours for `local`. The class `standard` is the default one (the
DefaultStorageClass admission plugin gives it to claims without a class, such as a StatefulSet's
volumeClaimTemplates), binds `Immediate`, and every Pending claim of it gets a PersistentVolume made
for it, pre-bound through `claimRef`; kube-controller-manager's PV controller then binds both. The
volume is a `hostPath` under the node agents' own folders in name only: our agents give every claim
volume a folder of the pod's (`sim.nodes.kubelet.volumes`), as they always did. Beside real nodes
(`lwsconf.realnodes`) the real kubelet makes the `hostPath` folder, so there `volume_root` is a folder of the run's,
which goes with it. Reclaim policy Delete: when the
claim goes, the PV controller marks a provisioned volume Released and leaves its deletion to the
provisioner, so this one deletes the Released volumes it made.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors

log = logging.getLogger(__name__)

CLASS = "standard"
PROVISIONER = "lwsconf.dev/local-path"
STORAGE_CLASSES = kc.GVR("storage.k8s.io", "v1", "storageclasses", namespaced=False)
PVCS = kc.GVR("", "v1", "persistentvolumeclaims")
PVS = kc.GVR("", "v1", "persistentvolumes", namespaced=False)
VOLUME_ROOT = "/var/lib/lwsconf/local-path"
"""Where volumes live by default: a name only for simulated nodes, whose agents never read it."""
Obj = dict[str, Any]
Key = tuple[str, str]


def storage_class() -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": CLASS, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}


def volume_for(claim: Obj, volume_root: str = VOLUME_ROOT) -> Obj | None:
    """The PersistentVolume for a Pending claim of our class (a folder under `volume_root`), or None when it needs
    none."""
    meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    if spec.get("storageClassName") != CLASS or spec.get("volumeName") or \
            (claim.get("status") or {}).get("phase", "Pending") != "Pending":
        return None
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage") or "1Gi"
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"pvc-{meta.get('uid')}",
                         "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
            "spec": {"capacity": {"storage": size}, "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": CLASS,
                     "volumeMode": spec.get("volumeMode") or "Filesystem",
                     "hostPath": {"path": f"{volume_root}/pvc-{meta.get('uid')}",
                                  "type": "DirectoryOrCreate"},
                     "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                  "namespace": meta.get("namespace"), "name": meta.get("name"),
                                  "uid": meta.get("uid")}}}


class Provisioner:
    """Creates the StorageClass, then a volume per Pending claim of it and deletes Released ones it made."""

    def __init__(self, client: kc.Client, volume_root: str = VOLUME_ROOT) -> None:
        self.client, self.volume_root = client, volume_root
        self.claims = kubeclient.Informer(client, PVCS)
        self.volumes = kubeclient.Informer(client, PVS)
        self.claims.add_handler(lambda _t, obj, _old: self._enqueue("claim", obj))
        self.volumes.add_handler(lambda _t, obj, _old: self._enqueue("volume", obj))
        self.queue: kubeclient.WorkQueue[tuple[str, str, str]] = kubeclient.WorkQueue(name="local-path")

    def _enqueue(self, kind: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        self.queue.add((kind, str(meta.get("namespace") or ""), str(meta.get("name"))))

    async def run(self, stop: asyncio.Event) -> None:
        if self.queue.shutting_down:
            self.queue = kubeclient.WorkQueue(name=self.queue.name)
        try:
            await self.client.create(STORAGE_CLASSES, storage_class())
        except errors.ApiError as exc:
            if exc.status != 409:
                raise
        for informer in (self.claims, self.volumes):
            informer.start()
        try:
            await kubeclient.run_workers(self.queue, self.sync, stop, workers=1)
        finally:
            for informer in (self.claims, self.volumes):
                informer.stop()
            for informer in (self.claims, self.volumes):
                await informer.join()

    async def sync(self, key: tuple[str, str, str]) -> float | None:
        kind, namespace, name = key
        if kind == "claim":
            claim = self.claims.get(name, namespace)
            volume = volume_for(claim, self.volume_root) if claim is not None else None
            if volume is not None:
                try:
                    await self.client.create(PVS, volume)
                except errors.ApiError as exc:
                    if exc.status != 409:
                        raise
            return None
        volume = self.volumes.get(name)
        meta = (volume or {}).get("metadata") or {}
        if volume is not None and (meta.get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") == \
                PROVISIONER and (volume.get("status") or {}).get("phase") == "Released":
            try:
                await self.client.delete(PVS, name)
            except errors.ApiError as exc:
                if exc.status != 404:
                    raise
        return None
