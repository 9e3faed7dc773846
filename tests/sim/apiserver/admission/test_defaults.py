"""Built-in defaulting: what the real apiserver fills in, and that the result suits the strict v37 client."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes import client

from lwsconf.sim.apiserver.admission import defaults
from lwsconf.sim.apiserver.admission.validation import registry as validation
from lwsconf.sim.apiserver.storage import resources
from tests.conftest import SimAPI

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "ports": [{"containerPort": 80}]}]}}
SELECTOR = {"matchLabels": {"app": "web"}}
NOW_MICRO = "2024-05-01T10:00:00.000000Z"


def _ns_meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "default"}


MINIMAL: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("", "namespaces"): ("V1Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
    ("", "pods"): ("V1Pod", {"apiVersion": "v1", "kind": "Pod", "metadata": _ns_meta("web-0"),
                             "spec": copy.deepcopy(TEMPLATE["spec"])}),
    ("", "services"): ("V1Service", {"apiVersion": "v1", "kind": "Service", "metadata": _ns_meta("web"),
                                     "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    ("", "endpoints"): ("V1Endpoints", {"apiVersion": "v1", "kind": "Endpoints", "metadata": _ns_meta("web")}),
    ("", "configmaps"): ("V1ConfigMap", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _ns_meta("cfg"),
                                         "data": {"app.conf": "x=1"}}),
    ("", "secrets"): ("V1Secret", {"apiVersion": "v1", "kind": "Secret", "metadata": _ns_meta("creds"),
                                   "stringData": {"password": "s3cret"}}),
    ("", "serviceaccounts"): ("V1ServiceAccount", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                   "metadata": _ns_meta("default")}),
    ("", "events"): ("CoreV1Event", {"apiVersion": "v1", "kind": "Event", "metadata": _ns_meta("web-0.1"),
                                     "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "default"},
                                     "reason": "Started", "message": "started", "type": "Normal"}),
    ("", "nodes"): ("V1Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
                               "status": {"capacity": {"cpu": 4, "memory": "8Gi", "pods": 110}}}),
    ("", "persistentvolumeclaims"): ("V1PersistentVolumeClaim", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _ns_meta("data"),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    ("apps", "statefulsets"): ("V1StatefulSet", {"apiVersion": "apps/v1", "kind": "StatefulSet",
                                                 "metadata": _ns_meta("web"),
                                                 "spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    ("apps", "controllerrevisions"): ("V1ControllerRevision", {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                                                               "metadata": _ns_meta("web-7d9f"), "data": {}}),
    ("apps", "deployments"): ("V1Deployment", {"apiVersion": "apps/v1", "kind": "Deployment",
                                               "metadata": _ns_meta("web"),
                                               "spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    ("apps", "replicasets"): ("V1ReplicaSet", {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                               "metadata": _ns_meta("web-7d9f"),
                                               "spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    ("apps", "daemonsets"): ("V1DaemonSet", {"apiVersion": "apps/v1", "kind": "DaemonSet",
                                             "metadata": _ns_meta("agent"),
                                             "spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    ("discovery.k8s.io", "endpointslices"): ("V1EndpointSlice", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": _ns_meta("web-abc"),
        "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.2"]}], "ports": [{"port": 80}]}),
    ("coordination.k8s.io", "leases"): ("V1Lease", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                                    "metadata": _ns_meta("leader"), "spec": {"holderIdentity": "a"}}),
    ("events.k8s.io", "events"): ("EventsV1Event", {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": _ns_meta("web-0.2"),
        "regarding": {"kind": "Pod", "name": "web-0", "namespace": "default"}, "eventTime": NOW_MICRO,
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1", "action": "Create",
        "reason": "Created", "type": "Normal", "note": "created"}),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("V1CustomResourceDefinition", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): ("V1ValidatingAdmissionPolicy", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "owner-required"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "validations": [{"expression": "'owner' in object.data"}]}}),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): ("V1ValidatingAdmissionPolicyBinding", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "owner-required"},
        "spec": {"policyName": "owner-required", "validationActions": ["Deny"]}}),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): ("V1MutatingAdmissionPolicy", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "add-owner"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "reinvocationPolicy": "Never",
                 "mutations": [{"patchType": "JSONPatch", "jsonPatch": {
                     "expression": '[JSONPatch{op: "add", path: "/data/owner", value: "me"}]'}}]}}),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): ("V1MutatingAdmissionPolicyBinding", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "add-owner"}, "spec": {"policyName": "add-owner"}}),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): ("V1MutatingWebhookConfiguration", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "lws-mutating"},
        "webhooks": [{"name": "mpod.kb.io", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "clientConfig": {"service": {"name": "webhook", "namespace": "lws-system",
                                                   "path": "/mutate--v1-pod"}},
                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["pods"]}]}]}),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): ("V1ValidatingWebhookConfiguration", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "lws-validating"},
        "webhooks": [{"name": "vpod.kb.io", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "clientConfig": {"url": "https://127.0.0.1:9443/validate--v1-pod"}}]}),
    ("batch", "jobs"): ("V1Job", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": _ns_meta("pi"),
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "pi", "image": "python:3.12-slim"}]}}}}),
    ("batch", "cronjobs"): ("V1CronJob", {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": _ns_meta("tick"),
        "spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "t", "image": "busybox"}]}}}}}}),
    ("policy", "poddisruptionbudgets"): ("V1PodDisruptionBudget", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _ns_meta("web"),
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    ("authorization.k8s.io", "selfsubjectaccessreviews"): ("V1SelfSubjectAccessReview", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {"name": "r"},
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}),
    ("authorization.k8s.io", "selfsubjectrulesreviews"): ("V1SelfSubjectRulesReview", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "metadata": {"name": "r"},
        "spec": {"namespace": "default"}}),
    ("authentication.k8s.io", "selfsubjectreviews"): ("V1SelfSubjectReview", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {"name": "r"}}),
    ("authentication.k8s.io", "tokenreviews"): ("V1TokenReview", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {"name": "r"},
        "spec": {"token": "abc"}}),
    ("authorization.k8s.io", "subjectaccessreviews"): ("V1SubjectAccessReview", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {"name": "r"},
        "spec": {"user": "u", "resourceAttributes": {"verb": "get", "resource": "nodes", "subresource": "proxy"}}}),
}


def _defaulted(key: tuple[str, str], obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    defaults.default_builtin(key, obj, old)
    return obj


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": _ns_meta("p"), "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec}}


# --- the contract with the typed client ------------------------------------------------------------

def test_every_builtin_has_a_minimal_example() -> None:
    assert set(MINIMAL) == {info.key for info in resources.BUILTINS}


@pytest.mark.parametrize("key", sorted(MINIMAL), ids=lambda k: f"{k[0] or 'core'}/{k[1]}")
def test_defaulted_minimal_objects_validate_and_deserialize_with_the_v37_client(key: tuple[str, str]) -> None:
    model, obj = MINIMAL[key]
    info = next(i for i in resources.BUILTINS if i.key == key)
    obj = _defaulted(key, obj)
    assert validation.validate_metadata(obj["metadata"], namespaced=info.namespaced,
                                        name_rule=validation.NAME_RULES[key]) == []
    assert validation.validate_builtin(key, obj, None) == []
    obj["metadata"].update(uid="0b5c7f6e-1111-2222-3333-444455556666", resourceVersion="42",
                           creationTimestamp="2024-05-01T10:00:00Z")
    typed = client.ApiClient().deserialize(json.dumps(obj), model, "application/json")
    assert type(typed).__name__ == model


@pytest.mark.parametrize("key", sorted(MINIMAL), ids=lambda k: f"{k[0] or 'core'}/{k[1]}")
def test_defaulting_is_idempotent(key: tuple[str, str]) -> None:
    once = _defaulted(key, MINIMAL[key][1])
    assert _defaulted(key, once, once) == once


# --- Pod ---------------------------------------------------------------------------------------------

def test_pod_gets_the_spec_defaults_a_real_cluster_shows() -> None:
    spec = _defaulted(("", "pods"), _pod())["spec"]
    assert {k: spec[k] for k in ("restartPolicy", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds",
                                 "securityContext", "enableServiceLinks", "serviceAccountName", "priority")} == {
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30, "securityContext": {}, "enableServiceLinks": True,
        "serviceAccountName": "default", "priority": 0}
    ctr = spec["containers"][0]
    assert (ctr["terminationMessagePath"], ctr["terminationMessagePolicy"], ctr["resources"]) == (
        "/dev/termination-log", "File", {})


def test_user_values_are_kept() -> None:
    spec = _defaulted(("", "pods"), _pod(restartPolicy="Never", terminationGracePeriodSeconds=0,
                                         serviceAccountName="builder"))["spec"]
    assert (spec["restartPolicy"], spec["terminationGracePeriodSeconds"], spec["serviceAccountName"]) == (
        "Never", 0, "builder")


@pytest.mark.parametrize("image, policy", [
    ("busybox", "Always"), ("busybox:latest", "Always"), ("busybox:1.36", "IfNotPresent"),
    ("registry:5000/team/busybox", "Always"), ("registry:5000/team/busybox:1", "IfNotPresent"),
    ("busybox@sha256:" + "a" * 64, "IfNotPresent"), ("busybox:latest@sha256:" + "a" * 64, "Always"),
    ("", "IfNotPresent"),
])
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert defaults.image_pull_policy(image) == policy


def test_pod_gets_default_toleration_seconds_once() -> None:
    pod = _defaulted(("", "pods"), _pod())
    assert [(t["key"], t["tolerationSeconds"]) for t in pod["spec"]["tolerations"]] == [
        ("node.kubernetes.io/not-ready", 300), ("node.kubernetes.io/unreachable", 300)]
    wildcard = _defaulted(("", "pods"), _pod(tolerations=[{"operator": "Exists"}]))
    assert wildcard["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_pod_starts_pending_with_its_qos_class() -> None:
    assert _defaulted(("", "pods"), _pod())["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def _qos(*resources: dict[str, Any], init: dict[str, Any] | None = None, pod_level: Any = None) -> str:
    containers = [{"name": f"c{i}", "image": "x", "resources": r} for i, r in enumerate(resources)]
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = [{"name": "init", "image": "x", "resources": init}]
    if pod_level is not None:
        spec["resources"] = pod_level
    return str(_defaulted(("", "pods"), {"metadata": _ns_meta("p"), "spec": spec})["status"]["qosClass"])


GUARANTEED = {"limits": {"cpu": "1", "memory": "1Gi"}}


@pytest.mark.parametrize("kwargs, qos", [
    ({"resources": ({},)}, "BestEffort"),
    ({"resources": ({"requests": {"cpu": "100m"}},)}, "Burstable"),
    ({"resources": (GUARANTEED,)}, "Guaranteed"),
    ({"resources": ({"requests": {"cpu": "1000m", "memory": "1Gi"}, "limits": {"cpu": 1, "memory": "1024Mi"}},)},
     "Guaranteed"),
    ({"resources": (GUARANTEED, {})}, "Burstable"),
    ({"resources": (GUARANTEED,), "init": {}}, "Burstable"),
    ({"resources": ({"limits": {"cpu": "1"}},)}, "Burstable"),
    ({"resources": ({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}},)}, "BestEffort"),
    ({"resources": ({},), "pod_level": GUARANTEED}, "Guaranteed"),
])
def test_qos_class_is_computed_from_cpu_and_memory(kwargs: dict[str, Any], qos: str) -> None:
    assert _qos(*kwargs["resources"], init=kwargs.get("init"), pod_level=kwargs.get("pod_level")) == qos


def test_container_details_are_defaulted() -> None:
    ctr = {"name": "main", "image": "x", "ports": [{"containerPort": 80}],
           "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
           "readinessProbe": {"httpGet": {"port": 80}},
           "resources": {"requests": {"cpu": 0.5, "memory": 1073741824}}}
    out = _defaulted(("", "pods"), {"metadata": _ns_meta("p"), "spec": {"containers": [ctr]}})["spec"]["containers"][0]
    assert out["ports"][0]["protocol"] == "TCP"
    assert out["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert out["readinessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                     "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert out["resources"]["requests"] == {"cpu": "500m", "memory": "1073741824"}


def test_volumes_get_their_source_defaults() -> None:
    vols = [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "cfg"}}]
    out = _defaulted(("", "pods"), _pod(volumes=vols))["spec"]["volumes"]
    assert out == [{"name": "scratch", "emptyDir": {}},
                   {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}]


# --- workloads ---------------------------------------------------------------------------------------

def test_statefulset_defaults() -> None:
    sts = _defaulted(("apps", "statefulsets"), MINIMAL[("apps", "statefulsets")][1])
    spec = sts["spec"]
    assert {k: spec[k] for k in ("replicas", "podManagementPolicy", "updateStrategy", "revisionHistoryLimit",
                                 "persistentVolumeClaimRetentionPolicy")} == {
        "replicas": 1, "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}},
        "revisionHistoryLimit": 10,
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}}
    assert "minReadySeconds" not in spec, "not defaulted, and omitempty: kube-apiserver 1.37 answers without it"
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}


def test_pod_templates_get_pod_spec_defaults_but_not_pod_only_ones() -> None:
    tspec = _defaulted(("apps", "statefulsets"), MINIMAL[("apps", "statefulsets")][1])["spec"]["template"]["spec"]
    assert tspec["restartPolicy"] == "Always"
    assert tspec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert not {"tolerations", "serviceAccountName", "enableServiceLinks", "priority"} & set(tspec)


def test_on_delete_statefulset_gets_no_rolling_update_block() -> None:
    obj = copy.deepcopy(MINIMAL[("apps", "statefulsets")][1])
    obj["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert _defaulted(("apps", "statefulsets"), obj)["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_statefulset_claim_templates_are_defaulted_like_claims() -> None:
    obj = copy.deepcopy(MINIMAL[("apps", "statefulsets")][1])
    obj["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    claim = _defaulted(("apps", "statefulsets"), obj)["spec"]["volumeClaimTemplates"][0]
    assert (claim["spec"]["volumeMode"], claim["status"]) == ("Filesystem", {"phase": "Pending"})


def test_deployment_and_daemonset_strategies() -> None:
    dep = _defaulted(("apps", "deployments"), MINIMAL[("apps", "deployments")][1])["spec"]
    assert dep["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (dep["replicas"], dep["revisionHistoryLimit"], dep["progressDeadlineSeconds"]) == (1, 10, 600)
    rs = _defaulted(("apps", "replicasets"), MINIMAL[("apps", "replicasets")][1])
    assert (rs["spec"]["replicas"], rs["status"]) == (1, {"replicas": 0})  # replicas has no omitempty
    ds = _defaulted(("apps", "daemonsets"), MINIMAL[("apps", "daemonsets")][1])
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                            "numberReady": 0}


# --- core kinds --------------------------------------------------------------------------------------

def test_service_defaults_without_allocating_a_cluster_ip() -> None:
    spec = _defaulted(("", "services"), MINIMAL[("", "services")][1])["spec"]
    assert spec == {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                    "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}


def test_service_update_keeps_the_allocated_cluster_ip() -> None:
    old = _defaulted(("", "services"), MINIMAL[("", "services")][1])
    old["spec"].update(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"])
    new = _defaulted(("", "services"), MINIMAL[("", "services")][1], old)
    assert (new["spec"]["clusterIP"], new["spec"]["clusterIPs"]) == ("10.96.0.10", ["10.96.0.10"])


def test_namespace_gets_its_name_label_and_the_kubernetes_finalizer_on_create_only() -> None:
    ns = _defaulted(("", "namespaces"), MINIMAL[("", "namespaces")][1])
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert (ns["spec"], ns["status"]) == ({"finalizers": ["kubernetes"]}, {"phase": "Active"})
    finalized = copy.deepcopy(ns)
    finalized["spec"]["finalizers"] = []
    assert _defaulted(("", "namespaces"), finalized, ns)["spec"]["finalizers"] == []


def test_secret_string_data_is_folded_into_base64_data() -> None:
    secret = _defaulted(("", "secrets"), {"data": {"user": "YWRtaW4="}, "stringData": {"password": "s3cret"}})
    assert secret == {"type": "Opaque", "data": {"user": "YWRtaW4=", "password": "czNjcmV0"}}


def test_pvc_and_node_defaults() -> None:
    pvc = _defaulted(("", "persistentvolumeclaims"), MINIMAL[("", "persistentvolumeclaims")][1])
    assert (pvc["spec"]["volumeMode"], pvc["status"]) == ("Filesystem", {"phase": "Pending"})
    node = _defaulted(("", "nodes"), MINIMAL[("", "nodes")][1])
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}


def test_crd_names_conversion_and_version_flags() -> None:
    crd = copy.deepcopy(MINIMAL[("apiextensions.k8s.io", "customresourcedefinitions")][1])
    crd["spec"]["versions"].append({"name": "v2", "schema": {"openAPIV3Schema": {"type": "object"}}})
    spec = _defaulted(("apiextensions.k8s.io", "customresourcedefinitions"), crd)["spec"]
    assert (spec["names"]["singular"], spec["names"]["listKind"]) == ("widget", "WidgetList")
    assert spec["conversion"] == {"strategy": "None"}
    assert [(v["served"], v["storage"]) for v in spec["versions"]] == [(True, True), (False, False)]


def test_kinds_without_defaults_are_left_alone() -> None:
    cm = copy.deepcopy(MINIMAL[("", "configmaps")][1])
    assert _defaulted(("", "configmaps"), cm) == cm
    assert _defaulted(("example.com", "widgets"), {"spec": {}}) == {"spec": {}}


def test_statefulset_status_zero_counters_read_back_absent_as_go_omitempty_does() -> None:
    """staging/src/k8s.io/api/apps/v1/types.go StatefulSetStatus: `readyReplicas` and the other
    non-pointer `omitempty` fields vanish at 0; `replicas` and `availableReplicas` are always written
    (lwsconf fidelity controllers/ctl-statefulset/partition-and-update)."""
    obj = copy.deepcopy(MINIMAL[("apps", "statefulsets")][1])
    obj["status"] = {"observedGeneration": 2, "replicas": 1, "readyReplicas": 0, "currentReplicas": 0,
                     "updatedReplicas": 1, "availableReplicas": 0, "currentRevision": "web-1", "updateRevision": "",
                     "collisionCount": 0}
    status = _defaulted(("apps", "statefulsets"), obj)["status"]
    assert status == {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 0,
                      "currentRevision": "web-1", "collisionCount": 0}


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                  "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_deployment_status_is_an_empty_object_and_statefulset_min_ready_seconds_is_omitted(sim_api: SimAPI) -> None:
    """crud/crud-deployments/create and crud/crud-statefulsets/create: DeploymentStatus is a struct (always
    written, `{}` when empty); StatefulSetSpec.minReadySeconds is omitempty and not defaulted."""
    created = sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=DEPLOYMENT).json()
    assert created["status"] == {}
    sts = {**DEPLOYMENT, "kind": "StatefulSet", "spec": {**DEPLOYMENT["spec"], "serviceName": "d"}}
    created = sim_api.request("POST", "/apis/apps/v1/namespaces/default/statefulsets", json=sts).json()
    assert "minReadySeconds" not in created["spec"]


def test_a_bare_node_reads_back_with_go_zero_values(sim_api: SimAPI) -> None:
    """controllers/ctl-endpointslices/node: NodeSpec, NodeDaemonEndpoints and NodeSystemInfo are structs
    and their strings and Port have no omitempty, so kube-apiserver answers them as zero values."""
    node = sim_api.request("POST", "/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                                          "metadata": {"name": "n"}}).json()
    assert node["spec"] == {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}  # nodetaint
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "" and len(node["status"]["nodeInfo"]) == 10
