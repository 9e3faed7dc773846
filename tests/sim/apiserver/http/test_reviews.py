"""SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview, and the kubelet's TokenReview and
SubjectAccessReview: answered, validated, never stored.

kube-apiserver's review REST storage (pkg/registry/authorization/selfsubjectaccessreview/rest.go and
siblings) is create-only; `kubectl auth can-i` / `can-i --list` / `whoami` read `status`. The sim's single
user may do everything and the answers say so in words.
"""

from __future__ import annotations

import pytest

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import reviews
from tests.conftest import SimAPI
from tests.sim.apiserver.test_kubectl import Kubectl, kubectl  # noqa: F401 (fixture)

SSAR = ("authorization.k8s.io", "selfsubjectaccessreviews")
SSRR = ("authorization.k8s.io", "selfsubjectrulesreviews")
SSR = ("authentication.k8s.io", "selfsubjectreviews")
TR = reviews.TOKEN_REVIEW
SAR = reviews.SUBJECT_ACCESS
NOW = "2026-12-03T11:00:00Z"


def test_access_review_allows_and_says_why() -> None:
    out = reviews.answer(SSAR, {"spec": {"resourceAttributes": {"verb": "create", "resource": "pods"}}}, NOW)
    assert out["status"]["allowed"] is True
    assert "single user" in out["status"]["reason"] and "no RBAC" in out["status"]["reason"]
    assert out["spec"]["resourceAttributes"] == {"verb": "create", "resource": "pods"}


def test_access_review_needs_exactly_one_kind_of_attributes() -> None:
    with pytest.raises(errors.StatusError) as neither:
        reviews.answer(SSAR, {"spec": {}}, NOW)
    assert neither.value.code == 422
    # kube-apiserver 1.37.2's words: no kind, the field is `spec` (lwsconf fidelity self-subject-reviews)
    assert neither.value.message == (
        '.authorization.k8s.io "" is invalid: spec: Invalid value: '
        "null: exactly one of nonResourceAttributes or resourceAttributes must be specified")
    assert "kind" not in neither.value.to_status()["details"]
    with pytest.raises(errors.StatusError) as both:
        reviews.answer(SSAR, {"spec": {"resourceAttributes": {"verb": "get"},
                                       "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}, NOW)
    assert [c.field for c in both.value.causes] == ["spec"]
    assert both.value.causes[0].message.startswith('Invalid value: {"Path":"/healthz","Verb":"get"}: exactly one')


def test_rules_review_lists_everything_and_needs_a_namespace() -> None:
    out = reviews.answer(SSRR, {"spec": {"namespace": "default"}}, NOW)
    assert out["spec"] == {} and out["metadata"] == {}
    assert out["status"]["resourceRules"] == [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
    assert out["status"]["nonResourceRules"] == [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
    assert out["status"]["incomplete"] is False and "single user" in out["status"]["evaluationError"]
    with pytest.raises(errors.StatusError) as no_ns:
        reviews.answer(SSRR, {"spec": {}}, NOW)
    assert (no_ns.value.code, no_ns.value.message) == (400, "no namespace on request")


def test_self_subject_review_names_the_sim_user() -> None:
    out = reviews.answer(SSR, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, NOW)
    assert out["metadata"] == {"creationTimestamp": NOW}
    assert out["status"]["userInfo"] == {"username": reviews.USERNAME, "groups": list(reviews.GROUPS)}


def test_token_review_authenticates_the_api_token_only() -> None:
    """tokenreview/storage.go: a token is required (400); an unknown one is not authenticated (user empty)."""
    out = reviews.answer(TR, {"spec": {"token": "secret"}}, NOW, api_token="secret")
    assert out["status"] == {"authenticated": True,
                             "user": {"username": reviews.USERNAME, "groups": list(reviews.GROUPS)}}
    assert reviews.answer(TR, {"spec": {"token": "guess"}}, NOW, api_token="secret")["status"] == {"user": {}}
    with pytest.raises(errors.StatusError) as empty:
        reviews.answer(TR, {"spec": {}}, NOW, api_token="secret")
    assert (empty.value.code, empty.value.message) == (400, "token is required for TokenReview in authentication")


def test_subject_access_review_allows_system_masters_only() -> None:
    attrs = {"verb": "get", "resource": "nodes", "subresource": "proxy", "name": "cpu-0"}
    masters = reviews.answer(SAR, {"spec": {"user": "kube-apiserver-kubelet-client", "groups": ["system:masters"],
                                            "resourceAttributes": attrs}}, NOW)
    assert masters["status"]["allowed"] is True
    other = reviews.answer(SAR, {"spec": {"user": "someone", "groups": ["system:authenticated"],
                                          "resourceAttributes": attrs}}, NOW)
    assert other["status"] == {"allowed": False, "reason": reviews.DENIED}
    with pytest.raises(errors.StatusError) as nobody:
        reviews.answer(SAR, {"spec": {"resourceAttributes": attrs}}, NOW)
    assert nobody.value.code == 422 and "at least one of user or group must be specified" in nobody.value.message


def test_reviews_are_create_only_and_not_stored(sim_api: SimAPI) -> None:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}}
    created = sim_api.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["status"]["allowed"] is True
    assert "no RBAC" in created.json()["status"]["reason"] and "Warning" not in created.headers
    listed = sim_api.request("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    assert listed.status_code == 405, listed.text
    bad = sim_api.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                          json={**body, "spec": {}})
    assert bad.status_code == 422 and bad.json()["reason"] == "Invalid", bad.text


def test_kubectl_auth_can_i_list_and_whoami(kubectl: Kubectl) -> None:  # noqa: F811 (fixture)
    assert kubectl("auth", "can-i", "create", "pods") == "yes\n"
    listed = kubectl("auth", "can-i", "--list")
    assert "*.*" in listed and "[*]" in listed, listed
    who = kubectl("auth", "whoami")
    assert reviews.USERNAME in who and "system:masters" in who, who
