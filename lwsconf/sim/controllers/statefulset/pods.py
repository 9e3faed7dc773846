"""StatefulSet pods and claims as values: names, identity, storage and PVC ownership. No I/O here.

Follows kubernetes/kubernetes `pkg/controller/statefulset/stateful_set_utils.go`:

* pod `<set>-<ordinal>` from the chosen revision's template (`newStatefulSetPod` via
  `GetPodFromTemplate`): template labels, annotations and finalizers, a controller reference to the
  set, `generateName: <set>-`; `initIdentity` adds `spec.hostname = <pod name>`,
  `spec.subdomain = spec.serviceName` and the labels `statefulset.kubernetes.io/pod-name` and
  `apps.kubernetes.io/pod-index`; `setPodRevision` adds `controller-revision-hash: <revision name>`;
* `updateStorage`: one volume per claim template, named like the template, pointing at claim
  `<template>-<set>-<ordinal>`, replacing any template volume of that name;
* `getPersistentVolumeClaims`: the claim from its template, with the set's `matchLabels` added;
* `newVersionedStatefulSetPod`: with RollingUpdate, an ordinal below `start + partition` is created
  from the *current* revision, every other one from the update revision (OnDelete: always update);
* `updateClaimOwnerRefForSetAndPod`: with `whenDeleted: Delete` a claim is controlled by the set
  while its pod is in range; with `whenScaled: Delete` the claim of a scaled-down (condemned)
  ordinal is controlled by its pod, so the garbage collector removes it with the pod.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from lwsconf.sim.controllers.common import workloads as wl

Obj = dict[str, Any]
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


def spec(sts: Obj) -> Obj:
    return sts.get("spec") or {}


def start_ordinal(sts: Obj) -> int:
    return int((spec(sts).get("ordinals") or {}).get("start") or 0)


def replica_count(sts: Obj) -> int:
    value = spec(sts).get("replicas")
    return 1 if value is None else int(value)


def min_ready_seconds(sts: Obj) -> int:
    return int(spec(sts).get("minReadySeconds") or 0)


def is_parallel(sts: Obj) -> bool:
    return spec(sts).get("podManagementPolicy") == "Parallel"


def strategy(sts: Obj) -> Obj:
    return spec(sts).get("updateStrategy") or {"type": "RollingUpdate"}


def partition(sts: Obj) -> int:
    rolling = strategy(sts).get("rollingUpdate") or {}
    return int(rolling.get("partition") or 0)


def max_unavailable(sts: Obj) -> int:
    """`getStatefulSetMaxUnavailable`: default 1, percentages of replicas rounded down, at least 1."""
    rolling = strategy(sts).get("rollingUpdate") or {}
    value = wl.scaled_value(rolling.get("maxUnavailable"), replica_count(sts), round_up=False, default=1)
    return max(1, value)


def parent_and_ordinal(name: str) -> tuple[str, int]:
    """`getParentNameAndOrdinal`: ("", -1) when the name does not end in `-<digits>`."""
    match = _ORDINAL.match(name)
    if match is None:
        return "", -1
    return match.group(1), int(match.group(2))


def ordinal_of(pod: Obj) -> int:
    return parent_and_ordinal(str(wl.meta(pod).get("name") or ""))[1]


def pod_name(sts: Obj, ordinal: int) -> str:
    return f"{wl.meta(sts)['name']}-{ordinal}"


def claim_name(sts: Obj, template_name: str, ordinal: int) -> str:
    return f"{template_name}-{wl.meta(sts)['name']}-{ordinal}"


def in_range(sts: Obj, ordinal: int) -> bool:
    start = start_ordinal(sts)
    return start <= ordinal < start + replica_count(sts)


def revision_of(pod: Obj) -> str:
    return wl.labels(pod).get(wl.REVISION_LABEL, "")


def claim_templates(sts: Obj) -> list[Obj]:
    return [c for c in spec(sts).get("volumeClaimTemplates") or () if isinstance(c, dict)]


def uses_current_revision(sts: Obj, ordinal: int) -> bool:
    """Whether a missing pod of `ordinal` comes back from the current revision (docs/lws-contract.md T32)."""
    strat = strategy(sts)
    if strat.get("type", "RollingUpdate") != "RollingUpdate":
        return False
    if strat.get("rollingUpdate") is None:
        current = int((sts.get("status") or {}).get("currentReplicas") or 0)
        return ordinal < start_ordinal(sts) + current
    return ordinal < start_ordinal(sts) + partition(sts)


def new_pod(sts: Obj, template: Obj, ordinal: int, revision_name: str) -> Obj:
    """The pod for `ordinal` built from `template` (the template of revision `revision_name`)."""
    pod = wl.pod_from_template(template, sts, "StatefulSet")
    name = pod_name(sts, ordinal)
    pod["metadata"]["name"] = name
    pod["metadata"]["labels"].update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
                                      wl.REVISION_LABEL: revision_name})
    pod["spec"]["hostname"] = name
    service = spec(sts).get("serviceName")
    if service:
        pod["spec"]["subdomain"] = service
    _add_claim_volumes(sts, pod, ordinal)
    return pod


def _add_claim_volumes(sts: Obj, pod: Obj, ordinal: int) -> None:
    claims = {str(wl.meta(c).get("name")): claim_name(sts, str(wl.meta(c).get("name")), ordinal)
              for c in claim_templates(sts)}
    if not claims:
        return
    volumes = [{"name": name, "persistentVolumeClaim": {"claimName": claim}} for name, claim in claims.items()]
    volumes += [v for v in pod["spec"].get("volumes") or () if v.get("name") not in claims]
    pod["spec"]["volumes"] = volumes


def identity_matches(sts: Obj, pod: Obj) -> bool:
    """`identityMatches`: the pod's name, namespace and pod-name label fit the set."""
    m = wl.meta(pod)
    parent, ordinal = parent_and_ordinal(str(m.get("name") or ""))
    set_meta = wl.meta(sts)
    return (ordinal >= 0 and parent == set_meta.get("name") and m.get("namespace") == set_meta.get("namespace")
            and wl.labels(pod).get(POD_NAME_LABEL) == m.get("name"))


