"""The only I/O of `lwsconf diff-impls`: a fresh cluster per side, the implementation on it, the scenarios' steps,
named waits, and snapshots read through the Kubernetes API.

One side is one implementation on its own fresh cluster (`cluster`: the sim, `RunningSimCluster` with default
nodes, or `local`, the real control plane of a pinned release with the sim's nodes), set up as the pytest
plugin does (`lwsconf.reference` for the reference, in-process or as a child process;
`lwsconf.upstream.run.upstream_local` for upstream's manager), then every scenario in its own namespace,
one after another. Waits are named and bounded by `Waits` (overridable on the command line).
"""

from __future__ import annotations

import contextlib
import copy
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kubernetes import client, config

from lwsconf import reference, workloads
from lwsconf.implcompare import diff, normalise, steady
from lwsconf.implcompare.model import STEADY, DeletePod, Obj, PatchLWS, Scenario, SideRun, Snapshot
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, observe

IMPLS = ("reference", "reference-process", "upstream-local[:VERSION|PATH]")


@dataclass(frozen=True)
class Waits:
    """The named waits' bounds, in seconds."""

    steady: float = 120.0
    """Steady state after creation or a step (`steady.problem` clear and the objects settled)."""
    settle: float = 2.0
    """How long the normalised objects must stay the same before they count as settled."""
    step_seen: float = 30.0
    """A step acted on: some StatefulSet or pod changed after a patch or a deletion."""
    poll: float = 0.5
    """Seconds between two reads of the namespace."""


class ImplError(Exception):
    """The implementation cannot be set up; the message says why and what to do."""


def _api(kubeconfig: Path) -> client.ApiClient:
    api: client.ApiClient = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    return api


@contextlib.contextmanager
def implementation(name: str, kubeconfig: Path, timeouts: Timeouts, out: TextIO) -> Iterator[None]:
    """`name` running against the cluster of `kubeconfig` for the block (as `--lws-impl=name` would)."""
    if name in ("reference", "reference-process"):
        api = _api(kubeconfig)
        try:
            reference.install_crd(api, timeouts)
            reference.install_mutating_policy(api)
        except reference.InstallError as exc:
            raise ImplError(str(exc)) from None
        finally:
            api.close()  # type: ignore[no-untyped-call]
        if name == "reference":
            from lwsconf.reconciler import run as reconciler_run

            with reconciler_run.RunningReconciler(kubeconfig):
                yield
        else:
            with reference.ReferenceProcess(kubeconfig, None, timeouts):
                yield
        return
    if name == "upstream-local" or name.startswith("upstream-local:"):
        from lwsconf.upstream import run as upstream_run

        try:
            with upstream_run.upstream_local(name.partition(":")[2] or None, kubeconfig, None, timeouts, out):
                yield
        except upstream_run.UpstreamError as exc:
            raise ImplError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from None
        return
    raise ImplError(f"implementation {name!r} is not supported by diff-impls; use one of {', '.join(IMPLS)}")


def read_objects(api: client.ApiClient, namespace: str) -> list[Obj]:
    """Every object of the kinds compared in `namespace`, each carrying its `kind`."""
    apps, core_v1 = client.AppsV1Api(api), client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    lists: list[tuple[str, Any]] = [
        ("LeaderWorkerSet", custom.list_namespaced_custom_object(workloads.GROUP, workloads.VERSION, namespace,
                                                                 workloads.PLURAL, _preload_content=False)),
        ("StatefulSet", apps.list_namespaced_stateful_set(namespace, _preload_content=False)),
        ("ControllerRevision", apps.list_namespaced_controller_revision(namespace, _preload_content=False)),
        ("Pod", core_v1.list_namespaced_pod(namespace, _preload_content=False)),
        ("Service", core_v1.list_namespaced_service(namespace, _preload_content=False)),
        ("PersistentVolumeClaim", core_v1.list_namespaced_persistent_volume_claim(namespace, _preload_content=False)),
        ("Event", core_v1.list_namespaced_event(namespace, _preload_content=False)),
    ]
    objects = []
    for kind, response in lists:
        for item in observe.raw(response).get("items") or []:
            item["kind"] = kind
            objects.append(item)
    return objects


