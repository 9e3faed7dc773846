"""Admission webhooks on the sim API server, against a real HTTPS webhook server on loopback.

Expected behaviour is kube-apiserver's, read in kubernetes/kubernetes
`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/` (mutating/dispatcher.go, validating/dispatcher.go,
generic/webhook.go `ShouldCallHook`, request/admissionreview.go, errors/statuserror.go `ToStatusErr`) and
`pkg/apis/admissionregistration/{v1/defaults.go,validation/validation.go}`; each test names what it checks.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from lwsconf.controlplane.pki import Authority
from tests.conftest import SimAPI
from tests.sim.apiserver.policies.webhook_server import WebhookServer, json_patch

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
MWC = f"{ADMISSION}/mutatingwebhookconfigurations"
VWC = f"{ADMISSION}/validatingwebhookconfigurations"
CMS = "/api/v1/namespaces/default/configmaps"


def rule(*resources: str, operations: tuple[str, ...] = ("CREATE", "UPDATE"), groups: tuple[str, ...] = ("",),
         versions: tuple[str, ...] = ("v1",), **extra: Any) -> dict[str, Any]:
    return {"apiGroups": list(groups), "apiVersions": list(versions), "operations": list(operations),
            "resources": list(resources or ("configmaps",)), **extra}


def hook(name: str, client_config: dict[str, Any], *, rules: list[dict[str, Any]] | None = None,
         **extra: Any) -> dict[str, Any]:
    return {"name": name, "clientConfig": client_config, "rules": rules or [rule()], "sideEffects": "None",
            "admissionReviewVersions": ["v1"], **extra}


def url_config(server: WebhookServer, path: str = "/hook") -> dict[str, Any]:
    return {"url": server.url(path), "caBundle": server.ca_bundle}


def describe(reply: requests.Response) -> str:
    return f"HTTP {reply.status_code}: {reply.text[:2000]}"


def install(sim: SimAPI, collection: str, name: str, *hooks: dict[str, Any]) -> None:
    kind = "MutatingWebhookConfiguration" if collection == MWC else "ValidatingWebhookConfiguration"
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(hooks)}
    reply = sim.request("POST", collection, json=body)
    assert reply.status_code == 201, describe(reply)


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def create_cm(sim: SimAPI, body: dict[str, Any], **params: str) -> requests.Response:
    return sim.request("POST", CMS, json=body, params=params)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WebhookServer]:
    folder = tmp_path / "webhook-pki"
    folder.mkdir()
    srv = WebhookServer(folder)
    yield srv
    srv.close()


# ---- the configurations themselves (validation.go, defaults.go) ----


def test_configurations_are_defaulted_as_v1_defaults_go(sim_api: SimAPI) -> None:
    service = {"service": {"name": "webhook", "namespace": "lws-system", "path": "/mutate"}}
    install(sim_api, MWC, "defaults", hook("m.example.com", service))
    stored = sim_api.request("GET", f"{MWC}/defaults").json()["webhooks"][0]
    assert {k: stored[k] for k in ("failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector",
                                   "timeoutSeconds", "reinvocationPolicy")} == {
        "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "timeoutSeconds": 10, "reinvocationPolicy": "Never"}, stored
    assert stored["clientConfig"]["service"]["port"] == 443, stored
    assert stored["rules"][0]["scope"] == "*", stored


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"sideEffects": None}, "webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun"),
    ({"sideEffects": "Some"}, "webhooks[0].sideEffects", 'Unsupported value: "Some"'),
    ({"name": "hook"}, "webhooks[0].name", "should be a domain with at least three segments separated by dots"),
    ({"timeoutSeconds": 31}, "webhooks[0].timeoutSeconds", "the timeout value must be between 1 and 30 seconds"),
    ({"admissionReviewVersions": ["v2"]}, "webhooks[0].admissionReviewVersions",
     "must include at least one of v1, v1beta1"),
    ({"admissionReviewVersions": None}, "webhooks[0].admissionReviewVersions", "Required value"),
    ({"clientConfig": {}}, "webhooks[0].clientConfig", "exactly one of url or service is required"),
    ({"clientConfig": {"url": "http://127.0.0.1:1/x"}}, "webhooks[0].clientConfig.url",
     "'https' is the only allowed URL scheme"),
    ({"clientConfig": {"url": "https://127.0.0.1:1/x?q=1"}}, "webhooks[0].clientConfig.url",
     "query parameters are not permitted in the URL"),
    ({"clientConfig": {"service": {"name": "s", "namespace": "n", "path": "mutate"}}},
     "webhooks[0].clientConfig.service.path", "must start with a '/'"),
    ({"failurePolicy": "Sometimes"}, "webhooks[0].failurePolicy", 'Unsupported value: "Sometimes"'),
    ({"reinvocationPolicy": "Always"}, "webhooks[0].reinvocationPolicy", 'Unsupported value: "Always"'),
    ({"matchConditions": [{"name": "c", "expression": "object.metadata.name"}]},
     "webhooks[0].matchConditions[0].expression", "must evaluate to bool"),
    ({"rules": [rule(operations=())]}, "webhooks[0].rules[0].operations", "Required value"),
])
def test_invalid_configurations_are_refused_with_422_as_validate_webhook(
        sim_api: SimAPI, change: dict[str, Any], field: str, message: str) -> None:
    body = hook("m.example.com", {"url": "https://127.0.0.1:1/x"})
    for key, value in change.items():
        if value is None:
            body.pop(key)
        else:
            body[key] = value
    reply = sim_api.request("POST", MWC, json={"apiVersion": "admissionregistration.k8s.io/v1",
                                               "kind": "MutatingWebhookConfiguration", "metadata": {"name": "bad"},
                                               "webhooks": [body]})
    assert reply.status_code == 422, describe(reply)
    causes = reply.json()["details"]["causes"]
    assert any(c["field"] == field and message in c["message"] for c in causes), causes


def test_duplicate_webhook_names_are_refused(sim_api: SimAPI) -> None:
    one = hook("v.example.com", {"url": "https://127.0.0.1:1/x"})
    reply = sim_api.request("POST", VWC, json={"apiVersion": "admissionregistration.k8s.io/v1",
                                               "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "dup"},
                                               "webhooks": [one, dict(one)]})
    assert reply.status_code == 422, describe(reply)
    assert reply.json()["details"]["causes"][0]["message"] == 'Duplicate value: "v.example.com"', reply.json()


# ---- the AdmissionReview and JSON patches (request/admissionreview.go, mutating/dispatcher.go) ----


def test_mutating_webhook_gets_a_v1_review_and_its_json_patch_is_stored(sim_api: SimAPI,
                                                                        server: WebhookServer) -> None:
    server.handler = lambda path, review: json_patch({"op": "add", "path": "/data/owner", "value": "webhook"})
    install(sim_api, MWC, "owner", hook("owner.example.com", url_config(server, "/mutate")))
    reply = create_cm(sim_api, configmap("c1", {"a": "1"}))
    assert reply.status_code == 201, describe(reply)
    assert reply.json()["data"] == {"a": "1", "owner": "webhook"}, reply.json()
    assert sim_api.request("GET", f"{CMS}/c1").json()["data"]["owner"] == "webhook"
    path, review = server.reviews[0]
    request = review["request"]
    assert path.startswith("/mutate?timeout=10s"), path
    assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert request["uid"] and request["operation"] == "CREATE" and request["dryRun"] is False, request
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"} == request["requestKind"]
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"} == request["requestResource"]
    assert (request["name"], request["namespace"]) == ("c1", "default"), request
    assert request["userInfo"]["username"] == "system:admin", request
    assert request["object"]["data"] == {"a": "1"} and request["oldObject"] is None, request
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}, request


def test_update_review_carries_old_object_and_update_options(sim_api: SimAPI, server: WebhookServer) -> None:
    install(sim_api, VWC, "watch", hook("v.example.com", url_config(server), rules=[rule(operations=("UPDATE",))]))
    assert create_cm(sim_api, configmap("c2", {"a": "1"})).status_code == 201
    assert server.reviews == [], "an UPDATE-only rule must not match a CREATE"
    reply = sim_api.request("PATCH", f"{CMS}/c2", data=json.dumps({"data": {"a": "2"}}),
                            headers={"Content-Type": "application/merge-patch+json"})
    assert reply.status_code == 200, describe(reply)
    request = server.reviews[0][1]["request"]
    assert request["operation"] == "UPDATE" and request["options"]["kind"] == "UpdateOptions", request
    assert (request["oldObject"]["data"], request["object"]["data"]) == ({"a": "1"}, {"a": "2"}), request


def test_v1beta1_review_is_sent_when_the_webhook_only_speaks_it(sim_api: SimAPI, server: WebhookServer) -> None:
    install(sim_api, VWC, "beta", hook("v.example.com", url_config(server), admissionReviewVersions=["v9", "v1beta1"]))
    assert create_cm(sim_api, configmap("c3")).status_code == 201
    assert server.reviews[0][1]["apiVersion"] == "admission.k8s.io/v1beta1"


def test_mutation_runs_before_validation_and_after_mutating_policies(sim_api: SimAPI, server: WebhookServer) -> None:
    """A patch removing an invalid key makes the object valid: validation sees the mutated object."""
    server.handler = lambda path, review: json_patch({"op": "remove", "path": "/data/bad key"})
    install(sim_api, MWC, "fix", hook("fix.example.com", url_config(server)))
    reply = create_cm(sim_api, configmap("c4", {"bad key": "x", "good": "y"}))
    assert reply.status_code == 201, describe(reply)
    assert reply.json()["data"] == {"good": "y"}


def test_validating_webhook_sees_what_mutating_webhooks_made(sim_api: SimAPI, server: WebhookServer) -> None:
    def handler(path: str, review: dict[str, Any]) -> dict[str, Any] | None:
        if path == "/mutate":
            return json_patch({"op": "add", "path": "/data/stamp", "value": "1"})
        ok = review["request"]["object"]["data"].get("stamp") == "1"
        return None if ok else {"allowed": False, "status": {"message": "not stamped"}}
    server.handler = handler
    install(sim_api, MWC, "stamp", hook("stamp.example.com", url_config(server, "/mutate")))
    install(sim_api, VWC, "check", hook("check.example.com", url_config(server, "/validate")))
    assert create_cm(sim_api, configmap("c5")).status_code == 201
    assert server.paths() == ["/mutate", "/validate"]


# ---- denials and warnings (errors/statuserror.go ToStatusErr, warning headers) ----


def test_denial_keeps_the_webhooks_code_and_reason_and_prefixes_its_message(sim_api: SimAPI,
                                                                            server: WebhookServer) -> None:
    server.handler = lambda path, review: {"allowed": False, "status": {"code": 403, "reason": "Forbidden",
                                                                         "message": "owner label required"}}
    install(sim_api, VWC, "deny", hook("deny.example.com", url_config(server)))
    reply = create_cm(sim_api, configmap("c6"))
    assert reply.status_code == 403, describe(reply)
    status = reply.json()
    assert status["reason"] == "Forbidden", status
    assert status["message"] == 'admission webhook "deny.example.com" denied the request: owner label required'
    assert sim_api.request("GET", f"{CMS}/c6").status_code == 404


def test_denial_without_result_is_400_without_explanation(sim_api: SimAPI, server: WebhookServer) -> None:
    server.handler = lambda path, review: {"allowed": False, "status": {"code": 200}}
    install(sim_api, MWC, "deny", hook("deny.example.com", url_config(server)))
    reply = create_cm(sim_api, configmap("c7"))
    assert reply.status_code == 400, describe(reply)
    assert reply.json()["message"] == 'admission webhook "deny.example.com" denied the request without explanation'


def test_warnings_of_both_kinds_come_back_as_warning_headers(sim_api: SimAPI, server: WebhookServer) -> None:
    server.handler = lambda path, review: {"warnings": [f"careful from {path}"]}
    install(sim_api, MWC, "warn-m", hook("m.example.com", url_config(server, "/m")))
    install(sim_api, VWC, "warn-v", hook("v.example.com", url_config(server, "/v")))
    reply = create_cm(sim_api, configmap("c8"))
    assert reply.status_code == 201, describe(reply)
    assert reply.headers["Warning"] == '299 - "careful from /m", 299 - "careful from /v"', reply.headers


# ---- failing calls and failurePolicy ----


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_unreachable_webhook_fails_closed_or_open_per_failure_policy(sim_api: SimAPI, policy: str,
                                                                    closed_port: int) -> None:
    port = closed_port
    install(sim_api, VWC, "gone", hook("gone.example.com", {"url": f"https://127.0.0.1:{port}/x"},
                                       failurePolicy=policy))
    reply = create_cm(sim_api, configmap("c9"))
    if policy == "Ignore":
        assert reply.status_code == 201, describe(reply)
        return
    assert reply.status_code == 500, describe(reply)
    assert reply.json()["reason"] == "InternalError"
    assert reply.json()["message"] == (
        'Internal error occurred: failed calling webhook "gone.example.com": failed to call webhook: Post '
        f'"https://127.0.0.1:{port}/x?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused')


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_a_certificate_not_signed_by_the_ca_bundle_fails_the_call(sim_api: SimAPI, server: WebhookServer,
                                                                  tmp_path: Path, policy: str) -> None:
    other = tmp_path / "other-ca"
    other.mkdir()
    bundle = base64.b64encode(Authority(other).pair.cert.read_bytes()).decode()
    install(sim_api, MWC, "tls", hook("tls.example.com", {"url": server.url("/x"), "caBundle": bundle},
                                      failurePolicy=policy))
    reply = create_cm(sim_api, configmap("c10"))
    assert reply.status_code == (201 if policy == "Ignore" else 500), describe(reply)
    assert server.reviews == [], "no review may reach a server the CA bundle does not vouch for"
    if policy == "Fail":
        assert reply.json()["message"].endswith("tls: failed to verify certificate: x509: certificate signed by "
                                                "unknown authority"), reply.json()


def test_timeout_seconds_cuts_a_slow_webhook(sim_api: SimAPI, server: WebhookServer) -> None:
    server.handler = lambda path, review: {"sleep": 2.5}
    install(sim_api, VWC, "slow", hook("slow.example.com", url_config(server), timeoutSeconds=1))
    reply = create_cm(sim_api, configmap("c11"))
    assert reply.status_code == 500, describe(reply)
    assert "context deadline exceeded" in reply.json()["message"], reply.json()
    assert server.reviews[0][0].endswith("?timeout=1s"), server.reviews


@pytest.mark.parametrize(("raw", "why"), [
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "nope", "allowed": True}},
     'expected response.uid="'),
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "webhook response was absent"),
    ({"apiVersion": "v1", "kind": "Status", "response": {"uid": "UID", "allowed": True}},
     "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview"),
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
      "response": {"uid": "UID", "allowed": True, "patch": "W10="}},
     "webhook returned response.patch but not response.patchType"),
])
def test_invalid_responses_fail_the_call(sim_api: SimAPI, server: WebhookServer, raw: dict[str, Any], why: str) -> None:
    def handler(path: str, review: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(raw).replace('"UID"', json.dumps(review["request"]["uid"]))
        return {"raw": json.loads(text)}
    server.handler = handler
    install(sim_api, MWC, "bad", hook("bad.example.com", url_config(server)))
    reply = create_cm(sim_api, configmap("c12"))
    assert reply.status_code == 500, describe(reply)
    assert "received invalid webhook response: " + why in reply.json()["message"], reply.json()


# ---- which requests a webhook gets (generic/webhook.go ShouldCallHook) ----


def test_namespace_and_object_selectors(sim_api: SimAPI, server: WebhookServer) -> None:
    sim_api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": "team", "labels": {"hooked": "yes"}}})
    selectors = {"namespaceSelector": {"matchLabels": {"hooked": "yes"}},
                 "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}}
    install(sim_api, VWC, "sel", hook("sel.example.com", url_config(server), **selectors))
    assert create_cm(sim_api, configmap("in-default")).status_code == 201
    team = "/api/v1/namespaces/team/configmaps"
    assert sim_api.request("POST", team, json=configmap("skipped", labels={"skip": "1"})).status_code == 201
    assert sim_api.request("POST", team, json=configmap("called")).status_code == 201
    assert [r["request"]["name"] for _, r in server.reviews] == ["called"]


def test_subresource_rules_and_scope(sim_api: SimAPI, server: WebhookServer) -> None:
    rules = [rule("services/status", operations=("UPDATE",)), rule("namespaces", scope="Namespaced")]
    install(sim_api, VWC, "subs", hook("subs.example.com", url_config(server), rules=rules))
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    assert sim_api.request("POST", "/api/v1/namespaces/default/services", json=svc).status_code == 201
    assert sim_api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": "n1"}}).status_code == 201
    assert server.reviews == [], "a Namespaced rule never matches Namespaces; services/status not a create"
    patch = {"status": {"loadBalancer": {}}}
    reply = sim_api.request("PATCH", "/api/v1/namespaces/default/services/s/status", data=json.dumps(patch),
                            headers={"Content-Type": "application/merge-patch+json"})
    assert reply.status_code == 200, describe(reply)
    assert [(r["request"]["resource"]["resource"], r["request"]["subResource"]) for _, r in server.reviews] == [
        ("services", "status")]


@pytest.mark.parametrize("policy", ["Equivalent", "Exact"])
def test_match_policy_equivalent_sends_the_request_as_the_equivalent_resource(
        sim_api: SimAPI, server: WebhookServer, policy: str) -> None:
    rules = [rule("events", groups=("events.k8s.io",), operations=("CREATE",))]
    install(sim_api, VWC, "ev", hook("ev.example.com", url_config(server), rules=rules, matchPolicy=policy))
    event = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "Test", "message": "m", "type": "Normal"}
    assert sim_api.request("POST", "/api/v1/namespaces/default/events", json=event).status_code == 201
    if policy == "Exact":
        assert server.reviews == []
        return
    request = server.reviews[0][1]["request"]
    assert request["kind"] == {"group": "events.k8s.io", "version": "v1", "kind": "Event"}, request
    assert request["requestKind"] == {"group": "", "version": "v1", "kind": "Event"}, request
    assert request["object"]["apiVersion"] == "events.k8s.io/v1", request["object"]


def test_match_conditions(sim_api: SimAPI, server: WebhookServer) -> None:
    conditions = [{"name": "labelled", "expression": "has(object.metadata.labels) && 'hook' in object.metadata.labels"}]
    install(sim_api, VWC, "cond", hook("cond.example.com", url_config(server), matchConditions=conditions))
    assert create_cm(sim_api, configmap("plain")).status_code == 201
    assert create_cm(sim_api, configmap("tagged", labels={"hook": "1"})).status_code == 201
    assert [r["request"]["name"] for _, r in server.reviews] == ["tagged"]


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_match_condition_errors_follow_failure_policy(sim_api: SimAPI, server: WebhookServer, policy: str) -> None:
    conditions = [{"name": "broken", "expression": "object.data.missing == 'x'"}]
    install(sim_api, VWC, "cond", hook("cond.example.com", url_config(server), matchConditions=conditions,
                                       failurePolicy=policy))
    reply = create_cm(sim_api, configmap("c13"))
    assert server.reviews == []
    if policy == "Ignore":
        assert reply.status_code == 201, describe(reply)
    else:
        assert reply.status_code == 403, describe(reply)
        assert reply.json()["message"].startswith('configmaps "c13" is forbidden: expression '), reply.json()


# ---- dry run, DELETE, reinvocation, service references ----


def test_dry_run_reaches_side_effect_free_webhooks_with_dry_run_true(sim_api: SimAPI, server: WebhookServer) -> None:
    server.handler = lambda path, review: json_patch({"op": "add", "path": "/data/x", "value": "1"})
    install(sim_api, MWC, "dry", hook("dry.example.com", url_config(server), sideEffects="NoneOnDryRun"))
    reply = create_cm(sim_api, configmap("c14"), dryRun="All")
    assert reply.status_code == 201 and reply.json()["data"] == {"x": "1"}, describe(reply)
    request = server.reviews[0][1]["request"]
    assert request["dryRun"] is True and request["options"]["dryRun"] == ["All"], request
    assert sim_api.request("GET", f"{CMS}/c14").status_code == 404


def test_delete_is_sent_with_the_old_object_and_can_be_denied(sim_api: SimAPI, server: WebhookServer) -> None:
    server.handler = lambda path, review: {"allowed": False, "status": {"message": "keep it"}}
    assert create_cm(sim_api, configmap("c15", {"k": "v"})).status_code == 201
    install(sim_api, VWC, "nodelete", hook("nodelete.example.com", url_config(server),
                                           rules=[rule(operations=("DELETE",))]))
    reply = sim_api.request("DELETE", f"{CMS}/c15")
    assert reply.status_code == 400, describe(reply)
    request = server.reviews[0][1]["request"]
    assert request["operation"] == "DELETE" and request["object"] is None, request
    assert request["oldObject"]["data"] == {"k": "v"} and request["options"]["kind"] == "DeleteOptions", request
    assert sim_api.request("GET", f"{CMS}/c15").status_code == 200


@pytest.mark.parametrize(("policy", "calls"), [("IfNeeded", 2), ("Never", 1)])
def test_reinvocation_policy_if_needed_calls_an_earlier_webhook_again(sim_api: SimAPI, server: WebhookServer,
                                                                      policy: str, calls: int) -> None:
    def handler(path: str, review: dict[str, Any]) -> dict[str, Any] | None:
        data = review["request"]["object"]["data"]
        if path == "/second" and "second" not in data:
            return json_patch({"op": "add", "path": "/data/second", "value": "1"})
        return None
    server.handler = handler
    install(sim_api, MWC, "a-first", hook("first.example.com", url_config(server, "/first"),
                                          reinvocationPolicy=policy))
    install(sim_api, MWC, "b-second", hook("second.example.com", url_config(server, "/second")))
    assert create_cm(sim_api, configmap("c16")).status_code == 201
    assert server.paths().count("/first") == calls, server.paths()
    if calls == 2:
        assert server.reviews[-1][1]["request"]["object"]["data"] == {"second": "1"}


def test_service_reference_resolves_to_the_cluster_ip_with_the_service_dns_name(sim_api: SimAPI,
                                                                              tmp_path: Path) -> None:
    """Upstream LWS's shape: a service reference with port and path, TLS naming <svc>.<ns>.svc only."""
    sim_api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": "lws-system"}})
    svc = {"metadata": {"name": "lws-webhook-service"}, "spec": {"ports": [{"port": 443, "targetPort": 9443}]}}
    created = sim_api.request("POST", "/api/v1/namespaces/lws-system/services", json=svc).json()
    ip = created["spec"]["clusterIP"]
    folder = tmp_path / "svc-pki"
    folder.mkdir()
    srv = WebhookServer(folder, ip, 443, names=("lws-webhook-service.lws-system.svc",))
    try:
        srv.handler = lambda path, review: json_patch({"op": "add", "path": "/data/via", "value": path})
        path = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
        config = {"service": {"name": "lws-webhook-service", "namespace": "lws-system", "path": path},
                  "caBundle": srv.ca_bundle}
        install(sim_api, MWC, "lws-mutating", hook("mleaderworkerset.kb.io", config))
        reply = create_cm(sim_api, configmap("c17"))
        assert reply.status_code == 201, describe(reply)
        assert reply.json()["data"] == {"via": path}
    finally:
        srv.close()


