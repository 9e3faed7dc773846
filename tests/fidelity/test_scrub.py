"""What a recording may not keep: every way a Secret's data or a token reaches a request or an answer."""

from __future__ import annotations

import json

from lwsconf.fidelity import scrub

SECRETS = "/api/v1/namespaces/a/secrets"


def test_secret_data_is_replaced_wherever_it_travels() -> None:
    applied = json.dumps({"kind": "Secret", "data": {"password": "c2VjcmV0"}})
    secret = {"kind": "Secret", "metadata": {"name": "s", "annotations": {scrub.LAST_APPLIED: applied, "keep": "me"}},
              "data": {"password": "c2VjcmV0"}, "stringData": {"token": "secret"}, "type": "Opaque"}
    listed = {"kind": "SecretList", "items": [{"metadata": {"name": "s"}, "data": {"password": "c2VjcmV0"}}]}
    merge_patch = {"metadata": {"annotations": {scrub.LAST_APPLIED: applied}}, "data": {"password": "c2VjcmV0"}}
    json_patch = [{"op": "replace", "path": "/data/password", "value": "c2VjcmV0"}, {"op": "remove", "path": "/x"}]
    table = {"kind": "Table", "rows": [{"cells": ["s"], "object": {"metadata": {}, "data": {"password": "c2VjcmV0"}}}]}
    events = [{"type": "ADDED", "object": {"kind": "Secret", "metadata": {}, "data": {"password": "c2VjcmV0"}}}]
    at = f"{SECRETS}/s"
    scrubbed = [scrub.body(secret, at), scrub.body(listed, SECRETS), scrub.body(merge_patch, at),
                scrub.body(json_patch, at), scrub.body(table, SECRETS), scrub.events(events, SECRETS),
                scrub.body("apiVersion: v1\nkind: Secret\nstringData: {password: secret}\n", at)]
    text = json.dumps(scrubbed)
    assert "c2VjcmV0" not in text and "secret}" not in text and '"secret"' not in text
    assert scrubbed[0]["data"] == {"password": scrub.DATA_PLACEHOLDER} and scrubbed[0]["type"] == "Opaque"
    assert scrubbed[0]["metadata"]["annotations"]["keep"] == "me"
    assert scrubbed[3][1] == {"op": "remove", "path": "/x"}


def test_tokens_are_replaced_and_other_objects_are_left_alone() -> None:
    token = scrub.body({"kind": "TokenRequest", "status": {"token": "eyJ", "expirationTimestamp": "t"}},
                       "/api/v1/namespaces/a/serviceaccounts/robot/token")
    review = scrub.body({"kind": "TokenReview", "spec": {"token": "eyJ"}},
                        "/apis/authentication.k8s.io/v1/tokenreviews")
    assert token["status"] == {"token": scrub.PLACEHOLDER, "expirationTimestamp": "t"}
    assert review["spec"] == {"token": scrub.PLACEHOLDER}
    configmap = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"password": "visible"}}
    assert scrub.body(json.loads(json.dumps(configmap)), "/api/v1/namespaces/a/configmaps/c") == configmap


def test_only_allowed_headers_are_kept() -> None:
    kept = scrub.kept_headers([("authorization", "Bearer x"), ("content-type", "application/json"),
                               ("Cookie", "c"), ("Impersonate-User", "u"), ("User-Agent", "kubectl")],
                              scrub.KEPT_REQUEST_HEADERS)
    assert kept == {"Content-Type": "application/json", "User-Agent": "kubectl"}
