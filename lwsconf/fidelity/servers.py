"""Starting the two API servers a corpus runs against, each as a context manager yielding an Endpoint.

* the sim: `RunningSimCluster` with no nodes, and either no controllers (API-only scenarios) or the
  control-plane controllers kube-controller-manager also runs (garbage collector, namespace,
  StatefulSet, Deployment, ReplicaSet, DaemonSet, EndpointSlice, Endpoints, Job) and the scheduler; no nodes on either
  side, so pods stay unscheduled and scenarios fabricate pod status as envtest-style tests do;
* the real one: `lwsconf.controlplane.local`'s control plane: etcd + kube-apiserver only for API-only
  scenarios, with kube-controller-manager and kube-scheduler for controller scenarios.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from lwsconf.controlplane import versions
from lwsconf.controlplane.local import LocalControlPlane, StartError
from lwsconf.fidelity.client import Endpoint

SIM_CONTROLLERS = ("garbage-collector", "namespace-controller", "statefulset-controller", "deployment-controller",
                   "replicaset-controller", "daemonset-controller", "endpointslice-controller", "endpoints-controller",
                   "scheduler", "job-controller")


class NotBuilt(Exception):
    """The pinned release's binaries are not in the cache; the message is the build command."""


@contextlib.contextmanager
def sim(controllers: bool) -> Iterator[Endpoint]:
    from lwsconf.sim import cluster as sim_cluster

    chosen = [(n, f) for n, f in sim_cluster.default_controllers() if controllers and n in SIM_CONTROLLERS]
    with sim_cluster.RunningSimCluster(nodes=[], controllers=chosen) as running:
        endpoint = Endpoint("sim", running.kubeconfig)
        try:
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
