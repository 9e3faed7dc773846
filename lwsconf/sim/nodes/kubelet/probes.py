"""One probe attempt (liveness, readiness or startup), the way the kubelet's prober makes it.

`check` does a single try and says whether it succeeded; periods, thresholds and what a failure
means belong to the caller (the node agent). Rules from `pkg/kubelet/prober` and
`pkg/probe/{http,tcp,exec}`:

* httpGet: GET `scheme://host:port/path` with `httpHeaders`, `User-Agent: kube-probe/<version>`
  and `Accept: */*`; host defaults to the pod IP; a status in [200, 400) is success. Redirects are
  not followed (a 3xx already counts as success).
* tcpSocket: success when a TCP connection opens.
* grpc: treated as tcpSocket (the sim's workloads do not serve gRPC health).
* exec: run through `exec_runner` (the runtime's `Process.exec`); exit code 0 is success. Without
  a runner (an emulated container) it succeeds.
* `timeoutSeconds` (default 1) bounds the whole attempt; a named port is looked up in the
  container's `ports`.

Only loopback addresses are ever contacted: a probe whose host is anything else fails with a
message saying so, without a connection attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
ExecRunner = Callable[[Sequence[str], float], Awaitable[tuple[int, str]]]
"""`runner(command, timeout) -> (exit code, output)`; raise `runtime.UnsupportedCommand` (a
ValueError) for a command it will not run, which counts as an emulated success."""

USER_AGENT = "kube-probe/1.34"
MAX_BODY = 10 * 1024


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    message: str = ""


class _ProbeFailure(Exception):
    """A failed attempt; the message is what the kubelet would put in the Unhealthy event."""


def _port(value: Any, container: Obj | None) -> int:
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return int(value)
    for port in (container or {}).get("ports") or ():
        if port.get("name") == value:
            return int(port["containerPort"])
    raise _ProbeFailure(f"port {value!r} is not a number and no containerPort has that name")


def _host(value: Any, pod_ip: str) -> str:
    host = str(value or pod_ip)
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise _ProbeFailure(f"probe host {host!r} is not a loopback address; the simulator only contacts "
                            "127.0.0.0/8 (leave host unset to use the pod IP)")
    return "127.0.0.1" if host == "localhost" else host


async def _http(action: Obj, pod_ip: str, container: Obj | None) -> str:
    host, port = _host(action.get("host"), pod_ip), _port(action.get("port"), container)
    scheme = str(action.get("scheme") or "HTTP").upper()
    path = str(action.get("path") or "/")
    path = path if path.startswith("/") else "/" + path
    headers = {"Host": f"{host}:{port}", "User-Agent": USER_AGENT, "Accept": "*/*", "Connection": "close"}
    for header in action.get("httpHeaders") or ():
        headers[str(header.get("name"))] = str(header.get("value"))
    context = None
    if scheme == "HTTPS":  # the kubelet does not verify probe certificates
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    url = f"{scheme.lower()}://{host}:{port}{path}"
    try:
        reader, writer = await asyncio.open_connection(host, port, ssl=context)
    except OSError as exc:
        raise _ProbeFailure(f'Get "{url}": dial tcp {host}:{port}: connect: {_dial_error(exc)}') from None
    try:
        request = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        writer.write(request.encode("latin-1"))
        await writer.drain()
        status_line = (await reader.readline()).decode("latin-1").split()
        if len(status_line) < 2 or not status_line[1].isdigit():
            raise _ProbeFailure(f'Get "{url}": malformed HTTP response {" ".join(status_line)!r}')
        code = int(status_line[1])
        body = await _body(reader)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    if 200 <= code < 400:
        return body
    raise _ProbeFailure(f"HTTP probe failed with statuscode: {code}")


def _dial_error(exc: OSError) -> str:
    """A failed connect in Go's words: the errno's text, lower-cased ("connection refused"), as the kubelet's
    probe message quotes net.Dial's error (asyncio's own "Connect call failed (...)" is not what it says)."""
    if exc.errno:
        text = os.strerror(exc.errno)
        return text[:1].lower() + text[1:]
    return str(exc.strerror or exc)


async def _body(reader: asyncio.StreamReader) -> str:
    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
        pass
    with contextlib.suppress(Exception):
        return (await reader.read(MAX_BODY)).decode(errors="replace")
    return ""


async def _tcp(action: Obj, pod_ip: str, container: Obj | None) -> str:
    host, port = _host(action.get("host"), pod_ip), _port(action.get("port"), container)
    try:
        _reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        raise _ProbeFailure(f"dial tcp {host}:{port}: connect: {_dial_error(exc)}") from None
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return ""


async def _exec(action: Obj, timeout: float, runner: ExecRunner | None) -> str:
    command = [str(part) for part in action.get("command") or ()]
    if runner is None:
        return "exec probe of an emulated container: success"
    try:
        code, output = await runner(command, timeout)
    except ValueError as exc:  # runtime.UnsupportedCommand
        return f"exec probe not run by the simulator ({exc}): success"
    if code != 0:
        raise _ProbeFailure(f"command {command!r} exited with {code}: {output.strip()}")
    return output


async def check(probe: Obj, *, pod_ip: str, exec_runner: ExecRunner | None = None,
                container: Obj | None = None) -> ProbeResult:
    """One attempt of `probe` (a Probe object) against a pod at `pod_ip`.

    Args:
        exec_runner: runs exec commands in the container; None for emulated containers.
        container: the probed container, to resolve named ports.
    """
    timeout = float(probe.get("timeoutSeconds") or 1)
    try:
        if probe.get("httpGet") is not None:
            message = await asyncio.wait_for(_http(probe["httpGet"], pod_ip, container), timeout)
        elif probe.get("tcpSocket") is not None:
            message = await asyncio.wait_for(_tcp(probe["tcpSocket"], pod_ip, container), timeout)
        elif probe.get("grpc") is not None:
            message = await asyncio.wait_for(_tcp(probe["grpc"], pod_ip, container), timeout)
        elif probe.get("exec") is not None:
            message = await _exec(probe["exec"], timeout, exec_runner)
        else:
            return ProbeResult(False, "probe has no handler: set httpGet, tcpSocket, grpc or exec")
    except _ProbeFailure as exc:
        return ProbeResult(False, str(exc))
    except TimeoutError:
        return ProbeResult(False, f"probe timed out after {timeout:g}s (timeoutSeconds)")
    return ProbeResult(True, message)
