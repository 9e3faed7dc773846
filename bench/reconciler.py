"""Reference reconciler benchmark: create-to-Available, reconcile throughput, group-restart latency.

Three processes, as a user runs them out of cluster: `lwsconf sim up` (8 CPU nodes: room for 880
pods), the reference reconciler (`lwsconf.reconciler.run.serve` against the sim's kubeconfig) and
this script, which drives both with the official client. Figures (issue 4):

* create-to-Available of an LWS with replicas 2, size 2: p50/p90 of 10 runs, each in a fresh
  namespace, with the probe workload (real processes, Ready on their HTTP readiness probe) and
  with emulated containers (the kubelet's stages, no process);
* reconcile throughput: replicas 100, size 8 (800 emulated pods), create to Available
  (target: <= 30 s on sim on 2 cores);
* group-restart latency: a worker's container crashes (probe: `/exit` through `pods/proxy`;
  emulated: the `chaos.lwsconf.dev/crash-container` annotation) until its group is back with new
  pods all Ready; p50/p90 of 10, under `RecreateGroupOnPodRestart`.

Results go to the "reconciler" section of the JSON file; nothing is asserted here (README.md, Benchmarks).

    python -m bench.reconciler --out bench/results.json [--runs 10] [--replicas 100 --size 8]
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from bench._simproc import (
    BenchError,
    Obj,
    PodWatch,
    SimProcess,
    cpu_seconds,
    load_average,
    machine,
    tree_rss,
    wait_for,
    write_results,
)
from bench.cluster import EMULATED_IMAGE  # one emulated image for every bench
from fixtures.implementations import bundled
from lwsconf import lwsapi, timeouts, workloads
from lwsconf.waits import observe, proxy

NAME_LABEL = lwsapi.NAME
GROUP_LABEL = lwsapi.GROUP_INDEX
CRASH_ANNOTATION = "chaos.lwsconf.dev/crash-container"
RESTART_POLICY = "RecreateGroupOnPodRestart"

RECONCILER = """
import asyncio, signal, sys
from lwsconf import kubeclient
from lwsconf.reconciler import run

async def main():
    client = kubeclient.Client.from_kubeconfig(sys.argv[1], user_agent="lws-reference", loopback_only=False)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        await run.serve(client, stop)
    finally:
        await client.close()

