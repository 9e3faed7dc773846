"""PodDisruptionBudgets on the sim's API server: validation and `pods/eviction` as eviction.go answers.

The budget's status is what the disruption controller writes (tests/sim/controllers/lifecycle/test_disruption.py);
here it is set through `/status` by hand, so each eviction answer is checked against a known budget.
"""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.sim.apiserver.admission.validation import disruption as validation_policy
from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import eviction
from tests.conftest import SimAPI

NOW = "2026-12-03T11:00:00Z"


def pod(name: str = "p", *, ready: bool = True, phase: str = "Running", labels: dict[str, str] | None = None,
        ) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "web"}},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pdb(name: str = "web", *, allowed: int, healthy: int = 2, desired: int = 2, generation: int = 1,
        observed: int = 1, selector: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "generation": generation, "uid": f"uid-{name}"},
            "spec": {"selector": {"matchLabels": {"app": "web"}} if selector is None else selector, **spec},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired,
                       "expectedPods": 2, "observedGeneration": observed}}


def test_no_disruption_allowed_is_429_with_the_budget_cause() -> None:
    with pytest.raises(errors.StatusError) as refused:
        eviction.decide(pod(), [pdb(allowed=0)], NOW)
    status = refused.value.to_status()
    assert (status["code"], status["reason"], status["message"]) == (
        429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
    assert status["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert status["details"]["causes"][0] == {  # no field: StatusCause.field is omitempty
        "reason": "DisruptionBudget", "message": "The disruption budget web does not allow evicting pods currently"}
    assert "retryAfterSeconds" not in status["details"]
    with pytest.raises(errors.StatusError) as short:  # fewer healthy pods than the budget needs
        eviction.decide(pod(), [pdb(allowed=0, healthy=1, desired=2)], NOW)
    assert short.value.causes[0].message == "The disruption budget web needs 2 healthy pods and has 1 currently"


def test_an_allowed_eviction_spends_the_budget_and_records_the_pod() -> None:
    decision = eviction.decide(pod("p1"), [pdb(allowed=1, desired=1)], NOW)
    assert decision.budget is not None
    status = decision.budget["status"]
    assert status["disruptionsAllowed"] == 0 and status["disruptedPods"] == {"p1": NOW}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("DisruptionAllowed", "False", "InsufficientPods")]


def test_budget_not_yet_observed_is_still_being_processed() -> None:
    with pytest.raises(errors.StatusError) as refused:
        eviction.decide(pod(), [pdb(allowed=3, generation=2, observed=1)], NOW)
    assert refused.value.code == 429
    assert refused.value.causes[0].message == "The disruption budget web is still being processed by the server."
    assert refused.value.to_status()["details"]["retryAfterSeconds"] == 10


def test_pods_that_need_no_budget() -> None:
    assert eviction.decide(pod(phase="Pending"), [pdb(allowed=0)], NOW).budget is None  # canIgnorePDB
    assert eviction.decide(pod(phase="Succeeded"), [pdb(allowed=0)], NOW).budget is None
    assert eviction.decide(pod(labels={"app": "other"}), [pdb(allowed=0)], NOW).budget is None
    # not ready, budget met (IfHealthyBudget): deleted without spending it
    assert eviction.decide(pod(ready=False), [pdb(allowed=0, healthy=2, desired=2)], NOW).budget is None
    # not ready, budget not met: refused unless AlwaysAllow
    with pytest.raises(errors.StatusError):
        eviction.decide(pod(ready=False), [pdb(allowed=0, healthy=1, desired=2)], NOW)
    always = pdb(allowed=0, healthy=1, desired=2, unhealthyPodEvictionPolicy="AlwaysAllow")
    assert eviction.decide(pod(ready=False), [always], NOW).budget is None


def test_two_budgets_for_one_pod_is_a_500() -> None:
    with pytest.raises(errors.StatusError) as refused:
        eviction.decide(pod(), [pdb("a", allowed=1), pdb("b", allowed=1, selector={})], NOW)
    assert refused.value.code == 500 and "reason" not in refused.value.to_status()
    assert "more than one PodDisruptionBudget" in refused.value.message


