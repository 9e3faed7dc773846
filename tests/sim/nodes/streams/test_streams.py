"""exec, attach and port-forward on the sim, at the protocol level: a WebSocket client through the API server.

The client speaks what kubectl 1.37 speaks (v5.channel.k8s.io, SPDY/3.1+portforward.k8s.io) and the
Python client (v4.channel.k8s.io); the kubectl binary itself is driven in test_kubectl_streams.py.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from yarl import URL

from lwsconf.streaming import channels, portforward
from lwsconf.streaming.spdy import frames
from tests.sim.nodes import kubelet_sim as ks
from tests.streaming.spdy_client import SpdyClient

HTTP_SERVER = ("import http.server as h; print('serving', flush=True); "
               "h.ThreadingHTTPServer(('', 8080), h.SimpleHTTPRequestHandler).serve_forever()")


def python_pod(name: str, code: str, **container: Any) -> ks.Obj:
    return ks.pod_body(name, containers=[{"name": "main", "image": "python:3.12", "command": ["python", "-c", code],
                                          "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                                          **container}])


async def start_pod(sim: ks.Sim, body: ks.Obj, node: str = "cpu-0") -> None:
    await ks.create_bound(sim.client, body, node)
    await ks.pod_until(sim.client, body["metadata"]["name"], ks.is_ready, "ready", timeout=30)


def _connect_args(sim: ks.Sim) -> dict[str, Any]:
    context = ssl.create_default_context(cadata=sim.server.ca_pem.decode())
    return {"ssl": context, "headers": {"Authorization": f"Bearer {sim.server.token}"}}


def _url(sim: ks.Sim, pod: str, sub: str, query: Sequence[tuple[str, str]]) -> URL:
    return URL(f"{sim.server.url}/api/v1/namespaces/{ks.NS}/pods/{pod}/{sub}?{urlencode(list(query))}", encoded=True)


async def channel_session(sim: ks.Sim, pod: str, query: Sequence[tuple[str, str]], *, sub: str = "exec",
                          protocol: str = channels.V5, send: Sequence[bytes] = ()) -> dict[int, bytes]:
    """Everything the server sent per channel until it closed; `send` goes out first, in order."""
    got: dict[int, bytes] = {}
    async with aiohttp.ClientSession() as session, session.ws_connect(
            _url(sim, pod, sub, query), protocols=[protocol], **_connect_args(sim)) as ws:
        assert ws.protocol == protocol
        for message in send:
            await ws.send_bytes(message)
        async for msg in ws:
            assert msg.type == aiohttp.WSMsgType.BINARY, msg
            parsed = channels.parse(msg.data, protocol)
            assert isinstance(parsed, channels.Data)
            got[parsed.channel] = got.get(parsed.channel, b"") + parsed.data
    return got


def status_of(got: dict[int, bytes]) -> dict[str, Any]:
    return dict(json.loads(got[channels.ERROR]))


def cmd(code: str, *flags: str) -> list[tuple[str, str]]:
    return [("command", "python"), ("command", "-c"), ("command", code)] + [(f, "true") for f in flags]


def test_exec_streams_output_exit_codes_stdin_and_a_terminal(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await start_pod(sim, python_pod("p", HTTP_SERVER))
            got = await channel_session(sim, "p", cmd("print(1)", "stdout", "stderr"))
            assert got[channels.STDOUT] == b"1\n" and status_of(got)["status"] == "Success"

            got = await channel_session(sim, "p", cmd("import sys; sys.stderr.write('oops'); sys.exit(3)",
                                                      "stdout", "stderr"))
            assert got[channels.STDERR] == b"oops"
            status = status_of(got)
            assert (status["reason"], status["details"]["causes"]) == (
                channels.NON_ZERO_EXIT, [{"reason": channels.EXIT_CODE_CAUSE, "message": "3"}])

            upper = "import sys; print(sys.stdin.read().upper(), end='')"
            got = await channel_session(sim, "p", cmd(upper, "stdin", "stdout"),
                                        send=[channels.frame(channels.STDIN, b"abc"), channels.close_signal(0)])
            assert got[channels.STDOUT] == b"ABC" and status_of(got)["status"] == "Success"

            got = await channel_session(sim, "p", cmd("print('v4')", "stdout"), protocol=channels.V4)
            assert got[channels.STDOUT] == b"v4\n"

            size = "import os; input(); print(*os.get_terminal_size())"
            resize = channels.frame(channels.RESIZE, b'{"Width":123,"Height":45}\n')
            got = await channel_session(sim, "p", cmd(size, "stdin", "stdout", "tty"),
                                        send=[resize, channels.frame(channels.STDIN, b"go\r")])
            assert b"123 45" in got[channels.STDOUT], got
            assert channels.STDERR not in got

    ks.run(scenario, timeout=120)


def _processes_with(token: str) -> list[int]:
    """PIDs whose command line holds `token` (to see that an exec'd command is gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_client_leaving_kills_its_command(tmp_path: Path) -> None:
    token = f"lwsconf-exec-token-{tmp_path.name}"

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await start_pod(sim, python_pod("p", HTTP_SERVER))
            query = [("command", "python"), ("command", "-c"),
                     ("command", "import sys, time; print('ready', flush=True); time.sleep(600)"),
                     ("command", token), ("stdout", "true")]
            async with aiohttp.ClientSession() as session, session.ws_connect(
                    _url(sim, "p", "exec", query), protocols=[channels.V5], **_connect_args(sim)) as ws:
                first = await ws.receive_bytes(timeout=30)
                assert first == channels.frame(channels.STDOUT, b"ready\n")
                assert _processes_with(token), "the command runs while the client is there"
            await ks.until(lambda: asyncio.sleep(0, _processes_with(token)), lambda pids: not pids,
                           "the exec'd command killed once its client left", timeout=15)

    ks.run(scenario, timeout=120)


def test_requests_that_cannot_be_served_say_why(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await start_pod(sim, python_pod("p", HTTP_SERVER))
            await ks.create_bound(sim.client, ks.pod_body("emulated"), "cpu-0")
            await ks.pod_until(sim.client, "emulated", ks.is_ready, "ready", timeout=30)

            got = await channel_session(sim, "emulated", [("command", "ls"), ("stdout", "true")])
            assert "is emulated by the simulator and has no process" in status_of(got)["message"]
            got = await channel_session(sim, "p", [("command", "bash"), ("stdout", "true")])
            assert "the sim does not run ['bash']" in status_of(got)["message"]

            answers = await _plain(sim, "p", "exec", cmd("print(1)", "stdout"), {"Connection": "Upgrade",
                                                                                  "Upgrade": "SPDY/3.1"})
            assert answers[0] == 400 and "WebSocket only" in answers[1] and "kubectl 1.31" in answers[1], answers
            assert (await _plain(sim, "p", "exec", cmd("print(1)", "stdout"), {}))[1].count("Upgrade request required")
            answers = await _plain(sim, "p", "exec", [("command", "ls"), ("stdout", "true"), ("container", "nope")],
                                   {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"})
            assert answers[0] == 400 and "container nope is not valid for pod p" in answers[1], answers
            answers = await _plain(sim, "p", "exec", [("stdout", "true")], {})
            assert "at least one command" in answers[1], answers
            answers = await _plain(sim, "p", "exec", cmd("print(1)", "stdout"),
                                   {"Connection": "Upgrade", "Upgrade": "websocket",
                                    "Sec-WebSocket-Protocol": "base64.channel.k8s.io"})
            assert answers[0] == 400 and "offer one of v5.channel.k8s.io, v4.channel.k8s.io" in answers[1], answers
            await _kubelet_refusals(sim)

    ks.run(scenario, timeout=120)


async def _kubelet_refusals(sim: ks.Sim) -> None:
    """The kubelet port itself (what a real kube-apiserver proxies an old kubectl's SPDY request to), called
    with the API token, which the kubelet has the API server review (`kubeletauth`)."""
    node = await sim.client.get(ks.NODES, "cpu-0")
    ip = [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"][0]
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    assert node["status"]["declaredFeatures"] == ["ExtendWebSocketsToKubelet"]
    spdy = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": "v4.channel.k8s.io",
            "Authorization": f"Bearer {sim.server.token}"}
    async with aiohttp.ClientSession() as session:
        for path, code, words in (("/exec/default/p/main?output=1&command=ls", 400, "WebSocket only"),
                                  ("/exec/default/gone/main?output=1&command=ls", 404, "pod does not exist"),
                                  ("/portForward/default/p", 400, "SPDY/3.1+portforward.k8s.io")):
            async with session.post(f"https://{ip}:{port}{path}", ssl=False, headers=spdy) as response:
                text = await response.text()
                assert response.status == code and words in text, (path, response.status, text)


async def _plain(sim: ks.Sim, pod: str, sub: str, query: Sequence[tuple[str, str]],
                 headers: dict[str, str]) -> tuple[int, str]:
    args = _connect_args(sim)
    async with aiohttp.ClientSession() as session, session.post(
            _url(sim, pod, sub, query), ssl=args["ssl"], headers={**args["headers"], **headers}) as response:
        return response.status, await response.text()


def test_attach_follows_the_containers_output(tmp_path: Path) -> None:
    ticker = ("import time, itertools\nfor n in itertools.count():\n    print('tick', n, flush=True)\n"
              "    time.sleep(0.1)")
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await start_pod(sim, python_pod("ticker", ticker, readinessProbe=None))
            seen = b""
            async with aiohttp.ClientSession() as session, session.ws_connect(
                    _url(sim, "ticker", "attach", [("stdout", "true")]), protocols=[channels.V5],
                    **_connect_args(sim)) as ws:
                async for msg in ws:
                    parsed = channels.parse(msg.data, channels.V5)
                    assert isinstance(parsed, channels.Data) and parsed.channel == channels.STDOUT, parsed
                    seen += parsed.data
                    if seen.count(b"tick") >= 3:
                        break
            assert seen.count(b"tick") >= 3

            shout = "import sys\nfor line in sys.stdin:\n    print(line.upper(), end='', flush=True)"
            await start_pod(sim, python_pod("shout", shout, readinessProbe=None, stdin=True, stdinOnce=True))
            got = await channel_session(sim, "shout", [("stdin", "true"), ("stdout", "true")], sub="attach",
                                        send=[channels.frame(channels.STDIN, b"hi\n"), channels.close_signal(0)])
            assert got.get(channels.STDOUT) == b"HI\n", got
            assert status_of(got)["status"] == "Success", "stdinOnce: stdin closed, the program ended, attach too"

    ks.run(scenario, timeout=120)


def test_port_forward_tunnels_spdy_to_a_pod_port(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path, processes=True) as sim:
            await start_pod(sim, python_pod("web", HTTP_SERVER))
            async with aiohttp.ClientSession() as session, session.ws_connect(
                    _url(sim, "web", "portforward", [("ports", "8080")]),
                    protocols=[portforward.TUNNEL_PROTOCOL], **_connect_args(sim)) as ws:
                assert ws.protocol == portforward.TUNNEL_PROTOCOL
                client = SpdyClient(ws.send_bytes)

                async def pump() -> None:
                    async for msg in ws:
                        client.feed(msg.data)

                reader = asyncio.create_task(pump())
                error = await client.open({"streamType": "error", "port": "8080", "requestID": "0"}, fin=True)
                data = await client.open({"streamType": "data", "port": "8080", "requestID": "0"})
                await client.send(frames.Data(data, b"GET / HTTP/1.0\r\n\r\n", fin=True))
                await client.until(lambda: client.finished(data) and client.finished(error), "the response")
                assert client.data_of(data).startswith(b"HTTP/1.0 200"), client.data_of(data)[:200]
                assert client.data_of(error) == b""
                error = await client.open({"streamType": "error", "port": "8081", "requestID": "1"}, fin=True)
                await client.open({"streamType": "data", "port": "8081", "requestID": "1"})
                await client.until(lambda: client.finished(error), "the refused port reported")
                assert b"error forwarding port 8081 to pod web" in client.data_of(error)
                reader.cancel()

    ks.run(scenario, timeout=120)


def test_the_official_python_client_execs_and_forwards(tmp_path: Path) -> None:
    """kubernetes.stream offers v5 and v4 for exec (v4 chosen, no close signal) and port-forwards over v4."""
    from kubernetes import client, config
    from kubernetes.stream import portforward as client_portforward
    from kubernetes.stream import stream

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path / "nodes", processes=True) as sim:
            await start_pod(sim, python_pod("p", HTTP_SERVER))
            kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

            def drive() -> tuple[str, int | None, bytes]:
                core = client.CoreV1Api(config.new_client_from_config(  # type: ignore[no-untyped-call]
                    config_file=str(kubeconfig)))
                out = stream(core.connect_get_namespaced_pod_exec, "p", ks.NS, command=["python", "-c", "print(2)"],
                             stderr=True, stdin=False, stdout=True, tty=False)
                failing = stream(core.connect_get_namespaced_pod_exec, "p", ks.NS,
                                 command=["python", "-c", "import sys; sys.exit(4)"], stderr=True, stdin=False,
                                 stdout=True, tty=False, _preload_content=False)
                failing.run_forever(timeout=30)
                forward = client_portforward(core.connect_get_namespaced_pod_portforward, "p", ks.NS, ports="8080")
                sock = forward.socket(8080)
                sock.settimeout(30)
                sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
                forward.close()
                return str(out), failing.returncode, answer

            out, code, answer = await asyncio.to_thread(drive)
            assert (out, code) == ("2\n", 4)
            assert answer.startswith(b"HTTP/1.0 200"), answer[:200]

    ks.run(scenario, timeout=120)
