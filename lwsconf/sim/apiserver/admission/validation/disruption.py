"""Validation of policy/v1 PodDisruptionBudgets, as kube-apiserver's policy strategy runs it.

kubernetes pkg/apis/policy/validation/validation.go `ValidatePodDisruptionBudgetSpec`: at most one of
`minAvailable` and `maxUnavailable`, each a non-negative integer or a percentage of at most 100%; the
selector a valid LabelSelector; `unhealthyPodEvictionPolicy` one of the two known policies. A budget
that names neither count is valid (the API server accepts it; the disruption controller then allows
every disruption only when nothing is expected). Pure: no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, meta, names
from lwsconf.sim.apiserver.apimachinery import fields as f

UNHEALTHY_POD_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")


def _int_or_percent(path: str, value: Any) -> list[errors.Cause]:
    """`ValidatePositiveIntOrPercent` plus `IsNotMoreThan100Percent`."""
    if isinstance(value, str):
        problems = names.percent(value)
        causes = f.invalid_each(path, value, problems)
        if not problems and int(value[:-1]) > 100:
            causes.append(f.invalid(path, value, "must not be greater than 100%"))
        return causes
    if f.is_int(value):
        return f.nonnegative(path, value)
    return [f.invalid(path, value, "must be an integer or percentage (e.g '5%%')")]


def _go_selector(selector: Any) -> Any:
    """metav1.LabelSelector as Go's encoding/json writes it (json tags, omitempty, map keys sorted)."""
    if not isinstance(selector, dict):
        return None
    out: dict[str, Any] = {}
    if selector.get("matchLabels"):
        out["matchLabels"] = dict(sorted(selector["matchLabels"].items()))
    if selector.get("matchExpressions"):
        out["matchExpressions"] = [{k: e[k] for k in ("key", "operator", "values") if e.get(k)}
                                   for e in selector["matchExpressions"] if isinstance(e, dict)]
    return out


def _go_spec(spec: dict[str, Any]) -> str:
    """The internal policy.PodDisruptionBudgetSpec as the field error prints it: JSON with Go field names, in
    struct order (lwsconf fidelity subresources/eviction-pdb/pdb-both-counts)."""
    value = {"MinAvailable": spec.get("minAvailable"), "Selector": _go_selector(spec.get("selector")),
             "MaxUnavailable": spec.get("maxUnavailable"),
             "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy")}
    return json.dumps(value, separators=(",", ":"))


def validate_pdb(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """The spec checks of a PodDisruptionBudget (create and update alike: policy/v1 lets the spec change)."""
    spec = f.as_dict(obj.get("spec"))
    causes: list[errors.Cause] = []
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        causes.append(errors.Cause("spec", f"Invalid value: {_go_spec(spec)}: minAvailable and maxUnavailable "
                                           "cannot be both set"))
    if min_available is not None:
        causes += _int_or_percent("spec.minAvailable", min_available)
    if max_unavailable is not None:
        causes += _int_or_percent("spec.maxUnavailable", max_unavailable)
    if spec.get("selector") is not None:
        causes += meta.validate_label_selector(spec.get("selector"), "spec.selector")
    causes += f.enum("spec.unhealthyPodEvictionPolicy", spec.get("unhealthyPodEvictionPolicy"),
                     UNHEALTHY_POD_EVICTION_POLICIES, optional=True)
    return causes
