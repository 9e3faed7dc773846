"""Named waits on LeaderWorkerSets and their groups (`<subject>_must_<predicate>`).

Each wait polls through the official client with a named timeout from `Timeouts`, and on timeout
shows the namespace's LWS status, StatefulSets, pods and events (`observe.describe_namespace`).
Conditions are matched on type+status and observedGeneration, never on message text (trap T8).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from lwsconf import lwsapi
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, observe

NAME, GROUP_INDEX, WORKER_INDEX = lwsapi.NAME, lwsapi.GROUP_INDEX, lwsapi.WORKER_INDEX
REVISION = lwsapi.TEMPLATE_REVISION_HASH


@dataclass(frozen=True)
class Group:
    """One group as observed: its pods by worker index (0 = leader)."""

    index: int
    pods: dict[int, dict[str, Any]]

    @property
    def uids(self) -> set[str]:
        return {p["metadata"]["uid"] for p in self.pods.values()}

    @property
    def ready(self) -> bool:
        return all(observe.pod_ready(p) for p in self.pods.values())

    def revisions(self) -> set[str]:
        return {(p["metadata"].get("labels") or {}).get(REVISION, "") for p in self.pods.values()}


def condition(lws: dict[str, Any], ctype: str) -> str | None:
    for cond in (lws.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return str(cond.get("status"))
    return None


def conditions(lws: dict[str, Any]) -> dict[str, str]:
    """Each status condition's type and status (the only parts a test may compare: trap T8)."""
    return {c["type"]: c["status"] for c in (lws.get("status") or {}).get("conditions") or []}


def stale_conditions(lws: dict[str, Any]) -> list[str]:
    """`<type> observedGeneration <value or missing>` for each status condition whose observedGeneration is not
    the LWS's metadata.generation (4.5: every status write sets it on every condition, True or False, changed or
    not); a condition without the field is stale, never taken for current."""
    generation = lws["metadata"].get("generation")
    return [f"{c.get('type')} observedGeneration {c.get('observedGeneration', 'missing')}"
            for c in (lws.get("status") or {}).get("conditions") or [] if c.get("observedGeneration") != generation]


def one_new_revision(found: dict[int, Group], *, replicas: int, size: int, old: set[str]) -> str:
    """The revision every group is on once groups 0..replicas-1 each have `size` ready pods on one revision not
    in `old` (a missing key is no revision); NotYet before. The pod count matters: a group whose new leader is
    up before its worker StatefulSet made the workers would look rolled out (CI run of a82b173). No status is
    read, so a check made under traffic or across a controller restart stays on what the pods show."""
    revisions = {r for g in found.values() for r in g.revisions()}
    behind = {i: f"{len(g.pods)}/{size} pods on {sorted(g.revisions())}, ready={g.ready}" for i, g in found.items()
              if len(g.revisions()) != 1 or g.revisions() & (old | {""}) or not g.ready or len(g.pods) != size}
    if behind or sorted(found) != list(range(replicas)) or len(revisions) != 1:
        raise core.NotYet(f"groups {sorted(found)} on revisions {sorted(revisions)} (old: {sorted(old)}), want "
                          f"0..{replicas - 1} on one new revision; not yet updated and ready: {behind}")
    return revisions.pop()


def groups(api: client.ApiClient, namespace: str, name: str) -> dict[int, Group]:
    """Live (not terminating) pods of an LWS, grouped by the group index in their names."""
    by_group: dict[int, dict[int, dict[str, Any]]] = collections.defaultdict(dict)
    for pod in observe.pods(api, namespace, f"{NAME}={name}"):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        suffix = pod["metadata"]["name"][len(name) + 1:].split("-")
        if not suffix or not suffix[0].isdigit():
            continue
        worker = int(suffix[1]) if len(suffix) > 1 and suffix[1].isdigit() else 0
        by_group[int(suffix[0])][worker] = pod
    return {i: Group(i, members) for i, members in sorted(by_group.items())}


def _describe(api: client.ApiClient, namespace: str, name: str) -> Any:
    return lambda: observe.describe_namespace(api, namespace, name)


def lws_must_be_available(api: client.ApiClient, namespace: str, name: str, t: Timeouts,
                          *, timeout: float | None = None) -> dict[str, Any]:
    """Available=True for the current generation (status and every condition), with every group ready; returns
    the LWS."""
    def check() -> dict[str, Any]:
        lws = observe.get_lws(api, namespace, name)
        status = lws.get("status") or {}
        want = lws["spec"].get("replicas", 1)
        if status.get("observedGeneration") != lws["metadata"].get("generation"):
            raise core.NotYet(f"observedGeneration {status.get('observedGeneration')} != generation "
                              f"{lws['metadata'].get('generation')}")
        if condition(lws, "Available") != "True":
            raise core.NotYet(f"Available is {condition(lws, 'Available')}")
        stale = stale_conditions(lws)
        if stale:
            raise core.NotYet(f"conditions not at generation {lws['metadata'].get('generation')}: {stale} (4.5)")
        # An absent counter is 0: the status counters are int32 with omitempty (contract 1.4).
        if status.get("readyReplicas", 0) < want:
            raise core.NotYet(f"readyReplicas {status.get('readyReplicas', 0)} < {want}")
        return lws
    return core.wait_until(check, what=f"LeaderWorkerSet {namespace}/{name} to be Available",
                           timeout=timeout or t.lws_available, poll=t.poll_interval,
                           describe=_describe(api, namespace, name))


