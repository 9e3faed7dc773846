"""Pods outside an LWS are left alone (docs/lws-contract.md sections 3.4, 4.2, 4.5, 5.2).

An implementation acts only on pods labelled `leaderworkerset.sigs.k8s.io/name` (5.2: "pod without the name label:
untouched"; upstream's pod webhooks select on that label, config/webhook/*-patch.yaml `objectSelector`, and its
pod reconciler ignores pods without it, pkg/controllers/pod_controller.go:77-81 in v0.9.0), and it counts as its
groups only leader pods selected by `{name: N, worker-index: "0"}` (4.5). Upstream's pod webhook integration
tests "not leaderworkerset pods should have no effect" (mutating and validating, contract 6.4) check the first
half; this checks all of it on running pods that look like an LWS's: the same namespace, names in its pattern
(`N-i`, `N-i-j`) and the index labels, only without the name label. They are admitted exactly as sent, never
counted, never deleted: not when they are deleted themselves (no group restart, 4.2), and not when the LWS is.
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.harness import GROUP_INDEX, NAME, REVISION, WORKER_INDEX, LWSHarness, P, env_of, labels
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import observe

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
