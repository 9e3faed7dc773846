"""Deletion (docs/lws-contract.md sections 2.7, 4.12): deleting an LWS removes everything it created.

There is no finalizer: owner references carry the cascade, LWS -> leader StatefulSet -> leader pods ->
worker StatefulSets -> worker pods (plus Services and ControllerRevisions). Foreground deletion (what
the upstream e2e uses) completes only once every dependent is gone; background deletion gets there too.
"""

from __future__ import annotations

from conformance.harness import NAME, LWSHarness
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import core, observe


def _gone(lws: LWSHarness, name: str) -> None:
    try:
        lws.get(name)
        raise core.NotYet(f"LeaderWorkerSet {name} still exists")
    except Exception as exc:
        if getattr(exc, "status", None) != 404:
            raise


def _leftovers(lws: LWSHarness, name: str) -> None:
    left = {
        "pods": sorted(p["metadata"]["name"] for p in observe.pods(lws.api, lws.namespace)),
        "statefulsets": sorted(lws.statefulsets()),
        "services": sorted(s for s, obj in lws.services().items() if (obj["metadata"].get("labels") or {}).get(NAME)),
        "controllerrevisions": sorted(r["metadata"]["name"] for r in lws.revisions(name)),
    }
    assert not any(left.values()), f"objects left after deleting {name}: {left}"


@conformance(short_name="ForegroundDeletionRemovesEverything", features={Feature.DELETION},
             description="A foreground delete completes, and no StatefulSet, pod, Service or revision of the LWS remains (4.12).")
def test_foreground_deletion_removes_everything(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("fg", replicas=2, size=2))
    lws.ready("fg", replicas=2, size=2)
    lws.delete("fg", propagation="Foreground")
    lws.wait(lambda: _gone(lws, "fg"), what="LeaderWorkerSet fg to be deleted", timeout=lws.t.delete, name="fg")
    _leftovers(lws, "fg")


@conformance(short_name="BackgroundDeletionRemovesEverything", features={Feature.DELETION},
             description="After a background delete, every object of the LWS is eventually removed by garbage collection (4.12).")
def test_background_deletion_removes_everything(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("bg", replicas=2, size=2, network={"subdomainPolicy": "UniquePerReplica"}))
    lws.ready("bg", replicas=2, size=2)
    lws.delete("bg", propagation="Background")
    lws.wait(lambda: _leftovers(lws, "bg"), what="every object of bg to be garbage-collected", timeout=lws.t.delete,
             name="bg")
    _gone(lws, "bg")
