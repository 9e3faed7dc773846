"""The sim kube-proxy's data plane: one TCP listener per (ClusterIP, port), forwarding to endpoints.

This is what kube-proxy's old userspace mode did (`pkg/proxy/userspace`, removed in Kubernetes 1.26),
on the loopback addresses the sim gives Services:

* Endpoint choice is round-robin over the port's endpoints (`LoadBalancerRR.NextEndpoint`); with
  `sessionAffinity: ClientIP` a client address keeps its endpoint until it has not been used for the
  affinity timeout. Upstream shuffled the endpoint list on every change; here it stays sorted, so a
  run is reproducible. A changed endpoint list restarts the rotation and forgets the affinities of
  endpoints that left (`removeStaleAffinity`).
* Dialing an endpoint is tried up to four times, with timeouts of 0.25, 0.5, 1 and 2 s, each time on
  the next endpoint and with the client's affinity reset (`tryConnect`, `endpointDialTimeout`); when
  every try fails, the client's connection is reset.
* Bytes are copied both ways. An end-of-stream from one side is passed on as a half-close (FIN) and
  the other direction keeps flowing, as a kernel NAT (iptables mode) would; upstream's userspace
  `proxyTCP` instead closed both sockets at the first EOF. A reset or error on either side aborts
  both (RST).
* Closing a listener (its Service or port went away, or it has no usable endpoint left) stops new
  connections only; connections already forwarded go on until either side closes them, as
  upstream's `tcpProxySocket.Close` leaves them. `Forwarder.close` (the controller stopping) ends
  everything at once.

Which listeners exist and what they forward is decided by `kubeproxy.KubeProxy`; nothing here reads
the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import struct
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

Backend = tuple[str, int]
"""An endpoint: (IP, port)."""
Address = tuple[str, int]
"""Where a listener is bound: (ClusterIP, Service port)."""

DIAL_TIMEOUTS = (0.25, 0.5, 1.0, 2.0)
"""Seconds for each successive try to reach an endpoint (upstream's `endpointDialTimeout`)."""
BUFFER = 64 * 1024


@dataclass(frozen=True)
class PortRule:
    """What one listener forwards to.

    Attributes:
        name: "namespace/service:port-name", for logs.
        backends: the usable endpoints, sorted; never empty (a port without any has no listener).
        affinity_timeout: seconds a client IP keeps its endpoint (`sessionAffinity: ClientIP`), or None.
    """

    name: str
    backends: tuple[Backend, ...]
    affinity_timeout: float | None = None


def sorted_backends(backends: set[Backend]) -> tuple[Backend, ...]:
    return tuple(sorted(backends, key=lambda b: (ipaddress.ip_address(b[0]), b[1])))


class Balancer:
    """Round-robin over a rule's backends, with optional ClientIP stickiness (upstream `LoadBalancerRR`)."""

    def __init__(self, rule: PortRule) -> None:
        self.rule = rule
        self._index = 0
        self._affinity: dict[str, tuple[Backend, float]] = {}
        """Client IP -> (its endpoint, when it was last used; monotonic seconds)."""

    def update(self, rule: PortRule) -> None:
        if rule.backends != self.rule.backends:
            self._index = 0
            self._affinity = {ip: e for ip, e in self._affinity.items() if e[0] in rule.backends}
        if rule.affinity_timeout is None:
            self._affinity.clear()
        self.rule = rule

    def next(self, client_ip: str, *, reset_affinity: bool = False, now: float | None = None) -> Backend:
        """The endpoint for a new connection from `client_ip`."""
        now = time.monotonic() if now is None else now
        timeout = self.rule.affinity_timeout
        if timeout is not None and not reset_affinity:
            sticky = self._affinity.get(client_ip)
            if sticky is not None and now - sticky[1] < timeout:
                self._affinity[client_ip] = (sticky[0], now)
                return sticky[0]
        backends = self.rule.backends
        chosen = backends[self._index % len(backends)]
        self._index = (self._index + 1) % len(backends)
        if timeout is not None:
            self._affinity[client_ip] = (chosen, now)
        return chosen


class Forwarder:
    """Every listener of one kube-proxy and the connections they carry.

    Args:
        dial_timeouts: seconds for each successive try to reach an endpoint for one connection.
    """

    def __init__(self, *, dial_timeouts: tuple[float, ...] = DIAL_TIMEOUTS) -> None:
        self._dial_timeouts = dial_timeouts
        self._listeners: dict[Address, _Listener] = {}
        self._connections: set[asyncio.Task[None]] = set()

    def addresses(self) -> set[Address]:
        """Where a listener is bound right now."""
        return set(self._listeners)

    @property
    def connections(self) -> int:
        """Client connections being forwarded (or dialing) right now."""
        return len(self._connections)

    async def serve(self, address: Address, rule: PortRule) -> None:
        """Listen on `address` (if not yet) and forward new connections by `rule`.

        Raises:
            OSError: the address could not be bound (in use by another process, not a local address).
        """
        listener = self._listeners.get(address)
        if listener is not None:
            listener.balancer.update(rule)
            return
        listener = _Listener(self, address, rule)
        await listener.open()
        self._listeners[address] = listener
        log.debug("kube-proxy: listening on %s:%d for %s -> %s", *address, rule.name, rule.backends)

    def stop_serving(self, address: Address) -> None:
        """Close the listener on `address`; connections it already forwarded go on."""
        listener = self._listeners.pop(address, None)
        if listener is not None:
            listener.close()
            log.debug("kube-proxy: closed %s:%d (%s)", *address, listener.balancer.rule.name)

    async def close(self) -> None:
        """Close every listener and end every forwarded connection."""
        for address in list(self._listeners):
            self.stop_serving(address)
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- one connection -------------------------------------------------------------------------

    async def handle(self, balancer: Balancer, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        backend_w: asyncio.StreamWriter | None = None
        clean = False
        try:
            peer = client_w.get_extra_info("peername") or ("", 0)
            upstream = await self._dial(balancer, str(peer[0]))
            if upstream is None:
                return
            backend_r, backend_w = upstream
            clean = await splice(client_r, client_w, backend_r, backend_w)
        finally:
            self._connections.discard(task)
            for writer in (client_w, backend_w):
                if writer is not None:
                    finish(writer, reset=not clean)

    async def _dial(self, balancer: Balancer,
                    client_ip: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        reset = False
        for timeout in self._dial_timeouts:
            backend = balancer.next(client_ip, reset_affinity=reset)
            try:
                return await asyncio.wait_for(asyncio.open_connection(*backend, limit=BUFFER), timeout)
            except (OSError, TimeoutError) as exc:
                log.debug("kube-proxy: %s: dialing endpoint %s:%d failed: %s", balancer.rule.name, *backend, exc)
                reset = True
        log.info("kube-proxy: %s: no endpoint of %s accepted a connection; resetting the client's",
                 balancer.rule.name, list(balancer.rule.backends))
        return None


class _Listener:
    """One bound (ClusterIP, port) and the balancer its connections use."""

    def __init__(self, forwarder: Forwarder, address: Address, rule: PortRule) -> None:
        self.forwarder = forwarder
        self.address = address
        self.balancer = Balancer(rule)
        self._server: asyncio.Server | None = None

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._accept, host=self.address[0], port=self.address[1],
                                                  reuse_address=True, limit=BUFFER)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self.forwarder.handle(self.balancer, reader, writer)

    def close(self) -> None:
        # Server.close() frees the port at once; (on Python 3.12+) wait_closed() would also wait for
        # every forwarded connection, which must outlive the listener.
        if self._server is not None:
            self._server.close()
            self._server = None


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the end on as a half-close."""
    while data := await src.read(BUFFER):
        dst.write(data)
        await dst.drain()
    if dst.can_write_eof() and not dst.is_closing():
        dst.write_eof()


async def splice(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                  backend_r: asyncio.StreamReader, backend_w: asyncio.StreamWriter) -> bool:
    """Copy both ways until both sides ended; False when a side failed (then both are reset)."""
    pipes = [asyncio.ensure_future(_pipe(client_r, backend_w)), asyncio.ensure_future(_pipe(backend_r, client_w))]
    try:
        done, _ = await asyncio.wait(pipes, return_when=asyncio.FIRST_EXCEPTION)
        return all(not p.cancelled() and p.exception() is None for p in done) and len(done) == 2
    finally:
        for pipe in pipes:
            pipe.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)


def finish(writer: asyncio.StreamWriter, *, reset: bool) -> None:
    """Close a side: gracefully, or with a reset (SO_LINGER 0, so the peer sees RST, not FIN)."""
    if reset:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    else:
        writer.close()
