"""The node log server on its own: kubelet query parameters, follow, and error bodies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from lwsconf.sim.nodes.kubelet import containers
from lwsconf.sim.nodes.streams import logserver
from tests.sim.nodes import kubelet_sim as ks


def _serve(tmp_path: Path, running: list[bool]) -> tuple[logserver.LogServer, Path]:
    path = tmp_path / "0.log"
    path.write_text(containers.cri_line("one") + containers.cri_line("two", "stderr") + "raw three\n")

    def resolve(namespace: str, pod: str, container: str, previous: bool) -> logserver.LogTarget:
        if container != "main":
            raise logserver.LogNotAvailable(f"container {container} is not valid for pod {pod}")
        return logserver.LogTarget(path, lambda: running[0])
    return logserver.LogServer("127.0.0.1", resolve), path


async def _get(server: logserver.LogServer, query: str, container: str = "main") -> tuple[int, str]:
    url = f"http://127.0.0.1:{server.port}/containerLogs/ns/pod/{container}?{query}"
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.text()


def test_query_parameters_shape_the_output(tmp_path: Path) -> None:
    async def scenario() -> None:
        server, _ = _serve(tmp_path, [False])
        await server.start()
        try:
            assert await _get(server, "") == (200, "one\ntwo\nraw three\n")
            assert await _get(server, "tailLines=2") == (200, "two\nraw three\n")
            assert await _get(server, "limitBytes=5") == (200, "one\nt")
            status, stamped = await _get(server, "timestamps=true&tailLines=1")
            assert status == 200 and stamped.endswith("Z raw three\n") and stamped.startswith("20")
            assert await _get(server, "sinceSeconds=3600") == (200, "one\ntwo\nraw three\n")
            status, body = await _get(server, "", container="other")
            assert status == 400 and json.loads(body)["message"] == "container other is not valid for pod pod"
            status, body = await _get(server, "tailLines=x")
            assert status == 400 and "tailLines must be an integer" in body
        finally:
            await server.stop()
    ks.run(scenario)


def test_follow_streams_new_lines_until_the_container_stops(tmp_path: Path) -> None:
    running = [True]

    async def scenario() -> None:
        server, path = _serve(tmp_path, running)
        await server.start()
        try:
            url = f"http://127.0.0.1:{server.port}/containerLogs/ns/pod/main?follow=true&tailLines=0"
            async with aiohttp.ClientSession() as session, session.get(url) as resp:
                with path.open("a") as handle:
                    handle.write(containers.cri_line("four"))
                first = await asyncio.wait_for(resp.content.readline(), 5)
                assert first == b"four\n"
                with path.open("a") as handle:
                    handle.write("partial")
                    handle.flush()
                    handle.write(" line\n")
                running[0] = False
                rest = await asyncio.wait_for(resp.content.read(), 5)
                assert rest == b"partial line\n"
        finally:
            await server.stop()
    ks.run(scenario)