def test_a_service_reference_to_a_missing_service_fails_the_call(sim_api: SimAPI) -> None:
    config = {"service": {"name": "nowhere", "namespace": "default", "path": "/x"}}
    install(sim_api, VWC, "missing", hook("missing.example.com", config))
    reply = create_cm(sim_api, configmap("c18"))
    assert reply.status_code == 500, describe(reply)
    assert reply.json()["message"].endswith('failed to call webhook: '
                                            'Post "https://nowhere.default.svc:443/x?timeout=10s": '
                                            'service "nowhere" not found'), reply.json()


def test_a_non_loopback_url_is_never_dialled(sim_api: SimAPI) -> None:
    install(sim_api, VWC, "far", hook("far.example.com", {"url": "https://192.0.2.1/x"}))
    reply = create_cm(sim_api, configmap("c19"))
    assert reply.status_code == 500, describe(reply)
    assert "is not on a loopback address" in reply.json()["message"], reply.json()


def test_requests_on_webhook_configurations_are_exempt(sim_api: SimAPI, server: WebhookServer) -> None:
    server.handler = lambda path, review: {"allowed": False}
    everything = [rule("*", groups=("*",), versions=("*",), operations=("*",))]
    install(sim_api, VWC, "all", hook("all.example.com", url_config(server), rules=everything))
    reply = sim_api.request("DELETE", f"{VWC}/all")
    assert reply.status_code == 200, describe(reply)
    assert server.reviews == []


