"""Desired children of a LeaderWorkerSet: the leader StatefulSet, worker StatefulSets, headless Services.

Each builder returns the full object as a dict, ready to create (docs/lws-contract.md section 2):

* `leader_statefulset` (2.2): applied on every reconcile; `partition` and `replicas` come from `rollout`.
* `worker_statefulset` (2.3, trap T32): built for one leader pod from the ControllerRevision named by
  that pod's `template-revision-hash`, so an old-revision group recreated mid-rollout stays old. Created
  once if absent, never updated (T5).
* `lws_services` / `group_service` (2.4, 4.9): created if absent, never updated.

`differs` and `merged_for_update` let the runtime update the leader StatefulSet with a plain PUT:
server-side apply would reject the leader template's intentional duplicate env name (`podtemplate`).
No I/O here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from lwsconf.reconciler import labels, names, podtemplate, revision, rollout, spec, tpu

Obj = dict[str, Any]

_PVC_SPEC_FIELDS = ("accessModes", "storageClassName", "volumeMode")
_LEADER_SPEC_FIELDS = ("replicas", "serviceName", "podManagementPolicy", "selector", "updateStrategy",
                       "template", "volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy")


def volume_claim_templates(view: spec.LwsSpec) -> list[Obj]:
    """The PVC templates with only name, accessModes, storageClassName, volumeMode and resources kept (4.10)."""
    out = []
    for source in view.volume_claim_templates:
        body = source.get("spec") or {}
        pvc_spec: Obj = {"accessModes": list(body.get("accessModes") or [])}
        for field in _PVC_SPEC_FIELDS[1:]:
            if body.get(field) is not None:
                pvc_spec[field] = body[field]
        resources = {k: copy.deepcopy(v) for k, v in (body.get("resources") or {}).items()
                     if k in ("requests", "limits") and v is not None}
        if resources:
            pvc_spec["resources"] = resources
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": (source.get("metadata") or {}).get("name", ""),
                                 "namespace": view.namespace},
                    "spec": pvc_spec})
    return out


def _storage(view: spec.LwsSpec) -> Obj:
    out: Obj = {}
    claims = volume_claim_templates(view)
    if claims:
        out["volumeClaimTemplates"] = claims
    if view.pvc_retention_policy is not None:
        out["persistentVolumeClaimRetentionPolicy"] = copy.deepcopy(dict(view.pvc_retention_policy))
    return out


def _subgroup_annotations(view: spec.LwsSpec) -> dict[str, str]:
    if view.subgroup_size is None:
        return {}
    out = {labels.SUBGROUP_POLICY_TYPE: str(view.subgroup_type), labels.SUBGROUP_SIZE: str(view.subgroup_size)}
    if view.subgroup_exclusive_topology:
        out[labels.SUBGROUP_EXCLUSIVE_TOPOLOGY] = view.subgroup_exclusive_topology
    return out


def leader_pod_template(view: spec.LwsSpec, revision_key: str) -> Obj:
    """The leader StatefulSet's pod template (2.2): leader (or worker) template plus LWS labels, annotations, env."""
    base = view.leader_pod_template
    pod_labels = {labels.WORKER_INDEX: "0", labels.NAME: view.name, labels.TEMPLATE_REVISION_HASH: revision_key}
    annotations = {labels.SIZE: str(view.size)}
    if view.exclusive_topology:
        annotations[labels.EXCLUSIVE_TOPOLOGY] = view.exclusive_topology
    annotations.update(_subgroup_annotations(view))
    if view.unique_subdomains:
        annotations[labels.SUBDOMAIN_POLICY] = labels.SUBDOMAIN_UNIQUE_PER_REPLICA
    env = podtemplate.leader_env(lws_name=view.name, namespace=view.namespace, size=view.size,
                                 unique_subdomain=view.unique_subdomains)
    pod_spec = podtemplate.inject_env(base.get("spec") or {}, env)
    pod_spec = tpu.leader_spec(pod_spec, size=view.size, subgroup_size=view.subgroup_size, lws_name=view.name,
                               unique_subdomain=view.unique_subdomains,
                               leader_excluded=view.subgroup_type == labels.SUBGROUP_LEADER_EXCLUDED)
    if view.exclusive_topology:
        pod_spec = podtemplate.with_leader_exclusive_placement(pod_spec, view.exclusive_topology)
    return podtemplate.template(base, labels_=pod_labels, annotations=annotations, pod_spec=pod_spec)


