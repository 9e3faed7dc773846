"""Answers the differential corpus (`lwsconf fidelity`, topics requests, crud, crd, patches and apply,
against kube-apiserver 1.37.2) found the sim giving differently; each test names the corpus interaction
and the Kubernetes source that decides the answer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SimAPI
from tests.sim.apiserver.schema.test_server_crds import GROUP, PLURAL, VERSION, widget, widget_crd

CMS = "/api/v1/namespaces/default/configmaps"
WIDGETS = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
NOT_CHECKED = {"field": "<nil>", "reason": "FieldValueInvalid",
               "message": "Invalid value: null: some validation rules were not checked because the object was "
                          "invalid; correct the existing errors to complete validation"}


@pytest.fixture
def widgets(sim_api: SimAPI) -> SimAPI:
    reply = sim_api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=widget_crd())
    assert reply.status_code == 201, reply.text
    return sim_api


def _causes(reply: Any) -> list[dict[str, str]]:
    assert reply.status_code == 422, reply.text
    return reply.json()["details"]["causes"]  # type: ignore[no-any-return]


def test_several_causes_are_one_bracketed_message_and_label_examples_keep_go_punctuation(sim_api: SimAPI) -> None:
    """requests/bad-requests/service-bad-port and invalid-label-key: `NewInvalid` words several causes as
    `ErrorList.ToAggregate()` does ("[a, b]"), and `RegexError` ends every example with ", " (so "'a',  or
    'b', regex used ..."); apimachinery pkg/util/errors/errors.go, pkg/util/validation/validation.go."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 70000}]}}
    reply = sim_api.request("POST", "/api/v1/namespaces/default/services", json=svc)
    assert reply.json()["message"] == (
        'Service "s" is invalid: [spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive, '
        "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive]")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lk", "labels": {"-bad": "x"}}}
    [cause] = _causes(sim_api.request("POST", CMS, json=cm))
    assert "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is" in cause["message"]


def test_custom_resource_required_and_too_long_errors_block_cel_rules(widgets: SimAPI) -> None:
    """crd/lws-validation/size-missing-template and name-too-long: a Required, TooLong, TooMany, TypeInvalid
    or NotSupported cause stops CEL rules and adds the <nil> cause (apiextensions-apiserver
    pkg/registry/customresource/strategy.go `hasBlockingErr`); metadata causes count too."""
    body = widget("w1")
    del body["spec"]["mode"]  # required
    causes = _causes(widgets.request("POST", WIDGETS, json=body))
    assert causes == [{"field": "spec.mode", "reason": "FieldValueRequired", "message": "Required value"},
                      NOT_CHECKED]


def test_custom_resource_scale_replicas_are_checked_after_the_schema(widgets: SimAPI) -> None:
    """crd/lws-validation/replicas-negative and replicas-string: the scale subresource's specReplicasPath must
    hold a non-negative int64, reported at the JSON path with its leading dot (customresource/validator.go
    `ValidateScaleSpec`), after the schema's own cause."""
    causes = _causes(widgets.request("POST", WIDGETS, json=widget("w1", replicas=-1)))
    assert causes == [
        {"field": "spec.replicas", "reason": "FieldValueInvalid",
         "message": "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"},
        {"field": ".spec.replicas", "reason": "FieldValueInvalid",
         "message": "Invalid value: -1: should be a non-negative integer"}]
    causes = _causes(widgets.request("POST", WIDGETS, json=widget("w2", replicas="two")))
    assert causes[1:] == [
        {"field": ".spec.replicas", "reason": "FieldValueInvalid",
         "message": "Invalid value: 0: .spec.replicas accessor error: two is of the type string, expected int64"},
        NOT_CHECKED]


def test_a_method_a_path_does_not_serve_is_405_naming_nothing(sim_api: SimAPI) -> None:
    """requests/bad-requests/method-not-allowed and post-to-named-path: go-restful's refusal, as
    apiserver pkg/server/handler.go turns it into a Status (generic message, empty details)."""
    for method, path in (("PUT", CMS), ("POST", f"{CMS}/named")):
        reply = sim_api.request(method, path, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        assert reply.status_code == 405
        assert reply.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": "the server does not allow this method on the requested resource",
                                "reason": "MethodNotAllowed", "details": {}, "code": 405}


def test_a_group_version_nobody_serves_is_the_muxs_plain_404(widgets: SimAPI) -> None:
    """requests/bad-requests/unknown-group and crd/lws-validation/unknown-version-path: under /apis/G/V with
    no handler for G/V, Go's http.NotFound answers in text; /api/v2 still answers a Status."""
    for path in ("/apis/frobnicate.example.com/v1/things", f"/apis/{GROUP}/v9/namespaces/default/{PLURAL}"):
        reply = widgets.request("GET", path)
        assert (reply.status_code, reply.text) == (404, "404 page not found\n")
        assert reply.headers["Content-Type"].startswith("text/plain")
    assert widgets.request("GET", "/api/v2/namespaces").json()["reason"] == "NotFound"


