"""apps/v1 validation: StatefulSet, Deployment, ReplicaSet, DaemonSet and ControllerRevision.

Mirrors `pkg/apis/apps/validation` plus the registry strategies' update rules: a StatefulSet spec is
immutable outside `STS_MUTABLE_FIELDS` (note: `revisionHistoryLimit` is *not* mutable in real
Kubernetes, see kubernetes/kubernetes#56341), Deployment, ReplicaSet and DaemonSet selectors are immutable in
apps/v1, and a ControllerRevision's `data` never changes. The pod template is validated as a pod spec
(StatefulSets too, since kubernetes/kubernetes#131790). No I/O here.
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf.sim.apiserver.admission.validation import core, pods
from lwsconf.sim.apiserver.apimachinery import errors, meta, names
from lwsconf.sim.apiserver.apimachinery import fields as f

STS_MUTABLE_FIELDS = ("replicas", "ordinals", "template", "updateStrategy",
                      "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
STS_UPDATE_FORBIDDEN = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")
POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
PVC_RETENTION = ("Retain", "Delete")


# --- shared pieces ------------------------------------------------------------------------------

def _selector(spec: dict[str, Any], kind: str) -> list[errors.Cause]:
    selector = spec.get("selector")
    if selector is None:
        return [f.required("spec.selector")]
    causes = meta.validate_label_selector(selector, "spec.selector")
    if meta.selector_is_empty(selector):
        causes.append(f.invalid("spec.selector", selector, f"empty selector is invalid for {kind}"))
    return causes


def _template(spec: dict[str, Any], owner: str, *, labels_path: str,
              extra_volumes: frozenset[str] = frozenset()) -> list[errors.Cause]:
    """The pod template of a workload: matches the selector, valid as a pod spec, restarts Always."""
    template = spec.get("template")
    if not isinstance(template, dict):
        return [f.required("spec.template")]
    tmeta = f.as_dict(template.get("metadata"))
    labels, causes = tmeta.get("labels"), []
    selector = spec.get("selector")
    if selector is not None and not meta.selector_is_empty(selector) and not meta.selector_matches(selector, labels):
        causes.append(f.invalid("spec.template.metadata.labels", labels or {},
                                "`selector` does not match template `labels`"))
    causes += meta.validate_labels(labels, labels_path)
    causes += meta.validate_annotations(tmeta.get("annotations"), labels_path.rsplit(".", 1)[0] + ".annotations")
    tspec = template.get("spec")
    causes += pods.validate_pod_spec(tspec, "spec.template.spec", template=True, extra_volumes=extra_volumes)
    restart = f.as_dict(tspec).get("restartPolicy")
    if restart not in (None, "Always"):
        causes.append(f.not_supported("spec.template.spec.restartPolicy", restart, ["Always"]))
    if f.as_dict(tspec).get("activeDeadlineSeconds") is not None:
        causes.append(f.forbidden("spec.template.spec.activeDeadlineSeconds",
                                  f"activeDeadlineSeconds in {owner} is not Supported"))
    return causes


def _int_or_percent(value: Any, path: str) -> tuple[int, list[errors.Cause]]:
    """`ValidatePositiveIntOrPercent` plus the value `getIntOrPercentValue` would read."""
    if isinstance(value, str):
        problems = names.percent(value)
        number = int(value[:-1]) if not problems else (int(value) if value.isdigit() else 0)
        causes = f.invalid_each(path, value, problems)
        if not problems and number > 100:
            causes.append(f.invalid(path, value, "must not be greater than 100%"))
        return number, causes
    if f.is_int(value):
        return value, f.nonnegative(path, value)
    return 0, [f.invalid(path, value, "must be an integer or percentage (e.g '5%%')")]


def _selector_immutable(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    if old is None:
        return []
    new_sel = f.as_dict(obj.get("spec")).get("selector")
    return f.unchanged("spec.selector", new_sel, f.as_dict(old.get("spec")).get("selector"))


# --- StatefulSet ----------------------------------------------------------------------------------

def validate_statefulset(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    spec = f.as_dict(obj.get("spec"))
    if obj.get("spec") is None:
        return [f.required("spec")]
    pmp = spec.get("podManagementPolicy")
    causes = [] if pmp in (None, "", *POD_MANAGEMENT_POLICIES) else [
        f.invalid("spec.podManagementPolicy", pmp, "must be 'OrderedReady' or 'Parallel'")]
    causes += _sts_update_strategy(f.as_dict(spec.get("updateStrategy")))
    policy = spec.get("persistentVolumeClaimRetentionPolicy")
    if policy is not None:
        for when in ("whenDeleted", "whenScaled"):
            value = f.as_dict(policy).get(when)
            causes += f.enum(f.child("spec.persistentVolumeClaimRetentionPolicy", when), value, PVC_RETENTION,
                             optional=True)
    causes += f.nonnegative("spec.replicas", spec.get("replicas"))
    causes += f.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    causes += f.nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    causes += f.nonnegative("spec.ordinals.start", f.as_dict(spec.get("ordinals")).get("start"))
    causes += _selector(spec, "statefulset")
    causes += _claim_templates(spec.get("volumeClaimTemplates"))
    claims = frozenset(f.as_str(f.as_dict(claim.get("metadata")).get("name"))
                       for _, claim in f.dicts(spec.get("volumeClaimTemplates")))
    causes += _template(spec, "StatefulSet", labels_path="spec.template.labels", extra_volumes=claims)
    if old is not None:
        causes += _sts_update(spec, f.as_dict(old.get("spec")))
    return causes


def _sts_update_strategy(strategy: dict[str, Any]) -> list[errors.Cause]:
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    path = "spec.updateStrategy"
    if kind in (None, ""):
        return []  # defaulted to RollingUpdate before validation
    if kind == "OnDelete":
        return [f.invalid(f.child(path, "rollingUpdate"), rolling, "only allowed for updateStrategy 'RollingUpdate'")] \
            if rolling is not None else []
    if kind != "RollingUpdate":
        return [f.invalid(path, strategy, "must be 'RollingUpdate' or 'OnDelete'")]
    rolling = f.as_dict(rolling)
    causes = f.nonnegative(f.child(path, "rollingUpdate", "partition"), rolling.get("partition"))
    if rolling.get("maxUnavailable") is not None:
        at = f.child(path, "rollingUpdate", "maxUnavailable")
        number, errs = _int_or_percent(rolling["maxUnavailable"], at)
        causes += errs
        if not errs and number == 0:
            causes.append(f.invalid(at, rolling["maxUnavailable"], "cannot be 0"))
    return causes


def _claim_templates(claims: Any) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    for i, claim in f.dicts(claims):
        at = f.index("spec.volumeClaimTemplates", i)
        name = f.as_str(f.as_dict(claim.get("metadata")).get("name"))
        if not name:
            causes.append(f.required(f.child(at, "metadata", "name")))
        causes += core.validate_pvc_spec(claim.get("spec"), f.child(at, "spec"))
    return causes


def _sts_update(new: dict[str, Any], old: dict[str, Any]) -> list[errors.Cause]:
    munged = copy.deepcopy(new)
    for field in STS_MUTABLE_FIELDS:
        if field in old:
            munged[field] = old[field]
        else:
            munged.pop(field, None)
    return [] if munged == old else [f.forbidden("spec", STS_UPDATE_FORBIDDEN)]


# --- Deployment -----------------------------------------------------------------------------------

def validate_deployment(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    if obj.get("spec") is None:
        return [f.required("spec")]
    spec = f.as_dict(obj.get("spec"))
    causes = f.nonnegative("spec.replicas", spec.get("replicas"))
    causes += _selector(spec, "deployment")
    causes += _template(spec, "ReplicaSet", labels_path="spec.template.metadata.labels")
    causes += _deployment_strategy(f.as_dict(spec.get("strategy")))
    for field in ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"):
        causes += f.nonnegative(f.child("spec", field), spec.get(field))
    deadline, ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    if f.is_int(deadline) and f.is_int(ready) and deadline <= ready:
        causes.append(f.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return causes + _selector_immutable(obj, old)


def _deployment_strategy(strategy: dict[str, Any]) -> list[errors.Cause]:
    kind, path = strategy.get("type"), "spec.strategy"
    if kind in (None, ""):
        return []
    if kind == "Recreate":
        return [f.forbidden(f.child(path, "rollingUpdate"),
                            "may not be specified when strategy `type` is 'Recreate'")] \
            if strategy.get("rollingUpdate") is not None else []
    if kind != "RollingUpdate":
        return [f.not_supported(path, strategy, ["Recreate", "RollingUpdate"])]
    if strategy.get("rollingUpdate") is None:
        return [f.required(f.child(path, "rollingUpdate"), "this should be defaulted and never be nil")]
    rolling = f.as_dict(strategy["rollingUpdate"])
    unavailable, causes = _int_or_percent(rolling.get("maxUnavailable", 0),
                                          f.child(path, "rollingUpdate.maxUnavailable"))
    surge, more = _int_or_percent(rolling.get("maxSurge", 0), f.child(path, "rollingUpdate.maxSurge"))
    if unavailable == 0 and surge == 0:
        causes.append(f.invalid(f.child(path, "rollingUpdate.maxUnavailable"), rolling.get("maxUnavailable"),
                                "may not be 0 when `maxSurge` is 0"))
    return causes + more


# --- ReplicaSet -----------------------------------------------------------------------------------

def validate_replicaset(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateReplicaSetSpec`: replicas and minReadySeconds non-negative, a non-empty selector the
    template's labels match, the template valid as a pod spec with restartPolicy Always; the selector
    is immutable in apps/v1 (`rsStrategy.ValidateUpdate`)."""
    if obj.get("spec") is None:
        return [f.required("spec")]
    spec = f.as_dict(obj.get("spec"))
    causes = f.nonnegative("spec.replicas", spec.get("replicas"))
    causes += f.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    causes += _selector(spec, "replicaset")
    causes += _template(spec, "ReplicaSet", labels_path="spec.template.metadata.labels")
    return causes + _selector_immutable(obj, old)