# ---- side effects on dry run, the chain's reinvocation, concurrent writes ----


def test_dry_run_to_a_webhook_with_side_effects_is_refused_with_400(sim_api: SimAPI, server: WebhookServer) -> None:
    """v1 validation refuses sideEffects Some/Unknown, so the configuration is stored behind the API's back here,
    as one written through v1beta1 would be; `callAttrMutatingHook`'s dry-run check then refuses the request."""
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "legacy"},
            "webhooks": [hook("legacy.example.com", url_config(server), sideEffects="Some", failurePolicy="Ignore")]}

    async def store_it() -> None:
        sim_api.server.ctx.db.put(("admissionregistration.k8s.io", "mutatingwebhookconfigurations"), body)
    sim_api.loop.run(store_it())
    reply = create_cm(sim_api, configmap("c20"), dryRun="All")
    assert reply.status_code == 400, describe(reply)
    assert reply.json()["message"] == 'admission webhook "legacy.example.com" does not support dry run'
    assert server.reviews == []
    assert create_cm(sim_api, configmap("c20")).status_code == 201, "without dryRun the webhook is called"
    assert len(server.reviews) == 1


@pytest.mark.parametrize(("policy", "count"), [("IfNeeded", "3"), ("Never", "1")])
def test_a_webhook_change_reinvokes_if_needed_mutating_policies(sim_api: SimAPI, server: WebhookServer,
                                                                policy: str, count: str) -> None:
    """`reinvoker.Admit`: a webhook's change runs the mutating chain again, in-tree plugins (here a
    MutatingAdmissionPolicy with reinvocationPolicy IfNeeded) included."""
    from tests.sim.apiserver.policies.test_server_mutating_policy import MAP_BINDINGS, MAPS, mbinding, mutating
    expression = '[JSONPatch{op: "add", path: "/data/count", value: string(size(object.data))}]'
    for path, body in ((MAPS, mutating("count", expression, reinvocationPolicy=policy)),
                       (MAP_BINDINGS, mbinding("count", "count"))):
        assert sim_api.request("POST", path, json=body).status_code == 201
    server.handler = lambda path, review: json_patch({"op": "add", "path": "/data/hook", "value": "1"})
    install(sim_api, MWC, "hook", hook("hook.example.com", url_config(server)))
    reply = create_cm(sim_api, configmap("c21", {"a": "1"}))
    assert reply.status_code == 201, describe(reply)
    assert reply.json()["data"] == {"a": "1", "count": count, "hook": "1"}, reply.json()
    assert server.reviews[0][1]["request"]["object"]["data"] == {"a": "1", "count": "1"}, "policies run first"


