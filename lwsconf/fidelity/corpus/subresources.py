"""Status and scale subresources: what each may change, generation, and subresources a kind lacks."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import (
    APPS,
    CORE,
    configmap,
    create,
    deployment,
    get,
    patch,
    pod,
    put,
    statefulset,
)
from lwsconf.fidelity.model import MERGE, Scenario

DEP = f"{APPS}/deployments/web"
PDBS = "/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets"
AUTHZ = "/apis/authorization.k8s.io/v1"
SMP = "application/strategic-merge-patch+json"
READY = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
STS = f"{APPS}/statefulsets/db"


def _pdb(name: str, selector: dict[str, object], **spec: object) -> dict[str, object]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"selector": selector, **spec}}


def _eviction(name: str) -> dict[str, object]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}


def _ssar(spec: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec}


def _scale(name: str, replicas: int, rv: str | None = None) -> dict[str, object]:
    meta: dict[str, str] = {"name": name}
    if rv:
        meta["resourceVersion"] = rv
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": meta, "spec": {"replicas": replicas}}


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("subresources", "status-subresource", (
        create("create", f"{APPS}/deployments", deployment("web")),
        patch("status-patch", f"{DEP}/status", {"status": {"replicas": 3, "observedGeneration": 1}}, MERGE),
        patch("status-patch-ignores-spec", f"{DEP}/status", {"spec": {"replicas": 9}}, MERGE),
        patch("main-ignores-status", DEP, {"status": {"replicas": 7}}, MERGE),
        get("read", DEP),
        get("read-status", f"{DEP}/status"),
        patch("spec-change-bumps-generation", DEP, {"spec": {"replicas": 2}}, MERGE),
        patch("label-change-keeps-generation", DEP, {"metadata": {"labels": {"x": "y"}}}, MERGE),
        patch("invalid-status", f"{DEP}/status", {"status": {"replicas": -1}}, MERGE),
        create("cm", f"{CORE}/configmaps", configmap("cm")),
        get("configmap-has-no-status", f"{CORE}/configmaps/cm/status"),
        get("unknown-subresource", f"{DEP}/frobnicate"),
        create("pod", f"{CORE}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                       "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}],
                                                "automountServiceAccountToken": False}}),
        patch("pod-status-ready", f"{CORE}/pods/p/status", {"status": {
            "phase": "Running", "podIP": "10.1.2.3",
            "conditions": [{"type": "Ready", "status": "True"}]}}, "application/strategic-merge-patch+json"),
        get("pod-after-status", f"{CORE}/pods/p"),
    )),
    Scenario("subresources", "scale-subresource", (
        create("create-deployment", f"{APPS}/deployments", deployment("web", replicas=1)),
        get("get-scale", f"{DEP}/scale", save={"rv": "metadata.resourceVersion"}),
        put("put-scale", f"{DEP}/scale", _scale("web", 4)),
        put("put-scale-stale", f"{DEP}/scale", _scale("web", 5, "${rv}")),
        patch("patch-scale", f"{DEP}/scale", {"spec": {"replicas": 2}}, MERGE),
        patch("patch-scale-negative", f"{DEP}/scale", {"spec": {"replicas": -2}}, MERGE),
        get("deployment-after-scale", DEP),
        create("create-sts", f"{APPS}/statefulsets", statefulset("db")),
        get("sts-scale", f"{STS}/scale"),
        patch("sts-patch-scale", f"{STS}/scale", {"spec": {"replicas": 3}}, MERGE),
        put("scale-name-mismatch", f"{STS}/scale", _scale("other", 1)),
        get("scale-of-missing", f"{APPS}/deployments/absent/scale"),
    )),
    # pods/eviction against a PodDisruptionBudget whose status is written by hand (no disruption controller on
    # either side): eviction.go's refusals and its decrement of disruptionsAllowed
    Scenario("subresources", "eviction-pdb", (
        create("pod", f"{CORE}/pods", pod("p", {"app": "web"})),
        patch("pod-ready", f"{CORE}/pods/p/status", READY, SMP),
        create("pdb", PDBS, _pdb("web", {"matchLabels": {"app": "web"}}, minAvailable=1)),
        create("pdb-both-counts", PDBS, _pdb("both", {}, minAvailable=1, maxUnavailable=1)),
        create("pdb-percent-over-100", PDBS, _pdb("pct", {}, maxUnavailable="150%")),
        create("evict-unobserved-budget", f"{CORE}/pods/p/eviction", _eviction("p")),
        patch("budget-status", f"{PDBS}/web/status", {"status": {
            "observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1,
            "expectedPods": 2}}, MERGE),
        create("evict-allowed", f"{CORE}/pods/p/eviction", _eviction("p")),
        # disruptedPods holds the eviction's time; its value is normalised as any timestamp
        get("budget-after-eviction", f"{PDBS}/web", vary=("body.status.disruptedPods.p",)),
        create("pod-2", f"{CORE}/pods", pod("q", {"app": "web"})),
        patch("pod-2-ready", f"{CORE}/pods/q/status", READY, SMP),
        create("evict-over-budget", f"{CORE}/pods/q/eviction", _eviction("q")),
        create("pdb-selecting-all", PDBS, _pdb("all", {}, maxUnavailable=1)),
        create("evict-two-budgets", f"{CORE}/pods/q/eviction", _eviction("q")),
    )),
    # eviction.go's addConditionAndDeletePod: every eviction, also one that need not ask a budget (a Pending pod),
    # first writes the pod's DisruptionTarget condition (EvictionByEvictionAPI) through the status store, then
    # deletes it; a finalizer keeps the evicted pod readable
    Scenario("subresources", "eviction-condition", (
        create("pod", f"{CORE}/pods", {**pod("held", {"app": "held"}),
                                       "metadata": {"name": "held", "labels": {"app": "held"},
                                                    "finalizers": ["lwsconf.dev/hold"]}},
               save={"held": "metadata.uid"}),
        create("evict-wrong-uid", f"{CORE}/pods/held/eviction",
               {**_eviction("held"), "deleteOptions": {"preconditions": {"uid": "not-the-pod"}}}),
        get("refused-pod-unmarked", f"{CORE}/pods/held"),
        create("evict-pending", f"{CORE}/pods/held/eviction", _eviction("held")),
        get("evicted-pod", f"{CORE}/pods/held"),
        patch("release", f"{CORE}/pods/held", {"metadata": {"finalizers": None}}, MERGE),
    )),
    # create-only reviews; what the user may do and who it is depend on the server's authorizer and the client's
    # credentials (RBAC and a client certificate on kube-apiserver, one all-powerful token user on the sim), so
    # those answers vary; the shape, codes and validation do not
    Scenario("subresources", "self-subject-reviews", (
        create("access-review", f"{AUTHZ}/selfsubjectaccessreviews",
               _ssar({"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}),
               vary=("body.status",)),
        create("access-review-empty-spec", f"{AUTHZ}/selfsubjectaccessreviews", _ssar({})),
        create("access-review-both-attributes", f"{AUTHZ}/selfsubjectaccessreviews",
               _ssar({"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/", "verb": "get"}})),
        get("access-reviews-not-listed", f"{AUTHZ}/selfsubjectaccessreviews"),
        create("rules-review-no-namespace", f"{AUTHZ}/selfsubjectrulesreviews",
               {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}}),
        create("rules-review", f"{AUTHZ}/selfsubjectrulesreviews",
               {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                "spec": {"namespace": "default"}}, vary=("body.status",)),
        create("self-subject-review", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
               {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
               vary=("body.status.userInfo",)),
    )),
)
