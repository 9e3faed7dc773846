"""kube-apiserver's `cluster` egress on `--cluster=local`: an HTTP CONNECT proxy that dials loopback only.

Why: on a `LocalCluster` the API shows each pod under a 198.18 address (`lwsconf.sim.nodes.network.podnet`), so
that Services can list our pods as endpoints. kube-apiserver would then dial those addresses itself for
`pods/<pod>/proxy`, `services/<svc>:<port>/proxy` and webhooks, and nothing of ours is there: the project
allows loopback traffic only. kube-apiserver's egress selector sends all such traffic through a proxy
instead. In the pinned releases (k8s.io/kubernetes v1.37.2 and v1.36.3, read in their modules):

* `cmd/kube-apiserver/app/server.go` CreateKubeAPIServerConfig: with an egress selector, the "proxy"
  subresources' transport (pods, services, nodes proxy) dials through the `cluster` egress, and so does
  the kubelet client (`pkg/kubelet/client/kubelet_client.go`: logs, exec, attach, port-forward);
* `k8s.io/apiserver/pkg/util/webhook/authentication.go`: webhooks that name a Service use `cluster`
  (webhooks with a `url` use `controlplane`, which we leave direct: their URLs are loopback);
* `k8s.io/apiserver/pkg/server/egressselector/egress_selector.go` (identical in v0.37.2 and v0.36.3):
  HTTPConnect over TCP always wraps the proxy connection in TLS with a client key pair (getTLSConfig),
  while HTTPConnect over UDS is plain, so we serve a unix socket in our own private folder; the
  EgressSelectorConfiguration is `lwsconf.controlplane.flags.egress_selector_configuration`.

Each CONNECT names a host:port. This proxy dials a pod's 198.18 address as its loopback address, a
loopback address as is (node agents' kubelet ports, ClusterIPs, 127.0.0.1), and refuses anything else
with 403, logged and counted in `refused`, without ever opening a connection to it. A dial that fails
answers 502. After the 200, bytes are copied both ways until both sides end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

from lwsconf.sim.controllers.kubeproxy import forward as fwd
from lwsconf.sim.nodes.network import podnet

log = logging.getLogger(__name__)

HEAD_TIMEOUT = 10.0
"""Seconds a client has to send its CONNECT request head."""
DIAL_TIMEOUT = 10.0
"""Seconds to reach the loopback target of one CONNECT."""


@dataclass(frozen=True)
class Decision:
    """Where a CONNECT goes: `target` (host, port) to dial, or None with the reason it is refused."""

    target: tuple[str, int] | None
    reason: str = ""


def decide(authority: str, addresses: podnet.PodAddressMap) -> Decision:
    """The loopback target of `CONNECT <authority>`, or a refusal. Pure.

    A pod's 198.18 address of this cluster -> its loopback address; a loopback address -> itself;
    anything else (names, other addresses) -> refused: this proxy never dials outside 127.0.0.0/8.
    """
    host, sep, port = authority.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        return Decision(None, f"CONNECT target {authority!r} is not host:port")
    host = host.strip("[]")
    if addresses.is_cluster_address(host):
        return Decision((addresses.to_loopback(host), int(port)))
    if podnet.is_loopback(host):
        return Decision((host, int(port)))
    return Decision(None, f"CONNECT {authority} refused: neither a pod address of this cluster "
                          f"({podnet.CLUSTER_NETWORK}) nor a loopback address; lwsconf dials loopback only")


def _reply(status: int, reason: str, body: str = "") -> bytes:
    data = body.encode()
    head = f"HTTP/1.1 {status} {reason}\r\n"
    if status != 200:
        head += f"Content-Type: text/plain\r\nContent-Length: {len(data)}\r\nConnection: close\r\n"
    return (head + "\r\n").encode() + data


class EgressProxy:
    """The HTTP CONNECT proxy on unix socket `path` (start/close on the caller's event loop)."""

    def __init__(self, path: Path, addresses: podnet.PodAddressMap, *, head_timeout: float = HEAD_TIMEOUT,
                 dial_timeout: float = DIAL_TIMEOUT) -> None:
        self.path = Path(path)
        self.addresses = addresses
        self.head_timeout, self.dial_timeout = head_timeout, dial_timeout
        self.refused: list[str] = []
        """The authorities refused (never dialed), in order: the proof that nothing left loopback."""
        self.tunnels = 0
        """CONNECTs answered 200 so far."""
        self._server: asyncio.AbstractServer | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> EgressProxy:
        self.path.unlink(missing_ok=True)
        self._server = await asyncio.start_unix_server(self._accept, path=str(self.path))
        self.path.chmod(0o600)  # kube-apiserver runs as our user; nobody else may tunnel through us
        return self

    async def close(self) -> None:
        """Stop accepting, end every tunnel and remove the socket."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        self.path.unlink(missing_ok=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError) as exc:
            log.debug("egress proxy: connection ended: %s", exc)
        finally:
            if task is not None:
                self._handlers.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.head_timeout)
        method, _, rest = head.decode("latin-1").partition(" ")
        authority = rest.partition(" ")[0]
        if method != "CONNECT":
            writer.write(_reply(405, "Method Not Allowed", f"only CONNECT is served here, not {method!r}\n"))
            await writer.drain()
            return
        decision = decide(authority, self.addresses)
        if decision.target is None:
            self.refused.append(authority)
            log.warning("egress proxy: %s", decision.reason)
            writer.write(_reply(403, "Forbidden", decision.reason + "\n"))
            await writer.drain()
            return
        host, port = decision.target
        try:
            backend_r, backend_w = await asyncio.wait_for(asyncio.open_connection(host, port), self.dial_timeout)
        except (OSError, TimeoutError) as exc:
            log.info("egress proxy: CONNECT %s -> %s:%d failed: %s", authority, host, port, exc)
            writer.write(_reply(502, "Bad Gateway", f"cannot reach {authority} at {host}:{port}: {exc}\n"))
            await writer.drain()
            return
        self.tunnels += 1
        writer.write(_reply(200, "Connection established"))
        await writer.drain()
        clean = False
        try:
            clean = await fwd.splice(reader, writer, backend_r, backend_w)
        finally:
            with contextlib.suppress(OSError):
                fwd.finish(backend_w, reset=not clean)
