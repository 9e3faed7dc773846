"""Events regarding the LeaderWorkerSet with the documented reasons (docs/lws-contract.md section 4.6).

A separate, claimable feature (LWSEvents, LWS-EXTENDED): Events are informative, and an implementation may
report progress through status alone. Where claimed, the reasons of 4.6 are what `kubectl describe lws` and
event-driven tooling key on, so they are checked exactly: type and reason of Events whose involved object is
the LWS (its uid). Notes are checked only for the object they name (a leader or worker StatefulSet, the
revision key, the failed worker), never for their wording. Events are listed through core/v1, which also serves
the events.k8s.io/v1 Events upstream writes (`regarding` is read as `involvedObject`, `note` as `message`).

Upstream tests the same reasons in its controller integration tests (contract 6.2): "Successfully create a
leaderworkerset with 2 groups, size as 4." (the two GroupsProgressing creation notes), "Leaderworkerset has
available state with correct event" (AllGroupsReady), "leaderTemplate changed with default strategy"
(GroupsUpdating), "Pod restart will delete the pod group when restart policy is RecreateGroupOnPodRestart"
(RecreateGroup), and its CreatingRevision events (pkg/controllers/leaderworkerset_controller.go, v0.9.0 :156,
:742).
"""

from __future__ import annotations

import re
from typing import Any

from conformance.harness import REVISION, LWSHarness, labels
from conformance.rollouts import change_template
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeouts import TimeoutName
from lwsconf.waits import observe

Obj = dict[str, Any]


def _events(lws: LWSHarness, name: str) -> list[Obj]:
    """Events whose involved object is LWS `name` as it is now (its uid: an earlier LWS of the name never counts)."""
    uid = lws.get(name)["metadata"]["uid"]
    items = observe.raw(lws.core.list_namespaced_event(lws.namespace, _preload_content=False))["items"]
    return [e for e in items if (e.get("involvedObject") or {}).get("kind") == "LeaderWorkerSet"
            and (e.get("involvedObject") or {}).get("uid") == uid]


def _names(text: str, obj: str) -> bool:
    """Whether `text` mentions object name `obj` as a whole name (`ev-1` is not in `ev-10` nor in `ev-1-1`)."""
    return re.search(rf"(?<![\w-]){re.escape(obj)}(?![\w-])", text) is not None


def _summary(events: list[Obj]) -> str:
    return "; ".join(f"{e.get('type')} {e.get('reason')}: {e.get('message')!r}" for e in events) or "none"


def _need(lws: LWSHarness, name: str, reason: str, *, mentioning: tuple[str, ...] = (),
          what: str, contract: str, within: TimeoutName = "create") -> Obj:
    """Wait for a Normal event of `reason` regarding LWS `name` whose note names every object of `mentioning`
    (within the named timeout `create` by default: the events of what has already happened are recorded as it
    happens; a test gives the timeout of what it awaits, e.g. rollout_complete for a rollout's event)."""
    def event_recorded() -> Obj:
        events = _events(lws, name)
        found = [e for e in events if e.get("reason") == reason]
        assert found, (f"no Event with reason {reason} regarding LeaderWorkerSet {name} ({contract}); "
                       f"its events: {_summary(events)}")
        for event in found:
            if all(_names(event.get("message") or "", obj) for obj in mentioning):
                assert event.get("type") == "Normal", \
                    f"{reason} event is of type {event.get('type')}, want Normal (4.6)"
                return event
        raise AssertionError(f"no {reason} Event names {list(mentioning)} ({contract}); its {reason} events: "
                             f"{_summary(found)}")
    event: Obj = lws.wait(event_recorded, what=what, within=within, name=name)
    return event


@conformance(short_name="LifecycleEventsHaveDocumentedReasons", features={Feature.EVENTS, Feature.ROLLING_UPDATE},
             description="Creating, readying and updating an LWS records Normal Events regarding it with the reasons "
                         "CreatingRevision, GroupsProgressing (leader and each worker StatefulSet created), "
                         "AllGroupsReady and GroupsUpdating (4.6).")
