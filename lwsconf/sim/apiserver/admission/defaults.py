"""Defaulting of built-in objects on write, as kube-apiserver's v1 defaulters and strategies do it.

`default_builtin` fills in what the real server adds before validation and storage, so that objects
read back from the simulator look like a real cluster's (`restartPolicy: Always`, `imagePullPolicy`,
`updateStrategy`...) and deserialize with the strict v37 client. Where the Go types serialize a
zero value that the client requires (DaemonSet status counters, ControllerRevision `revision`, CRD
`served`/`storage`, core Event `involvedObject`), the zero value is written too. Cluster-IP
allocation is not done here. Every defaulter is idempotent; with `old` given (UPDATE), create-only
steps are skipped and server-allocated Service fields are carried over, as `PrepareForUpdate` and
the Service REST layer do. No I/O here.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from lwsconf.sim.apiserver.admission import batch
from lwsconf.sim.apiserver.admission import defaults_pods as pods
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.apimachinery import quantity
from lwsconf.sim.apiserver.policies import validation as admission_api
from lwsconf.sim.apiserver.policies.webhooks import config as webhook_config

pod_qos_class = pods.pod_qos_class
image_pull_policy = pods.image_pull_policy

STS_DEFAULT_MAX_UNAVAILABLE = True
"""Kubernetes 1.35+ (MaxUnavailableStatefulSet beta, on by default) defaults `rollingUpdate.maxUnavailable`
to 1 (pkg/apis/apps/v1/defaults.go `SetDefaults_StatefulSet`); kube-apiserver 1.37.2 answers it (lwsconf
fidelity controllers/ctl-statefulset/create), and 1 is also what the controller assumed when it was unset,
so nothing changes for a rollout. False keeps it unset, as servers before 1.35 did."""


_SERVICE_ALLOCATED = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort")


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's `spec`, created if missing; a non-object spec yields a throwaway dict."""
    spec = obj.setdefault("spec", {})
    return spec if isinstance(spec, dict) else {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.setdefault("status", {})
    return status if isinstance(status, dict) else {}


def _template_spec(spec: dict[str, Any]) -> None:
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pods.default_pod_spec(template["spec"])


# --- apps/v1 --------------------------------------------------------------------------------------

def _statefulset(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """`SetDefaults_StatefulSet`, `maxUnavailable` included (see `STS_DEFAULT_MAX_UNAVAILABLE`)."""
    spec = _spec(obj)
    spec.setdefault("replicas", 1)
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            strategy.setdefault("rollingUpdate", {})
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
            rolling.setdefault("partition", 0)
            if STS_DEFAULT_MAX_UNAVAILABLE:
                rolling.setdefault("maxUnavailable", 1)
    policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(policy, dict):
        for when in ("whenDeleted", "whenScaled"):
            if not policy.get(when):
                policy[when] = "Retain"
    spec.setdefault("revisionHistoryLimit", 10)
    _template_spec(spec)
    for claim in f.as_list(spec.get("volumeClaimTemplates")):
        if isinstance(claim, dict):
            _pvc(claim, None)
    status = _status(obj)
    status.setdefault("replicas", 0)
    status.setdefault("availableReplicas", 0)
    _drop_zero(status, _STS_STATUS_OMITEMPTY)


_STS_STATUS_OMITEMPTY = ("observedGeneration", "readyReplicas", "currentReplicas", "updatedReplicas",
                         "currentRevision", "updateRevision")
"""StatefulSetStatus fields tagged `omitempty` with a non-pointer type (staging/src/k8s.io/api/apps/v1/
types.go): a 0 or "" written by a client is read back absent (lwsconf fidelity controllers/ctl-statefulset/
partition-and-update: kube-apiserver 1.37.2 answers no `readyReplicas` while none is ready)."""


def _drop_zero(obj: dict[str, Any], fields: tuple[str, ...]) -> None:
    """What Go's `omitempty` does to a decoded zero value: it is not serialized back."""
    for field in fields:
        if field in obj and obj[field] in (0, "") and not isinstance(obj[field], bool):
            del obj[field]


def _deployment(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    obj.setdefault("status", {})  # DeploymentStatus is a struct: kube-apiserver always writes `status: {}`
    spec = _spec(obj)
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template_spec(spec)


def _replicaset(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """apps/v1 `SetDefaults_ReplicaSet`: one replica; ReplicaSetStatus.replicas has no omitempty, so a
    new ReplicaSet reads back `status: {replicas: 0}`; the other counters are omitempty (terminatingReplicas
    is a pointer: a written 0 stays)."""
    spec = _spec(obj)
    spec.setdefault("replicas", 1)
    _template_spec(spec)
    status = _status(obj)
    status.setdefault("replicas", 0)
    _drop_zero(status, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"))


def _daemonset(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    spec = _spec(obj)
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template_spec(spec)
    status = _status(obj)
    for counter in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
        status.setdefault(counter, 0)


def _controllerrevision(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    obj.setdefault("revision", 0)


# --- core/v1 --------------------------------------------------------------------------------------

def _pod(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    pods.default_pod(obj, creating=old is None)


def _service(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """`SetDefaults_Service`, single-stack IPv4 families, and the allocated fields kept on UPDATE."""
    spec = _spec(obj)
    if old is not None:
        old_spec = f.as_dict(old.get("spec"))
        for field in _SERVICE_ALLOCATED:
            if spec.get(field) in (None, "", []) and field in old_spec:
                spec[field] = old_spec[field]
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.setdefault("sessionAffinityConfig", {})
        if isinstance(config, dict) and isinstance(config.setdefault("clientIP", {}), dict):
            config["clientIP"].setdefault("timeoutSeconds", 10800)
    _service_ports(spec)
    _service_policies(spec)
    status = _status(obj)
    status.setdefault("loadBalancer", {})


def _service_ports(spec: dict[str, Any]) -> None:
    for port in f.as_list(spec.get("ports")):
        if isinstance(port, dict):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")


def _service_policies(spec: dict[str, Any]) -> None:
    kind = spec["type"]
    if kind in ("NodePort", "LoadBalancer") and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if kind in ("ClusterIP", "NodePort", "LoadBalancer") and not spec.get("internalTrafficPolicy"):
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    if kind != "ExternalName":
        if not spec.get("ipFamilies"):
            spec["ipFamilies"] = ["IPv4"]
        if not spec.get("ipFamilyPolicy"):
            spec["ipFamilyPolicy"] = "SingleStack"


def _namespace(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """`SetDefaults_Namespace(Status)` and, on create only, the `kubernetes` finalizer."""
    meta = obj.setdefault("metadata", {})
    name = f.as_dict(meta).get("name")
    if isinstance(meta, dict) and isinstance(name, str) and name:
        labels = meta.setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = name
    if old is None:
        finalizers = _spec(obj).setdefault("finalizers", [])
        if isinstance(finalizers, list) and "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
    status = _status(obj)
    if not status.get("phase"):
        status["phase"] = "Active"


_NODE_INFO_FIELDS = ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                     "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID")


def _node(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """`SetDefaults_NodeStatus`: allocatable defaults to capacity; quantities become strings. The Go
    struct fields without omitempty effect are written as their zero values, as kube-apiserver serializes
    a Node created bare (staging/src/k8s.io/api/core/v1/types.go: `spec` a NodeSpec struct,
    `status.daemonEndpoints.kubeletEndpoint.Port`, the NodeSystemInfo strings; lwsconf fidelity
    controllers/ctl-endpointslices/node)."""
    _spec(obj)
    status = _status(obj)
    endpoints = status.setdefault("daemonEndpoints", {})
    if isinstance(endpoints, dict):
        kubelet = endpoints.setdefault("kubeletEndpoint", {})
        if isinstance(kubelet, dict):
            kubelet.setdefault("Port", 0)
    info = status.setdefault("nodeInfo", {})
    if isinstance(info, dict):
        for field in _NODE_INFO_FIELDS:
            info.setdefault(field, "")
    for field in ("capacity", "allocatable"):
        for name, value in f.as_dict(status.get(field)).items():
            status[field][name] = quantity.to_string(value)
    if status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])


def _pvc(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    spec = _spec(obj)
    if not spec.get("volumeMode"):
        spec["volumeMode"] = "Filesystem"
    for part in f.as_dict(spec.get("resources")).values():
        if isinstance(part, dict):
            for name, value in part.items():
                part[name] = quantity.to_string(value)
    status = _status(obj)
    if not status.get("phase"):
        status["phase"] = "Pending"


def _secret(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """`type` Opaque, and `stringData` folded into base64 `data` (write-only, as in the real API)."""
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.setdefault("data", {})
        if isinstance(data, dict):
            for k, v in string_data.items():
                data[k] = base64.b64encode(f.as_str(v).encode()).decode()


def _core_event(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The Go type always serializes `involvedObject` (the v37 client requires it), the `source` struct,
    its three metav1 times (null when unset) and the two reporting strings without omitempty, as
    kube-apiserver 1.37.2 answers a bare core Event (lwsconf fidelity webhooks/webhooks-exact/
    core-event-not-hooked)."""
    if obj.get("involvedObject") is None:
        obj["involvedObject"] = {}
    if obj.get("source") is None:
        obj["source"] = {}
    for time_field in ("firstTimestamp", "lastTimestamp", "eventTime"):
        obj.setdefault(time_field, None)
    for text_field in ("reportingComponent", "reportingInstance"):
        if obj.get(text_field) is None:
            obj[text_field] = ""


def _events_v1_event(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The same Go zero values for an events.k8s.io/v1 Event (`deprecatedSource` a struct, the two deprecated
    times null), so that it reads as core/v1 with `source: {}` and null first/last timestamps, as kube-scheduler's
    events do on kube-apiserver 1.37.2 (held-out fidelity corpus, issue 33)."""
    if obj.get("deprecatedSource") is None:
        obj["deprecatedSource"] = {}
    for time_field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
        obj.setdefault(time_field, None)


# --- apiextensions.k8s.io/v1 ----------------------------------------------------------------------

def _crd(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """`SetDefaults_CustomResourceDefinitionSpec`; `served`/`storage` are written as the Go zero value."""
    spec = _spec(obj)
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        if not names.get("singular"):
            names["singular"] = names["kind"].lower()
        if not names.get("listKind"):
            names["listKind"] = names["kind"] + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}
    for version in f.as_list(spec.get("versions")):
        if isinstance(version, dict):
            version.setdefault("served", False)
            version.setdefault("storage", False)


def _pdb(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """policy/v1 PodDisruptionBudgetStatus's four counts have no omitempty: a new budget (its status reset by
    the strategy's PrepareForCreate) shows them as 0 (lwsconf fidelity subresources/eviction-pdb/pdb)."""
    status = obj.get("status") if isinstance(obj.get("status"), dict) else None
    if status is None:
        status = obj["status"] = {}
    for count in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        status.setdefault(count, 0)


Defaulter = Callable[[dict[str, Any], dict[str, Any] | None], None]

DEFAULTERS: dict[tuple[str, str], Defaulter] = {
    ("", "pods"): _pod,
    ("", "services"): _service,
    ("", "namespaces"): _namespace,
    ("", "nodes"): _node,
    ("", "persistentvolumeclaims"): _pvc,
    ("", "secrets"): _secret,
    ("", "events"): _core_event,
    ("events.k8s.io", "events"): _events_v1_event,
    ("apps", "statefulsets"): _statefulset,
    ("apps", "deployments"): _deployment,
    ("apps", "replicasets"): _replicaset,
    ("apps", "daemonsets"): _daemonset,
    ("apps", "controllerrevisions"): _controllerrevision,
    batch.JOBS: batch.default_job,
    batch.CRONJOBS: batch.default_cronjob,
    ("policy", "poddisruptionbudgets"): _pdb,
    ("apiextensions.k8s.io", "customresourcedefinitions"): _crd,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): admission_api.default_policy,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): admission_api.default_binding,
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): admission_api.default_policy,
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): admission_api.default_binding,
    webhook_config.MUTATING: webhook_config.default_mutating,
    webhook_config.VALIDATING: webhook_config.default_validating,
}
"""One defaulter per kind; kinds not listed (ConfigMap, ServiceAccount, Lease...) have no defaults."""


def default_builtin(key: tuple[str, str], obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    """Apply the real server's defaults to a built-in object, in place.

    Args:
        key: `(group, plural)`, as `ResourceInfo.key`.
        obj: the decoded object about to be validated and stored.
        old: the stored object on UPDATE; None (the default) means CREATE, which adds create-only
            defaults (a Namespace's `kubernetes` finalizer) and keeps no allocated Service fields.
    """
    defaulter = DEFAULTERS.get(key)
    if defaulter is not None:
        defaulter(obj, old)