def test_a_write_landing_while_webhooks_are_called_is_not_lost(sim_api: SimAPI, server: WebhookServer) -> None:
    """kube-apiserver admits inside `GuaranteedUpdate`: a patch whose object changed meanwhile is redone on the
    new object, never committed over it."""
    assert create_cm(sim_api, configmap("c22", {"a": "1"})).status_code == 201
    merge = {"Content-Type": "application/merge-patch+json"}

    def handler(path: str, review: dict[str, Any]) -> dict[str, Any] | None:
        if review["request"]["object"]["data"].get("c") == "3" and "b" not in review["request"]["oldObject"]["data"]:
            reply = sim_api.request("PATCH", f"{CMS}/c22", data=json.dumps({"data": {"b": "2"}}), headers=merge)
            assert reply.status_code == 200, describe(reply)
        return None
    server.handler = handler
    install(sim_api, VWC, "slow", hook("slow.example.com", url_config(server), rules=[rule(operations=("UPDATE",))]))
    reply = sim_api.request("PATCH", f"{CMS}/c22", data=json.dumps({"data": {"c": "3"}}), headers=merge)
    assert reply.status_code == 200, describe(reply)
    assert sim_api.request("GET", f"{CMS}/c22").json()["data"] == {"a": "1", "b": "2", "c": "3"}
    assert len(server.reviews) == 3, "first attempt, the nested write, the retried attempt"