def new_claims(sts: Obj, pod: Obj) -> list[Obj]:
    """The PVCs a pod needs, with owner references for the set's retention policy."""
    ordinal = ordinal_of(pod)
    match_labels = ((spec(sts).get("selector") or {}).get("matchLabels") or {})
    claims = []
    for template in claim_templates(sts):
        claim_meta = copy.deepcopy(template.get("metadata") or {})
        claim_meta["name"] = claim_name(sts, str(claim_meta.get("name")), ordinal)
        claim_meta["namespace"] = wl.meta(sts)["namespace"]
        claim_meta["labels"] = {**(claim_meta.get("labels") or {}), **match_labels}
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": claim_meta,
                 "spec": copy.deepcopy(template.get("spec") or {})}
        claim_meta["ownerReferences"] = claim_owner_refs(sts, pod, claim)
        if not claim_meta["ownerReferences"]:
            del claim_meta["ownerReferences"]
        claims.append(claim)
    return claims


def retention(sts: Obj) -> tuple[str, str]:
    """(whenDeleted, whenScaled), each "Retain" unless set to "Delete"."""
    policy = spec(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get("whenDeleted") or "Retain"), str(policy.get("whenScaled") or "Retain")


def claim_owner_refs(sts: Obj, pod: Obj, claim: Obj) -> list[Obj]:
    """The claim's ownerReferences as the retention policy wants them (refs to others kept)."""
    refs = [r for r in wl.meta(claim).get("ownerReferences") or ()
            if not ((r.get("kind") == "StatefulSet" and r.get("name") == wl.meta(sts).get("name"))
                    or (r.get("kind") == "Pod" and r.get("name") == wl.meta(pod).get("name")))]
    when_deleted, when_scaled = retention(sts)
    scaled_down = not in_range(sts, ordinal_of(pod))
    if when_deleted == "Delete" and not (scaled_down and when_scaled == "Delete"):
        refs.append(wl.new_controller_ref(sts, "apps/v1", "StatefulSet"))
    if when_scaled == "Delete" and scaled_down and wl.meta(pod).get("uid"):
        refs.append(wl.new_controller_ref(pod, "v1", "Pod"))
    return refs
