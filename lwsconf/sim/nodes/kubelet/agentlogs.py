"""The agent's side of the log server: which file holds a container's log, and the kubelet's errors.

`start` serves the kubelet port over HTTPS with the log endpoint and the streaming endpoints
(`streamserver`, answered by `agentstreams`), each behind the kubelet's webhook authentication and
authorization (`kubeletauth`): the API server's kubelet client certificate (signed by `client_ca`) or a
bearer token it vouches for, then a SubjectAccessReview on `nodes/proxy` and friends.

`resolve` answers the log server for (namespace, pod, container, previous) from the agent's pod
workers: the current instance's file (still growing while the container runs) or, with
`previous=true`, the file of the instance before the last restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lwsconf.sim.nodes.kubelet import agentstreams
from lwsconf.sim.nodes.streams import kubeletauth, kubelettls, logserver, streamserver

if TYPE_CHECKING:
    from lwsconf.kubeclient import client as kc
    from lwsconf.sim.nodes.kubelet import podworker


class AgentLogs:
    """The kubelet port of one agent; `client` sends its auth reviews, `client_ca` signs trusted client certs."""

    def __init__(self, agent: agentstreams.NodeWorkers, client: kc.Client, client_ca: bytes | None) -> None:
        self._agent = agent
        self.auth = kubeletauth.KubeletAuth(client, agent.name, client_ca)
        self.server: logserver.LogServer | None = None

    @property
    def port(self) -> int:
        return self.server.port if self.server is not None else 0

    async def start(self, host: str) -> None:
        streams = streamserver.StreamServer(agentstreams.AgentStreams(self._agent))
        self.server = logserver.LogServer(
            host, self.resolve, routes=streams.add_routes, middlewares=[self.auth.middleware],
            ssl_context=kubeletauth.server_context(kubelettls.server_context(), self.auth.client_ca))
        await self.server.start()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()

    def _worker(self, namespace: str, pod: str) -> podworker.PodWorker:
        matches = [w for w in self._agent.workers.values() if w.key == f"{namespace}/{pod}"]
        if not matches:
            raise logserver.LogNotAvailable(
                f'pod "{pod}" in namespace "{namespace}" is not running on node {self._agent.name}', 404)
        return max(matches, key=lambda w: str((w.pod.get("metadata") or {}).get("creationTimestamp") or ""))

    def resolve(self, namespace: str, pod: str, container: str, previous: bool) -> logserver.LogTarget:
        worker = self._worker(namespace, pod)
        rec = worker.state.record(container)
        if rec is None:
            raise logserver.LogNotAvailable(f"container {container} is not valid for pod {pod}")
        if previous:
            if rec.restart_count == 0 or rec.log_path is None:
                raise logserver.LogNotAvailable(
                    f'previous terminated container "{container}" in pod "{pod}" not found')
            path = rec.log_path.parent / f"{rec.restart_count - 1}.log"
            if not path.exists():
                raise logserver.LogNotAvailable(
                    f'previous terminated container "{container}" in pod "{pod}" not found')
            return logserver.LogTarget(path, lambda: False)
        if rec.log_path is None or not rec.log_path.exists():
            raise logserver.LogNotAvailable(
                f'container "{container}" in pod "{pod}" is waiting to start: {rec.waiting_reason}')
        path = rec.log_path
        return logserver.LogTarget(path, lambda: rec.state == "running" and rec.log_path == path)
