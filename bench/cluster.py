"""Simulated cluster benchmark: pods created and made Ready per second, and the cluster's RSS.

`lwsconf sim up` runs in its own process (API server, controllers, 8 CPU node agents: room for
880 pods) and this script drives it with the official client. Two runs (issue 3):

* one Parallel StatefulSet of 800 replicas whose container is emulated by the kubelet's stages
  (image `nginx`: no process is started), timed from the create request to the 800th pod Ready,
  as seen by a pod watch; the cluster's RSS is read at that size;
* one Parallel StatefulSet of 100 probe pods (`python` image: each a real process, ready when its
  HTTP readiness probe answers), to show what the process runtime costs.

Target (issue 3): >= 50 pods/s on 2 cores. Results go to the "cluster" section of the JSON file;
nothing is asserted here (README.md, Benchmarks).

    python -m bench.cluster --out bench/results.json [--pods 800] [--probe-pods 100]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
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
from lwsconf import workloads
from lwsconf.waits import observe

EMULATED_IMAGE = "nginx:1.27"


def emulated_container() -> Obj:
    """A container no simulated node runs as a process: its life is the `fast` stages'."""
    return {"name": "web", "image": EMULATED_IMAGE, "ports": [{"name": "http", "containerPort": 80}],
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}


def statefulset(name: str, replicas: int, container: Obj, volumes: list[Obj] | None = None) -> Obj:
    labels = {"app": name}
    pod_spec: Obj = {"containers": [container], "terminationGracePeriodSeconds": 1}
    if volumes:
        pod_spec["volumes"] = volumes
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "podManagementPolicy": "Parallel", "serviceName": name,
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec}}}


def headless_service(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"clusterIP": "None", "selector": {"app": name}, "ports": [{"name": "http", "port": 80}]}}


def spread(started: float, stamps: dict[str, float]) -> float:
    return round(max(stamps.values()) - started, 2) if stamps else float("nan")


def run_statefulset(sim: SimProcess, namespace: str, body: Obj, *, timeout: float,
                    extra: list[Obj] | None = None) -> tuple[Obj, PodWatch]:
    """Create the StatefulSet and wait for all its pods Ready; the timings, from the create request."""
    assert sim.api is not None
    api = sim.api
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    core.create_namespace({"metadata": {"name": namespace}})  # type: ignore[arg-type]
    for obj in extra or []:
        core.create_namespaced_config_map(namespace, obj)  # type: ignore[arg-type]
    core.create_namespaced_service(namespace, headless_service(body["metadata"]["name"]))  # type: ignore[arg-type]
    want = body["spec"]["replicas"]
    watch = PodWatch(api, namespace)
    cpu_before = cpu_seconds(sim.pid)
    started = time.perf_counter()
    apps.create_namespaced_stateful_set(namespace, body)  # type: ignore[arg-type]
    watch.wait(lambda w: len(w.ready) >= want, what=f"{want} Ready pods", timeout=timeout)
    ready_s = spread(started, watch.ready)
    cpu = cpu_seconds(sim.pid) - cpu_before
    name = body["metadata"]["name"]

    def sts_ready() -> bool:
        status = observe.raw(apps.read_namespaced_stateful_set_status(name, namespace, _preload_content=False))
        return bool((status.get("status") or {}).get("readyReplicas", 0) >= want)

    wait_for(sts_ready, what=f"StatefulSet {namespace}/{name} readyReplicas {want}", timeout=60)
    figures = {
        "pods": want,
        "seconds_to_all_created": spread(started, watch.added),
        "seconds_to_all_scheduled": spread(started, watch.bound),
        "seconds_to_all_running": spread(started, watch.running),
        "seconds_to_all_ready": ready_s,
        "seconds_to_statefulset_ready_replicas": round(time.perf_counter() - started, 2),
        "pods_created_per_s": round(want / spread(started, watch.added), 1),
        "pods_ready_per_s": round(want / ready_s, 1),
        "sim_cpu_seconds": round(cpu, 1),
        "sim_cpu_ms_per_pod": round(1000 * cpu / want, 1),
        "pod_watch_events": watch.events,
    }
    return figures, watch