# --- DaemonSet ------------------------------------------------------------------------------------

def validate_daemonset(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    if obj.get("spec") is None:
        return [f.required("spec")]
    spec = f.as_dict(obj.get("spec"))
    causes = _selector(spec, "daemonset")
    causes += _template(spec, "DaemonSet", labels_path="spec.template.metadata.labels")
    for field in ("minReadySeconds", "templateGeneration", "revisionHistoryLimit"):
        causes += f.nonnegative(f.child("spec", field), spec.get(field))
    causes += _daemonset_strategy(f.as_dict(spec.get("updateStrategy")))
    return causes + _selector_immutable(obj, old)


def _daemonset_strategy(strategy: dict[str, Any]) -> list[errors.Cause]:
    kind, path = strategy.get("type"), "spec.updateStrategy"
    if kind in (None, "", "OnDelete"):
        return []
    if kind != "RollingUpdate":
        return [f.not_supported(path, strategy, ["RollingUpdate", "OnDelete"])]
    if strategy.get("rollingUpdate") is None:
        return [f.required(f.child(path, "rollingUpdate"))]
    rolling = f.as_dict(strategy["rollingUpdate"])
    unavailable, causes = _int_or_percent(rolling.get("maxUnavailable", 0),
                                          f.child(path, "rollingUpdate.maxUnavailable"))
    surge, more = _int_or_percent(rolling.get("maxSurge", 0), f.child(path, "rollingUpdate.maxSurge"))
    causes += more
    if unavailable and surge:
        causes.append(f.invalid(f.child(path, "rollingUpdate.maxSurge"), rolling.get("maxSurge"),
                                "may not be set when maxUnavailable is non-zero"))
    elif not unavailable and not surge:
        causes.append(f.required(f.child(path, "rollingUpdate.maxUnavailable"), "cannot be 0 when maxSurge is 0"))
    return causes


# --- ControllerRevision ---------------------------------------------------------------------------

def validate_controllerrevision(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateControllerRevision(Update)`: data mandatory and immutable, revision non-negative."""
    causes = [] if obj.get("data") is not None else [f.required("data", "data is mandatory")]
    if obj.get("data") is not None and not isinstance(obj.get("data"), dict):
        causes.append(f.invalid("data", obj.get("data"), "must be an object"))
    causes += f.nonnegative("revision", obj.get("revision"))
    if old is not None:
        causes += f.unchanged("data", obj.get("data"), old.get("data"))
    return causes


# --- status subresource ---------------------------------------------------------------------------

def _status_counts(status: dict[str, Any], nonnegative: tuple[str, ...],
                   at_most_replicas: tuple[str, ...], available_vs_ready: str) -> list[errors.Cause]:
    """The counters a workload status must keep consistent: each non-negative, none above
    `status.replicas`, availableReplicas not above readyReplicas (an unset counter is 0, as in Go)."""
    causes: list[errors.Cause] = []
    for field in nonnegative:
        causes += f.nonnegative(f"status.{field}", status.get(field))

    def count(field: str) -> int:
        value = status.get(field)
        return value if f.is_int(value) else 0

    for field in at_most_replicas:
        if count(field) > count("replicas"):
            causes.append(f.invalid(f"status.{field}", count(field), "cannot be greater than status.replicas"))
    if count("availableReplicas") > count("readyReplicas"):
        causes.append(f.invalid("status.availableReplicas", count("availableReplicas"),
                                f"cannot be greater than {available_vs_ready}"))
    return causes


def validate_deployment_status(obj: dict[str, Any]) -> list[errors.Cause]:
    """pkg/apis/apps/validation `ValidateDeploymentStatus`, run on status writes: kube-apiserver 1.37.2
    refuses `status.replicas: -1` with these four causes in this order (lwsconf fidelity
    subresources/status-subresource/invalid-status)."""
    return _status_counts(f.as_dict(obj.get("status")),
                          ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                           "unavailableReplicas", "terminatingReplicas", "collisionCount"),
                          ("updatedReplicas", "readyReplicas", "availableReplicas"), "readyReplicas")


def validate_statefulset_status(obj: dict[str, Any]) -> list[errors.Cause]:
    """pkg/apis/apps/validation `ValidateStatefulSetStatus`, run on status writes."""
    return _status_counts(f.as_dict(obj.get("status")),
                          ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                           "observedGeneration", "collisionCount"),
                          ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"),
                          "status.readyReplicas")


def validate_replicaset_status(obj: dict[str, Any]) -> list[errors.Cause]:
    """`ValidateReplicaSetStatus`: counters non-negative, fullyLabeled/ready/available not above replicas,
    available not above ready."""
    return _status_counts(f.as_dict(obj.get("status")),
                          ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas",
                           "terminatingReplicas", "observedGeneration"),
                          ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"), "readyReplicas")