def leader_statefulset(lws: Mapping[str, Any], *, revision_key: str, partition: int, replicas: int) -> Obj:
    """The leader StatefulSet `N` (2.2) with the given partition and replicas (see `rollout.decide`)."""
    view = spec.LwsSpec.of(lws)
    budget = rollout.resolve_budget(view.replicas, view.max_unavailable, view.max_surge)
    body: Obj = {
        "replicas": replicas, "serviceName": view.name, "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {labels.NAME: view.name, labels.WORKER_INDEX: "0"}},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
            "partition": partition, "maxUnavailable": budget.statefulset_max_unavailable}},
        "template": leader_pod_template(view, revision_key),
        **_storage(view),
    }
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {
        "name": view.name, "namespace": view.namespace,
        "labels": podtemplate.overlay(view.labels,
                                      {labels.NAME: view.name, labels.TEMPLATE_REVISION_HASH: revision_key}),
        "annotations": podtemplate.overlay(view.annotations, {labels.REPLICAS: str(view.replicas)}),
        "ownerReferences": [spec.owner_reference(lws, api_version=spec.API_VERSION, kind=spec.KIND)],
    }, "spec": body}


def group_identity(lws_name: str, leader_pod: Mapping[str, Any]) -> tuple[str, str]:
    """(group index, group key) of a leader pod: its labels when present, else derived from its name."""
    meta = leader_pod.get("metadata") or {}
    pod_labels = meta.get("labels") or {}
    index = pod_labels.get(labels.GROUP_INDEX)
    if index is None:
        derived = names.group_index_from_leader_name(lws_name, str(meta.get("name", "")))
        if derived is None:
            raise ValueError(f"leader pod {meta.get('namespace')}/{meta.get('name')}: no group-index label and "
                             f"the name is not <{lws_name}>-<index>")
        index = str(derived)
    key = pod_labels.get(labels.GROUP_KEY) or labels.group_key(str(meta.get("namespace", "")),
                                                                 str(meta.get("name", "")))
    return str(index), str(key)


def worker_statefulset(lws: Mapping[str, Any], leader_pod: Mapping[str, Any], group_revision: Mapping[str, Any],
                       *, topology_value: str | None = None) -> Obj:
    """The worker StatefulSet `N-i` for one leader pod (2.3), from the revision the leader was created from.

    Args:
        lws: the live LeaderWorkerSet (name, labels, annotations and the exclusive-topology keys come from it).
        leader_pod: the leader pod `N-i` (owner; its revision key and group identity are copied).
        group_revision: the ControllerRevision whose key is the leader pod's `template-revision-hash`.
        topology_value: the leader node's value of the exclusive-topology label, required when the LWS
            carries the `exclusive-topology` annotation (section 4.7, trap T22).
    """
    live = spec.LwsSpec.of(lws)
    past = spec.LwsSpec.of(revision.apply_revision(lws, group_revision))
    meta = leader_pod.get("metadata") or {}
    leader_name = str(meta.get("name", ""))
    index, key = group_identity(live.name, leader_pod)
    identity = {labels.GROUP_INDEX: index, labels.NAME: live.name, labels.GROUP_KEY: key}
    pod_labels = {**identity, labels.TEMPLATE_REVISION_HASH: revision.key_of(leader_pod)}
    service_name = leader_name if past.unique_subdomains else live.name
    leader_counts = podtemplate.requests_tpus(leader_pod.get("spec") or {})
    pod_spec = _worker_pod_spec(live, past, leader_name, service_name, topology_value)
    pod_spec, tpu_table = tpu.worker_spec(pod_spec, leader_name=leader_name, subdomain=service_name,
                                          size=past.size, leader_counts=leader_counts,
                                          subgroup_size=past.subgroup_size, subgroup_type=past.subgroup_type)
    annotations = {labels.SIZE: str(past.size), labels.LEADER_NAME: leader_name}
    if live.exclusive_topology:
        annotations[labels.EXCLUSIVE_TOPOLOGY] = live.exclusive_topology
    annotations.update(_subgroup_annotations(past))  # revision's policy; the topology key is the live one
    if leader_counts:
        annotations[labels.LEADER_REQUESTS_TPUS] = "true"
    if tpu_table is not None:
        annotations[tpu.TABLE_ANNOTATION] = tpu_table
    body: Obj = {
        "replicas": past.size - 1, "ordinals": {"start": 1}, "podManagementPolicy": "Parallel",
        "serviceName": service_name, "selector": {"matchLabels": identity},
        "template": podtemplate.template(past.worker_template, labels_=pod_labels, annotations=annotations,
                                         pod_spec=pod_spec),
        **_storage(past),
    }
    out_meta: Obj = {"name": leader_name, "namespace": live.namespace,
                     "labels": podtemplate.overlay(live.labels, pod_labels),
                     "ownerReferences": [spec.owner_reference(leader_pod, api_version="v1", kind="Pod")]}
    if live.annotations:
        out_meta["annotations"] = dict(live.annotations)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": out_meta, "spec": body}


