"""`ProcessLauncher`: what the kubelet does before a container process starts, for one node.

For a runnable container (`runtime.runnable`) it reads the pod's ConfigMaps, Secrets and Services
from the API, builds the environment (`env.resolve_env`, with the device plugin's envs last), writes
the volumes (`volumes.materialize`), keeps the pod's hosts file current, expands the command
(`env.expand_argv`) and hands a `runtime.ContainerLaunch` to the runtime. A missing ConfigMap/Secret
or a bad volume becomes a `LaunchError` the pod worker reports as the kubelet does (waiting
`CreateContainerConfigError`, retried).

Records and Services come from the cluster's one DNS (`dns.SharedClusterDNS`, which the fleet runs
for all nodes, as a cluster runs one CoreDNS): the launcher registers its own pods' hosts files with
it and reads the Services for service-link env vars from its cache. A launcher given none (a node
agent outside a fleet) runs a DNS of its own on its client, started at the first launch.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.nodes.kubelet import env, nodectx, satoken, termination, volumes
from lwsconf.sim.nodes.network import dns, podnet
from lwsconf.sim.nodes.runtime import runtime

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_HOSTNAME_MAX = 63


class ProcessLauncher:
    """Starts process containers of one node's pods through `rt`.

    Args:
        client: the agent's API client.
        rt: the node's process runtime.
        pods_root: per-pod folders (volumes, hosts file) go under it.
        node_name, host_ip: the node, for the downward API.
        allocatable: the node's allocatable (defaults for unset limits in resourceFieldRef).
        addresses: how pod IPs appear in the API; hosts files get their loopback addresses (`podnet`).
        cluster_dns: the cluster's DNS (default: one of this launcher's own, run on `client`).
    """

    def __init__(self, client: kc.Client, rt: runtime.ProcessRuntime, pods_root: Path, *, node_name: str,
                 host_ip: str, allocatable: dict[str, str] | None = None,
                 addresses: podnet.PodAddressMap = podnet.IDENTITY,
                 cluster_dns: dns.SharedClusterDNS | None = None) -> None:
        self.client = client
        self.runtime = rt
        self.pods_root = Path(pods_root)
        self.node_name = node_name
        self.host_ip = host_ip
        self.allocatable = allocatable or {}
        self.cluster_dns = cluster_dns or dns.SharedClusterDNS(addresses=addresses)
        self.dns = self.cluster_dns.table
        self._owns_dns = cluster_dns is None
        self._dns_task: tuple[asyncio.Task[None], asyncio.Event] | None = None
        self._hosts: dict[str, dns.HostsFile] = {}

    async def _ensure_dns(self) -> None:
        if self._owns_dns and self._dns_task is None:
            stop = asyncio.Event()
            task = asyncio.create_task(self.cluster_dns.run(self.client, stop), name=f"cluster-dns {self.node_name}")
            self._dns_task = (task, stop)
        await self.cluster_dns.wait_synced(timeout=10)

    async def launch(self, pod: Obj, container: Obj, *, pod_ip: str, log_path: Path,
                     extra_env: dict[str, str]) -> nodectx.Process:
        """Start `container` of `pod`; raises nodectx.LaunchError when the kubelet could not."""
        meta = pod.get("metadata") or {}
        namespace, uid = str(meta.get("namespace")), str(meta.get("uid"))
        await self._ensure_dns()
        configmaps, secrets, services = await self._objects(namespace)
        try:
            token = await satoken.fetch(self.client, pod, container)
        except errors.KubeClientError as exc:
            raise nodectx.LaunchError("CreateContainerConfigError", f"cannot get the service account token: {exc}",
                                      retry=True) from None
        try:
            environment = env.resolve_env(pod, container, node_name=self.node_name, host_ip=self.host_ip,
                                          pod_ip=pod_ip, configmaps=configmaps, secrets=secrets, extra=extra_env,
                                          services=services, node_allocatable=self.allocatable)
            mounts = volumes.materialize(pod, container, root=self.pods_root / uid / "volumes",
                                         configmaps=configmaps, secrets=secrets, env=environment,
                                         node_allocatable=self.allocatable, service_account_token=token)
            argv = env.expand_argv(container, environment)
            mapped = self.runtime.image_runtimes.get(str(container.get("image") or ""))
            if mapped is not None and not container.get("command"):
                argv = [*mapped.entrypoint, *argv]  # the image's ENTRYPOINT, then the container's args
        except (env.EnvError, volumes.VolumeError) as exc:
            raise nodectx.LaunchError("CreateContainerConfigError", str(exc), retry=True) from None
        # a fresh file per start, mounted at terminationMessagePath (kuberuntime_container.go:510-539)
        message_file = None
        if termination.message_path(container):
            message_file = termination.file_for(self.pods_root / uid / "containers" / str(container.get("name")))
            mounts = {**mounts, termination.message_path(container): message_file}
        launch = runtime.ContainerLaunch(
            namespace=namespace, pod_name=str(meta.get("name")), pod_uid=uid, container=str(container.get("name")),
            argv=argv, env=environment, pod_ip=pod_ip, hostname=_hostname(pod), mounts=mounts,
            working_dir=str(container.get("workingDir") or ""), log_path=log_path,
            hosts_path=self._hosts_file(pod, pod_ip), read_only=volumes.read_only_mounts(pod, container),
            stdin=bool(container.get("stdin")), stdin_once=bool(container.get("stdinOnce")),
            termination_file=message_file, image=str(container.get("image") or ""))
        try:
            process: nodectx.Process = await self.runtime.start(launch)
        except (OSError, ValueError) as exc:
            raise nodectx.LaunchError("StartError", f"failed to start container process: {exc}") from None
        return process

    async def _objects(self, namespace: str) -> tuple[dict[str, Obj], dict[str, Obj], list[Obj]]:
        try:
            cms, _ = await self.client.list_all(kc.CONFIGMAPS, namespace=namespace)
            secrets, _ = await self.client.list_all(kc.SECRETS, namespace=namespace)
        except errors.KubeClientError as exc:
            raise nodectx.LaunchError("CreateContainerConfigError", f"cannot read ConfigMaps/Secrets: {exc}",
                                      retry=True) from None
        services = self.cluster_dns.services_of(namespace)
        return ({c["metadata"]["name"]: c for c in cms}, {s["metadata"]["name"]: s for s in secrets}, services)

    def _hosts_file(self, pod: Obj, pod_ip: str) -> Path:
        uid = str((pod.get("metadata") or {}).get("uid"))
        if uid not in self._hosts:
            path = self.pods_root / uid / "etc-hosts"
            self._hosts[uid] = self.dns.open_hosts_file(path, pod, pod_ip)
        return self._hosts[uid].path

    def forget(self, pod_uid: str) -> None:
        """The pod is gone or terminal: stop updating its hosts file and remove its folder."""
        hosts = self._hosts.pop(pod_uid, None)
        if hosts is not None:
            hosts.close()
        shutil.rmtree(self.pods_root / pod_uid, ignore_errors=True)

    async def close(self) -> None:
        """Stop a DNS of its own, stop updating its pods' hosts files, make sure no process of this node is left."""
        if self._dns_task is not None:
            task, stop = self._dns_task
            self._dns_task = None
            stop.set()
            await task
        for hosts in self._hosts.values():
            hosts.close()
        self._hosts.clear()
        try:
            await self.runtime.close()
        except Exception as exc:  # processes that refuse to die are logged, never silently kept
            log.error("node %s: runtime did not close cleanly: %s", self.node_name, exc)


def _hostname(pod: Obj) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("hostname") or (pod.get("metadata") or {}).get("name") or "pod")[:_HOSTNAME_MAX]
