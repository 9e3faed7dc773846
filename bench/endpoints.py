"""How fast the sim's EndpointSlice controller carries a pod's readiness flip into its Service's slice.

A leader Service routes only to ready leaders, so this delay is how long traffic still goes to a pod that stopped
being ready (or stays away from one that became ready). One API server and the EndpointSlice controller run
in this process; the bench plays kubelet, flipping one pod's Ready condition through `pods/NAME/status`, and polls
the slice every 2 ms until it shows the flip. Figures, not verdicts: the unit test checks only that no change
waits longer than the pause its controller earned (`tests/sim/controllers/endpoints/test_endpointslice.py`).

    python -m bench.endpoints --out bench/results.json [--flips 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from bench._simproc import load_average, machine, write_results
from lwsconf.kubeclient import client as kc
from lwsconf.sim.apiserver.http import app
from lwsconf.sim.controllers.endpoints import endpointslice
from lwsconf.sim.controllers.endpoints import service_endpoints as se

NS = "default"
IP = "127.77.1.2"
FLIP_TIMEOUT = 30.0
"""Seconds one flip may take to reach the slice before the bench gives up and says so."""


async def _ready_in_slice(client: kc.Client) -> bool | None:
    listed = await client.list(se.ENDPOINTSLICES, namespace=NS,
                               label_selector=f"{endpointslice.LABEL_SERVICE_NAME}=web")
    for slice_ in listed.get("items") or []:
        for endpoint in slice_.get("endpoints") or []:
            if endpoint["targetRef"]["name"] == "a":
                return bool(endpoint["conditions"]["ready"])
    return None


async def _until(client: kc.Client, ready: bool | None) -> None:
    deadline = time.monotonic() + FLIP_TIMEOUT
    while (seen := await _ready_in_slice(client)) is not ready:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench.endpoints: the slice showed ready={seen}, not {ready}, after {FLIP_TIMEOUT} s")
        await asyncio.sleep(0.002)


async def _status(client: kc.Client, ready: bool) -> None:
    status = {"phase": "Running", "podIP": IP, "podIPs": [{"ip": IP}],
              "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    await client.patch(kc.PODS, "a", {"status": status}, namespace=NS, subresource="status")


async def measure(flips: int) -> list[float]:
    """Seconds from each status write to the slice showing it."""
    server = app.APIServer()
    await server.start()
    clients = [kc.Client(server.url, server.token, ca_pem=server.ca_pem, user_agent=a) for a in ("slices", "bench")]
    controller = endpointslice.EndpointSliceController(clients[0])
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    c = clients[1]
    try:
        await c.create(kc.SERVICES, {"apiVersion": "v1", "kind": "Service",
                                     "metadata": {"name": "web", "namespace": NS},
                                     "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
        await c.create(kc.PODS, {"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "a", "namespace": NS, "labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}})
        await _status(c, ready=False)
        await _until(c, ready=False)
        delays = []
        for flip in range(flips):
            ready = flip % 2 == 0
            started = time.monotonic()
            await _status(c, ready)
            await _until(c, ready)
            delays.append(time.monotonic() - started)
        return delays
    finally:
        stop.set()
        await task
        for client in clients:
            await client.close()
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--flips", type=int, default=40)
    args = parser.parse_args(argv)
    delays = asyncio.run(measure(args.flips))
    results: dict[str, Any] = {
        "machine": machine(), "flips": args.flips,
        "readiness_to_slice_ms": {"median": round(statistics.median(delays) * 1000, 1),
                                  "max": round(max(delays) * 1000, 1)},
        "load_average_after": load_average()}
    write_results(args.out, "endpoints", results)
    print(f"bench.endpoints: {results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
