"""Deletion (docs/lws-contract.md sections 2.7, 4.12): deleting an LWS removes everything it created.

There is no finalizer: owner references carry the cascade, LWS -> leader StatefulSet -> leader pods ->
worker StatefulSets -> worker pods (plus Services and ControllerRevisions). Foreground deletion (what
the upstream e2e uses) completes only once every dependent that existed when it began is gone (an object
a controller created meanwhile is collected after); background deletion gets there too.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubernetes import client

from conformance.harness import LWSHarness, Obj
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import observe


def _assert_gone(lws: LWSHarness, name: str) -> None:
    """LeaderWorkerSet `name` is gone now (a background delete removes it at once: no finalizer)."""
    try:
        lws.get(name)
    except client.ApiException as exc:
        if exc.status == 404:
            return
        raise
    raise AssertionError(f"LeaderWorkerSet {name} still exists")


def _left(lws: LWSHarness) -> dict[str, dict[str, str]]:
    """Every pod, StatefulSet, Service and ControllerRevision in the namespace, by kind, as {name: uid}. The
    test's namespace holds only what the LWS made, so everything is counted, not only objects carrying its
    name label: an object that lost the label (or never had it) must go too."""
    def by_name(items: Iterable[Obj]) -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["uid"] for o in items}
    revisions = observe.raw(lws.apps.list_namespaced_controller_revision(lws.namespace, _preload_content=False))
    return {"pods": by_name(observe.pods(lws.api, lws.namespace)),
            "statefulsets": by_name(lws.statefulsets().values()),
            "services": by_name(lws.services().values()),
            "controllerrevisions": by_name(revisions["items"])}


def _nothing_left(lws: LWSHarness, name: str) -> None:
    """No pod, StatefulSet, Service or ControllerRevision remains in the namespace (`_left`)."""
    left = {kind: sorted(objs) for kind, objs in _left(lws).items()}
    assert not any(left.values()), f"objects left after deleting {name}: {left}"


def _everything_must_be_collected(lws: LWSHarness, name: str) -> None:
    """Wait (delete) until the garbage collector has removed every object of `name` (`_nothing_left`)."""
    def everything_collected() -> None:
        _nothing_left(lws, name)
    lws.wait(everything_collected, what=f"every object of {name} to be garbage-collected", within="delete",
             name=name)


@conformance(short_name="ForegroundDeletionRemovesEverything", features={Feature.DELETION},
             description="A foreground delete completes, and no StatefulSet, pod, Service or revision of the LWS "
                         "remains (4.12).")
def test_foreground_deletion_removes_everything(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("fg", replicas=2, size=2))
    lws.ready("fg", replicas=2, size=2)
    before = _left(lws)
    lws.delete("fg", propagation="Foreground")
    lws.lws_must_be_gone("fg")
    # Foreground deletion removes the owner only after the garbage collector has deleted every dependent it knew
    # of whose ownerReference blocks owner deletion (kubernetes/kubernetes pkg/controller/garbagecollector,
    # processDeletingDependentsItem), so each object that existed before the delete is gone by now, by UID.
    survivors = {kind: sorted(n for n, uid in objs.items() if uid in before[kind].values())
                 for kind, objs in _left(lws).items()}
    assert not any(survivors.values()), \
        f"the LWS went while objects it owned before the foreground delete remain: {survivors}"
    # An object a controller created while the delete was in flight (its informer had not yet seen the
    # deletionTimestamp) is an orphan the collector removes afterwards: wait for that, do not require it now.
    _everything_must_be_collected(lws, "fg")


@conformance(short_name="BackgroundDeletionRemovesEverything", features={Feature.DELETION},
             description="After a background delete, every object of the LWS is eventually removed by garbage "
                         "collection (4.12).")
def test_background_deletion_removes_everything(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("bg", replicas=2, size=2, network={"subdomainPolicy": "UniquePerReplica"}))
    lws.ready("bg", replicas=2, size=2)
    lws.delete("bg", propagation="Background")
    _everything_must_be_collected(lws, "bg")
    _assert_gone(lws, "bg")
