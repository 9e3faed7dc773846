"""Who-am-I and may-I reviews: SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview, and the
delegated ones a kubelet asks about its callers: TokenReview and SubjectAccessReview.

`kubectl auth can-i`, `kubectl auth can-i --list` and `kubectl auth whoami` POST these and read the answer
in `status`. As kube-apiserver's REST storage for them does (kubernetes pkg/registry/authorization/
selfsubjectaccessreview/rest.go, selfsubjectrulesreview/rest.go, pkg/registry/authentication/
selfsubjectreview/rest.go) they are create-only, validated, answered and never stored. The sim has one
user, whoever holds the bearer token, and no authorizer: every request it authenticates is allowed. The
answers say so in words rather than pretend to an RBAC decision, so nobody reads the sim's "yes" as a
statement about a real cluster's roles: the access review's `reason`, the rules review's `evaluationError`
(and `lwsconf sim up`'s banner, since kubectl prints neither by default). No Warning header: kube-apiserver
sends none, and the fidelity corpus holds these answers to its shape. Pure: no I/O.

TokenReview and SubjectAccessReview are what a kubelet with webhook authentication and authorization
(`lwsconf.sim.nodes.streams.kubeletauth`) sends about whoever called its port (pkg/registry/authentication/
tokenreview/storage.go, pkg/registry/authorization/subjectaccessreview/rest.go). A TokenReview authenticates
the sim's one token as that one user and no other token. A SubjectAccessReview allows the group
`system:masters` (kube-apiserver's privileged group, allowed before any authorizer runs) and denies everyone
else: the sim serves no other identity and enforces no RBAC, so nobody outside that group could be granted
anything; the reason says so.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors

USERNAME = "lwsconf-sim-admin"
GROUPS = ("system:masters", "system:authenticated")
NOTE = ("lwsconf sim: a single user holds the API token and may do everything; the sim has no authorizer "
        "(no RBAC), so this answer says nothing about a real cluster's roles")

PRIVILEGED_GROUP = "system:masters"
DENIED = ("lwsconf sim: only the group system:masters is allowed; the sim serves no other identity and has no "
          "authorizer (no RBAC) that could grant anyone else anything")

ACCESS = ("authorization.k8s.io", "selfsubjectaccessreviews")
TOKEN_REVIEW = ("authentication.k8s.io", "tokenreviews")
SUBJECT_ACCESS = ("authorization.k8s.io", "subjectaccessreviews")
KEYS = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    TOKEN_REVIEW,
    SUBJECT_ACCESS,
}
"""The (group, plural) of the review kinds `answer` handles (`handlers.create` hands them over)."""


def answer(key: tuple[str, str], review: dict[str, Any], now: str, *, api_token: str = "") -> dict[str, Any]:
    """The review `review` with its `status` filled in, or a StatusError as kube-apiserver gives it.

    What comes back follows kube-apiserver 1.37.2 (lwsconf fidelity subresources/self-subject-reviews): an access
    review echoes its spec with empty metadata; a rules review answers a new object, spec empty; a
    SelfSubjectReview carries a creationTimestamp.

    Args:
        key: `(group, plural)`, one of `KEYS`.
        review: the decoded request body (kind/apiVersion checked by the caller).
        now: RFC 3339 time for the SelfSubjectReview's creationTimestamp.
        api_token: the sim's bearer token, the only one a TokenReview authenticates.

    Returns:
        The object to answer with 201; nothing is stored.
    """
    sent_spec = review.get("spec")
    spec: dict[str, Any] = copy.deepcopy(sent_spec) if isinstance(sent_spec, dict) else {}
    head = {"apiVersion": review.get("apiVersion"), "kind": review.get("kind")}
    if key == TOKEN_REVIEW:
        return {**head, "metadata": {}, "spec": spec, "status": _token_status(spec, api_token)}
    if key == SUBJECT_ACCESS:
        _check_access_spec(spec)
        if not spec.get("user") and not spec.get("groups"):  # ValidateSubjectAccessReviewSpec
            cause = errors.Cause("spec.user", 'Invalid value: "": at least one of user or group must be specified')
            raise errors.StatusError(422, "Invalid", f'.authorization.k8s.io "" is invalid: {cause.field}: '
                                     f"{cause.message}", group="authorization.k8s.io", causes=[cause])
        allowed = PRIVILEGED_GROUP in (spec.get("groups") or ())
        return {**head, "metadata": {}, "spec": spec,
                "status": {"allowed": True, "reason": NOTE} if allowed else {"allowed": False, "reason": DENIED}}
    if key == ("authorization.k8s.io", "selfsubjectaccessreviews"):
        _check_access_spec(spec)
        return {**head, "metadata": {}, "spec": spec, "status": {"allowed": True, "reason": NOTE}}
    if key == ("authorization.k8s.io", "selfsubjectrulesreviews"):
        if not spec.get("namespace"):
            # selfsubjectrulesreview/rest.go Create: the spec's namespace is required
            raise errors.bad_request("no namespace on request")
        return {**head, "metadata": {}, "spec": {}, "status": {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
            "evaluationError": NOTE,  # the rules are complete; this is where the answer can say why they are `*`
        }}
    return {**head, "metadata": {"creationTimestamp": now},
            "status": {"userInfo": {"username": USERNAME, "groups": list(GROUPS)}}}


def _token_status(spec: dict[str, Any], api_token: str) -> dict[str, Any]:
    """tokenreview/storage.go Create: a token is required (400); the answer names the user it authenticates."""
    token = spec.get("token")
    if not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    if not api_token or token != api_token:
        return {"user": {}}
    return {"authenticated": True, "user": {"username": USERNAME, "groups": list(GROUPS)}}


def _check_access_spec(spec: dict[str, Any]) -> None:
    """ValidateSelfSubjectAccessReviewSpec (pkg/apis/authorization/validation/validation.go) as kube-apiserver
    1.37.2 answers it: exactly one of resourceAttributes and nonResourceAttributes, reported on `spec` with the
    internal NonResourceAttributes as the value (Go field names), and no kind in the error (the decoded
    internal object has none: '.authorization.k8s.io "" is invalid')."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (resource is None) != (non_resource is None):
        return
    if isinstance(non_resource, dict):
        value = json.dumps({"Path": non_resource.get("path", ""), "Verb": non_resource.get("verb", "")},
                           separators=(",", ":"))
    else:
        value = "null"
    cause = errors.Cause("spec", f"Invalid value: {value}: exactly one of nonResourceAttributes or "
                                 "resourceAttributes must be specified")
    raise errors.StatusError(422, "Invalid", f'.authorization.k8s.io "" is invalid: spec: {cause.message}',
                             group="authorization.k8s.io", causes=[cause])
