"""Rolling updates as the suite drives and judges them: the strategy, a template change, the revision keys,
one recorded rollout, and the claim "never more than N groups down" over its timeline.

Shared by the rolling-update, rollout, status, event, subdomain and controller-restart tests, which is why it
is a module of its own beside the harness (the `lws` fixture's object) rather than part of it: these are
steps and claims about one scenario, built from the harness's calls and named waits, not the harness's own
API. Everything goes through the harness, so through the Kubernetes API.
"""

from __future__ import annotations

from conformance.harness import LWSHarness, Obj
from lwsconf import lwsapi, workloads
from lwsconf.timeline import analysis
from lwsconf.timeline import model as timeline_model
from lwsconf.waits import rollout


def rolling_update(**conf: object) -> Obj:
    """A rolloutStrategy with these rollingUpdateConfiguration fields (maxUnavailable, maxSurge, partition)."""
    return {"rollingUpdateConfiguration": dict(conf)}


def change_template(lws: LWSHarness, name: str, manifest: Obj, marker: str, *, unready: bool = False,
                    leader: bool = True, worker: bool = True) -> None:
    """Patch the pod templates with a new env value (a new revision); `unready`: its pods never turn Ready.

    `leader`/`worker` choose which templates change: a change to one of them alone is an update too (4.4.1).
    """
    env = {"LWSCONF_REVISION": marker, **({"LWSCONF_START_UNREADY": "1"} if unready else {})}
    lwt = workloads.with_env(manifest, env, leader=leader, worker=worker)["spec"]["leaderWorkerTemplate"]
    which = "" if leader and worker else (" leaderTemplate only" if leader else " workerTemplate only")
    text = (f"template updated{which} (LWSCONF_REVISION={marker}"
            f"{'; its pods never turn Ready' if unready else ''})")
    lws.patch(name, {"spec": {"leaderWorkerTemplate": lwt}}, step=text)


def leader_revision(lws: LWSHarness, name: str) -> str:
    """The revision key on the leader StatefulSet; fails when it carries none (3.1 requires the label), so that
    comparing keys can never pass on two missing ones."""
    key = rollout.leader_revision(lws.api, lws.namespace, name)
    assert key, f"leader StatefulSet {name} has no {lwsapi.TEMPLATE_REVISION_HASH} label (3.1 requires it)"
    return key


def group_revision(lws: LWSHarness, name: str, index: int) -> str | None:
    """The one revision of group `index`'s live pods (None when absent or mixed)."""
    group = lws.groups(name).get(index)
    revs = group.revisions() if group else set()
    return next(iter(revs)) if len(revs) == 1 else None


def roll_template(lws: LWSHarness, name: str, manifest: Obj, *, replicas: int, size: int,
                  marker: str = "2", leader: bool = True,
                  worker: bool = True) -> tuple[timeline_model.Timeline, str, str]:
    """Change the pod templates (`leader`/`worker`: which ones) and wait for the rollout to complete, recording
    its timeline.

    Returns:
        (the timeline, the revision key before, the revision key after).
    """
    old = leader_revision(lws, name)
    with lws.timeline(name) as timeline:
        change_template(lws, name, manifest, marker, leader=leader, worker=worker)
        new = lws.rollout_must_complete(name, old=old, replicas=replicas, size=size)
    return timeline, old, new


def assert_at_most_down(timeline: timeline_model.Timeline, groups: range, allowed: int, why: str, *,
                        unready_at_start: frozenset[int] = frozenset()) -> None:
    """Fail unless at every observed instant at most `allowed` of `groups` were taken down by the controller
    (`analysis.max_taken_down`), saying `why` that is the limit and showing the timeline around the worst instant."""
    worst, when = analysis.max_taken_down(timeline, groups, unready_at_start)
    assert worst <= allowed, (f"{worst} of groups {groups.start}..{groups.stop - 1} down at once at t={when}, "
                              f"want at most {allowed}: {why}\ntimeline around then:\n"
                              f"{analysis.describe(timeline, around=when)}")
