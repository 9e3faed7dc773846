"""Pod spec validation (for Pods and the pod templates of workloads) and the Pod update rules.

Mirrors `ValidatePodSpec`/`ValidatePodTemplateSpec` for the fields a harness exercises: containers,
ports, env, probes, volumes, tolerations and the enums. Pod templates differ from Pods only in that a
container `image` may be empty (a workload controller may fill it in). On UPDATE, a Pod's spec is
immutable except for the fields listed in `UPDATABLE_POD_SPEC_FIELDS`, with the apiserver's wording.
Besides the Kubernetes rules, anything the v37 client would fail to deserialize (a container without
`name`, a port without `containerPort`) is rejected here rather than stored. No I/O here.
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf.sim.apiserver.admission.validation import containers
from lwsconf.sim.apiserver.apimachinery import errors, meta, names
from lwsconf.sim.apiserver.apimachinery import fields as f

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_INT32 = 2**31 - 1

UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def validate_pod_spec(spec: Any, path: str, *, template: bool,
                      extra_volumes: frozenset[str] = frozenset()) -> list[errors.Cause]:
    """Check a PodSpec.

    Args:
        spec: the `spec` (any JSON).
        path: its field path (`spec`, `spec.template.spec`).
        template: True for a pod template (container images may be empty).
        extra_volumes: volume names provided from elsewhere (StatefulSet volumeClaimTemplates).
    """
    if not isinstance(spec, dict):
        return [f.required(path)] if spec is None else [f.invalid(path, spec, "must be an object")]
    volumes, causes = _volumes(spec.get("volumes"), f.child(path, "volumes"))
    causes += containers.validate_all(spec, path, template=template, volumes=volumes | extra_volumes)
    causes += f.enum(f.child(path, "restartPolicy"), spec.get("restartPolicy"), RESTART_POLICIES, optional=True)
    causes += f.enum(f.child(path, "dnsPolicy"), spec.get("dnsPolicy"), DNS_POLICIES, optional=True)
    causes += f.in_range(f.child(path, "activeDeadlineSeconds"), spec.get("activeDeadlineSeconds"), 1, MAX_INT32)
    causes += _dns_fields(spec, path)
    causes += meta.validate_labels(spec.get("nodeSelector"), f.child(path, "nodeSelector"))
    causes += validate_tolerations(spec.get("tolerations"), f.child(path, "tolerations"))
    return causes


def _dns_fields(spec: dict[str, Any], path: str) -> list[errors.Cause]:
    """Names that end up in DNS or in other objects' names must have those formats."""
    causes: list[errors.Cause] = []
    for field, rule in (("nodeName", names.dns1123_subdomain), ("serviceAccountName", names.dns1123_subdomain),
                        ("hostname", names.dns1123_label), ("subdomain", names.dns1123_label)):
        value = spec.get(field)
        if value in (None, ""):
            continue
        if not isinstance(value, str):
            causes.append(f.invalid(f.child(path, field), value, "must be a string"))
        else:
            causes += f.invalid_each(f.child(path, field), value, rule(value))
    return causes


def _volumes(value: Any, path: str) -> tuple[frozenset[str], list[errors.Cause]]:
    seen: set[str] = set()
    causes: list[errors.Cause] = []
    for i, vol in f.dicts(value):
        name = vol.get("name")
        at = f.child(f.index(path, i), "name")
        if not isinstance(name, str) or not name:
            causes.append(f.required(at))
            continue
        causes += f.invalid_each(at, name, names.dns1123_label(name))
        if name in seen:
            causes.append(f.duplicate(at, name))
        seen.add(name)
    return frozenset(seen), causes


