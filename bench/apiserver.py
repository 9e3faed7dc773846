"""API server benchmark: GET, label-selected LIST and watch throughput against 10k stored pods, and RSS.

The server runs in its own process (as it does under `lwsconf sim up`) and one client drives it,
so the figures match "one client on 2 cores". Targets (issue 2): >= 1,000 GET/s, >= 200 LISTs/s
selecting 4 of 10k pods, RSS <= 300 MB at 10k pods. Results go to a JSON file; no assertions here
(README.md, Benchmarks).

    python -m bench.apiserver --out bench/results.json [--pods 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
from kubernetes import client, watch

from lwsconf import lwsapi

SERVER = """
import asyncio, sys
from lwsconf.sim.apiserver.http import app
async def main():
    server = app.APIServer()
    await server.start()
    open(sys.argv[1], "wb").write(server.ca_pem)
    print(server.url, server.token, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


def pod_body(i: int) -> dict[str, Any]:
    """A realistic LWS worker pod (labels, annotations, env), about 2 KB of JSON."""
    group = i // 4
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"bench-{group}-{i % 4}", "labels": {
            lwsapi.NAME: "bench", lwsapi.GROUP_INDEX: str(group), lwsapi.WORKER_INDEX: str(i % 4), "app": "bench"},
            "annotations": {lwsapi.SIZE: "4", lwsapi.LEADER_NAME: f"bench-{group}"}},
        "spec": {"containers": [{"name": "worker", "image": "vllm/vllm-openai:v0.8.5",
                                 "command": ["sh", "-c", "python3 -m vllm.entrypoints.openai.api_server"],
                                 "env": [{"name": "LWS_LEADER_ADDRESS", "value": f"bench-{group}.bench.default"},
                                         {"name": "LWS_GROUP_SIZE", "value": "4"}],
                                 "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def populate(url: str, token: str, count: int) -> float:
    started = time.perf_counter()
    local = threading.local()

    def create(i: int) -> None:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
            session.headers["Authorization"] = f"Bearer {token}"
        reply = session.post(f"{url}/api/v1/namespaces/default/pods", json=pod_body(i), timeout=30)
        reply.raise_for_status()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, range(count)))
    return count / (time.perf_counter() - started)


def rate(fn: Any, n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        fn(i)
    return n / (time.perf_counter() - started)


def watch_rate(core: client.CoreV1Api, url: str, token: str, events: int) -> float:
    """Events per second delivered to one typed watch client while another thread writes."""
    listing = core.list_namespaced_config_map("default")
    assert listing.metadata is not None, "a list always has metadata"
    rv = listing.metadata.resource_version
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"

    def writer() -> None:
        for i in range(events):
            session.post(f"{url}/api/v1/namespaces/default/configmaps",
                         json={"metadata": {"name": f"w{i}"}, "data": {"i": str(i)}}, timeout=30)

    thread = threading.Thread(target=writer)
    started = time.perf_counter()
    thread.start()
    seen = 0
    watcher = watch.Watch()  # type: ignore[no-untyped-call]
    for _ in watcher.stream(core.list_namespaced_config_map, "default",  # type: ignore[no-untyped-call]
                            resource_version=rv, timeout_seconds=120):
        seen += 1
        if seen >= events:
            break
    elapsed = time.perf_counter() - started
    thread.join()
    return seen / elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="lwsconf-bench-")
    ca_file = Path(tmp.name) / "ca.crt"
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(ca_file)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url, token = proc.stdout.readline().split()
        os.environ["REQUESTS_CA_BUNDLE"] = str(ca_file)
        cfg = client.Configuration()
        cfg.host, cfg.api_key = url, {"authorization": f"Bearer {token}"}
        cfg.ssl_ca_cert = str(ca_file)
        api = client.ApiClient(cfg)
        core = client.CoreV1Api(api)
        results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                                   "pods": args.pods, "rss_mb_empty": round(rss_mb(proc.pid), 1)}
        results["create_pods_per_s"] = round(populate(url, token, args.pods), 1)
        results["rss_mb_at_pods"] = round(rss_mb(proc.pid), 1)
        groups = args.pods // 4
        results["get_typed_per_s"] = round(rate(
            lambda i: core.read_namespaced_pod(f"bench-{(i * 7) % groups}-{i % 4}", "default"), 2000), 1)
        raw = requests.Session()
        raw.headers["Authorization"] = f"Bearer {token}"
        results["get_raw_per_s"] = round(rate(
            lambda i: raw.get(f"{url}/api/v1/namespaces/default/pods/bench-{(i * 7) % groups}-{i % 4}", timeout=10),
            2000), 1)
        results["list_by_label_typed_per_s"] = round(rate(
            lambda i: core.list_namespaced_pod("default", label_selector=(
                f"{lwsapi.NAME}=bench,{lwsapi.GROUP_INDEX}={(i * 13) % groups}")),
            500), 1)
        results["watch_events_per_s"] = round(watch_rate(core, url, token, 2000), 1)
        results["rss_mb_after"] = round(rss_mb(proc.pid), 1)
    finally:
        proc.terminate()
        proc.wait(10)
        tmp.cleanup()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    existing["apiserver"] = results
    args.out.write_text(json.dumps(existing, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
