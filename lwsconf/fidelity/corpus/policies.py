"""ValidatingAdmissionPolicy and MutatingAdmissionPolicy: objects, enforcement (deny, warn, audit),
messageExpression, params-free matching by namespace, JSONPatch mutations, and invalid policies.

Each policy matches only its scenario's namespace (by the `kubernetes.io/metadata.name` label), so
later scenarios are unaffected. kube-apiserver enforces a new policy once its informer has it, a
moment after the create: the first enforced request is awaited with a dry-run probe (`until`)."""

from __future__ import annotations

from typing import Any

from lwsconf.fidelity.corpus._build import ADMISSION, CORE, configmap, create, delete, get, pod
from lwsconf.fidelity.model import Scenario, Step, Until

VAPS = f"{ADMISSION}/validatingadmissionpolicies"
VAPBS = f"{ADMISSION}/validatingadmissionpolicybindings"
MAPS = f"{ADMISSION}/mutatingadmissionpolicies"
MAPBS = f"{ADMISSION}/mutatingadmissionpolicybindings"
CMS = f"{CORE}/configmaps"
IN_NS = {"matchLabels": {"kubernetes.io/metadata.name": "${ns}"}}


def _vap(name: str, expression: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail", "matchConstraints": {"namespaceSelector": IN_NS, "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                 "resources": ["configmaps"]}]},
                "validations": [{"expression": expression, **extra}]}}


def _binding(kind: str, name: str, policy: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"policyName": policy, **spec}}


def _map(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                     "matchConstraints": {"namespaceSelector": IN_NS, "resourceRules": [
                         {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                          "resources": ["pods"]}]},
                     "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}]}}


def _probe(name: str, body: dict[str, Any], code: int) -> Step:
    return Step(name, "POST", CMS, body, query={"dryRun": "All"}, until=Until("code", code, 30.0))


# A policy's status (typeChecking) is written by kube-apiserver's type-checking controller a moment
# after the create; the sim writes none. The create answers are compared without it.
_STATUS = ("body.status",)

VALIDATING = Scenario("policies", "policy-validating", (
    create("vap-deny", VAPS, _vap("fid-deny-big", "!has(object.data) || size(object.data) <= 2",
                                  message="at most two keys"), vary=_STATUS),
    create("vap-binding-deny", VAPBS, _binding("ValidatingAdmissionPolicyBinding", "fid-deny-big", "fid-deny-big",
                                               validationActions=["Deny"])),
    _probe("enforced-probe", configmap("probe", {"a": "1", "b": "2", "c": "3"}), 422),
    create("denied", CMS, configmap("big", {"a": "1", "b": "2", "c": "3"})),
    create("allowed", CMS, configmap("small", {"a": "1"})),
    create("vap-message-expression", VAPS, _vap("fid-msg-expr", "object.metadata.name != 'forbidden'",
                                                messageExpression="'name ' + object.metadata.name + ' is taken'",
                                                reason="Forbidden"), vary=_STATUS),
    create("vap-binding-msg", VAPBS, _binding("ValidatingAdmissionPolicyBinding", "fid-msg-expr", "fid-msg-expr",
                                              validationActions=["Deny"])),
    _probe("msg-probe", configmap("forbidden"), 403),
    create("denied-forbidden", CMS, configmap("forbidden")),
    create("vap-warn", VAPS, _vap("fid-warn", "object.metadata.name != 'warned'", message="warned name"),
           vary=_STATUS),
    create("vap-binding-warn", VAPBS, _binding("ValidatingAdmissionPolicyBinding", "fid-warn", "fid-warn",
                                               validationActions=["Warn"])),
    Step("warn-probe", "POST", CMS, configmap("warned"), query={"dryRun": "All"},
         until=Until("warnings.0", "Validation failed for ValidatingAdmissionPolicy 'fid-warn' with binding "
                     "'fid-warn': warned name", 30.0)),
    create("warned", CMS, configmap("warned")),
    create("vap-bad-expression", VAPS, _vap("fid-bad", "object.nope(")),
    create("binding-bad-actions", VAPBS, _binding("ValidatingAdmissionPolicyBinding", "fid-b", "fid-deny-big",
                                                  validationActions=["Deny", "Warn"])),
    create("binding-no-actions", VAPBS, _binding("ValidatingAdmissionPolicyBinding", "fid-c", "fid-deny-big")),
    get("read-policy", f"{VAPS}/fid-deny-big", vary=_STATUS),
    delete("delete-binding", f"{VAPBS}/fid-deny-big"),
    _probe("unenforced-probe", configmap("probe2", {"a": "1", "b": "2", "c": "3"}), 201),
    create("allowed-after-unbinding", CMS, configmap("big", {"a": "1", "b": "2", "c": "3"})),
))

MUTATING = Scenario("policies", "policy-mutating", (
    create("map", MAPS, _map("fid-add-label",
                             '[JSONPatch{op: "add", path: "/metadata/labels", value: {"mutated": "yes"}}]')),
    create("map-binding", MAPBS, _binding("MutatingAdmissionPolicyBinding", "fid-add-label", "fid-add-label")),
    Step("mutation-probe", "POST", f"{CORE}/pods", pod("probe"), query={"dryRun": "All"},
         until=Until("body.metadata.labels.mutated", "yes", 30.0)),
    create("mutated-pod", f"{CORE}/pods", pod("p1")),
    get("mutated-pod-read", f"{CORE}/pods/p1"),
    create("map-bad-patch-type", MAPS, {**_map("fid-bad", "[]"), "spec": {
        **_map("fid-bad", "[]")["spec"], "mutations": [{"patchType": "Teleport"}]}}),
    create("map-bad-expression", MAPS, _map("fid-bad2", "[JSONPatch{op: ")),
    delete("delete-map-binding", f"{MAPBS}/fid-add-label"),
    Step("unmutated-probe", "POST", f"{CORE}/pods", pod("probe2"), query={"dryRun": "All"},
         until=Until("body.metadata.labels", None, 30.0)),
    create("unmutated-pod", f"{CORE}/pods", pod("p2")),
))

SCENARIOS: tuple[Scenario, ...] = (VALIDATING, MUTATING)
