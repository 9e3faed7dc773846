"""dryRun, fieldValidation (Strict, Warn, Ignore; unknown and duplicate fields), and bad requests:
malformed bodies, wrong types, unknown kinds and resources, invalid names, namespace mismatches,
unsupported media types and methods."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import (
    APPS,
    CORE,
    configmap,
    create,
    delete,
    deployment,
    get,
    patch,
    pod,
    put,
)
from lwsconf.fidelity.model import MERGE, Scenario, Step

CMS = f"{CORE}/configmaps"
DEPS = f"{APPS}/deployments"
DRY = {"dryRun": "All"}

DRY_RUN = Scenario("requests", "dry-run", (
    create("create-dry", CMS, configmap("dry"), query=DRY),
    get("not-created", f"{CMS}/dry"),
    create("create-real", CMS, configmap("real", {"a": "1"})),
    put("update-dry", f"{CMS}/real", configmap("real", {"a": "2"}), query=DRY),
    patch("patch-dry", f"{CMS}/real", {"data": {"a": "3"}}, MERGE, query=DRY),
    delete("delete-dry", f"{CMS}/real", query=DRY),
    get("unchanged", f"{CMS}/real"),
    create("bad-dry-run-value", CMS, configmap("x"), query={"dryRun": "Some"}),
    create("dry-run-invalid-object", DEPS, deployment("bad", replicas=-1), query=DRY),
    create("dry-run-generate-name", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"generateName": "g-"}}, query=DRY),
))

_UNKNOWN = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"data":{"a":"1"},"colour":"blue"}'
_DUPLICATE = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"data":{"a":"1"},"data":{"b":"2"}}'
_NESTED = {**deployment("%s"), "spec": {**deployment("x")["spec"], "replicaz": 3}}

FIELD_VALIDATION = Scenario("requests", "field-validation", (
    create("unknown-strict", CMS, _UNKNOWN % "u1", query={"fieldValidation": "Strict"}),
    create("unknown-warn", CMS, _UNKNOWN % "u2", query={"fieldValidation": "Warn"}),
    create("unknown-ignore", CMS, _UNKNOWN % "u3", query={"fieldValidation": "Ignore"}),
    create("unknown-default", CMS, _UNKNOWN % "u4"),
    create("duplicate-strict", CMS, _DUPLICATE % "d1", query={"fieldValidation": "Strict"}),
    create("duplicate-warn", CMS, _DUPLICATE % "d2", query={"fieldValidation": "Warn"}),
    create("nested-unknown-strict", DEPS, {**_NESTED, "metadata": {"name": "n1"}}, query={"fieldValidation": "Strict"}),
    create("nested-unknown-warn", DEPS, {**_NESTED, "metadata": {"name": "n2"}}, query={"fieldValidation": "Warn"}),
    create("bad-field-validation-value", CMS, configmap("v"), query={"fieldValidation": "Loud"}),
    patch("patch-unknown-strict", f"{CMS}/u2", {"colour": "red"}, MERGE, query={"fieldValidation": "Strict"}),
    patch("patch-unknown-warn", f"{CMS}/u2", {"colour": "red"}, MERGE, query={"fieldValidation": "Warn"}),
    create("unknown-metadata-field-strict", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "m1", "colour": "x"}},
           query={"fieldValidation": "Strict"}),
))

BAD = Scenario("requests", "bad-requests", (
    create("malformed-json", CMS, '{"apiVersion": "v1", "kind": '),
    create("body-is-a-list", CMS, "[]"),
    create("body-is-a-string", CMS, '"hello"'),
    create("empty-body", CMS, ""),
    create("yaml-body", CMS, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n",
           content_type="application/yaml"),
    create("unsupported-media-type", CMS, "<xml/>", content_type="application/xml"),
    create("wrong-type-data", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"},
                                    "data": {"a": 1}}),
    create("wrong-type-replicas", DEPS, {**deployment("w"), "spec": {**deployment("w")["spec"], "replicas": "3"}}),
    create("wrong-type-metadata", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "cm"}),
    create("wrong-type-labels", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "l", "labels": {"a": 1}}}),
    create("kind-mismatch", CMS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "k"}}),
    create("unknown-kind", CMS, {"apiVersion": "v1", "kind": "Frobnicator", "metadata": {"name": "k"}}),
    create("missing-kind", CMS, {"apiVersion": "v1", "metadata": {"name": "k"}}),
    create("api-version-mismatch", CMS, {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "k"}}),
    create("missing-name", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    create("uppercase-name", CMS, configmap("Upper")),
    create("name-too-long", CMS, configmap("a" * 254)),
    create("name-with-slash", CMS, configmap("a/b")),
    create("name-dot-dot", CMS, configmap("..")),
    create("invalid-label-key", CMS, configmap("lk", labels={"-bad": "x"})),
    create("invalid-label-value", CMS, configmap("lv", labels={"ok": "not ok"})),
    create("pod-name-not-subdomain", f"{CORE}/pods", pod("Pod_1")),
    create("pod-without-containers", f"{CORE}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e"},
                                                      "spec": {"containers": []}}),
    create("service-bad-port", f"{CORE}/services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                                    "spec": {"ports": [{"port": 70000}]}}),
    create("namespace-mismatch", CMS, {**configmap("nm"), "metadata": {"name": "nm", "namespace": "other"}}),
    create("missing-namespace", "/api/v1/namespaces/does-not-exist/configmaps", configmap("x")),
    get("unknown-resource", f"{CORE}/frobnicators"),
    get("unknown-group", "/apis/frobnicate.example.com/v1/things"),
    get("unknown-version", "/api/v2/namespaces"),
    Step("method-not-allowed", "PUT", CMS, configmap("x")),
    Step("post-to-named-path", "POST", f"{CMS}/named", configmap("named")),
    get("cluster-scoped-in-namespace", f"{CORE}/nodes"),
    get("invalid-namespace-name", "/api/v1/namespaces/Not_Valid/configmaps"),
    get("limit-not-a-number", CMS, query={"limit": "many"}),
    get("timeout-not-a-number", CMS, query={"timeoutSeconds": "soon"}),
))

SCENARIOS: tuple[Scenario, ...] = (DRY_RUN, FIELD_VALIDATION, BAD)
