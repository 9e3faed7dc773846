"""Pods and StatefulSets outside an LWS are left alone (docs/lws-contract.md sections 2.7, 2.8, 3.4, 4.2, 4.5, 5.2).

An implementation acts only on pods labelled `leaderworkerset.sigs.k8s.io/name` (5.2: "pod without the name label:
untouched"; upstream's pod webhooks select on that label, config/webhook/*-patch.yaml `objectSelector`, and its
pod reconciler ignores pods without it, pkg/controllers/pod_controller.go:77-81 in v0.9.0), and it counts as its
groups only leader pods selected by `{name: N, worker-index: "0"}` (4.5). Upstream's pod webhook integration
tests "not leaderworkerset pods should have no effect" (mutating and validating, contract 6.4) check the first
half; this checks all of it on running pods that look like an LWS's: the same namespace, names in its pattern
(`N-i`, `N-i-j`) and the index labels, only without the name label. They are admitted exactly as sent, never
counted, never deleted: not when they are deleted themselves (no group restart, 4.2), and not when the LWS is.
StatefulSets the LWS does not own are left alone the same way (upstream #957; see the second test).
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.harness import GROUP_INDEX, NAME, REVISION, WORKER_INDEX, LWSHarness, P, env_of, labels
from conformance.rollouts import change_template as change
from conformance.rollouts import leader_revision as revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import core, observe

Obj = dict[str, Any]
LWS_ENV = {"LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"}
LOOKALIKES = {
    # An LWS-looking leader of a group the LWS does not have, and a worker of its group 0 beyond its size; both
    # also get the LWS's current template-revision-hash when they are created.
    "own-7": {WORKER_INDEX: "0", GROUP_INDEX: "7", "app": "own"},
    "own-0-5": {WORKER_INDEX: "5", GROUP_INDEX: "0", "app": "own"},
}


def _pod(name: str, pod_labels: dict[str, str]) -> Obj:
    template = workloads.probe_pod_template()
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict(pod_labels)},
            "spec": copy.deepcopy(template["spec"])}


def _foreign(lws: LWSHarness) -> dict[str, Obj]:
    items = observe.raw(lws.core.list_namespaced_pod(lws.namespace, label_selector="app=own",
                                                     _preload_content=False))["items"]
    return {p["metadata"]["name"]: p for p in items}


@conformance(short_name="PodsOutsideTheLWSAreLeftAlone",
             features={Feature.OBJECT_MODEL, Feature.GROUP_RESTART, Feature.STATUS_CONDITIONS, Feature.DELETION},
             description="Pods in the LWS's namespace with its name pattern and index labels but no name label are "
                         "admitted unchanged, never counted in its status, get no StatefulSet or Service, are not "
                         "answered by a group restart when deleted, and survive the LWS's deletion (3.4, 4.2, 4.5, "
                         "5.2).")
def test_pods_outside_the_lws_are_left_alone(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("own", replicas=1, size=2))
    lws.ready("own", replicas=1, size=2)
    key = labels(lws.statefulsets()["own"])[REVISION]
    want = {name: {**pod_labels, REVISION: key} for name, pod_labels in LOOKALIKES.items()}
    sent = {name: _pod(name, pod_labels) for name, pod_labels in want.items()}
    for body in sent.values():
        lws.core.create_namespaced_pod(lws.namespace, body)  # type: ignore[arg-type]

    def running() -> dict[str, Obj]:
        pods = _foreign(lws)
        unready = [n for n in sent if n not in pods or not observe.pod_ready(pods[n])]
        assert not unready, f"pods {unready} are not Running and Ready yet"
        return pods
    pods = lws.wait(running, what=f"pods {sorted(sent)} to run", within="pods_running", name="own")
    for name, pod in pods.items():
        # Only LWS labels are checked for additions: Kubernetes adds its own (kube-apiserver >= 1.35 copies the node's
        # topology.kubernetes.io/zone and /region onto a pod at binding: the PodTopologyLabels admission plugin,
        # kubernetes plugin/pkg/admission/podtopologylabels, feature gate PodTopologyLabelsAdmission on by default).
        seen = labels(pod)
        lws_added = {k: v for k, v in seen.items() if k.startswith(P) and k not in want[name]}
        changed = {k: seen.get(k) for k, v in want[name].items() if seen.get(k) != v}
        assert not lws_added and not changed, (
            f"pod {name} labels {seen}: LWS labels added {lws_added}, labels sent but changed {changed}; want its "
            f"labels as sent {want[name]}: a pod without the {NAME} label is not an LWS pod (5.2)")
        added = sorted(k for k in pod["metadata"].get("annotations") or {} if k.startswith(P))
        assert not added, f"pod {name} gained annotations {added}"
        for container in pod["spec"]["containers"]:
            injected = sorted(LWS_ENV & set(env_of(container)))
            assert not injected, f"pod {name} container {container['name']} was given {injected} (3.3 is for LWS pods)"
        assert pod["spec"].get("affinity") == sent[name]["spec"].get("affinity"), f"pod {name} affinity was changed"
    uids = {name: pod["metadata"]["uid"] for name, pod in pods.items()}
    group = {n: p["metadata"]["uid"] for n, p in lws.pods("own").items()}

    def untouched(*, foreign: tuple[str, ...]) -> None:
        status = lws.get("own").get("status") or {}
        counts = {k: status.get(k, 0) for k in ("replicas", "readyReplicas", "updatedReplicas")}
        assert counts == {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1}, (
            f"LWS own status counters {counts}, want 1 each: pods outside it are not its groups (4.5)")
        now = {n: p["metadata"]["uid"] for n, p in lws.pods("own").items()}
        assert now == group, f"LWS own's pods are {now}, were {group}: its group was disturbed"
        sets, services = sorted(lws.statefulsets()), sorted(lws.services())
        assert sets == ["own", "own-0"], (f"StatefulSets {sets}, want ['own', 'own-0']: nothing is created for a pod "
                                          "outside the LWS (a worker StatefulSet is made for its leader pods only, "
                                          "2.3)")
        assert services == ["own"], f"Services {services}, want ['own']: nothing is created for a pod outside the LWS"
        live = _foreign(lws)
        for name in foreign:
            pod = live.get(name)
            assert pod is not None and pod["metadata"]["uid"] == uids[name], f"pod {name} was deleted or replaced"
            assert not pod["metadata"].get("deletionTimestamp"), f"pod {name} is being deleted"
    def side_by_side() -> None:
        untouched(foreign=("own-7", "own-0-5"))
    lws.hold(side_by_side, what="the LWS and the pods outside it side by side", name="own")
    lws.core.delete_namespaced_pod("own-0-5", lws.namespace)

    def no_group_restart() -> None:
        untouched(foreign=("own-7",))
    lws.hold(no_group_restart, what="no group restart after deleting own-0-5, which is not a worker of group 0 (4.2)",
             name="own")
    lws.delete("own")

    def lws_gone() -> None:
        left = sorted(lws.pods("own"))
        assert not left, f"pods {left} of LWS own remain"
        assert "own" not in {o["metadata"]["name"] for o in observe.raw(lws.custom.list_namespaced_custom_object(
            workloads.GROUP, workloads.VERSION, lws.namespace, workloads.PLURAL, _preload_content=False))["items"]}, \
            "LeaderWorkerSet own still exists"
    lws.wait(lws_gone, what="LWS own and its pods to be deleted", within="delete", name="own")
    kept = _foreign(lws).get("own-7")
    assert kept is not None and kept["metadata"]["uid"] == uids["own-7"], \
        "pod own-7 went with the LWS it is not part of"
    assert not kept["metadata"].get("deletionTimestamp"), "pod own-7 is being deleted with the LWS it is not part of"


# --- StatefulSets outside the LWS (upstream #957) ----------------------------------------------------------------
#
# Upstream's LWS reconciler watches every StatefulSet and maps it to the LWS named by its name label
# (pkg/controllers/leaderworkerset_controller.go:229-237 in v0.9.0); a StatefulSet without that label, or with it
# empty, mapped to an LWS named "". #957 (v0.10.0 leaderworkerset_controller.go:234-245, enqueueLWSRequests, and
# its unit test TestEnqueueLWSRequests) maps those to nothing. Through the API that is: such StatefulSets are no
# concern of the LWS. The same holds for one carrying the LWS's own name label that it does not own (2.7: its
# StatefulSets are owned by it or by its leader pods): an implementation neither adopts, changes, scales nor
# deletes any of them, nor counts them, and the LWS keeps working (a rolling update, deletion) beside them.

FOREIGN_SETS = {
    "fsts-5": {},  # no LWS label, named like a group the LWS does not have
    "fsts-x": {NAME: ""},  # the name label, empty (upstream #957's second case)
    "fsts-db": {NAME: "fsts"},  # the LWS's own name label, but not owned by it
}


def _foreign_set(name: str, extra: dict[str, str]) -> Obj:
    pod_labels = {"app": "own", "set": name}  # its pods carry no LWS label: they are no LWS pods (5.2)
    template = workloads.probe_pod_template(labels=pod_labels)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "labels": {"app": "own", **extra}},
            "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": pod_labels},
                     "template": template}}


def _foreign_sets_kept(lws: LWSHarness, sent: dict[str, Obj], seen: dict[str, Obj], pod_uids: dict[str, str],
                       *, when: str) -> None:
    """Each foreign StatefulSet is the one created (uid), unchanged (generation, replicas, labels, no owner, no LWS
    annotation), not being deleted, and its pod is the same pod."""
    live = lws.statefulsets()
    for name, body in sent.items():
        sts = live.get(name)
        assert sts is not None, f"StatefulSet {name}, not the LWS's, was deleted {when}"
        meta, first = sts["metadata"], seen[name]["metadata"]
        assert meta["uid"] == first["uid"] and not meta.get("deletionTimestamp"), \
            f"StatefulSet {name} was replaced or is being deleted {when}"
        assert labels(sts) == body["metadata"]["labels"], \
            f"StatefulSet {name} labels {labels(sts)} {when}, want as sent {body['metadata']['labels']}"
        lws_keys = sorted(k for k in meta.get("annotations") or {} if k.startswith(P))
        assert not lws_keys, f"StatefulSet {name} gained annotations {lws_keys} {when}"
        assert not meta.get("ownerReferences"), \
            f"StatefulSet {name} has owners {meta['ownerReferences']} {when}: it was adopted"
        assert (meta.get("generation"), sts["spec"].get("replicas")) == (first.get("generation"), 1), \
            f"StatefulSet {name} generation {meta.get('generation')} replicas {sts['spec'].get('replicas')} {when}, " \
            f"want {first.get('generation')} and 1: its spec was changed"
    pods = _set_pods(lws)
    assert pods == pod_uids, f"the foreign StatefulSets' pods are {pods} {when}, were {pod_uids}"


def _set_pods(lws: LWSHarness) -> dict[str, str]:
    items = observe.raw(lws.core.list_namespaced_pod(lws.namespace, label_selector="app=own,set",
                                                     _preload_content=False))["items"]
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in items if not p["metadata"].get("deletionTimestamp")}


@conformance(short_name="StatefulSetsOutsideTheLWSAreLeftAlone", slow=True,
             features={Feature.OBJECT_MODEL, Feature.ROLLING_UPDATE, Feature.STATUS_CONDITIONS, Feature.DELETION},
             description="StatefulSets in the LWS's namespace that it does not own (no name label, an empty one, or "
                         "its own name label) are not adopted, changed, scaled, counted or deleted, while the LWS "
                         "rolls and is deleted (2.7, 2.8; upstream #957).")
def test_statefulsets_outside_the_lws_are_left_alone(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("fsts", replicas=2, size=2)
    lws.create(manifest)
    sent = {name: _foreign_set(name, extra) for name, extra in FOREIGN_SETS.items()}
    created = {name: observe.raw(lws.apps.create_namespaced_stateful_set(
        lws.namespace, body, _preload_content=False))["metadata"]["uid"] for name, body in sent.items()}  # type: ignore[arg-type]
    lws.ready("fsts", replicas=2, size=2)

    def foreign_pods_ready() -> dict[str, str]:
        live = {name: sts["metadata"] for name, sts in lws.statefulsets().items() if name in sent}
        gone = sorted(n for n, uid in created.items() if n not in live or live[n]["uid"] != uid
                      or live[n].get("deletionTimestamp"))
        if gone:
            raise core.Terminal(f"StatefulSets {gone}, not the LWS's, were deleted or replaced (2.7)")
        pods = {p["metadata"]["name"]: p for p in observe.raw(lws.core.list_namespaced_pod(
            lws.namespace, label_selector="app=own,set", _preload_content=False))["items"]}
        want = {f"{name}-0" for name in sent}
        unready = sorted(n for n in want if n not in pods or not observe.pod_ready(pods[n]))
        assert not unready, f"pods {unready} of the foreign StatefulSets are not Ready yet"
        return {n: pods[n]["metadata"]["uid"] for n in want}
    pod_uids = lws.wait(foreign_pods_ready, what="the foreign StatefulSets' pods to run", within="pods_running",
                        name="fsts")
    seen = {name: sts for name, sts in lws.statefulsets().items() if name in sent}
    old = revision(lws, "fsts")
    change(lws, "fsts", manifest, "2")
    lws.rollout_must_complete("fsts", old=old, replicas=2, size=2)
    status = lws.get("fsts").get("status") or {}
    counts = {k: status.get(k, 0) for k in ("replicas", "readyReplicas", "updatedReplicas")}
    assert counts == {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}, \
        f"LWS fsts status counters {counts}, want 2 each: StatefulSets it does not own are not its groups (4.5)"
    _foreign_sets_kept(lws, sent, seen, pod_uids, when="after the LWS's rolling update")
    lws.delete("fsts")
    lws.lws_must_be_gone("fsts")
    _foreign_sets_kept(lws, sent, seen, pod_uids, when="after the LWS was deleted")
