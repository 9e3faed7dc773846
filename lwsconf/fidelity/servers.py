"""Starting the two API servers a corpus runs against, each as a context manager yielding an Endpoint.

* the sim: `RunningSimCluster` with no nodes, and either no controllers (API-only scenarios) or the
  control-plane controllers kube-controller-manager also runs (garbage collector, namespace,
  StatefulSet, Deployment, ReplicaSet, DaemonSet, EndpointSlice, Endpoints, Job) and the scheduler; no nodes on either
  side, so pods stay unscheduled and scenarios fabricate pod status as envtest-style tests do;
* the real one: `lwsconf.controlplane.local`'s control plane: etcd + kube-apiserver only for API-only
  scenarios, with kube-controller-manager and kube-scheduler for controller scenarios;
* node scenarios (`Scenario.nodes`): the sim with the same controllers and simulated nodes
  (`sim(controllers=True, nodes=True)`), against `lwsconf.realnodes`' RealNodeCluster (`real_nodes`): the real
  control plane with real kubelets, containerd, runc, CNI and kube-proxy. Both get the nodes of `NODES`, same
  names and labels; the GPU node's `nvidia.com/gpu` comes from the same fake device plugin on both sides
  (`lwsconf.deviceplugin`). Real nodes need root and `make nodes`: `nodes_unavailable` says why not in one line.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lwsconf.controlplane import versions
from lwsconf.controlplane.local import LocalControlPlane, StartError
from lwsconf.fidelity.client import Endpoint
from lwsconf.fidelity.model import Step
from lwsconf.fidelity.run import build_request
from lwsconf.waits.core import NotYet, wait_until

if TYPE_CHECKING:
    from lwsconf.sim.nodes import layout

SIM_CONTROLLERS = ("garbage-collector", "namespace-controller", "statefulset-controller", "deployment-controller",
                   "replicaset-controller", "daemonset-controller", "endpointslice-controller", "endpoints-controller",
                   "scheduler", "job-controller", "serviceaccount-controller",
                   "root-ca-certificate-publisher-controller")


@dataclass(frozen=True)
class FidelityNode:
    """A node of node scenarios, as both sides get it."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    devices: dict[str, int] = field(default_factory=dict)


NODE_LABEL = "lwsconf.dev/fidelity-node"
NODES = (FidelityNode("fid-cpu", {NODE_LABEL: "cpu"}),
         FidelityNode("fid-gpu", {NODE_LABEL: "gpu"}, {"nvidia.com/gpu": 2}))
"""Two nodes: scenarios place pods with a nodeSelector on NODE_LABEL, so which node runs a pod is never the
schedulers' choice (their scoring differs and is not what node scenarios compare)."""
SIM_NODE_CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "110"}
"""The simulated nodes' capacity besides devices (a real node's is the host's; node scenarios ask little)."""


SIM_NODES_READY = 60.0
"""Seconds for the simulated nodes to be Ready without the not-ready taint (as RealNodeCluster waits for its own)."""


def _nodes_must_be_schedulable(endpoint: Endpoint) -> bool:
    answer = endpoint.send(build_request(Step("nodes", "GET", "/api/v1/nodes"), {}))
    items = answer.body.get("items", []) if answer.code == 200 and isinstance(answer.body, dict) else []
    schedulable = {n["metadata"]["name"] for n in items
                   if any(c.get("type") == "Ready" and c.get("status") == "True" for c in n["status"].get("conditions")
                          or [])
                   and not (n.get("spec") or {}).get("taints")}
    missing = [n.name for n in NODES if n.name not in schedulable]
    if missing:
        raise NotYet(f"not yet Ready and untainted: {', '.join(missing)}")
    return True


class NotBuilt(Exception):
    """The pinned release's binaries are not in the cache; the message is the build command."""


def sim_node_specs() -> list[layout.NodeSpec]:
    """NODES as the sim's layout: the same names and labels, devices as capacity (served by the fleet's fake
    device plugins, as the real nodes' are)."""
    from lwsconf.sim.nodes import layout

    return [layout.NodeSpec(n.name, dict(n.labels), {**SIM_NODE_CAPACITY, **{r: str(c) for r, c in n.devices.items()}})
            for n in NODES]


@contextlib.contextmanager
def sim(controllers: bool, nodes: bool = False) -> Iterator[Endpoint]:
    from lwsconf.sim import cluster as sim_cluster

    # with nodes, every controller (the real side runs all of kube-controller-manager, and kube-proxy on its nodes;
    # the node-lifecycle controller is what lifts a new node's not-ready taint)
    chosen = [(n, f) for n, f in sim_cluster.default_controllers() if nodes or controllers and n in SIM_CONTROLLERS]
    with sim_cluster.RunningSimCluster(nodes=sim_node_specs() if nodes else [], controllers=chosen) as running:
        endpoint = Endpoint("sim", running.kubeconfig)
        try:
            if nodes:
                wait_until(lambda: _nodes_must_be_schedulable(endpoint), what="the simulated nodes schedulable",
                           timeout=SIM_NODES_READY, poll=0.2)
            yield endpoint
        finally:
            endpoint.close()


def release_or_not_built(version: str | None) -> versions.Release:
    """The pinned release (UnknownVersion for another), NotBuilt when its binaries are missing."""
    from lwsconf.controlplane import build

    release = versions.resolve(version)
    if build.installed(release) is None:
        raise NotBuilt(f"the Kubernetes {release.kubernetes} control plane is not built: run "
                       f"`lwsconf controlplane build --kubernetes-version {release.kubernetes}` (needs Go)")
    return release


@contextlib.contextmanager
def real(release: versions.Release, controllers: bool) -> Iterator[Endpoint]:
    try:  # without controllers: no controller may change an object between two scripted requests (the sim runs none)
        plane = LocalControlPlane.from_cache(release, controllers=controllers)
    except StartError as exc:
        raise NotBuilt(str(exc)) from None
    with plane:
        endpoint = Endpoint("kube-apiserver", plane.kubeconfig)
        try:
            yield endpoint
        finally:
            endpoint.close()


def nodes_unavailable(release: versions.Release) -> str | None:
    """Why real nodes cannot run here (one line), or None: they need root and the node build (`make nodes`)."""
    from lwsconf.realnodes import build as nodes_build

    if os.geteuid() != 0:
        return "real nodes need root"
    if nodes_build.installed(release) is None:
        return f"the node parts of Kubernetes {release.kubernetes} are not built: run `make nodes`"
    return None


@contextlib.contextmanager
def real_nodes(release: versions.Release) -> Iterator[Endpoint]:
    """The real control plane with a real kubelet per node of NODES (NotBuilt when it cannot start)."""
    from lwsconf.realnodes.cluster import NodeSpec, RealNodeCluster, RealNodesError

    cluster = RealNodeCluster(release, [NodeSpec(n.name, dict(n.labels), dict(n.devices)) for n in NODES])
    try:
        cluster.start()
    except RealNodesError as exc:
        raise NotBuilt(str(exc)) from None
    try:
        endpoint = Endpoint("kube-apiserver+kubelet", cluster.kubeconfig)
        try:
            yield endpoint
        finally:
            endpoint.close()
    finally:
        cluster.stop()
