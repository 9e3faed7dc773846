"""Whether `pods/eviction` may delete a pod under its PodDisruptionBudget, and the budget after it did.

Follows kubernetes pkg/registry/core/pod/storage/eviction.go (`EvictionREST.Create`, `checkAndDecrement`,
`canIgnorePDB`), so that `kubectl drain` meets the same answers as on a real cluster:

* a pod that is terminal, Pending or already being deleted is deleted without looking at budgets;
* a pod covered by more than one budget: 500 "This pod has more than one PodDisruptionBudget, which the
  eviction subresource does not support.";
* a not-ready pod is deleted without spending the budget when the budget is already met
  (`unhealthyPodEvictionPolicy` IfHealthyBudget, the default) or always (AlwaysAllow);
* a budget the disruption controller has not seen at its current generation: 429 with the cause
  "The disruption budget NAME is still being processed by the server.";
* `status.disruptionsAllowed` 0: 429 "Cannot evict pod as it would violate the pod's disruption budget."
  with a DisruptionBudget cause naming how many healthy pods the budget needs and has (or, when it has
  them, that it "does not allow evicting pods currently", as kube-apiserver 1.37.2 words it);
* otherwise the budget's `disruptionsAllowed` goes down by one, the pod is recorded in `disruptedPods`
  (the disruption controller then stops counting it as healthy) and the DisruptionAllowed condition
  turns False at 0, written before the pod is deleted;
* every eviction that deletes marks the pod first with the DisruptionTarget condition
  (`with_disruption_target`), so controllers and Job pod-failure policies can tell an eviction apart.

Pure: the caller reads the budgets and writes the one returned.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.apimachinery import meta as validation_meta
from lwsconf.sim.pdbcondition import set_condition

Obj = dict[str, Any]
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MAX_DISRUPTED_PODS = 2000
"""eviction.go's MaxDisruptedPodSize: a budget remembering more unconfirmed evictions refuses more."""


@dataclass(frozen=True)
class Decision:
    """What the eviction does besides deleting the pod: the budget to write first, if any."""

    budget: Obj | None = None


def budgets_for(pod: Obj, pdbs: list[Obj]) -> list[Obj]:
    """The budgets whose selector selects the pod (policy/v1: an empty selector selects every pod of the
    namespace; a missing one selects none)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return [p for p in pdbs if (p.get("spec") or {}).get("selector") is not None
            and validation_meta.selector_matches((p.get("spec") or {}).get("selector"), labels)]


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def decide(pod: Obj, pdbs: list[Obj], now: str) -> Decision:
    """The eviction of `pod` against the namespace's budgets `pdbs` (StatusError when refused).

    Args:
        pod: the stored pod.
        pdbs: the PodDisruptionBudgets of its namespace.
        now: RFC 3339 time recorded in `disruptedPods` and the condition.
    """
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed", "Pending") or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return Decision()  # canIgnorePDB
    matching = budgets_for(pod, pdbs)
    if not matching:
        return Decision()
    if len(matching) > 1:
        # a plain Go error: a 500 without a reason (lwsconf fidelity subresources/eviction-pdb/evict-two-budgets)
        raise errors.StatusError(500, "", "This pod has more than one PodDisruptionBudget, which the eviction "
                                 "subresource does not support.")
    pdb = matching[0]
    status = pdb.get("status") or {}
    name = (pdb.get("metadata") or {}).get("name", "")
    if not _ready(pod):
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
        healthy, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
        if policy == "AlwaysAllow" or (healthy >= desired and desired > 0):
            return Decision()
    if int(status.get("observedGeneration") or 0) < int((pdb.get("metadata") or {}).get("generation") or 0):
        raise _too_many(f"The disruption budget {name} is still being processed by the server.", retry_after=10)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise errors.forbidden("poddisruptionbudgets", "policy", name, "pdb disruptions allowed is negative")
    disrupted = dict(status.get("disruptedPods") or {})
    if len(disrupted) > MAX_DISRUPTED_PODS:
        raise errors.forbidden("poddisruptionbudgets", "policy", name,
                               "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        healthy, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
        if healthy < desired:
            raise _too_many(f"The disruption budget {name} needs {desired} healthy pods and has {healthy} currently")
        # kube-apiserver 1.37.2 when the budget is met but spent (lwsconf fidelity
        # subresources/eviction-pdb/evict-over-budget)
        raise _too_many(f"The disruption budget {name} does not allow evicting pods currently")
    budget = copy.deepcopy(pdb)
    new_status = budget.setdefault("status", {})
    new_status["disruptionsAllowed"] = allowed - 1
    disrupted[(pod.get("metadata") or {}).get("name", "")] = now
    new_status["disruptedPods"] = disrupted
    if allowed - 1 == 0:
        new_status["conditions"] = set_condition(new_status.get("conditions") or [], False, now,
                                                 int((pdb.get("metadata") or {}).get("generation") or 0))
    return Decision(budget=budget)


def with_disruption_target(pod: Obj, now: str) -> Obj:
    """The pod with `DisruptionTarget` True (EvictionByEvictionAPI, "Eviction API: evicting"), written before
    every eviction's delete, also one that did not ask a budget (eviction.go `addConditionAndDeletePod`,
    `podutil.UpdatePodCondition`: the transition time moves only when the status changes). kube-apiserver
    writes it through its pod status store, below the field manager, so managedFields do not change
    (lwsconf fidelity subresources/eviction-condition)."""
    new = copy.deepcopy(pod)
    conditions = new.setdefault("status", {}).setdefault("conditions", [])
    wanted = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None, "lastTransitionTime": now,
              "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
    for i, condition in enumerate(conditions):
        if condition.get("type") == "DisruptionTarget":
            if condition.get("status") == "True":
                wanted["lastTransitionTime"] = condition.get("lastTransitionTime")
            conditions[i] = {**condition, **wanted}
            return new
    conditions.append(wanted)
    return new


def _too_many(cause: str, retry_after: int = 0) -> errors.StatusError:
    """NewTooManyRequests(VIOLATION, retry_after) with a DisruptionBudget cause, as eviction.go builds it
    (0 seconds: no retryAfterSeconds, omitempty)."""
    return errors.StatusError(429, "TooManyRequests", VIOLATION, retry_after_seconds=retry_after or None,
                              causes=[errors.Cause("", cause, "DisruptionBudget")])
