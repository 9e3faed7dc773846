"""Who-am-I and may-I reviews: SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview.

`kubectl auth can-i`, `kubectl auth can-i --list` and `kubectl auth whoami` POST these and read the answer
in `status`. As kube-apiserver's REST storage for them does (kubernetes pkg/registry/authorization/
selfsubjectaccessreview/rest.go, selfsubjectrulesreview/rest.go, pkg/registry/authentication/
selfsubjectreview/rest.go) they are create-only, validated, answered and never stored. The sim has one
user, whoever holds the bearer token, and no authorizer: every request it authenticates is allowed. The
answers say so in words rather than pretend to an RBAC decision, so nobody reads the sim's "yes" as a
statement about a real cluster's roles. Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf.sim.apiserver import errors

USERNAME = "lwsconf-sim-admin"
GROUPS = ("system:masters", "system:authenticated")
NOTE = ("lwsconf sim: a single user holds the API token and may do everything; the sim has no authorizer "
        "(no RBAC), so this answer says nothing about a real cluster's roles")

KEYS = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
}
"""The (group, plural) of the review kinds `answer` handles (`handlers.create` hands them over)."""


def answer(key: tuple[str, str], review: dict[str, Any]) -> dict[str, Any]:
    """The review `review` with its `status` filled in, or a StatusError as kube-apiserver gives it.

    Args:
        key: `(group, plural)`, one of `KEYS`.
        review: the decoded request body (kind/apiVersion checked by the caller).

    Returns:
        The object to answer with 201; nothing is stored.
    """
    out = copy.deepcopy(review)
    meta = out.get("metadata")
    out["metadata"] = {**(meta if isinstance(meta, dict) else {}), "creationTimestamp": None}
    sent_spec = out.get("spec")
    spec: dict[str, Any] = sent_spec if isinstance(sent_spec, dict) else {}
    if key == ("authorization.k8s.io", "selfsubjectaccessreviews"):
        _check_access_spec(spec)
        out["spec"] = spec
        out["status"] = {"allowed": True, "reason": NOTE}
    elif key == ("authorization.k8s.io", "selfsubjectrulesreviews"):
        if not spec.get("namespace"):
            # selfsubjectrulesreview/rest.go Create: the spec's namespace is required
            raise errors.bad_request("no namespace on request")
        out["spec"] = spec
        out["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        out["status"] = {"userInfo": {"username": USERNAME, "groups": list(GROUPS)}}
    return out


def _check_access_spec(spec: dict[str, Any]) -> None:
    """ValidateSelfSubjectAccessReviewSpec (pkg/apis/authorization/validation/validation.go): exactly one of
    resourceAttributes and nonResourceAttributes."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes: list[errors.Cause] = []
    if resource is not None and non_resource is not None:
        causes.append(errors.Cause("spec.nonResourceAttributes",
                                   "Invalid value: \"object\": cannot be specified in combination with "
                                   "resourceAttributes"))
    if resource is None and non_resource is None:
        causes.append(errors.Cause("spec.resourceAttributes",
                                   "Invalid value: null: exactly one of nonResourceAttributes or "
                                   "resourceAttributes must be specified"))
    if causes:
        raise errors.invalid("SelfSubjectAccessReview", "authorization.k8s.io", "", causes)