def validate_tolerations(value: Any, path: str) -> list[errors.Cause]:
    """`ValidateTolerations`: operator/effect enums, key format, Exists without value."""
    causes: list[errors.Cause] = []
    for i, tol in f.dicts(value):
        at = f.index(path, i)
        key, op = f.as_str(tol.get("key")), tol.get("operator") or "Equal"
        if key:
            causes += f.invalid_each(f.child(at, "key"), key, names.qualified_name(key))
        elif op != "Exists":
            causes.append(f.invalid(f.child(at, "operator"), tol.get("operator", ""),
                                    "operator must be Exists when `key` is empty, "
                                    'which means "match all values and all keys"'))
        if op == "Exists" and tol.get("value"):
            causes.append(f.invalid(f.child(at, "operator"), tol.get("value"),
                                    "value must be empty when `operator` is 'Exists'"))
        causes += f.enum(f.child(at, "operator"), op, TOLERATION_OPERATORS)
        causes += f.enum(f.child(at, "effect"), tol.get("effect"), TAINT_EFFECTS, optional=True)
        if tol.get("tolerationSeconds") is not None and tol.get("effect") != "NoExecute":
            causes.append(f.invalid(f.child(at, "effect"), tol.get("effect", ""),
                                    "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    return causes


# --- Pod -----------------------------------------------------------------------------------------

def validate_pod(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """Pod CREATE and UPDATE (spec only; metadata is checked by `validate_metadata`)."""
    causes = validate_pod_spec(obj.get("spec"), "spec", template=False)
    if old is not None and not causes:
        causes += validate_pod_update(f.as_dict(obj.get("spec")), f.as_dict(old.get("spec")))
    return causes


def validate_pod_update(new: dict[str, Any], old: dict[str, Any]) -> list[errors.Cause]:
    """`ValidatePodUpdate`: only images, activeDeadlineSeconds, added tolerations and grace may change."""
    for field in ("containers", "initContainers"):
        if len(f.as_list(new.get(field))) != len(f.as_list(old.get(field))):
            return [f.forbidden(f.child("spec", field), "pod updates may not add or remove containers")]
    causes = _deadline_update(new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds"))
    causes += _tolerations_only_added(new.get("tolerations"), old.get("tolerations"))
    causes += _gates_only_removed(new.get("schedulingGates"), old.get("schedulingGates"))
    munged = _munge_updatable(new, old)
    if munged != old:
        diff = "\n".join(_diff(old, munged, "spec"))
        causes.append(f.forbidden("spec", "pod updates may not change fields other than "
                                  + ",".join(UPDATABLE_POD_SPEC_FIELDS) + "\n" + diff))
    return causes


def _deadline_update(new: Any, old: Any) -> list[errors.Cause]:
    path = "spec.activeDeadlineSeconds"
    if new is None:
        return [] if old is None else [f.invalid(path, None, "must not update from a positive integer to nil value")]
    if f.is_int(old) and f.is_int(new) and old < new:
        return [f.invalid(path, new, "must be less than or equal to previous value")]
    return []


def _tolerations_only_added(new: Any, old: Any) -> list[errors.Cause]:
    def shape(tol: Any) -> dict[str, Any]:
        return {k: v for k, v in f.as_dict(tol).items() if k != "tolerationSeconds"}
    new_shapes = [shape(t) for t in f.as_list(new)]
    for tol in f.as_list(old):
        if shape(tol) not in new_shapes:
            return [f.forbidden("spec.tolerations",
                                "existing toleration can not be modified except its tolerationSeconds")]
    return []


def _gates_only_removed(new: Any, old: Any) -> list[errors.Cause]:
    old_names = {f.fmt_value(f.as_dict(g).get("name")) for g in f.as_list(old)}
    for gate in f.as_list(new):
        name = f.as_dict(gate).get("name")
        if f.fmt_value(name) not in old_names:
            return [f.forbidden("spec.schedulingGates",
                                f"only deletion is allowed, but found new scheduling gate '{name}'")]
    return []


def _munge_updatable(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The new spec with every updatable field copied from the old one, as the apiserver compares."""
    munged = copy.deepcopy(new)
    for field in ("containers", "initContainers"):
        for ctr, old_ctr in zip(f.as_list(munged.get(field)), f.as_list(old.get(field)), strict=False):
            if isinstance(ctr, dict) and isinstance(old_ctr, dict):
                _copy_key(ctr, old_ctr, "image")
    for field in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        _copy_key(munged, old, field)
    old_grace = old.get("terminationGracePeriodSeconds")
    if f.is_int(old_grace) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    return munged


def _copy_key(dst: dict[str, Any], src: dict[str, Any], key: str) -> None:
    if key in src:
        dst[key] = copy.deepcopy(src[key])
    else:
        dst.pop(key, None)


def _diff(old: Any, new: Any, path: str, limit: int = 20) -> list[str]:
    """Readable `path: old -> new` lines for the leaves that differ (the apiserver prints a Go diff)."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        lines: list[str] = []
        for k in sorted(set(old) | set(new)):
            lines += _diff(old.get(k), new.get(k), f.child(path, k), limit)
        return lines[:limit]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        lines = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            lines += _diff(a, b, f.index(path, i), limit)
        return lines[:limit]
    return [f"  {path}: {f.fmt_value(old)} -> {f.fmt_value(new)}"]