def delete_namespace(api: client.ApiClient, namespace: str, watch: PodWatch, pods: int, *, timeout: float) -> Obj:
    """Delete the namespace and time the pods' graceful deletion (kubelets confirm) and the namespace's end."""
    core = client.CoreV1Api(api)
    started = time.perf_counter()
    core.delete_namespace(namespace)
    watch.wait(lambda w: len(w.deleted) >= pods, what=f"{pods} pods deleted", timeout=timeout)
    pods_s = spread(started, watch.deleted)
    watch.close()

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
        except client.ApiException as exc:
            return bool(exc.status == 404)
        return False

    wait_for(gone, what=f"namespace {namespace} to be removed", timeout=timeout, poll=0.1)
    return {"seconds_to_all_pods_deleted": pods_s, "pods_deleted_per_s": round(pods / pods_s, 1),
            "seconds_to_namespace_gone": round(time.perf_counter() - started, 2)}


def rss(sim: SimProcess) -> Obj:
    own, total, children = tree_rss(sim.pid)
    return {"sim_process_mb": own, "with_container_processes_mb": total, "container_processes": children}


def bench(sim: SimProcess, pods: int, probe_pods: int) -> Obj:
    assert sim.api is not None
    api = sim.api
    results: Obj = {"rss_idle": rss(sim)}
    emulated, watch = run_statefulset(sim, "bench-emulated", statefulset("web", pods, emulated_container()),
                                      timeout=max(120.0, pods / 5))
    emulated["container"] = f"emulated by stages (image {EMULATED_IMAGE}, no process)"
    emulated["rss_at_size"] = rss(sim)
    emulated["delete"] = delete_namespace(api, "bench-emulated", watch, pods, timeout=max(120.0, pods / 5))
    results["emulated"] = emulated
    volumes = [{"name": "lwsconf-probe", "configMap": {"name": workloads.PROBE_CONFIGMAP}}]
    probe_body = statefulset("probe", probe_pods, workloads.probe_container(), volumes)
    probe, watch = run_statefulset(sim, "bench-probe", probe_body, timeout=max(120.0, probe_pods),
                                   extra=[workloads.probe_configmap()])
    probe["container"] = (f"probe program as a real process (image {workloads.PROBE_IMAGE}), "
                          "Ready on its HTTP readinessProbe (periodSeconds 1)")
    probe["rss_at_size"] = rss(sim)
    procs = probe["rss_at_size"]["container_processes"]
    if procs:
        extra_mb = probe["rss_at_size"]["with_container_processes_mb"] - probe["rss_at_size"]["sim_process_mb"]
        probe["rss_per_container_process_mb"] = round(extra_mb / procs, 1)
    probe["delete"] = delete_namespace(api, "bench-probe", watch, probe_pods, timeout=120)
    results["probe_processes"] = probe
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--pods", type=int, default=800, help="replicas of the emulated StatefulSet")
    parser.add_argument("--probe-pods", type=int, default=100, help="replicas of the probe-process StatefulSet")
    parser.add_argument("--cpu-nodes", type=int, default=8, help="CPU nodes (110 pods each)")
    args = parser.parse_args(argv)
    if args.pods > args.cpu_nodes * 110:
        parser.error(f"--pods {args.pods} does not fit {args.cpu_nodes} nodes of 110 pods; raise --cpu-nodes")
    started = time.perf_counter()
    with SimProcess(gpu_nodes=0, cpu_nodes=args.cpu_nodes) as sim:
        results: dict[str, Any] = {
            "machine": machine(),
            "load_average_before": load_average(),
            "command": shlex.join(["python", "-m", "bench.cluster", *(argv if argv is not None else sys.argv[1:])]),
            "cluster_command": sim.command,
            "target": ">= 50 pods/s created and made Ready on 2 cores (issue 3)",
            "measured_from": "the StatefulSet create request to the last pod's Ready=True seen by a pod watch",
        }
        try:
            results.update(bench(sim, args.pods, args.probe_pods))
        except BenchError as exc:
            print(f"bench.cluster: {exc}\n--- sim log tail ---\n{sim.log_tail()}", file=sys.stderr)
            return 1
    results["load_average_after"] = load_average()
    results["bench_seconds"] = round(time.perf_counter() - started, 1)
    write_results(args.out, "cluster", results)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
