"""The LWS CRD (manifests/crd/) and its custom resources: install, Established, CRUD, defaults,
structural validation (types, bounds, enums, required, unknown fields) and CEL rules."""

from __future__ import annotations

from typing import Any

from lwsconf import lwsapi
from lwsconf.fidelity.corpus._build import (
    CRDS,
    LWS,
    LWS_CRD_NAME,
    create,
    delete,
    get,
    lws,
    lws_crd,
    patch,
    put,
)
from lwsconf.fidelity.model import MERGE, Scenario, Step, Until


def _with(spec: dict[str, Any], name: str = "bad") -> dict[str, Any]:
    obj = lws(name)
    obj["spec"].update(spec)
    return obj


def _template(**extra: Any) -> dict[str, Any]:
    obj = lws("bad")
    obj["spec"]["leaderWorkerTemplate"].update(extra)
    return obj


INSTALL = Scenario("crd", "crd-install", (
    # The CRD's status (conditions, acceptedNames) is written by each server's own controller a moment
    # after the create; the create's answer is compared once it is Established, in the next step.
    create("create-crd", CRDS, lws_crd(), vary=("body.status",)),
    Step("crd-established", "GET", f"{CRDS}/{LWS_CRD_NAME}",
         until=Until("body.status.conditions.1.status", "True", 60.0)),
    get("discovery-group", f"/apis/{lwsapi.API_VERSION}"),
    # Discovery of the new group may lag behind Established by a moment on kube-apiserver.
    Step("list-empty", "GET", LWS, until=Until("code", 200, 30.0)),
    create("create-crd-again", CRDS, lws_crd()),
))

CRUD = Scenario("crd", "lws-crud", (
    create("create", LWS, lws("a"), save={"rv": "metadata.resourceVersion", "uid": "metadata.uid"}),
    get("get", f"{LWS}/a"),
    get("list", LWS),
    put("replace", f"{LWS}/a", {**lws("a", replicas=2), "metadata": {"name": "a", "resourceVersion": "${rv}"}}),
    put("replace-stale", f"{LWS}/a", {**lws("a", replicas=3), "metadata": {"name": "a", "resourceVersion": "${rv}"}}),
    patch("merge-patch-replicas", f"{LWS}/a", {"spec": {"replicas": 4}}, MERGE),
    get("scale", f"{LWS}/a/scale"),
    get("status", f"{LWS}/a/status"),
    create("create-again", LWS, lws("a")),
    get("list-label-selector", LWS, query={"labelSelector": "app=none"}),
    delete("delete", f"{LWS}/a"),
    get("get-deleted", f"{LWS}/a"),
))

VALIDATION = Scenario("crd", "lws-validation", (
    create("replicas-negative", LWS, _with({"replicas": -1})),
    create("replicas-string", LWS, _with({"replicas": "two"})),
    create("size-zero", LWS, _template(size=0)),
    create("size-missing-template", LWS, {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND,
                                          "metadata": {"name": "bad"}, "spec": {"replicas": 1}}),
    create("spec-missing", LWS, {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND,
                                 "metadata": {"name": "bad"}}),
    create("startup-policy-enum", LWS, _with({"startupPolicy": "Sometimes"})),
    create("restart-policy-enum", LWS, _template(restartPolicy="Always")),
    create("name-not-dns1035", LWS, lws("1abc")),
    create("name-too-long", LWS, lws("a" * 64)),
    create("unknown-field-pruned", LWS, _with({"colour": "blue"}, "pruned")),
    get("unknown-field-gone", f"{LWS}/pruned"),
    create("unknown-field-strict", LWS, _with({"colour": "blue"}, "strict"), query={"fieldValidation": "Strict"}),
    create("unknown-field-warn", LWS, _with({"colour": "blue"}, "warned"), query={"fieldValidation": "Warn"}),
    create("cel-max-unavailable-zero", LWS, _with({
        "rolloutStrategy": {"type": "RollingUpdate",
                            "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 0}}})),
    create("cel-subgroup-too-big", LWS, _template(subGroupPolicy={"subGroupSize": 5})),
    create("cel-product-overflow", LWS, {**_with({"replicas": 1000000}),
                                         "spec": {"replicas": 1000000, "leaderWorkerTemplate": {
                                             "size": 1000000, "workerTemplate": lws("x")["spec"][
                                                 "leaderWorkerTemplate"]["workerTemplate"]}}}),
    create("defaults-applied", LWS, {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND,
                                     "metadata": {"name": "defaults"}, "spec": {"leaderWorkerTemplate": {
                                         "workerTemplate":
                                             lws("x")["spec"]["leaderWorkerTemplate"]["workerTemplate"]}}}),
    patch("cel-on-update", f"{LWS}/defaults", {"spec": {"leaderWorkerTemplate": {"size": 0}}}, MERGE),
    create("wrong-kind", LWS, {**lws("wk"), "kind": "LeaderWorkerSetX"}),
    create("wrong-api-version", LWS, {**lws("wv"), "apiVersion": f"{lwsapi.GROUP}/v2"}),
    get("unknown-version-path", f"/apis/{lwsapi.GROUP}/v2/namespaces/${{ns}}/{lwsapi.PLURAL}"),
))

SCENARIOS: tuple[Scenario, ...] = (INSTALL, CRUD, VALIDATION)