def test_list_options_that_are_not_integers_are_strconv_errors(sim_api: SimAPI) -> None:
    """requests/bad-requests/limit-not-a-number and timeout-not-a-number: the parameter codec decodes every
    ListOptions field and passes strconv.ParseInt's error on as a 400."""
    for name in ("limit", "timeoutSeconds"):
        reply = sim_api.request("GET", CMS, params={name: "soon"})
        assert reply.status_code == 400
        assert reply.json()["message"] == 'strconv.ParseInt: parsing "soon": invalid syntax'
    reply = sim_api.request("GET", CMS, params={"limit": "99999999999999999999"})
    assert reply.json()["message"] == 'strconv.ParseInt: parsing "99999999999999999999": value out of range'


def test_custom_resource_discovery_lists_verbs_in_apiextensions_order(widgets: SimAPI) -> None:
    """crd/crd-install/discovery-group: customresource_discovery_controller.go lists delete first and
    create after patch, not sorted as built-ins are."""
    listed = widgets.request("GET", f"/apis/{GROUP}/{VERSION}").json()
    entry = next(r for r in listed["resources"] if r["name"] == PLURAL)
    assert entry["verbs"] == ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]


def _patch(api: SimAPI, path: str, body: str, media: str, **params: str) -> Any:
    return api.request("PATCH", path, data=body, headers={"Content-Type": media}, params=params)


