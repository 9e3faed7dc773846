"""Builders for ValidatingAdmissionPolicy tests against the real sim API server (raw HTTP, to see codes).

`policy()` and `binding()` build minimal objects (a policy on core ConfigMaps unless told otherwise),
`Policies(sim)` installs them and writes objects, returning the raw `requests.Response`.
"""

from __future__ import annotations

from typing import Any

import requests

from tests.conftest import SimAPI

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{ADMISSION}/validatingadmissionpolicies"
BINDINGS = f"{ADMISSION}/validatingadmissionpolicybindings"


def rule(*resources: str, operations: tuple[str, ...] = ("CREATE", "UPDATE"), groups: tuple[str, ...] = ("",),
         versions: tuple[str, ...] = ("v1",), **extra: Any) -> dict[str, Any]:
    return {"apiGroups": list(groups), "apiVersions": list(versions), "operations": list(operations),
            "resources": list(resources or ("configmaps",)), **extra}


def policy(name: str, *validations: dict[str, Any], rules: list[dict[str, Any]] | None = None,
           **spec: Any) -> dict[str, Any]:
    """A policy on `rules` (default: CREATE/UPDATE of ConfigMaps); `validations` as dicts or expressions."""
    constraints = {"resourceRules": rules or [rule()], **spec.pop("match", {})}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": constraints, "validations": list(validations), **spec}}


def check(expression: str, message: str = "", **extra: Any) -> dict[str, Any]:
    out = {"expression": expression, **extra}
    if message:
        out["message"] = message
    return out


def binding(name: str, policy_name: str, *actions: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": list(actions or ("Deny",)), **spec}}


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def describe(reply: requests.Response) -> str:
    return f"HTTP {reply.status_code}: {reply.text[:2000]}"


class Policies:
    """Raw-HTTP access to a sim API server for admission policy tests."""

    def __init__(self, sim: SimAPI) -> None:
        self.sim = sim

    def install(self, policy_: dict[str, Any], *bindings: dict[str, Any]) -> None:
        """Create a policy and its bindings (default: one Deny binding named after the policy)."""
        for path, body in [(POLICIES, policy_), *((BINDINGS, b) for b in bindings or (
                binding(policy_["metadata"]["name"], policy_["metadata"]["name"]),))]:
            reply = self.sim.request("POST", path, json=body)
            assert reply.status_code == 201, describe(reply)

    def post(self, path: str, body: dict[str, Any], **params: str) -> requests.Response:
        return self.sim.request("POST", path, json=body, params=params)

    def create_cm(self, body: dict[str, Any], namespace: str = "default", **params: str) -> requests.Response:
        return self.post(f"/api/v1/namespaces/{namespace}/configmaps", body, **params)

    def put_cm(self, body: dict[str, Any], namespace: str = "default") -> requests.Response:
        path = f"/api/v1/namespaces/{namespace}/configmaps/{body['metadata']['name']}"
        current = self.sim.request("GET", path).json()
        body = {**body, "metadata": {**body["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        return self.sim.request("PUT", path, json=body)

    def namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        reply = self.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": name, "labels": labels or {}}})
        assert reply.status_code == 201, describe(reply)

    def denial(self, reply: requests.Response) -> str:
        """The policy's part of a rejection ("ValidatingAdmissionPolicy 'p' ... denied request: ...")."""
        assert reply.status_code >= 400, describe(reply)
        message: str = reply.json()["message"]
        return message.split(" is forbidden: ", 1)[1] if " is forbidden: " in message else message
