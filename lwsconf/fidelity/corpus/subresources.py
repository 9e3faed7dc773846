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
    put,
    statefulset,
)
from lwsconf.fidelity.model import MERGE, Scenario

DEP = f"{APPS}/deployments/web"
STS = f"{APPS}/statefulsets/db"


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
)