def test_lifecycle_events_have_documented_reasons(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("ev", replicas=2, size=2)
    lws.create(manifest)
    lws.ready("ev", replicas=2, size=2)
    first = labels(lws.statefulsets()["ev"])[REVISION]
    _need(lws, "ev", "CreatingRevision", mentioning=(first,), what="a CreatingRevision event for the first revision",
          contract="4.6: 'Creating revision with key <k> for a newly created LeaderWorkerSet'")
    _need(lws, "ev", "GroupsProgressing", mentioning=("ev",),
          what="a GroupsProgressing event for the leader StatefulSet", contract="4.6: 'Created leader statefulset <N>'")
    for leader in ("ev-0", "ev-1"):
        _need(lws, "ev", "GroupsProgressing", mentioning=(leader,),
              what=f"a GroupsProgressing event for the worker StatefulSet of {leader}",
              contract="4.6: 'Created worker statefulset for leader pod <N-i>'")
    _need(lws, "ev", "AllGroupsReady", what="an AllGroupsReady event once every group is ready",
          contract="4.5/4.6: the Available condition's reason, recorded when it turns True")
    change_template(lws, "ev", manifest, "2")
    _need(lws, "ev", "GroupsUpdating", what="a GroupsUpdating event during the rollout", within="rollout_complete",
          contract="4.6: 'Updating replica <p>' and the UpdateInProgress condition's note")

    def second_revision() -> str:
        key = labels(lws.statefulsets()["ev"])[REVISION]
        assert key != first, f"leader StatefulSet still on revision {first}"
        return key
    second = lws.wait(second_revision, what="the leader StatefulSet on the new revision", name="ev")
    _need(lws, "ev", "CreatingRevision", mentioning=(second,), what="a CreatingRevision event for the updated template",
          contract="4.6: 'Creating revision with key <k> for updated LWS'")


@conformance(short_name="RecreateGroupEventNamesThePods", features={Feature.EVENTS, Feature.GROUP_RESTART},
             description="Deleting a worker under RecreateGroupOnPodRestart records a Normal RecreateGroup Event "
                         "regarding the LWS that names the worker and its leader (4.2, 4.6).")
def test_recreate_group_event_names_the_pods(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("evr", replicas=1, size=2))
    lws.ready("evr", replicas=1, size=2)
    lws.delete_pod("evr-0-1")
    _need(lws, "evr", "RecreateGroup", mentioning=("evr-0-1", "evr-0"),
          what="a RecreateGroup event naming worker evr-0-1 and leader evr-0", within="group_recreated",
          contract="4.6: 'Worker pod <pod> failed, deleted leader pod <leader> to recreate group <i>'")
    lws.ready("evr", replicas=1, size=2)


@conformance(short_name="PartitionRaisedMidRolloutRecordsGroupsUpdating", slow=True,
             features={Feature.EVENTS, Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION},
             description="A partition change the controller writes to the leader StatefulSet records GroupsUpdating "
                         "whichever way it moves: raising rollingUpdateConfiguration.partition above a stuck rollout's "
                         "step moves the leader StatefulSet's partition up and records an event naming the new "
                         "partition (4.4.6, 4.6).")
def test_partition_raised_mid_rollout_records_groups_updating(lws: LWSHarness) -> None:
    # Upstream records the event on any change of the leader StatefulSet's partition outside the update's first
    # write (sigs.k8s.io/lws@v0.9.0 pkg/controllers/leaderworkerset_controller.go:177-186: `partition != old`), so
    # the way up counts as the way down does. The make mutate run of issue 28 found a reconciler recording it on
    # the way down only (`partition < old`) passing every test.
    manifest = workloads.probe_lws("evp", replicas=3, size=2)
    lws.create(manifest)
    lws.ready("evp", replicas=3, size=2)
    change_template(lws, "evp", manifest, "2", unready=True)  # group 2's new pods never turn Ready: the rollout stays
    _leader_partition_must_be(lws, "evp", 2, why="the rollout's first step (R - maxUnavailable), stuck on group 2")
    before = _partition_events(lws, "evp")
    assert not [e for e in before if _names(e.get("message") or "", "3")], \
        f"a partition GroupsUpdating event already names partition 3 before it was raised: {_summary(before)}"
    lws.patch("evp", {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 3}}}},
              step="rollingUpdateConfiguration.partition raised to 3")
    _leader_partition_must_be(lws, "evp", 3, why="the user's partition, above the rollout's own step (4.4.6)")

    def partition_event_names_three() -> Obj:
        events = _partition_events(lws, "evp")
        found = [e for e in events if _names(e.get("message") or "", "3")]
        assert found, (f"no GroupsUpdating event names the raised partition 3 (4.6: 'Updating replicas <p> to <q> "
                       f"(inclusive)' on every partition change); its partition events: {_summary(events)}")
        return found[0]
    lws.wait(partition_event_names_three, what="a GroupsUpdating event naming partition 3", within="create",
             name="evp")


_CONDITION_NOTE = re.compile(r"groups ready of total \d+ groups$")
"""The note 4.6 gives a condition's GroupsUpdating event ('<message>, with <r> groups ready of total <R> groups'):
its counts are no partition, so it is told apart from the partition-change notes by that documented shape."""


def _partition_events(lws: LWSHarness, name: str) -> list[Obj]:
    """The GroupsUpdating events regarding LWS `name` that are not a condition's note: the partition changes."""
    return [e for e in _events(lws, name) if e.get("reason") == "GroupsUpdating"
            and not _CONDITION_NOTE.search(e.get("message") or "")]


def _leader_partition_must_be(lws: LWSHarness, name: str, partition: int, *, why: str) -> None:
    """Wait (create) until the leader StatefulSet's rollingUpdate partition is `partition` (`why` says why)."""
    def leader_partition() -> None:
        strategy = (lws.statefulsets()[name]["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
        assert strategy.get("partition") == partition, \
            f"leader StatefulSet {name} partition is {strategy.get('partition')!r}, want {partition}: {why}"
    lws.wait(leader_partition, what=f"leader StatefulSet {name} at partition {partition}", within="rollout_complete",
             name=name)
