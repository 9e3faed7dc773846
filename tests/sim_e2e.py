"""Shared pieces of the end-to-end tests on a whole simulated cluster (API server, controllers, nodes).

`running_cluster(...)` starts a `SimCluster` on a background loop, waits until every node is Ready
(and GPU nodes advertise their GPUs), and hands out an official-client `ApiClient`; `fresh_namespace`
makes one namespace per test and, on request, waits at the end until its pods are gone, so the next
test on the same cluster finds every GPU free again. Waits use `lwsconf.timeouts.Timeouts` and fail
with the observed state; nothing sleeps.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config

from lwsconf import workloads
from lwsconf.sim import cluster as simc
from lwsconf.sim.nodes import fleet as fleet_mod
from lwsconf.sim.nodes import layout
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, observe

Obj = dict[str, Any]
GPU = layout.GPU_RESOURCE


@dataclass
class Sim:
    """A running simulated cluster as the tests see it."""

    running: simc.RunningSimCluster
    api: client.ApiClient
    t: Timeouts
    fleet: fleet_mod.NodeFleet | None = None
    nodes: dict[str, Obj] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.running.kubeconfig

    def node_of(self, pod: Obj) -> Obj:
        return self.nodes[pod["spec"]["nodeName"]]

    def zone_of(self, pod: Obj) -> str:
        return str(self.node_of(pod)["metadata"]["labels"][layout.ZONE_LABEL])


def _nodes_ready(api: client.ApiClient, specs: list[layout.NodeSpec]) -> dict[str, Obj]:
    listed = observe.raw(client.CoreV1Api(api).list_node(_preload_content=False))["items"]
    nodes = {n["metadata"]["name"]: n for n in listed}
    for spec in specs:
        node = nodes.get(spec.name)
        if node is None:
            raise core.NotYet(f"node {spec.name} not registered yet (have {sorted(nodes)})")
        conditions = {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}
        if conditions.get("Ready") != "True":
            raise core.NotYet(f"node {spec.name} Ready={conditions.get('Ready')}")
        # Ready is not yet schedulable: a kubelet registers its Node with the not-ready NoSchedule taint, and the node
        # lifecycle controller removes it on a later pass (k8s.io/kubernetes pkg/controller/nodelifecycle,
        # doNoScheduleTaintingPass). A test that created a pod in between saw "6 node(s) had untolerated taint
        # {node.kubernetes.io/not-ready: }" instead of its own reason (tests/sim/test_cluster_e2e.py, xdist gw1).
        held = [t["key"] for t in (node.get("spec") or {}).get("taints") or []
                if t.get("key") in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]
        if held:
            raise core.NotYet(f"node {spec.name} still tainted {held}")
        for resource, count in spec.devices.items():  # GPUs and TPUs, once their fake plugins registered
            have = (node["status"].get("allocatable") or {}).get(resource)
            if have != str(count):
                raise core.NotYet(f"node {spec.name} allocatable {resource}={have}")
    return nodes


@contextlib.contextmanager
def running_cluster(*, fleet: fleet_mod.NodeFleet | None = None, t: Timeouts | None = None) -> Iterator[Sim]:
    """The default layout (4 GPU nodes with 8 GPUs in zone-a/zone-b, 2 CPU nodes), or `fleet`'s nodes.

    A `fleet` given here is run as extra controllers (SimCluster then runs no fleet of its own, and
    allocates ClusterIPs from the fleet's network) and closed after the cluster stopped.
    """
    timeouts = t or Timeouts()
    kwargs: dict[str, Any] = {}
    specs = layout.default_layout()
    if fleet is not None:
        kwargs = {"controllers": simc.default_controllers() + fleet.controllers(), "nodes": [],
                  "pod_network": fleet.pod_network}
        specs = fleet.specs
    try:
        with simc.RunningSimCluster(**kwargs) as running:
            api = config.new_client_from_config(config_file=str(running.kubeconfig))
            try:
                sim = Sim(running, api, timeouts, fleet if fleet is not None else running.cluster.fleet)  # type: ignore[union-attr]
                # Nodes register, and GPU plugins register with their kubelets, within a few seconds
                # on an idle machine; `pods_running` leaves room for a loaded one.
                sim.nodes = core.wait_until(lambda: _nodes_ready(api, specs), what="every simulated node to be Ready",
                                            timeout=timeouts.pods_running, poll=timeouts.poll_interval)
                yield sim
            finally:
                api.close()
    finally:
        if fleet is not None:
            fleet.close()


def _pods_left(api: client.ApiClient, namespace: str) -> None:
    left = [p["metadata"]["name"] for p in observe.pods(api, namespace)]
    if left:
        raise core.NotYet(f"pods still present: {sorted(left)}")


@contextlib.contextmanager
def fresh_namespace(sim: Sim, test_name: str, *, wait_for_pods_gone: bool = False,
                   probe_configmap: bool = True) -> Iterator[str]:
    """A fresh namespace (with the probe ConfigMap), deleted at the end.

    With `wait_for_pods_gone`, the end also waits (bounded by `namespace_deleted`) until no pod of
    the namespace is left, so that their resources (GPUs) are free for the next test.
    """
    base = re.sub(r"[^a-z0-9-]", "-", test_name.lower())[:28].strip("-")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"{base}-{worker}-{secrets.token_hex(2)}"[:63].strip("-")
    api = client.CoreV1Api(sim.api)
    api.create_namespace({"metadata": {"name": name}})
    if probe_configmap:
        api.create_namespaced_config_map(name, workloads.probe_configmap())
    try:
        yield name
    finally:
        with contextlib.suppress(client.ApiException):
            api.delete_namespace(name, propagation_policy="Background")
        if wait_for_pods_gone:
            core.wait_until(lambda: _pods_left(sim.api, name), what=f"the pods of namespace {name} to be gone",
                            timeout=sim.t.namespace_deleted, poll=sim.t.poll_interval,
                            describe=lambda: observe.describe_namespace(sim.api, name, None))


def events_for(api: client.ApiClient, namespace: str, name: str) -> list[Obj]:
    """core/v1 Events whose involvedObject is `name` in `namespace`."""
    items = observe.raw(client.CoreV1Api(api).list_namespaced_event(namespace, _preload_content=False))["items"]
    return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]