def test_pdb_validation() -> None:
    def fields(spec: dict[str, Any]) -> list[str]:
        return [c.field for c in validation_policy.validate_pdb({"spec": spec}, None)]
    assert fields({"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}) == []
    assert fields({"maxUnavailable": "50%", "selector": {}}) == []
    assert fields({"minAvailable": 1, "maxUnavailable": 1}) == ["spec"]
    both = validation_policy.validate_pdb({"spec": {"minAvailable": 1, "maxUnavailable": "5%", "selector": {}}}, None)
    assert both[0].message == ('Invalid value: {"MinAvailable":1,"Selector":{},"MaxUnavailable":"5%",'
                               '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set')
    assert fields({"minAvailable": -1}) == ["spec.minAvailable"]
    assert fields({"maxUnavailable": "150%"}) == ["spec.maxUnavailable"]
    assert fields({"maxUnavailable": "five"}) == ["spec.maxUnavailable"]
    assert fields({"unhealthyPodEvictionPolicy": "Sometimes"}) == ["spec.unhealthyPodEvictionPolicy"]
    assert fields({"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}) != []


PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
PODS = "/api/v1/namespaces/default/pods"


def test_eviction_through_the_server_honours_the_budget(sim_api: SimAPI) -> None:
    bad = sim_api.request("POST", PDBS, json={"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                              "metadata": {"name": "both"},
                                              "spec": {"minAvailable": 1, "maxUnavailable": 1, "selector": {}}})
    assert bad.status_code == 422 and "minAvailable and maxUnavailable cannot be both set" in bad.text, bad.text
    created = sim_api.request("POST", PDBS, json={"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                                  "metadata": {"name": "web"},
                                                  "spec": {"minAvailable": 1,
                                                           "selector": {"matchLabels": {"app": "web"}}}})
    assert created.status_code == 201, created.text
    for name in ("w1", "w2"):
        made = sim_api.request("POST", PODS, json={"apiVersion": "v1", "kind": "Pod",
                                                   "metadata": {"name": name, "labels": {"app": "web"}},
                                                   "spec": {"containers": [{"name": "c", "image": "x"}]}})
        assert made.status_code == 201, made.text
        current = made.json()
        current["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        assert sim_api.request("PUT", f"{PODS}/{name}/status", json=current).status_code == 200
    budget = sim_api.request("GET", f"{PDBS}/web").json()
    budget["status"] = {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2,
                        "observedGeneration": 1}
    assert sim_api.request("PUT", f"{PDBS}/web/status", json=budget).status_code == 200

    def evict(name: str) -> Any:
        return sim_api.request("POST", f"{PODS}/{name}/eviction",
                               json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
    first = evict("w1")
    assert first.status_code == 201, first.text
    spent = sim_api.request("GET", f"{PDBS}/web").json()["status"]
    assert spent["disruptionsAllowed"] == 0 and "w1" in spent["disruptedPods"]
    second = evict("w2")
    assert second.status_code == 429, second.text
    assert second.json()["message"] == eviction.VIOLATION
    assert sim_api.request("GET", f"{PODS}/w2").status_code == 200  # still there
    refused = sim_api.request("GET", f"{PODS}/w2").json()
    assert all(c["type"] != "DisruptionTarget" for c in refused["status"]["conditions"])  # refused: not marked


def test_an_evicted_pod_is_marked_disruption_target_first(sim_api: SimAPI) -> None:
    """kube-apiserver 1.37.2 marks even a Pending pod, which needs no budget, before deleting it; a finalizer
    keeps it readable (lwsconf fidelity subresources/eviction-condition)."""
    made = sim_api.request("POST", PODS, json={"apiVersion": "v1", "kind": "Pod",
                                               "metadata": {"name": "held", "finalizers": ["lwsconf.dev/hold"]},
                                               "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert made.status_code == 201, made.text
    wrong = sim_api.request("POST", f"{PODS}/held/eviction",
                            json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "held"},
                                  "deleteOptions": {"preconditions": {"uid": "not-the-pod"}}})
    assert wrong.status_code == 409, wrong.text  # refused before the mark, as addConditionAndDeletePod checks
    assert not sim_api.request("GET", f"{PODS}/held").json()["status"].get("conditions")
    dry = sim_api.request("POST", f"{PODS}/held/eviction?dryRun=All",
                          json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "held"},
                                "deleteOptions": {"dryRun": ["All"]}})
    assert dry.status_code == 201, dry.text
    assert not sim_api.request("GET", f"{PODS}/held").json()["status"].get("conditions")  # dry run writes nothing
    evicted = sim_api.request("POST", f"{PODS}/held/eviction",
                              json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "held"}})
    assert evicted.status_code == 201, evicted.text
    held = sim_api.request("GET", f"{PODS}/held").json()
    assert held["metadata"].get("deletionTimestamp")
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in held["status"]["conditions"]] == [
        ("DisruptionTarget", "True", "EvictionByEvictionAPI", "Eviction API: evicting")]
    assert [m["manager"] for m in held["metadata"]["managedFields"]] == [made.json()["metadata"]["managedFields"][0]
                                                                        ["manager"]]  # below the field manager


def test_disruption_target_keeps_its_transition_time_when_already_true() -> None:
    first = eviction.with_disruption_target(pod(), NOW)
    again = eviction.with_disruption_target(first, "2026-12-03T12:00:00Z")
    targets = [c for c in again["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert len(targets) == 1 and targets[0]["lastTransitionTime"] == NOW
    assert [c["type"] for c in again["status"]["conditions"]] == ["Ready", "DisruptionTarget"]