def _worker_pod_spec(live: spec.LwsSpec, past: spec.LwsSpec, leader_name: str, service_name: str,
                     topology_value: str | None) -> Obj:
    env = podtemplate.worker_env(leader_name=leader_name, subdomain=service_name, namespace=live.namespace,
                                 size=past.size)
    pod_spec = podtemplate.inject_env(past.worker_template.get("spec") or {}, env)
    if live.exclusive_topology:
        if topology_value is None:
            raise ValueError(f"worker statefulset {live.namespace}/{leader_name}: exclusive placement on "
                             f"{live.exclusive_topology!r} needs the leader node's value of that label")
        pod_spec = podtemplate.with_node_selector(pod_spec, live.exclusive_topology, topology_value)
    return pod_spec


def _service(lws: Mapping[str, Any], name: str, selector: dict[str, str], owner: Obj) -> Obj:
    meta = lws.get("metadata") or {}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": meta.get("namespace", ""),
                         "labels": {labels.NAME: meta.get("name", "")}, "ownerReferences": [owner]},
            "spec": {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": True}}


def lws_services(lws: Mapping[str, Any]) -> list[Obj]:
    """Services the LWS reconciler ensures: the shared headless Service `N` under `Shared`, none otherwise."""
    view = spec.LwsSpec.of(lws)
    if view.unique_subdomains:
        return []
    owner = spec.owner_reference(lws, api_version=spec.API_VERSION, kind=spec.KIND)
    return [_service(lws, view.name, {labels.NAME: view.name}, owner)]


def group_service(lws: Mapping[str, Any], leader_pod: Mapping[str, Any]) -> Obj | None:
    """The per-group headless Service `N-i` under `UniquePerReplica` (live policy, 4.9), owned by the leader."""
    view = spec.LwsSpec.of(lws)
    if not view.unique_subdomains:
        return None
    index, _ = group_identity(view.name, leader_pod)
    owner = spec.owner_reference(leader_pod, api_version="v1", kind="Pod")
    name = str((leader_pod.get("metadata") or {}).get("name", ""))
    return _service(lws, name, {labels.NAME: view.name, labels.GROUP_INDEX: index}, owner)


def differs(desired: Any, live: Any) -> bool:
    """Whether `live` lacks something `desired` sets: every desired map entry must match; lists match by position.

    Extra fields in `live` (server defaults, other writers, extra owner references) are ignored and
    quantities compare by value (the API server canonicalises them), so an unchanged object compares equal.
    """
    want, have = revision.normalize(desired), revision.normalize(live)
    if isinstance(want, dict) and isinstance(have, dict):
        refs = (want.get("metadata") or {}).pop("ownerReferences", None) or []
        have_refs = (have.get("metadata") or {}).get("ownerReferences") or []
        if any(all(_differs(ref, other) for other in have_refs) for ref in refs):
            return True  # other writers may add owner references; ours must each be present
    return _differs(want, have)


def _differs(desired: Any, live: Any) -> bool:
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return True
        return any(_differs(v, live.get(k)) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return True
        return any(_differs(d, x) for d, x in zip(desired, live, strict=True))
    return bool(desired != live)


def merged_for_update(live: Mapping[str, Any], desired: Mapping[str, Any]) -> Obj:
    """The live leader StatefulSet with our metadata merged in and our spec fields replaced, for a PUT."""
    out = copy.deepcopy(dict(live))
    meta = out.setdefault("metadata", {})
    want = desired.get("metadata") or {}
    for field in ("labels", "annotations"):
        meta[field] = {**(meta.get(field) or {}), **(want.get(field) or {})}
    refs = [r for r in meta.get("ownerReferences") or () if not r.get("controller")]
    meta["ownerReferences"] = [*copy.deepcopy(want.get("ownerReferences") or []), *refs]
    body = out.setdefault("spec", {})
    for field in _LEADER_SPEC_FIELDS:
        if field in (desired.get("spec") or {}):
            body[field] = copy.deepcopy(desired["spec"][field])
        else:
            body.pop(field, None)
    return out
