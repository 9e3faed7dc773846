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
from lwsconf.waits import core, rollout
from lwsconf.waits import lws as lws_waits


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


def hold_new_workers(lws: LWSHarness, name: str, manifest: Obj, marker: str = "2") -> None:
    """Patch the pod templates to a new revision whose leaders turn Ready at once while its workers start unready
    until released (/ready?value=true, `rollout_must_finish_releasing`).

    Each group on it is up but not ready, so the rollout stops exactly where maxUnavailable and maxSurge stop it
    (4.4.4), surge groups included; the leaders being Ready leaves the leader StatefulSet's own budget alone.
    """
    changed = workloads.with_env(manifest, {"LWSCONF_REVISION": marker})
    changed = workloads.with_env(changed, {"LWSCONF_START_UNREADY": "1"}, leader=False)
    lws.patch(name, {"spec": {"leaderWorkerTemplate": changed["spec"]["leaderWorkerTemplate"]}},
              step=f"template updated (LWSCONF_REVISION={marker}; its workers unready until released)")


def running(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def release_held_workers(lws: LWSHarness, name: str, revision: str) -> None:
    """Release every running, unready worker on `revision` (the probe answers only once its container runs, so a
    worker made later is released by a later call)."""
    for group in lws.groups(name).values():
        for j, pod in group.pods.items():
            labels = pod["metadata"].get("labels") or {}
            if j and labels.get(lwsapi.TEMPLATE_REVISION_HASH) == revision and running(pod) and not _ready(pod):
                lws.probe(pod["metadata"]["name"], "/ready", value="true")


def rollout_must_finish_releasing(lws: LWSHarness, name: str, *, old: set[str], new: str, replicas: int,
                                  size: int) -> None:
    """Wait (rollout_complete) until groups 0..replicas-1 all have `size` ready pods on `new`, releasing each new
    group's held workers as they come (`lws_waits.one_new_revision` counts the pods: a group whose workers were
    made after its leader turned Ready would otherwise stay held)."""
    def rolled_out() -> None:
        release_held_workers(lws, name, new)
        done = lws_waits.one_new_revision(lws.groups(name), replicas=replicas, size=size, old=old)
        if done != new:
            raise core.NotYet(f"every group on {done}, want {new}")
    lws.wait(rolled_out, within="rollout_complete", name=name,
             what="the rollout to finish, releasing each new group's workers")


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
