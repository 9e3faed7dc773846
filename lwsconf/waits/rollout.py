"""Waits for a rollout: the leader StatefulSet's revision, and "the rollout completed" in full.

A rollout's path (order, availability on the way, surge) is recorded by `lwsconf.waits.recorder`
and judged by `lwsconf.timeline.analysis`; these waits judge where it ends.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from lwsconf import lwsapi
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, lws, observe

REVISION = lwsapi.TEMPLATE_REVISION_HASH
Obj = dict[str, Any]


def leader_revision(api: client.ApiClient, namespace: str, name: str) -> str:
    """The revision key the leader StatefulSet currently carries."""
    sts = observe.raw(client.AppsV1Api(api).read_namespaced_stateful_set(name, namespace, _preload_content=False))
    return str((sts["metadata"].get("labels") or {}).get(REVISION, ""))


def rollout_must_complete(api: client.ApiClient, namespace: str, name: str, *, old: set[str], replicas: int,
                          size: int, t: Timeouts) -> str:
    """Every pod on one revision not in `old`, groups 0..replicas-1 ready (no surge left), LWS Available
    with updatedReplicas == readyReplicas == replicas for the current generation (status and every condition).
    Returns the new key."""
    def check() -> str:
        obj = observe.get_lws(api, namespace, name)
        status = obj.get("status") or {}
        if status.get("observedGeneration") != obj["metadata"].get("generation"):
            raise core.NotYet(f"observedGeneration {status.get('observedGeneration')} != "
                              f"{obj['metadata'].get('generation')}")
        found = lws.groups(api, namespace, name)
        revs = {r for g in found.values() for r in g.revisions()}
        if len(revs) != 1 or revs & (old | {""}):  # "": a pod without the label is on no revision (3.1)
            raise core.NotYet(f"pods on revisions {sorted(revs)} (old: {sorted(old)}; '' is a pod without "
                              f"{REVISION})")
        if sorted(found) != list(range(replicas)):
            raise core.NotYet(f"groups {sorted(found)}, want 0..{replicas - 1}")
        for index, group in found.items():
            if len(group.pods) != size or not group.ready:
                raise core.NotYet(f"group {index}: {len(group.pods)}/{size} pods, ready={group.ready}")
        counts = (status.get("updatedReplicas"), status.get("readyReplicas"))
        if counts != (replicas, replicas) or lws.condition(obj, "Available") != "True":
            raise core.NotYet(f"status updated/ready {counts}, Available={lws.condition(obj, 'Available')}")
        stale = lws.stale_conditions(obj)
        if stale:
            raise core.NotYet(f"conditions not at generation {obj['metadata'].get('generation')}: {stale} (4.5)")
        return revs.pop()
    return core.wait_until(check, what=f"the rollout of {namespace}/{name} to complete", timeout=t.rollout_complete,
                           poll=t.poll_interval, describe=lambda: observe.describe_namespace(api, namespace, name))