asyncio.run(main())
"""


class ReconcilerProcess:
    """The reference reconciler in its own process, stopped with SIGTERM."""

    def __init__(self, kubeconfig: Path) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="lwsconf-bench-reconciler-")
        self.log = Path(self._tmp.name) / "reconciler.log"
        with self.log.open("w") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen([sys.executable, "-c", RECONCILER, str(kubeconfig)],
                                         stdout=log, stderr=subprocess.STDOUT)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                print(f"reconciler (pid {self.proc.pid}) ignored SIGTERM for 30 s; killing it", file=sys.stderr)
                self.proc.kill()
                self.proc.wait(10)
        self._tmp.cleanup()


# --- workloads ---------------------------------------------------------------------------------------

def emulated_lws(name: str, replicas: int, size: int) -> Obj:
    """The probe LWS shape with an emulated container (no process, no volume) in both templates."""
    def edit(template: Obj) -> None:
        template["spec"]["containers"] = [{"name": "server", "image": EMULATED_IMAGE,
                                           "ports": [{"name": "http", "containerPort": 8080}],
                                           "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]
        template["spec"].pop("volumes", None)
    return workloads.edit_templates(workloads.probe_lws(name, replicas=replicas, size=size,
                                                        restart_policy=RESTART_POLICY), edit)


def probe_lws(name: str, replicas: int, size: int) -> Obj:
    return workloads.probe_lws(name, replicas=replicas, size=size, restart_policy=RESTART_POLICY)


class Bench:
    """The official-client side: namespaces, LWS creation and the waits, all bounded."""

    def __init__(self, sim: SimProcess, reconciler: ReconcilerProcess) -> None:
        assert sim.api is not None
        self.sim, self.reconciler, self.api = sim, reconciler, sim.api
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self._namespaces = 0

    def namespace(self, prefix: str, *, probe: bool) -> str:
        self._namespaces += 1
        name = f"{prefix}-{self._namespaces}"
        self.core.create_namespace({"metadata": {"name": name}})  # type: ignore[arg-type]
        if probe:
            self.core.create_namespaced_config_map(name, workloads.probe_configmap())  # type: ignore[arg-type]
        return name

    def create(self, namespace: str, lws: Obj) -> float:
        started = time.perf_counter()
        self.custom.create_namespaced_custom_object(workloads.GROUP, workloads.VERSION, namespace,
                                                    workloads.PLURAL, lws)
        return started

    def get_lws(self, namespace: str, name: str) -> Obj:
        return observe.raw(self.custom.get_namespaced_custom_object(workloads.GROUP, workloads.VERSION, namespace,
                                                                    workloads.PLURAL, name, _preload_content=False))

    def pods(self, namespace: str, selector: str) -> list[Obj]:
        return observe.pods(self.api, namespace, selector)

    def describe(self, namespace: str, name: str) -> Callable[[], str]:
        def text() -> str:
            lws = self.get_lws(namespace, name)
            pods = self.pods(namespace, f"{NAME_LABEL}={name}")
            ready = sum(1 for p in pods if _ready(p))
            return (f"LWS status: {json.dumps(lws.get('status'))}\npods: {len(pods)}, Ready {ready}\n"
                    f"--- reconciler log tail ---\n{self.reconciler.log_tail()}")
        return text

    def wait_available(self, namespace: str, name: str, *, timeout: float) -> float:
        """Poll until Available=True for the current generation with every group ready; returns the time."""
        def available() -> bool:
            lws = self.get_lws(namespace, name)
            status = lws.get("status") or {}
            conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            return (status.get("observedGeneration") == lws["metadata"].get("generation")
                    and conditions.get("Available") == "True"
                    and status.get("readyReplicas", 0) >= lws["spec"].get("replicas", 1))

        wait_for(available, what=f"LeaderWorkerSet {namespace}/{name} to be Available", timeout=timeout,
                 describe=self.describe(namespace, name))
        return time.perf_counter()

    def delete_namespace(self, namespace: str, *, timeout: float = 120) -> float:
        started = time.perf_counter()
        self.core.delete_namespace(namespace)

        def gone() -> bool:
            try:
                self.core.read_namespace(namespace)
            except client.ApiException as exc:
                return bool(exc.status == 404)
            return False

        wait_for(gone, what=f"namespace {namespace} to be removed", timeout=timeout, poll=0.1)
        return round(time.perf_counter() - started, 2)


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def summary(samples: list[float]) -> Obj:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"runs": len(ordered), "p50_s": round(statistics.median(ordered), 3), "p90_s": round(p90, 3),
            "min_s": round(ordered[0], 3), "max_s": round(ordered[-1], 3),
            "samples_s": [round(s, 3) for s in samples]}


# --- the three measurements ----------------------------------------------------------------------------

def create_to_available(bench: Bench, runs: int, *, probe: bool) -> Obj:
    """One warm-up, then `runs` LWS (2x2) each created in a fresh namespace and timed to Available."""
    build = probe_lws if probe else emulated_lws
    samples, warmup = [], 0.0
    for run in range(runs + 1):
        namespace = bench.namespace("bench-c2a", probe=probe)
        started = bench.create(namespace, build("lws", 2, 2))
        elapsed = bench.wait_available(namespace, "lws", timeout=60) - started
        if run == 0:
            warmup = elapsed
        else:
            samples.append(elapsed)
        bench.delete_namespace(namespace)
    return {**summary(samples), "warmup_s": round(warmup, 3)}


def _crash_probe(bench: Bench, namespace: str, pod: str) -> None:
    reply = proxy.pod_get(bench.api, namespace, pod, workloads.PROBE_PORT, "/exit", query={"code": "1"})
    if not reply.ok:
        raise BenchError(f"could not crash {namespace}/{pod} through pods/proxy /exit: "
                         f"HTTP {reply.status} {reply.body}")


def _crash_emulated(bench: Bench, namespace: str, pod: str) -> None:
    bench.core.patch_namespaced_pod(pod, namespace, {"metadata": {"annotations": {CRASH_ANNOTATION: "server"}}})


def group_restart(bench: Bench, runs: int, *, probe: bool) -> Obj:
    """Crash worker 1 of group (run % 2) and time until that group is back, all new pods Ready."""
    namespace = bench.namespace("bench-restart", probe=probe)
    bench.create(namespace, (probe_lws if probe else emulated_lws)("lws", 2, 2))
    bench.wait_available(namespace, "lws", timeout=60)
    crash = _crash_probe if probe else _crash_emulated
    samples = []
    for run in range(runs):
        group = run % 2
        selector = f"{NAME_LABEL}=lws,{GROUP_LABEL}={group}"
        old = {p["metadata"]["uid"] for p in bench.pods(namespace, selector)}
        started = time.perf_counter()
        crash(bench, namespace, f"lws-{group}-1")

        def recreated(selector: str = selector, old: set[str] = old) -> bool:
            live = [p for p in bench.pods(namespace, selector) if not p["metadata"].get("deletionTimestamp")]
            return len(live) == 2 and all(_ready(p) and p["metadata"]["uid"] not in old for p in live)

        wait_for(recreated, what=f"group {group} of {namespace}/lws to be recreated and Ready", timeout=60,
                 describe=bench.describe(namespace, "lws"))
        samples.append(time.perf_counter() - started)
        bench.wait_available(namespace, "lws", timeout=60)
    bench.delete_namespace(namespace)
    return summary(samples)


def throughput(bench: Bench, replicas: int, size: int) -> Obj:
    """One big emulated LWS: create to Available, with when its pods were created, bound and Ready."""
    namespace = bench.namespace("bench-throughput", probe=False)
    watch = PodWatch(bench.api, namespace)
    cpu_before = cpu_seconds(bench.sim.pid), cpu_seconds(bench.reconciler.proc.pid)
    started = bench.create(namespace, emulated_lws("lws", replicas, size))
    pods = replicas * size
    done = bench.wait_available(namespace, "lws", timeout=max(180.0, pods / 4))
    cpu_after = cpu_seconds(bench.sim.pid), cpu_seconds(bench.reconciler.proc.pid)

    def last(stamps: dict[str, float]) -> float:
        return round(max(stamps.values()) - started, 2) if stamps else float("nan")

    figures = {"replicas": replicas, "size": size, "pods": pods, "seconds_to_available": round(done - started, 2),
               "seconds_to_all_pods_created": last(watch.added), "seconds_to_all_pods_scheduled": last(watch.bound),
               "seconds_to_all_pods_running": last(watch.running),
               "seconds_to_all_pods_ready": last(watch.ready), "pods_seen": len(watch.added),
               "cpu_seconds": {"sim": round(cpu_after[0] - cpu_before[0], 1),
                               "reconciler": round(cpu_after[1] - cpu_before[1], 1)},
               "rss_mb": {"sim": tree_rss(bench.sim.pid)[0], "reconciler": tree_rss(bench.reconciler.proc.pid)[0]}}
    figures["seconds_to_namespace_deleted"] = bench.delete_namespace(namespace, timeout=max(120.0, pods / 5))
    watch.close()
    return figures


def run_all(bench: Bench, runs: int, replicas: int, size: int) -> Obj:
    results: Obj = {}
    results["create_to_available_2x2"] = {
        "probe": {**create_to_available(bench, runs, probe=True),
                  "workload": f"probe program as real processes ({workloads.PROBE_IMAGE}), readinessProbe period 1 s"},
        "emulated": {**create_to_available(bench, runs, probe=False),
                     "workload": f"emulated containers ({EMULATED_IMAGE}), no process"},
    }
    results["group_restart"] = {
        "probe": {**group_restart(bench, runs, probe=True),
                  "crash": "GET pods/NAME:8080/proxy/exit?code=1 on worker 1 (real process exits 1)"},
        "emulated": {**group_restart(bench, runs, probe=False),
                     "crash": f"annotation {CRASH_ANNOTATION} on worker 1 (emulated container exits 1)"},
        "restart_policy": RESTART_POLICY,
        "measured_from": "the crash request to the group's pods all new and Ready",
    }
    results["throughput"] = {**throughput(bench, replicas, size),
                             "target": "<= 30 s to Available on sim on 2 cores (issue 4)",
                             "workload": f"emulated containers ({EMULATED_IMAGE}), no process"}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--runs", type=int, default=10, help="runs per latency figure")
    parser.add_argument("--replicas", type=int, default=100, help="groups of the throughput LWS")
    parser.add_argument("--size", type=int, default=8, help="pods per group of the throughput LWS")
    parser.add_argument("--cpu-nodes", type=int, default=8, help="CPU nodes (110 pods each)")
    args = parser.parse_args(argv)
    if args.replicas * args.size > args.cpu_nodes * 110 - 10:
        parser.error(f"{args.replicas}x{args.size} pods do not fit {args.cpu_nodes} nodes; raise --cpu-nodes")
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine(), "load_average_before": load_average()}
    with SimProcess(gpu_nodes=0, cpu_nodes=args.cpu_nodes) as sim:
        assert sim.api is not None, "SimProcess opens its client on entry"
        bundled.install_crd(sim.api, timeouts.Timeouts())
        reconciler = ReconcilerProcess(sim.kubeconfig)
        try:
            results["command"] = shlex.join(["python", "-m", "bench.reconciler",
                                             *(argv if argv is not None else sys.argv[1:])])
            results["cluster_command"] = sim.command
            results["reconciler_command"] = "lwsconf.reconciler.run.serve(client, stop) in its own process"
            results.update(run_all(Bench(sim, reconciler), args.runs, args.replicas, args.size))
        except BenchError as exc:
            print(f"bench.reconciler: {exc}\n--- sim log tail ---\n{sim.log_tail()}", file=sys.stderr)
            return 1
        finally:
            reconciler.close()
    results["load_average_after"] = load_average()
    results["bench_seconds"] = round(time.perf_counter() - started, 1)
    write_results(args.out, "reconciler", results)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
