"""A TCP forwarder from inside a node's network namespace to a port on the host's loopback.

Why: kubelets, kube-proxy and pods on a real node reach the API server at an address inside their own namespace
(127.0.0.1:<port> for the node's components, the API address every node holds for in-pod clients), and the API
server listens on the host's 127.0.0.1 only. The forwarder accepts inside the namespace and dials the host's
loopback, never anything else, so nothing of the control plane listens on a routable address.

    python -m lwsconf.realnodes.forward --netns /run/netns/N --listen 127.0.0.1:6443 --to 6443 [--listen ...]

It runs until SIGTERM/SIGINT; each --listen is one listener, all forwarding to the host's 127.0.0.1:--to.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from lwsconf.realnodes import netns

CHUNK = 64 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _serve_one(target_port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    finally:
        for w in (writer, up_writer):
            w.close()


async def serve(namespace: Path, listens: list[tuple[str, int]], target_port: int,
                ready: asyncio.Event | None = None, stop: asyncio.Event | None = None) -> None:
    """Forward every listen address inside `namespace` to the host's 127.0.0.1:`target_port` until `stop`."""
    stop = stop or asyncio.Event()
    servers = []
    for host, port in listens:
        sock = netns.listening_socket_in(namespace, host, port)
        servers.append(await asyncio.start_server(lambda r, w: _serve_one(target_port, r, w), sock=sock))
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        for server in servers:
            server.close()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lwsconf.realnodes.forward", description=__doc__.split("\n\n")[0])
    parser.add_argument("--netns", type=Path, required=True)
    parser.add_argument("--listen", type=_address, action="append", required=True)
    parser.add_argument("--to", type=int, required=True, help="port on the host's 127.0.0.1")
    args = parser.parse_args(argv)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        ready = asyncio.Event()
        task = asyncio.create_task(serve(args.netns, args.listen, args.to, ready, stop))
        await ready.wait()
        print("forwarding", flush=True)
        await task

    try:
        asyncio.run(run())
    except netns.NamespaceError as exc:
        print(f"lwsconf.realnodes.forward: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
