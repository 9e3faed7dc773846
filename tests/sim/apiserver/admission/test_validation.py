"""Built-in validation: Kubernetes-worded name rules, metadata checks and per-kind CREATE/UPDATE rules."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwsconf.sim.apiserver.admission import defaults
from lwsconf.sim.apiserver.admission.validation import registry as validation
from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.storage import resources
from tests.conftest import SimAPI

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def _causes(key: tuple[str, str], obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[errors.Cause]:
    """Default (as admission does) and validate one object."""
    obj = copy.deepcopy(obj)
    defaults.default_builtin(key, obj, old)
    return validation.validate_builtin(key, obj, old)


def _stored(key: tuple[str, str], obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    defaults.default_builtin(key, obj)
    assert validation.validate_builtin(key, obj, None) == []
    return obj


def _fields(causes: list[errors.Cause]) -> list[str]:
    return [c.field for c in causes]


def _one(causes: list[errors.Cause]) -> errors.Cause:
    assert len(causes) == 1, causes
    return causes[0]


POD = ("", "pods")
STS = ("apps", "statefulsets")


def _pod(**spec: Any) -> dict[str, Any]:
    body = {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": body}


def _sts(**spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}, **spec}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": body}


# --- name and value rules ----------------------------------------------------------------------------

def test_subdomain_rule_uses_the_apiserver_wording() -> None:
    assert validation.dns1123_subdomain("Foo_bar") == [SUBDOMAIN_MSG]
    assert validation.dns1123_subdomain("example.com") == []
    assert validation.dns1123_subdomain("a" * 254)[0] == "must be no more than 253 characters"


@pytest.mark.parametrize("value, problem", [
    ("web-0", None),
    ("a.b", "must not contain dots"),
    ("-web", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
             "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ("a" * 64, "must be no more than 63 characters"),
])
def test_label_rule_reports_dots_and_format_separately(value: str, problem: str | None) -> None:
    assert validation.dns1123_label(value)[:1] == ([problem] if problem else [])


def test_dns1035_labels_must_start_with_a_letter() -> None:
    assert validation.dns1035_label("svc-1") == []
    assert validation.dns1035_label("1svc")[0].startswith("a DNS-1035 label must consist of")


@pytest.mark.parametrize("key, ok", [
    ("app", True), ("example.com/app", True), ("Example.com/app", False), ("/app", False), ("a/b/c", False),
    ("example.com/", False), ("a" * 64, False), ("app.kubernetes.io/name", True),
])
def test_qualified_names_allow_one_subdomain_prefix(key: str, ok: bool) -> None:
    assert (validation.qualified_name(key) == []) is ok


@pytest.mark.parametrize("value, ok", [("", True), ("v1.2_3", True), ("-x", False), ("a" * 64, False)])
def test_label_values_may_be_empty_but_not_malformed(value: str, ok: bool) -> None:
    assert (validation.label_value(value) == []) is ok


def test_env_var_names_follow_the_relaxed_rule_of_kubernetes_134() -> None:
    assert validation.env_var_name("1ABC") != []
    assert validation.relaxed_env_var_name("1ABC") == []
    assert validation.relaxed_env_var_name("A=B") != []


@pytest.mark.parametrize("key, ok", [("tls.crt", True), ("KEY_NAME", True), ("..x", False), ("a/b", False)])
def test_config_map_keys_are_file_names(key: str, ok: bool) -> None:
    assert (validation.config_map_key(key) == []) is ok


# --- metadata ----------------------------------------------------------------------------------------

def _meta(meta: dict[str, Any], *, namespaced: bool = True, rule: str = "dns1123_subdomain") -> list[errors.Cause]:
    return validation.validate_metadata(meta, namespaced=namespaced, name_rule=rule)


def test_name_is_required_unless_generate_name_is_given() -> None:
    cause = _one(_meta({"namespace": "default"}))
    assert (cause.field, cause.message, cause.reason) == (
        "metadata.name", "Required value: name or generateName is required", "FieldValueRequired")
    assert _meta({"namespace": "default", "generateName": "web-"}) == []


def test_bad_name_is_reported_with_value_and_rule() -> None:
    cause = _one(_meta({"name": "Foo_bar", "namespace": "default"}))
    assert cause.message == f'Invalid value: "Foo_bar": {SUBDOMAIN_MSG}'
    assert cause.reason == "FieldValueInvalid"


def test_every_builtin_has_a_name_rule_and_services_use_dns1035() -> None:
    assert {info.key for info in resources.BUILTINS} <= set(validation.NAME_RULES)
    assert validation.NAME_RULES[("", "services")] == "dns1035_label"
    assert _fields(_meta({"name": "1svc", "namespace": "d"}, rule="dns1035_label")) == ["metadata.name"]
    assert _fields(_meta({"name": "a.b", "namespace": "d"}, rule="dns1123_label")) == ["metadata.name"]


def test_namespace_is_required_iff_the_kind_is_namespaced() -> None:
    assert _one(_meta({"name": "x"})).reason == "FieldValueRequired"
    cause = _one(_meta({"name": "x", "namespace": "d"}, namespaced=False))
    assert (cause.field, cause.message) == ("metadata.namespace", "Forbidden: not allowed on this type")


def test_labels_need_qualified_keys_and_string_values() -> None:
    causes = _meta({"name": "x", "namespace": "d", "labels": {"bad key": "v", "n": 1, "ok": "-bad"}})
    assert _fields(causes) == ["metadata.labels"] * 3


def test_annotations_are_limited_to_256_kib_in_total() -> None:
    cause = _one(_meta({"name": "x", "namespace": "d", "annotations": {"a": "x" * 262144}}))
    assert (cause.field, cause.reason) == ("metadata.annotations", "FieldValueTooLong")
    assert cause.message == "Too long: must have at most 262144 bytes"


def test_owner_references_must_be_complete_with_one_controller() -> None:
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s", "uid": "1", "controller": True}
    assert _meta({"name": "x", "namespace": "d", "ownerReferences": [ref]}) == []
    causes = _meta({"name": "x", "namespace": "d", "ownerReferences": [ref, {**ref, "name": "t"}, {"kind": "X"}]})
    assert "Only one reference can have Controller set to true" in causes[0].message
    assert _fields(causes[1:]) == ["metadata.ownerReferences.apiVersion", "metadata.ownerReferences.name",
                                   "metadata.ownerReferences.uid"]


def test_finalizers_must_be_qualified_names() -> None:
    assert _meta({"name": "x", "namespace": "d", "finalizers": ["example.com/cleanup"]}) == []
    assert _fields(_meta({"name": "x", "namespace": "d", "finalizers": ["bad name"]})) == ["metadata.finalizers"]


# --- Pod ---------------------------------------------------------------------------------------------

def test_valid_pod_has_no_causes() -> None:
    assert _causes(POD, _pod()) == []


def test_pod_needs_containers() -> None:
    cause = _one(_causes(POD, _pod(containers=[])))
    assert (cause.field, cause.message) == ("spec.containers", "Required value")


@pytest.mark.parametrize("containers, init, field, reason", [
    ([{"image": "x"}], [], "spec.containers[0].name", "FieldValueRequired"),
    ([{"name": "Main", "image": "x"}], [], "spec.containers[0].name", "FieldValueInvalid"),
    ([{"name": "a", "image": "x"}], [{"name": "a", "image": "x"}], "spec.containers[0].name", "FieldValueDuplicate"),
    ([{"name": "a"}], [], "spec.containers[0].image", "FieldValueRequired"),
    ([{"name": "a", "image": "x", "ports": [{"containerPort": 70000}]}], [],
     "spec.containers[0].ports[0].containerPort", "FieldValueInvalid"),
    ([{"name": "a", "image": "x", "ports": [{"name": "http"}]}], [],
     "spec.containers[0].ports[0].containerPort", "FieldValueRequired"),
    ([{"name": "a", "image": "x", "env": [{"name": "A=B"}]}], [], "spec.containers[0].env[0].name",
     "FieldValueInvalid"),
    ([{"name": "a", "image": "x", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}], [],
     "spec.containers[0].volumeMounts[0].name", "FieldValueNotFound"),
    ([{"name": "a", "image": "x", "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.x"}}}]}], [],
     "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "FieldValueNotSupported"),
])
def test_container_problems_name_the_field(containers: list[Any], init: list[Any], field: str, reason: str) -> None:
    cause = _one(_causes(POD, _pod(containers=containers, initContainers=init)))
    assert (cause.field, cause.reason) == (field, reason)


def test_env_field_refs_to_labels_and_annotations_are_accepted() -> None:
    env = [{"name": "GROUP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['example.com/group']"}}},
           {"name": "SIZE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['example.com/size']"}}}]
    assert _causes(POD, _pod(containers=[{"name": "a", "image": "x", "env": env}])) == []


def test_restart_policy_must_be_a_known_value() -> None:
    cause = _one(_causes(POD, _pod(restartPolicy="Sometimes")))
    assert cause.message == 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
    assert cause.reason == "FieldValueNotSupported"


@pytest.mark.parametrize("resources, message", [
    ({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
     'Invalid value: "2": must be less than or equal to cpu limit of 1'),
    ({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
     'Invalid value: "1": must be equal to example.com/gpu limit of 2'),
    ({"requests": {"memory": "lots"}}, "Invalid value: \"lots\": quantities must match the regular expression"),
])
def test_requests_must_fit_within_limits(resources: dict[str, Any], message: str) -> None:
    cause = _one(_causes(POD, _pod(containers=[{"name": "a", "image": "x", "resources": resources}])))
    assert cause.message.startswith(message)


def test_pod_update_may_change_images() -> None:
    old = _stored(POD, _pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:1.37"
    assert _causes(POD, new, old) == []


@pytest.mark.parametrize("change", [
    lambda s: s["containers"][0].update(ports=[{"containerPort": 80}]),
    lambda s: s.update(nodeName="node-1"),
    lambda s: s.update(restartPolicy="Never"),
])
def test_pod_update_of_other_spec_fields_is_forbidden(change: Any) -> None:
    old = _stored(POD, _pod())
    new = copy.deepcopy(old)
    change(new["spec"])
    cause = _one(_causes(POD, new, old))
    assert (cause.field, cause.reason) == ("spec", "FieldValueForbidden")
    assert cause.message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
        "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
        "previously negative)\n")


def test_pod_update_may_add_but_not_remove_tolerations() -> None:
    old = _stored(POD, _pod())
    added = copy.deepcopy(old)
    added["spec"]["tolerations"].append({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"})
    assert _causes(POD, added, old) == []
    removed = copy.deepcopy(added)
    removed["spec"]["tolerations"] = [t for t in removed["spec"]["tolerations"] if t["key"] != "gpu"]
    assert _fields(_causes(POD, removed, added)) == ["spec.tolerations"]


def test_pod_update_may_not_add_containers_or_extend_deadlines() -> None:
    old = _stored(POD, _pod(activeDeadlineSeconds=60))
    more = copy.deepcopy(old)
    more["spec"]["containers"].append({"name": "side", "image": "x"})
    assert _one(_causes(POD, more, old)).message == "Forbidden: pod updates may not add or remove containers"
    later = copy.deepcopy(old)
    later["spec"]["activeDeadlineSeconds"] = 120
    assert _fields(_causes(POD, later, old)) == ["spec.activeDeadlineSeconds"]


# --- Service -----------------------------------------------------------------------------------------

SVC = ("", "services")


def _svc(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


@pytest.mark.parametrize("spec, field, reason", [
    ({"ports": []}, "spec.ports", "FieldValueRequired"),
    ({"ports": [{"port": 80}, {"port": 81, "name": "b"}]}, "spec.ports[0].name", "FieldValueRequired"),
    ({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}, "spec.ports[1].name", "FieldValueDuplicate"),
    ({"ports": [{"port": 0}]}, "spec.ports[0].port", "FieldValueInvalid"),
    ({"ports": [{}]}, "spec.ports[0].port", "FieldValueInvalid"),
    ({"type": "Magic"}, "spec.type", "FieldValueNotSupported"),
])
def test_service_ports_and_type_are_checked(spec: dict[str, Any], field: str, reason: str) -> None:
    cause = _causes(SVC, _svc(**spec))[0]  # a bad port also makes the defaulted targetPort bad, as in Kubernetes
    assert (cause.field, cause.reason) == (field, reason)


def test_headless_service_may_have_no_ports() -> None:
    assert _causes(SVC, _svc(ports=[], clusterIP="None")) == []


def test_cluster_ip_may_not_change_once_set() -> None:
    old = _stored(SVC, _svc(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"]))
    same = copy.deepcopy(old)
    same["spec"]["ports"][0]["port"] = 8080
    same["spec"]["ports"][0]["targetPort"] = 8080
    assert _causes(SVC, same, old) == []
    moved = copy.deepcopy(old)
    moved["spec"].update(clusterIP="10.96.0.11", clusterIPs=["10.96.0.11"])
    cause = _one(_causes(SVC, moved, old))
    assert (cause.field, cause.message) == ("spec.clusterIPs[0]",
                                            'Invalid value: ["10.96.0.11"]: may not change once set')


def test_cluster_ip_left_out_of_an_update_is_kept() -> None:
    old = _stored(SVC, _svc(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"]))
    assert _causes(SVC, _svc(), old) == []


# --- apps/v1 -----------------------------------------------------------------------------------------

STS_UPDATE_MSG = ("Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                  "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")


def test_valid_statefulset_has_no_causes() -> None:
    assert _causes(STS, _sts()) == []


@pytest.mark.parametrize("spec, field, message", [
    ({"selector": None}, "spec.selector", "Required value"),
    ({"selector": {"matchLabels": {"app": "db"}}}, "spec.template.metadata.labels",
     'Invalid value: {"app":"web"}: `selector` does not match template `labels`'),
    ({"replicas": -1}, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
    ({"podManagementPolicy": "Random"}, "spec.podManagementPolicy",
     "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"),
    ({"ordinals": {"start": -1}}, "spec.ordinals.start", "Invalid value: -1: must be greater than or equal to 0"),
    ({"updateStrategy": {"type": "Sometimes"}}, "spec.updateStrategy",
     "Invalid value: {\"type\":\"Sometimes\"}: must be 'RollingUpdate' or 'OnDelete'"),
])
def test_statefulset_spec_problems(spec: dict[str, Any], field: str, message: str) -> None:
    obj = _sts(**spec)
    if obj["spec"]["selector"] is None:
        del obj["spec"]["selector"]
    cause = _one(_causes(STS, obj))
    assert (cause.field, cause.message) == (field, message)


def test_statefulset_template_is_validated_as_a_pod_template() -> None:
    obj = _sts()
    obj["spec"]["template"]["spec"]["containers"] = [{"name": "Bad_Name"}]
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert _fields(_causes(STS, obj)) == ["spec.template.spec.containers[0].name", "spec.template.spec.restartPolicy"]


def test_statefulset_volume_claim_templates_need_access_modes_and_storage() -> None:
    claims = [{"metadata": {"name": "data"}, "spec": {"resources": {}}}]
    causes = _causes(STS, _sts(volumeClaimTemplates=claims))
    assert _fields(causes) == ["spec.volumeClaimTemplates[0].spec.accessModes",
                               "spec.volumeClaimTemplates[0].spec.resources[storage]"]


def test_statefulset_update_may_scale_and_change_the_template() -> None:
    old = _stored(STS, _sts())
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.37"
    new["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert _causes(STS, new, old) == []


@pytest.mark.parametrize("field, value", [("serviceName", "other"), ("revisionHistoryLimit", 3),
                                          ("podManagementPolicy", "Parallel")])
def test_statefulset_update_of_other_fields_is_forbidden(field: str, value: Any) -> None:
    old = _stored(STS, _sts())
    new = copy.deepcopy(old)
    new["spec"][field] = value
    cause = _one(_causes(STS, new, old))
    assert (cause.field, cause.message) == ("spec", STS_UPDATE_MSG)


@pytest.mark.parametrize("key, kind", [(("apps", "deployments"), "Deployment"), (("apps", "daemonsets"), "DaemonSet")])
def test_deployment_and_daemonset_selectors_are_required_and_immutable(key: tuple[str, str], kind: str) -> None:
    obj = _sts()
    obj["kind"], obj["metadata"]["name"] = kind, "web"
    assert _causes(key, obj) == []
    no_selector = copy.deepcopy(obj)
    del no_selector["spec"]["selector"]
    assert "spec.selector" in _fields(_causes(key, no_selector))
    old = _stored(key, obj)
    new = copy.deepcopy(old)
    new["spec"]["selector"]["matchLabels"]["tier"] = "x"
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    cause = _one(_causes(key, new, old))
    assert (cause.field, cause.message) == ("spec.selector", 'Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: '
                                                             "field is immutable")


def test_daemonset_rolling_update_needs_exactly_one_of_surge_and_unavailable() -> None:
    obj = _sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})
    obj["kind"] = "DaemonSet"
    cause = _one(_causes(("apps", "daemonsets"), obj))
    assert cause.message == "Invalid value: 1: may not be set when maxUnavailable is non-zero"


def test_controller_revision_data_is_mandatory_and_immutable() -> None:
    key = ("apps", "controllerrevisions")
    assert _one(_causes(key, {"revision": 1})).message == "Required value: data is mandatory"
    old = _stored(key, {"revision": 1, "data": {"spec": {}}})
    cause = _one(_causes(key, {**old, "data": {"spec": {"x": 1}}}, old))
    assert (cause.field, cause.message) == ("data", 'Invalid value: {"spec":{"x":1}}: field is immutable')
    assert _fields(_causes(key, {"revision": -1, "data": {}})) == ["revision"]


# --- ConfigMap, Secret, Namespace, Node, PVC ---------------------------------------------------------

def test_config_map_keys_must_be_valid_and_immutable_maps_keep_their_data() -> None:
    key = ("", "configmaps")
    assert _fields(_causes(key, {"data": {"bad/key": "v"}})) == ["data[bad/key]"]
    old = {"data": {"a": "1"}, "immutable": True}
    assert _fields(_causes(key, {"data": {"a": "2"}, "immutable": True}, old)) == ["data"]


@pytest.mark.parametrize("secret, fields", [
    ({"data": {"a": "not base64!"}}, ["data[a]"]),
    ({"type": "kubernetes.io/tls", "data": {}}, ["data[tls.crt]", "data[tls.key]"]),
    ({"stringData": {"password": "s3cret"}}, []),
])
def test_secret_data_is_base64_and_typed_secrets_need_their_keys(secret: dict[str, Any], fields: list[str]) -> None:
    assert _fields(_causes(("", "secrets"), secret)) == fields


def test_secret_type_is_immutable() -> None:
    old = _stored(("", "secrets"), {"data": {}})
    assert _fields(_causes(("", "secrets"), {"type": "example.com/x", "data": {}}, old)) == ["type"]


def test_namespace_finalizers_must_be_standard_or_qualified() -> None:
    cause = _one(_causes(("", "namespaces"), {"metadata": {"name": "x"}, "spec": {"finalizers": ["custom"]}}))
    assert cause.message == ('Invalid value: "custom": '
                             "name is neither a standard finalizer name nor is it fully qualified")


def test_node_taints_need_an_effect_and_pod_cidrs_are_set_once() -> None:
    node = {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "gpu"}]}}
    assert _fields(_causes(("", "nodes"), node)) == ["spec.taints[0].effect"]
    old = {"spec": {"podCIDRs": ["10.0.0.0/24"]}}
    assert _fields(_causes(("", "nodes"), {"spec": {"podCIDRs": ["10.0.1.0/24"]}}, old)) == ["spec.podCIDRs"]


PVC = ("", "persistentvolumeclaims")


def test_pvc_needs_access_modes_and_a_storage_request() -> None:
    causes = _causes(PVC, {"spec": {}})
    assert [(c.field, c.message) for c in causes] == [
        ("spec.accessModes", "Required value: at least 1 access mode is required"),
        ("spec.resources[storage]", "Required value")]


def test_pvc_spec_is_immutable_except_requests_of_bound_claims() -> None:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    old = _stored(PVC, {"spec": spec})
    grown = copy.deepcopy(old)
    grown["spec"]["resources"]["requests"]["storage"] = "2Gi"
    assert _fields(_causes(PVC, grown, old)) == ["spec"]
    old["status"]["phase"] = "Bound"
    assert _causes(PVC, grown, old) == []


# --- discovery, coordination, events, CRDs ------------------------------------------------------------

def test_endpointslice_address_type_is_required_supported_and_immutable() -> None:
    key = ("discovery.k8s.io", "endpointslices")
    assert _one(_causes(key, {})).reason == "FieldValueRequired"
    assert _one(_causes(key, {"addressType": "IPX"})).reason == "FieldValueNotSupported"
    assert _fields(_causes(key, {"addressType": "IPv6"}, {"addressType": "IPv4"})) == ["addressType"]
    assert _fields(_causes(key, {"addressType": "IPv4", "endpoints": [{}]})) == ["endpoints[0].addresses"]


def test_lease_duration_must_be_positive() -> None:
    key = ("coordination.k8s.io", "leases")
    assert _fields(_causes(key, {"spec": {"leaseDurationSeconds": 0}})) == ["spec.leaseDurationSeconds"]


def _core_event(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "e", "namespace": "ns"}, "involvedObject": {"kind": "Pod", "namespace": "ns"},
            "reason": "Started", **fields}


def test_core_event_must_agree_with_its_object_namespace() -> None:
    assert _causes(("", "events"), _core_event()) == []
    cause = _one(_causes(("", "events"), _core_event(involvedObject={"kind": "Pod", "namespace": "other"})))
    assert (cause.field, cause.message) == ("involvedObject.namespace",
                                            'Invalid value: "other": does not match event.namespace')


def test_core_event_with_event_time_needs_reporting_fields() -> None:
    causes = _causes(("", "events"), _core_event(eventTime="2024-01-01T00:00:00.000000Z"))
    required = [c.field for c in causes if c.reason == "FieldValueRequired"]
    assert required == ["reportingController", "reportingInstance", "action"]


EVENTS = ("events.k8s.io", "events")


def _new_event(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "e", "namespace": "ns"}, "regarding": {"kind": "Pod", "namespace": "ns"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1", "action": "Create", "reason": "Created", "type": "Normal", **fields}


@pytest.mark.parametrize("fields, problem", [
    ({"eventTime": None}, ("eventTime", "Required value")),
    ({"type": "Info"}, ("type", 'Invalid value: "": has invalid value: Info')),
    ({"deprecatedCount": 3}, ("count", 'Invalid value: "": needs to be unset')),
    ({"series": {"count": 1, "lastObservedTime": "2024-01-01T00:00:00.000000Z"}},
     ("series.count", 'Invalid value: "": should be at least 2')),
])
def test_events_api_applies_the_strict_rules(fields: dict[str, Any], problem: tuple[str, str]) -> None:
    assert _causes(EVENTS, _new_event()) == []
    causes = _causes(EVENTS, _new_event(**fields))
    assert problem in [(c.field, c.message) for c in causes]


def test_events_api_event_note_is_immutable() -> None:
    old = _stored(EVENTS, _new_event(note="first"))  # as stored: defaulted
    assert _fields(_causes(EVENTS, _new_event(note="second"), old)) == ["message"]


CRD = ("apiextensions.k8s.io", "customresourcedefinitions")


def _crd(**spec: Any) -> dict[str, Any]:
    body = {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}], **spec}
    return {"metadata": {"name": "widgets.example.com"}, "spec": body}


@pytest.mark.parametrize("spec, field, message_part", [
    ({"versions": []}, "spec.versions", "must have at least one version"),
    ({"versions": [{"name": "v1", "storage": True, "schema": {"openAPIV3Schema": {}}},
                   {"name": "v2", "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}]},
     "spec.versions", "must have exactly one version marked as storage version"),
    ({"group": "example"}, "spec.group", "should be a domain with at least one dot"),
    ({"scope": "Galaxy"}, "spec.scope", 'Unsupported value: "Galaxy"'),
    ({"names": {"plural": "gadgets", "kind": "Gadget"}}, "metadata.name", 'must be spec.names.plural+"."+spec.group'),
])
def test_crd_spec_problems(spec: dict[str, Any], field: str, message_part: str) -> None:
    assert _causes(CRD, _crd()) == []
    causes = _causes(CRD, _crd(**spec))
    assert any(c.field == field and message_part in c.message for c in causes), causes


def test_crd_scope_is_immutable() -> None:
    old = _stored(CRD, _crd())
    assert _fields(_causes(CRD, _crd(scope="Cluster"), old)) == ["spec.scope"]


# --- robustness ----------------------------------------------------------------------------------------

def test_unknown_kinds_get_no_extra_checks() -> None:
    assert validation.validate_builtin(("example.com", "widgets"), {"spec": "anything"}, None) == []


def test_causes_render_into_a_422_status() -> None:
    status = errors.invalid("Pod", "", "p", _causes(POD, _pod(containers=[]))).to_status()
    assert status["code"] == 422
    assert status["message"] == 'Pod "p" is invalid: spec.containers: Required value'
    assert status["details"]["causes"] == [{"reason": "FieldValueRequired", "message": "Required value",
                                            "field": "spec.containers"}]


_json = st.recursive(st.none() | st.booleans() | st.integers(-3, 70000) | st.floats(allow_nan=False) |
                     st.sampled_from(["", "x", "Always", "1Gi", "a/b", "-"]),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(["name", "port", "key", "kind", "type", "x"]), inner, max_size=3),
                     max_leaves=8)

RICH: dict[tuple[str, str], dict[str, Any]] = {
    POD: _pod(containers=[{"name": "a", "image": "x", "ports": [{"containerPort": 80, "name": "http"}],
                           "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                           "livenessProbe": {"httpGet": {"port": "http"}}, "resources": {"limits": {"cpu": "1"}},
                           "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
              volumes=[{"name": "v", "configMap": {"name": "c"}}], schedulingGates=[{"name": "g"}],
              tolerations=[{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]),
    SVC: _svc(ports=[{"port": 80, "name": "a", "targetPort": "http"}, {"port": 81, "name": "b"}],
              clusterIP="10.96.0.1", clusterIPs=["10.96.0.1"]),
    STS: _sts(volumeClaimTemplates=[{"metadata": {"name": "d"},
                                     "spec": {"accessModes": ["ReadWriteOnce"],
                                              "resources": {"requests": {"storage": "1Gi"}}}}]),
    ("apps", "daemonsets"): _sts(),
    ("", "nodes"): {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
                    "status": {"capacity": {"cpu": "1"}}},
    ("", "secrets"): {"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}, "immutable": True},
    ("", "events"): _core_event(),
    EVENTS: _new_event(series={"count": 2, "lastObservedTime": "2024-01-01T00:00:00.000000Z"}),
    CRD: _crd(),
}


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else []
    for k, v in items:
        out += _paths(v, (*prefix, k))
    return out


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_mutated_objects_never_crash_defaulting_or_validation(data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(RICH)))
    stored = copy.deepcopy(RICH[key])
    defaults.default_builtin(key, stored)
    obj = copy.deepcopy(stored)
    for _ in range(data.draw(st.integers(1, 3))):
        *parents, last = data.draw(st.sampled_from(_paths(obj)))
        target = obj
        for step in parents:
            target = target[step]
        target[last] = data.draw(_json)
    old = data.draw(st.sampled_from([None, stored]))
    defaults.default_builtin(key, obj, old)
    causes = validation.validate_builtin(key, obj, old)
    meta = obj.get("metadata")
    causes += validation.validate_metadata(meta if isinstance(meta, dict) else {}, namespaced=True,
                                           name_rule=validation.NAME_RULES[key])
    json.dumps([c.to_dict() for c in causes])


CMS = "/api/v1/namespaces/default/configmaps"


def test_finalizer_names_and_no_new_finalizers_while_terminating(sim_api: SimAPI) -> None:
    """deletion/delete-finalizers/create-bad-finalizer and add-finalizer-while-terminating:
    pkg/apis/core/validation `validateKubeFinalizerName` (built-in kinds) and apimachinery
    `ValidateNoNewFinalizers`, worded as kube-apiserver 1.37.2 answered."""
    bad = sim_api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "bad", "finalizers": ["no-domain"]}})
    assert bad.status_code == 422
    assert bad.json()["message"] == ('ConfigMap "bad" is invalid: metadata.finalizers[0]: Invalid value: "no-domain": '
                                     "name is neither a standard finalizer name nor is it fully qualified")
    held = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    assert sim_api.request("POST", CMS, json=held).status_code == 201
    assert sim_api.request("DELETE", f"{CMS}/held").status_code == 200
    added = sim_api.request("PATCH", f"{CMS}/held", headers={"Content-Type": "application/merge-patch+json"},
                            data='{"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}')
    assert added.status_code == 422
    assert added.json()["details"]["causes"] == [{
        "field": "metadata.finalizers", "reason": "FieldValueForbidden",
        "message": 'Forbidden: no new finalizers can be added if the object is being deleted, '
                   'found new finalizers []string{"example.com/new"}'}]
    assert sim_api.request("PATCH", f"{CMS}/held", headers={"Content-Type": "application/merge-patch+json"},
                           data='{"metadata": {"finalizers": null}}').status_code == 200