# ---- kubectl's view, and upstream LWS's own configurations ----


def test_kubectl_table_shows_the_number_of_webhooks(sim_api: SimAPI) -> None:
    """`printMutatingWebhook`: Name, Webhooks, Age."""
    install(sim_api, MWC, "two", hook("a.example.com", {"url": "https://127.0.0.1:1/a"}),
            hook("b.example.com", {"url": "https://127.0.0.1:1/b"}))
    table = sim_api.request("GET", MWC, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Webhooks", "Age"], table
    assert table["rows"][0]["cells"][:2] == ["two", 2], table


MODULE_CACHE = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
UPSTREAM_MANIFESTS = sorted((MODULE_CACHE / "sigs.k8s.io").glob("lws@v*/config/webhook/manifests.yaml"))


@pytest.mark.skipif(not UPSTREAM_MANIFESTS, reason="no sigs.k8s.io/lws module in the Go module cache "
                                                   "(`go mod download sigs.k8s.io/lws@v0.9.0` puts one there)")
def test_upstream_lws_webhook_configurations_are_accepted_and_defaulted(sim_api: SimAPI) -> None:
    """What helper UPSTREAM installs: upstream's own config/webhook/manifests.yaml (service references)."""
    import yaml
    for doc in yaml.safe_load_all(UPSTREAM_MANIFESTS[-1].read_text()):
        collection = MWC if doc["kind"] == "MutatingWebhookConfiguration" else VWC
        reply = sim_api.request("POST", collection, json=doc)
        assert reply.status_code == 201, describe(reply)
        stored = reply.json()["webhooks"]
        assert all(h["clientConfig"]["service"]["port"] == 443 and h["timeoutSeconds"] == 10 for h in stored)


def test_scale_and_binding_subresources_reach_validating_webhooks_with_their_own_kinds(
        sim_api: SimAPI, server: WebhookServer) -> None:
    rules = [rule("deployments/scale", groups=("apps",), operations=("UPDATE",)),
             rule("pods/binding", operations=("CREATE",))]
    install(sim_api, VWC, "subs", hook("subs.example.com", url_config(server), rules=rules))
    labels = {"app": "d"}
    pod_spec = {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                           "template": {"metadata": {"labels": labels}, "spec": pod_spec}}}
    assert sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=deployment).status_code == 201
    reply = sim_api.request("PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale",
                            data=json.dumps({"spec": {"replicas": 3}}),
                            headers={"Content-Type": "application/merge-patch+json"})
    assert reply.status_code == 200, describe(reply)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec}
    assert sim_api.request("POST", "/api/v1/namespaces/default/pods", json=pod).status_code == 201
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "n"}}
    reply = sim_api.request("POST", "/api/v1/namespaces/default/pods/p/binding", json=binding)
    assert reply.status_code == 201, describe(reply)
    seen = [(r["request"]["kind"]["kind"], r["request"]["subResource"], r["request"]["operation"])
            for _, r in server.reviews]
    assert seen == [("Scale", "scale", "UPDATE"), ("Binding", "binding", "CREATE")], seen
    assert server.reviews[0][1]["request"]["object"]["spec"]["replicas"] == 3