class _Side:
    """One scenario on one side: the API, the scenario, its token table, the last raw read."""

    def __init__(self, api: client.ApiClient, scenario: Scenario, waits: Waits) -> None:
        self.api, self.scenario, self.waits = api, scenario, waits
        self.tokens = normalise.Tokens()
        self.last: list[Obj] = []

    def describe(self) -> str:
        rows = [f"{o['kind']}/{o['metadata']['name']} rv={o['metadata'].get('resourceVersion')}" for o in self.last
                if o.get("kind") in ("LeaderWorkerSet", "StatefulSet", "Pod")]
        return "\n".join(rows) or "(nothing read)"

    def read(self) -> list[Obj]:
        self.last = read_objects(self.api, self.scenario.namespace)
        return self.last

    def steady(self, expected_pods: int, what: str) -> Snapshot:
        """Until `steady.problem` is clear and the normalised objects stayed the same for `Waits.settle`."""
        settled: dict[str, Any] = {"snap": None, "since": 0.0}

        def settled_steady_state() -> Snapshot:
            """Steady (`steady.problem`) and unchanged, normalised, for the settle period."""
            raw = self.read()
            found = steady.problem(raw, self.scenario.lws_name, expected_pods)
            if found:
                settled["snap"] = None
                raise core.NotYet(found)
            snap = normalise.snapshot(raw, self.scenario.lws_name, copy.deepcopy(self.tokens))
            now = time.monotonic()
            if snap != settled["snap"]:
                changed = diff.differences("", "", settled["snap"] or {}, snap)[:1]
                settled["snap"], settled["since"] = snap, now
                raise core.NotYet(f"objects changed ({changed[0].kind}/{changed[0].obj} {changed[0].path})"
                                  if changed else "objects changed")
            if now - settled["since"] < self.waits.settle:
                raise core.NotYet(f"settling ({now - settled['since']:.1f} of {self.waits.settle:g} s unchanged)")
            return snap

        core.wait_until(settled_steady_state, what=f"{self.scenario.namespace}: steady state {what}",
                        timeout=self.waits.steady, poll=self.waits.poll, describe=self.describe)
        return normalise.snapshot(self.last, self.scenario.lws_name, self.tokens)

    def act(self, action: PatchLWS | DeletePod) -> None:
        """Do the step, then wait until a StatefulSet or pod changed (the implementation acted on it)."""
        before = steady.fingerprint(self.read())
        ns = self.scenario.namespace
        if isinstance(action, PatchLWS):
            client.CustomObjectsApi(self.api).patch_namespaced_custom_object(
                workloads.GROUP, workloads.VERSION, ns, workloads.PLURAL, self.scenario.lws_name, action.patch)
        else:
            client.CoreV1Api(self.api).delete_namespaced_pod(action.name, ns)

        def step_acted_on() -> None:
            """Some StatefulSet or pod differs (uid or resourceVersion) from before the step."""
            if steady.fingerprint(self.read()) == before:
                raise core.NotYet("no StatefulSet or pod changed yet")

        core.wait_until(step_acted_on, what=f"{ns}: the step acted on", timeout=self.waits.step_seen,
                        poll=self.waits.poll / 2, describe=self.describe)


def _setup(api: client.ApiClient, scenario: Scenario) -> None:
    core_v1 = client.CoreV1Api(api)
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=scenario.namespace)))
    configmap: Any = workloads.probe_configmap()  # the client sends a dict body as it is
    core_v1.create_namespaced_config_map(scenario.namespace, configmap)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        workloads.GROUP, workloads.VERSION, scenario.namespace, workloads.PLURAL, copy.deepcopy(scenario.lws))


