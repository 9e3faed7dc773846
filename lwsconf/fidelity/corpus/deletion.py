"""Finalizers and propagation policies on an API server without controllers: what a delete answers
and leaves behind (deletionTimestamp, the orphan/foregroundDeletion finalizers), grace periods,
deletecollection, and the errors of bad delete options."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import APPS, CORE, configmap, create, delete, deployment, get, patch, pod
from lwsconf.fidelity.model import MERGE, Scenario, Step

CMS = f"{CORE}/configmaps"


def _with_finalizer(name: str) -> dict[str, object]:
    obj = configmap(name)
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    return obj


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("deletion", "delete-finalizers", (
        create("create-held", CMS, _with_finalizer("held")),
        delete("delete-held", f"{CMS}/held"),
        get("held-terminating", f"{CMS}/held"),
        patch("add-data-while-terminating", f"{CMS}/held", {"data": {"late": "1"}}, MERGE),
        patch("add-finalizer-while-terminating", f"{CMS}/held",
              {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}, MERGE),
        delete("delete-again", f"{CMS}/held"),
        patch("remove-finalizers", f"{CMS}/held", {"metadata": {"finalizers": None}}, MERGE),
        get("held-gone", f"{CMS}/held"),
        create("create-bad-finalizer", CMS, {**configmap("badfin"), "metadata": {
            "name": "badfin", "finalizers": ["no-domain"]}}),
    )),
    Scenario("deletion", "delete-propagation", (
        create("create-orphan", f"{APPS}/deployments", deployment("orphan")),
        delete("delete-orphan", f"{APPS}/deployments/orphan", {"propagationPolicy": "Orphan"}),
        get("orphan-waits-for-gc", f"{APPS}/deployments/orphan"),
        create("create-foreground", f"{APPS}/deployments", deployment("fg")),
        delete("delete-foreground", f"{APPS}/deployments/fg", {"propagationPolicy": "Foreground"}),
        get("foreground-waits-for-gc", f"{APPS}/deployments/fg"),
        create("create-background", f"{APPS}/deployments", deployment("bg")),
        delete("delete-background", f"{APPS}/deployments/bg", {"propagationPolicy": "Background"}),
        get("background-gone", f"{APPS}/deployments/bg"),
        create("create-cm", CMS, configmap("cm")),
        delete("bad-policy", f"{CMS}/cm", {"propagationPolicy": "Sideways"}),
        delete("orphan-and-orphan-dependents", f"{CMS}/cm", {"propagationPolicy": "Orphan",
                                                            "orphanDependents": False}),
        delete("policy-in-query", f"{CMS}/cm", query={"propagationPolicy": "Foreground"}),
        get("cm-with-foreground-finalizer", f"{CMS}/cm"),
        delete("delete-missing", f"{CMS}/absent"),
        delete("body-not-json", f"{CMS}/cm", "{nope"),
    )),
    Scenario("deletion", "delete-grace", (
        create("pod-unscheduled", f"{CORE}/pods", pod("u")),
        delete("delete-unscheduled-pod", f"{CORE}/pods/u"),
        create("pod-scheduled", f"{CORE}/pods", pod("s", nodeName="node-1")),
        delete("delete-scheduled-pod", f"{CORE}/pods/s", {"gracePeriodSeconds": 30}),
        get("scheduled-pod-terminating", f"{CORE}/pods/s"),
        delete("shorten-grace", f"{CORE}/pods/s", {"gracePeriodSeconds": 5}),
        delete("force-now", f"{CORE}/pods/s", {"gracePeriodSeconds": 0}),
        get("pod-gone", f"{CORE}/pods/s"),
        delete("negative-grace", f"{CMS}/whatever", {"gracePeriodSeconds": -1}),
    )),
    Scenario("deletion", "delete-collection", (
        create("a", CMS, configmap("a", labels={"batch": "1"})),
        create("b", CMS, configmap("b", labels={"batch": "1"})),
        create("c", CMS, configmap("c", labels={"batch": "2"})),
        Step("deletecollection-selected", "DELETE", CMS, query={"labelSelector": "batch=1"}),
        get("remaining", CMS),
        Step("deletecollection-dry-run", "DELETE", CMS, query={"dryRun": "All"}),
        get("still-there", CMS),
        Step("deletecollection-bad-selector", "DELETE", CMS, query={"labelSelector": "=="}),
    )),
)
