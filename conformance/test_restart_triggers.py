"""What triggers a group restart and in which order the old group goes (docs/lws-contract.md section 4.2).

Two behaviours a reconciler can get wrong while every crash-and-recover test stays green:

* **An init container's restart is a restart.** The trigger reads `status.initContainerStatuses` as well as
  `status.containerStatuses`. Once a group runs, the init containers that can still restart are native
  sidecars (`restartPolicy: Always`), which the kubelet restarts in place while the pod stays Running; a
  regular init container has finished before the app containers started and cannot be crashed through the
  API afterwards. So the test crashes a worker's sidecar (a second probe on its own port,
  `workloads.with_sidecar`) and requires the whole group to be recreated.
* **The old workers are gone before the new leader exists.** The leader is deleted in the foreground: it
  keeps the `foregroundDeletion` finalizer while the garbage collector removes its worker StatefulSet and
  workers, and only then does the leader StatefulSet create the new `N-i`. The test slows the workers'
  termination (a preStop sleep, `workloads.slow_to_terminate`), watches every pod event in order and
  requires that no moment has a new leader beside an old worker. A leader deleted in the background
  goes at once, and its successor appears while the old workers still run their preStop hook.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes import client

from conformance.harness import NAME, LWSHarness, Obj
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import core, proxy
from lwsconf.waits.podwatch import PodWatch

FOREGROUND = "foregroundDeletion"
PRESTOP_SECONDS = 3
"""How long each old worker stays after its deletion: the window in which a background-deleted leader's
successor appears beside it (the sim's StatefulSet controller recreates a leader within milliseconds)."""


def _sidecar_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("initContainerStatuses") or []
    return sum(int(s["restartCount"]) for s in statuses if s["name"] == "sidecar")


@conformance(short_name="GroupRecreatedOnSidecarRestart", features={Feature.GROUP_RESTART},
             description="A native sidecar (init container with restartPolicy Always) crashing in a worker raises "
                         "its initContainerStatuses restartCount and recreates the whole group (4.2).")
def test_group_recreated_on_sidecar_restart(lws: LWSHarness) -> None:
    lws.create(workloads.with_sidecar(workloads.probe_lws("sidecar", replicas=1, size=2)))
    before = lws.ready("sidecar", replicas=1, size=2)[0]
    worker = before.pods[1]
    uid, pod_name = worker["metadata"]["uid"], worker["metadata"]["name"]

    def group_recreated() -> object:
        """Group 0 back with 2 Ready pods, none of the old ones; until then, what the crashed worker shows."""
        group = lws.groups("sidecar").get(0)
        if group is not None and not group.uids & before.uids and len(group.pods) == 2 and group.ready:
            return group
        try:
            pod = lws.pod(pod_name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            raise core.NotYet(f"group 0 not recreated yet ({pod_name} is gone)") from None
        same = pod["metadata"]["uid"] == uid
        raise core.NotYet(f"group 0 not recreated: {pod_name} is {'still' if same else 'no longer'} the crashed pod, "
                          f"its sidecar's initContainerStatuses restartCount is {_sidecar_restarts(pod)} "
                          "(a restart count above 0 there must recreate the group)")
    with lws.timeline("sidecar"):
        lws.step(f"sidecar of {pod_name} exited with code 1")
        reply = proxy.pod_get(lws.api, lws.namespace, pod_name, workloads.SIDECAR_PORT, "/exit", query={"code": "1"},
                              timeout=lws.t.request_timeout)
        assert reply.ok, f"the sidecar of {pod_name} did not take /exit on port {workloads.SIDECAR_PORT}: {reply}"
        lws.wait(group_recreated, what=f"group 0 recreated after the sidecar of {pod_name} crashed (4.2)",
                 within="group_recreated", name="sidecar")


@dataclass(frozen=True)
class _Seen:
    """One watch event of one pod, reduced to what the ordering claim needs."""

    event: str
    name: str
    uid: str
    finalizers: tuple[str, ...]
    deleting: bool

    def __str__(self) -> str:
        extra = f" deleting finalizers={list(self.finalizers)}" if self.deleting else ""
        return f"{self.event} {self.name} {self.uid[:8]}{extra}"


class _PodEvents:
    """Every watch event on LWS `name`'s pods, in the order the API server sent them, from the list at
    `start()` to `stop()`. A broken watch is an error of the record, never silently skipped: a missed event
    could hide exactly the overlap the test looks for."""

    def __init__(self, lws: LWSHarness, name: str) -> None:
        self.seen: list[_Seen] = []
        self.watch = PodWatch(lws.api, lws.namespace, f"{NAME}={name}", self._event, name="pod-events")

    def start(self) -> None:
        self.seen.extend(_seen("ADDED", p) for p in self.watch.start())

    def stop(self) -> list[_Seen]:
        self.watch.stop("the order of events is unknown")
        return list(self.seen)

    def _event(self, kind: str, pod: Obj) -> None:
        if kind != "BOOKMARK":
            self.seen.append(_seen(kind, pod))


def _seen(event: str, pod: Obj) -> _Seen:
    meta = pod["metadata"]
    return _Seen(event, meta["name"], meta["uid"], tuple(meta.get("finalizers") or ()),
                 bool(meta.get("deletionTimestamp")))


def _first_overlap(seen: list[_Seen], leader: str, old_leader: str, old_workers: set[str]) -> str | None:
    """The first moment a leader pod `leader` other than `old_leader` and an old worker both exist, if any."""
    alive: dict[str, _Seen] = {}
    for i, item in enumerate(seen):
        if item.event == "DELETED":
            alive.pop(item.uid, None)
        else:
            alive[item.uid] = item
        new_leader = next((s for s in alive.values() if s.name == leader and s.uid != old_leader), None)
        old = sorted(str(s) for s in alive.values() if s.uid in old_workers)
        if new_leader is not None and old:
            return f"after event {i} ({item}) the new leader {new_leader} existed beside old workers {old}"
    return None


@conformance(short_name="OldWorkersGoneBeforeNewLeader", features={Feature.GROUP_RESTART},
             description="A group restart removes the old group's workers before the new leader exists: the "
                         "leader is deleted in the foreground, so no moment has a new leader beside an old worker "
                         "(4.2).")
def test_old_workers_gone_before_new_leader(lws: LWSHarness) -> None:
    lws.create(workloads.slow_to_terminate(workloads.probe_lws("fg", replicas=1, size=3),
                                           prestop_seconds=PRESTOP_SECONDS))
    before = lws.ready("fg", replicas=1, size=3)[0]
    old_leader = before.pods[0]["metadata"]["uid"]
    old_workers = before.uids - {old_leader}
    events = _PodEvents(lws, "fg")
    events.start()

    def old_pods_seen_gone() -> None:
        """The watch has delivered the removal of every pod of the old group (so it has seen the whole restart)."""
        gone = {s.uid for s in events.seen if s.event == "DELETED"}
        left = sorted(u[:8] for u in before.uids - gone)
        assert not left, f"no DELETED event yet for old pods {left}"
    with lws.timeline("fg"):
        lws.crash("fg-0-1")
        lws.group_must_be_recreated("fg", 0, before.uids, size=3)
        lws.wait(old_pods_seen_gone, what="the pod watch to see every old pod of group 0 removed", within="delete",
                 name="fg")
    seen = events.stop()
    shown = "; ".join(str(s) for s in seen)
    overlap = _first_overlap(seen, "fg-0", old_leader, old_workers)
    assert overlap is None, (f"group 0 was recreated while the old group's workers still existed (section 4.2: the "
                             f"leader is deleted with propagationPolicy Foreground, so its workers go first): "
                             f"{overlap}. Pod events: {shown}")
    assert any(s.uid == old_leader and s.deleting and FOREGROUND in s.finalizers for s in seen), (
        f"the old leader fg-0 was never seen deleting with the {FOREGROUND} finalizer (section 4.2: deleted with "
        f"propagationPolicy Foreground). Pod events: {shown}")