def lws_must_have_condition(api: client.ApiClient, namespace: str, name: str, ctype: str, status: str,
                            t: Timeouts) -> dict[str, Any]:
    def check() -> dict[str, Any]:
        lws = observe.get_lws(api, namespace, name)
        seen = condition(lws, ctype)
        if seen != status:
            raise core.NotYet(f"{ctype} is {seen}")
        return lws
    return core.wait_until(check, what=f"LeaderWorkerSet {namespace}/{name} condition {ctype}={status}",
                           timeout=t.lws_available, poll=t.poll_interval, describe=_describe(api, namespace, name))


def groups_must_be_ready(api: client.ApiClient, namespace: str, name: str, *, replicas: int, size: int,
                         t: Timeouts, timeout: float | None = None) -> dict[int, Group]:
    """Exactly groups 0..replicas-1 exist, each with `size` Running+Ready pods."""
    def check() -> dict[int, Group]:
        found = groups(api, namespace, name)
        if sorted(found) != list(range(replicas)):
            raise core.NotYet(f"groups present: {sorted(found)}, want 0..{replicas - 1}")
        for index, group in found.items():
            if len(group.pods) != size or not group.ready:
                raise core.NotYet(f"group {index}: {len(group.pods)}/{size} pods, ready={group.ready}")
        return found
    return core.wait_until(check, what=f"{replicas} ready groups of {size} pods in {namespace}/{name}",
                           timeout=timeout or t.lws_available, poll=t.poll_interval,
                           describe=_describe(api, namespace, name))


def group_must_be_recreated(api: client.ApiClient, namespace: str, name: str, index: int, old_uids: set[str], *,
                            size: int, t: Timeouts) -> Group:
    """Group `index` is back with `size` Ready pods, none of them a pod from `old_uids`."""
    def check() -> Group:
        group = groups(api, namespace, name).get(index)
        if group is None:
            raise core.NotYet(f"group {index} has no live pods")
        kept = group.uids & old_uids
        if kept:
            raise core.NotYet(f"group {index} still has original pods {sorted(u[:8] for u in kept)}")
        if len(group.pods) != size or not group.ready:
            raise core.NotYet(f"group {index}: {len(group.pods)}/{size} new pods, ready={group.ready}")
        return group
    return core.wait_until(check, what=f"group {index} of {namespace}/{name} to be recreated",
                           timeout=t.group_recreated, poll=t.poll_interval, describe=_describe(api, namespace, name))


def lws_kind_must_accept_writes(api: client.ApiClient, *, timeout: float, poll: float) -> None:
    """Wait until a server-side dry-run create of a LeaderWorkerSet gets past mutating admission.

    An Established CRD that already answers lists can still refuse writes: kube-apiserver's
    MutatingAdmissionPolicy dispatcher answers 503 "Resource kind ... not found. There can be a delay between
    when CustomResourceDefinitions are created and when they are available" until its type converter has the
    new kind (apiserver `pkg/admission/plugin/policy/mutating/dispatcher.go`; seen on fresh local clusters,
    2026-12-03). Only 404 and 503 mean "not yet": the probe is deliberately incomplete, so any later answer
    (a 422 from validation, even a 201) shows the write path is open. Nothing is stored (dryRun=All).
    """
    custom = client.CustomObjectsApi(api)
    probe = {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND,
             "metadata": {"generateName": "lwsconf-write-probe-"}, "spec": {}}
    last: list[str] = ["not tried yet"]

    def check() -> None:
        try:
            custom.create_namespaced_custom_object(lwsapi.GROUP, lwsapi.VERSION, "default", lwsapi.PLURAL,
                                                   probe, dry_run="All")
        except client.ApiException as exc:
            last[0] = f"HTTP {exc.status}: {(exc.body or '')[:300]}"
            if exc.status in (404, 503):
                raise core.NotYet(f"a dry-run LeaderWorkerSet create answered {last[0]}") from None

    core.wait_until(check, what="LeaderWorkerSet creates to get past admission (dry run)", timeout=timeout,
                    poll=poll, describe=lambda: f"last answer: {last[0]}")