def test_patch_bodies_are_refused_as_kube_apiserver_words_it(widgets: SimAPI) -> None:
    """patches/patch-merge/*, patch-json/*, patch-media/*: apiserver pkg/endpoints/handlers/patch.go checks
    PatchOptions (fieldManager for apply: 422), the body's JSON validity ("invalid JSON patch") and its decoded
    shape; a built-in's PATCH route refuses other media types before any handler (go-restful's 415)."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}}
    assert widgets.request("POST", CMS, json=cm).status_code == 201
    merge, json_patch = "application/merge-patch+json", "application/json-patch+json"
    reply = _patch(widgets, f"{CMS}/cm", '{"data": ', merge)
    assert (reply.status_code, reply.json()["message"]) == (400, "invalid JSON patch")
    reply = _patch(widgets, f"{CMS}/cm", "[]", merge)
    assert reply.json()["message"] == ("error decoding patch: json: cannot unmarshal array into Go value of type "
                                       "map[string]interface {}")
    reply = _patch(widgets, f"{CMS}/cm", '{"op": "add"}', json_patch)
    assert reply.json()["message"] == ("error decoding patch: json: cannot unmarshal object into Go value of type "
                                       "[]handlers.jsonPatchOp")
    reply = _patch(widgets, f"{CMS}/cm", '[{"op": "frobnicate", "path": "/data/a"}]', json_patch)
    assert (reply.status_code, reply.json()["details"]) == (422, {})
    reply = _patch(widgets, f"{CMS}/cm", '[{"op": "replace", "path": "/data/nope", "value": "x"}]', json_patch)
    assert reply.status_code == 200 and reply.json()["data"] == {"a": "1", "nope": "x"}
    reply = _patch(widgets, f"{CMS}/cm", '{"metadata": {"name": "other"}}', merge)
    assert reply.json()["message"] == "the name of the object (other) does not match the name on the URL (cm)"
    reply = _patch(widgets, f"{CMS}/cm", "{}", "application/json")
    assert (reply.status_code, reply.json()["message"], reply.json()["details"]) == (
        415, "415: Unsupported Media Type", {})
    reply = _patch(widgets, f"{WIDGETS}/w", "{}", "application/strategic-merge-patch+json")
    assert reply.status_code == 415 and reply.json()["message"].endswith(
        "include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
    reply = _patch(widgets, f"{CMS}/cm", "data: {}", "application/apply-patch+yaml")
    assert reply.status_code == 422 and reply.json()["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
    reply = _patch(widgets, f"{CMS}/cm", "apiVersion: v1\nkind: Secret\n", "application/apply-patch+yaml",
                   fieldManager="m")
    assert (reply.status_code, reply.json()["message"]) == (400, "invalid object type: /v1, Kind=Secret")


@pytest.mark.parametrize("body, problem", [
    (b"", "unexpected end of JSON input (<empty>)"),
    (b'{"apiVersion": "v1", "kind": ', 'unexpected end of JSON input ({"apiVersion": "v1", "kind": )'),
    (b"[]", 'json: cannot unmarshal array into Go value of type struct { APIVersion string '
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" } (5b5d)'),
    (b'{"a" 1}', "invalid character '1' after object key ({\"a\" 1})"),
])
def test_a_json_body_that_is_no_object_is_unrecognized(sim_api: SimAPI, body: bytes, problem: str) -> None:
    """requests/bad-requests/{empty-body,malformed-json,body-is-a-list}: the JSON serializer cannot find the
    kind (SimpleMetaFactory.Interpret), and handlers/rest.go `transformDecodeError` adds a summary of the body."""
    reply = sim_api.request("POST", CMS, data=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400
    assert reply.json()["message"] == ("the object provided is unrecognized (must be of type ConfigMap): couldn't "
                                       f"get version/kind; json parse error: {problem}")


@pytest.mark.parametrize("api_version, kind, error", [
    ("v1", "Secret", "converting (v1.Secret) to (core.ConfigMap): unknown conversion"),
    ("v1", "Frobnicator", 'no kind "Frobnicator" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"'),
    ("apps/v1", "ConfigMap", 'no kind "ConfigMap" is registered for version "apps/v1" in scheme '
                             '"pkg/runtime/scheme.go:111"'),
])
def test_a_body_of_another_type_cannot_be_handled(sim_api: SimAPI, api_version: str, kind: str, error: str) -> None:
    """requests/bad-requests/{kind-mismatch,unknown-kind,api-version-mismatch}: the codec's error, prefixed by
    `transformDecodeError` with the sent kind and version."""
    reply = sim_api.request("POST", CMS, json={"apiVersion": api_version, "kind": kind, "metadata": {"name": "k"}})
    assert reply.status_code == 400
    assert reply.json()["message"] == f'{kind} in version "v1" cannot be handled as a ConfigMap: {error}'


def test_a_custom_resource_of_another_version_or_kind(widgets: SimAPI) -> None:
    """crd/lws-validation/wrong-api-version (400 from the versioning decoder) and wrong-kind (422 from
    customresource/validator.go `ValidateTypeMeta`, named by the sent kind)."""
    reply = widgets.request("POST", WIDGETS, json={**widget("w"), "apiVersion": f"{GROUP}/v2"})
    assert (reply.status_code, reply.json()["message"]) == (
        400, f"the API version in the data ({GROUP}/v2) does not match the expected API version ({GROUP}/{VERSION})")
    reply = widgets.request("POST", WIDGETS, json={**widget("w"), "kind": "WidgetX"})
    assert reply.status_code == 422
    assert reply.json()["details"] == {"name": "w", "group": GROUP, "kind": "WidgetX", "causes": [
        {"field": "kind", "reason": "FieldValueInvalid", "message": 'Invalid value: "WidgetX": must be Widget'}]}


def test_deleting_a_service_account_answers_the_deleted_object(sim_api: SimAPI) -> None:
    """crud/crud-serviceaccounts/delete: serviceaccount storage sets ReturnDeletedObject
    (kubernetes pkg/registry/core/serviceaccount/storage/storage.go)."""
    sas = "/api/v1/namespaces/default/serviceaccounts"
    assert sim_api.request("POST", sas, json={"apiVersion": "v1", "kind": "ServiceAccount",
                                              "metadata": {"name": "sa1"}}).status_code == 201
    deleted = sim_api.request("DELETE", f"{sas}/sa1").json()
    assert (deleted["kind"], deleted["metadata"]["name"]) == ("ServiceAccount", "sa1")


def test_daemonset_template_generation_annotation(sim_api: SimAPI) -> None:
    """crud/crud-daemonsets/*: apps/v1 shows DaemonSetSpec.TemplateGeneration as an annotation, 1 on create,
    kept when the template stays, one more when it changes, whatever the client sent (daemonset strategy.go)."""
    dss = "/apis/apps/v1/namespaces/default/daemonsets"
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
              "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    key = "deprecated.daemonset.template.generation"
    created = sim_api.request("POST", dss, json=ds).json()
    assert created["metadata"]["annotations"] == {key: "1"}
    kept = sim_api.request("PUT", f"{dss}/d", json={**ds, "metadata": {"name": "d", "labels": {"x": "y"},
                                                                         "annotations": {key: "7"}}}).json()
    assert kept["metadata"]["annotations"] == {key: "1"}
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "j"  # type: ignore[index]
    changed = sim_api.request("PUT", f"{dss}/d", json=ds).json()
    assert changed["metadata"]["annotations"] == {key: "2"}


def test_a_repeated_key_merges_and_is_reported_per_field_validation(sim_api: SimAPI) -> None:
    """requests/field-validation/duplicate-strict and duplicate-warn: Go decodes a repeated object into the
    first (the maps merge), Strict refuses it as the strict decoder words it, Warn warns."""
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d1"},"data":{"a":"1"},"data":{"b":"2"}}'
    reply = sim_api.request("POST", CMS, data=body, params={"fieldValidation": "Strict"},
                            headers={"Content-Type": "application/json"})
    assert (reply.status_code, reply.json()["message"]) == (
        400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
             'strict decoding error: duplicate field "data"')
    reply = sim_api.request("POST", CMS, data=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 201 and reply.json()["data"] == {"a": "1", "b": "2"}
    assert reply.headers["Warning"] == '299 - "duplicate field \\"data\\""'