def test_a_patch_that_does_not_apply_is_a_500_whatever_the_failure_policy(sim_api: SimAPI,
                                                                         server: WebhookServer) -> None:
    """`callAttrMutatingHook`: `patchObj.Apply` errors are `apierrors.NewInternalError`, not a failed call."""
    server.handler = lambda path, review: json_patch({"op": "remove", "path": "/data/missing"})
    install(sim_api, MWC, "bad-patch", hook("bp.example.com", url_config(server), failurePolicy="Ignore"))
    reply = create_cm(sim_api, configmap("c23"))
    assert reply.status_code == 500, describe(reply)
    words = "error in remove for path: '/data/missing': Unable to remove nonexistent key: missing: missing value"
    assert reply.json()["message"] == f"Internal error occurred: {words}", reply.json()
    assert reply.json()["details"]["causes"] == [{"message": words}], reply.json()


def test_strategic_merge_patch_merges_webhooks_by_name(sim_api: SimAPI) -> None:
    """`Webhooks []MutatingWebhook` is `patchStrategy:"merge" patchMergeKey:"name"` in k8s.io/api."""
    install(sim_api, MWC, "smp", hook("a.example.com", {"url": "https://127.0.0.1:1/a"}),
            hook("b.example.com", {"url": "https://127.0.0.1:1/b"}))
    change = {"webhooks": [{"name": "b.example.com", "timeoutSeconds": 5}]}
    reply = sim_api.request("PATCH", f"{MWC}/smp", data=json.dumps(change),
                            headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert reply.status_code == 200, describe(reply)
    hooks = {h["name"]: h["timeoutSeconds"] for h in reply.json()["webhooks"]}
    assert hooks == {"a.example.com": 10, "b.example.com": 5}, reply.json()


def test_a_create_in_a_missing_namespace_is_refused_before_any_webhook(sim_api: SimAPI, server: WebhookServer) -> None:
    """NamespaceLifecycle is the first mutating admission plugin (`lifecycle.Admit`): 404, no webhook called."""
    install(sim_api, VWC, "all", hook("all.example.com", url_config(server)))
    reply = sim_api.request("POST", "/api/v1/namespaces/nowhere/configmaps", json=configmap("c24"))
    assert reply.status_code == 404, describe(reply)
    assert reply.json()["message"] == 'namespaces "nowhere" not found'
    assert server.reviews == []


def test_validating_webhooks_see_the_server_stamped_create_and_mutating_ones_do_not(sim_api: SimAPI,
                                                                                   server: WebhookServer) -> None:
    """`rest.BeforeCreate` (generated name, uid, creationTimestamp) runs after mutating and before validating
    admission in kube-apiserver's create handler."""
    install(sim_api, MWC, "m", hook("m.example.com", url_config(server, "/m")))
    install(sim_api, VWC, "v", hook("v.example.com", url_config(server, "/v")))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}, "data": {}}
    reply = create_cm(sim_api, body)
    assert reply.status_code == 201, describe(reply)
    stored = reply.json()["metadata"]
    seen = {path.split("?")[0]: r["request"]["object"]["metadata"] for path, r in server.reviews}
    assert "uid" not in seen["/m"] and "creationTimestamp" not in seen["/m"] and "name" not in seen["/m"], seen
    assert (seen["/v"]["name"], seen["/v"]["uid"], seen["/v"]["creationTimestamp"]) == (
        stored["name"], stored["uid"], stored["creationTimestamp"]), (seen, stored)