def run_scenario(api: client.ApiClient, scenario: Scenario, waits: Waits, result: SideRun, out: TextIO) -> None:
    """The scenario's snapshots into `result.snapshots[name]`, or the first wait that failed into `result.failures`."""
    side = _Side(api, scenario, waits)
    snaps: dict[str, Snapshot] = {}
    result.snapshots[scenario.name] = snaps
    started = time.monotonic()
    try:
        _setup(api, scenario)
        snaps[STEADY] = side.steady(scenario.expected_pods[0], "after creation")
        for step, pods in zip(scenario.steps, scenario.expected_pods[1:], strict=True):
            side.act(step.action)
            snaps[step.name] = side.steady(pods, f"after {step.name}")
    except (core.WaitTimeout, client.ApiException) as exc:
        result.failures[scenario.name] = str(exc).splitlines()[0]
        print(f"  {result.impl}: {scenario.name}: FAILED: {exc}", file=out, flush=True)
    else:
        print(f"  {result.impl}: {scenario.name}: {len(snaps)} snapshots in {time.monotonic() - started:.1f} s",
              file=out, flush=True)
    finally:
        # The LWS goes (its pods stop using the machine's cores); the namespace stays until the cluster stops, so no
        # controller meets a terminating namespace mid-reconcile (403s the log would be full of).
        with contextlib.suppress(client.ApiException):
            client.CustomObjectsApi(api).delete_namespaced_custom_object(
                workloads.GROUP, workloads.VERSION, scenario.namespace, workloads.PLURAL, scenario.lws_name,
                propagation_policy="Background")


CLUSTERS = ("sim", "local")


def preflight(kind: str, kubernetes_version: str | None) -> str | None:
    """Why a cluster of `kind` cannot start here (one line saying what to do), or None."""
    if kind == "sim":
        return None
    if kind != "local":
        return f"--cluster={kind}: use one of {', '.join(CLUSTERS)}"
    from lwsconf.controlplane import build, versions

    try:
        release = versions.resolve(kubernetes_version)
    except versions.UnknownVersion as exc:
        return f"--kubernetes-version: {exc}"
    if build.installed(release) is None:
        return (f"--cluster=local: no Kubernetes {release.kubernetes} control plane is built: run `lwsconf "
                f"controlplane build --kubernetes-version {release.kubernetes}` (needs Go), or use --cluster=sim")
    return None


@contextlib.contextmanager
def cluster(kind: str, kubernetes_version: str | None = None) -> Iterator[Path]:
    """A fresh cluster of `kind` for the block; yields its kubeconfig. ImplError says what to build for local."""
    if kind == "sim":
        from lwsconf.sim import cluster as sim_cluster

        with sim_cluster.RunningSimCluster() as running:
            yield running.kubeconfig
        return
    missing = preflight(kind, kubernetes_version)
    if missing:
        raise ImplError(missing)
    from lwsconf.controlplane import local, versions
    from lwsconf.localcluster.cluster import LocalCluster

    release = versions.resolve(kubernetes_version)
    try:
        real = LocalCluster(release).start()
    except (local.StartError, core.WaitTimeout) as exc:
        raise ImplError(f"--cluster=local: {exc}") from None
    try:
        yield real.kubeconfig
    finally:
        try:
            real.stop()
        except TimeoutError:  # the side's snapshots are complete: say so, and keep them
            print("diff-impls: warning: the local cluster did not stop within its grace period (a loaded machine); "
                  "what is left of it is removed when this process exits", file=sys.stderr, flush=True)


def run_side(impl: str, scenarios: Sequence[Scenario], waits: Waits, out: TextIO = sys.stderr, *,
             on: str = "sim", kubernetes_version: str | None = None) -> SideRun:
    """Every scenario against `impl` on a fresh cluster of kind `on` (stopped afterwards)."""
    result = SideRun(impl)
    timeouts = Timeouts()
    with cluster(on, kubernetes_version) as kubeconfig, implementation(impl, kubeconfig, timeouts, out):
        api = _api(kubeconfig)
        try:
            for scenario in scenarios:
                run_scenario(api, scenario, waits, result, out)
        finally:
            api.close()  # type: ignore[no-untyped-call]
    return result
