"""One representative object per built-in kind the sim serves, in JSON form, for the protobuf tests.

Each carries the shapes the codec has to get right for that kind: times, quantities, int-or-strings,
inlined structs (volume sources, probe handlers), pointer zeros (`replicas: 0`), maps, bytes, raw JSON.
"""

from __future__ import annotations

from typing import Any

META = {"name": "x", "namespace": "demo", "uid": "6f1c8a6e-0000-4000-8000-000000000001", "resourceVersion": "7",
        "generation": 2, "creationTimestamp": "2026-01-02T03:04:05Z", "labels": {"app": "web"},
        "annotations": {"note": ""},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s",
                             "uid": "6f1c8a6e-0000-4000-8000-000000000002", "controller": True,
                             "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]}
CLUSTER_META = {k: v for k, v in META.items() if k != "namespace"}
CONTAINER = {"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 1"],
             "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
             "env": [{"name": "A", "value": ""},
                     {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
             "resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": "1"}, "requests": {"memory": "1Gi"}},
             "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 3, "failureThreshold": 1},
             "livenessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 0},
             "securityContext": {"privileged": False, "runAsUser": 0}}
POD_SPEC = {"containers": [CONTAINER], "restartPolicy": "Always", "terminationGracePeriodSeconds": 0,
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Mi"}},
                        {"name": "cm", "configMap": {"name": "cm", "defaultMode": 420}}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "k", "operator": "Exists"}]},
                 "topologyKey": "kubernetes.io/hostname"}]}},
            "tolerations": [{"key": "t", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}],
            "nodeSelector": {"gpu": "yes"}, "subdomain": "s", "hostname": "x-0"}
TEMPLATE = {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "web"}}
CONDITION = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:06Z", "reason": "R",
             "message": "m"}


def _obj(api_version: str, kind: str, meta: dict[str, Any] | None = None, **body: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": dict(meta or META), **body}


SAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("", "namespaces"): _obj("v1", "Namespace", CLUSTER_META, spec={"finalizers": ["kubernetes"]},
                             status={"phase": "Active"}),
    ("", "pods"): _obj("v1", "Pod", spec={**POD_SPEC, "nodeName": "n1"},
                       status={"phase": "Running", "podIP": "127.1.1.5", "podIPs": [{"ip": "127.1.1.5"}],
                               "conditions": [{**CONDITION, "lastProbeTime": None}],
                               "startTime": "2026-01-02T03:04:05Z",
                               "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "busybox",
                                                      "imageID": "", "started": True,
                                                      "state": {"running": {"startedAt": "2026-01-02T03:04:06Z"}},
                                                      "lastState": {}}]}),
    ("", "services"): _obj("v1", "Service", spec={
        "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                  {"name": "num", "port": 81, "targetPort": 8081, "protocol": "TCP"}],
        "selector": {"app": "web"}, "clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP",
        "publishNotReadyAddresses": True, "sessionAffinity": "None"}, status={"loadBalancer": {}}),
    ("", "endpoints"): _obj("v1", "Endpoints", subsets=[{"addresses": [{"ip": "127.1.1.5", "hostname": "x-0",
                                                                         "targetRef": {"kind": "Pod", "name": "x-0"}}],
                                                          "ports": [{"port": 8080, "protocol": "TCP"}]}]),
    ("", "configmaps"): _obj("v1", "ConfigMap", data={"k": "v", "empty": ""}, binaryData={"b": "AAE="},
                             immutable=False),
    ("", "secrets"): _obj("v1", "Secret", data={"token": "c2VjcmV0"}, type="Opaque"),
    ("", "serviceaccounts"): _obj("v1", "ServiceAccount", automountServiceAccountToken=False),
    ("", "events"): _obj("v1", "Event", involvedObject={"kind": "Pod", "namespace": "demo", "name": "x-0",
                                                         "uid": "6f1c8a6e-0000-4000-8000-000000000003"},
                         reason="Scheduled", message="assigned", source={"component": "scheduler"},
                         firstTimestamp="2026-01-02T03:04:05Z", lastTimestamp="2026-01-02T03:04:07Z", count=2,
                         type="Normal", eventTime="2026-01-02T03:04:05.123456Z", reportingComponent="sched",
                         reportingInstance=""),
    ("", "nodes"): _obj("v1", "Node", CLUSTER_META, spec={"taints": [{"key": "k", "effect": "NoExecute",
                                                                       "timeAdded": "2026-01-02T03:04:05Z"}]},
                        status={"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                                "allocatable": {"cpu": "7800m"},
                                "conditions": [{**CONDITION, "lastHeartbeatTime": "2026-01-02T03:04:05Z"}],
                                "addresses": [{"type": "InternalIP", "address": "127.1.0.1"}],
                                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                                "nodeInfo": {"kubeletVersion": "v1.37.2", "machineID": "", "systemUUID": "",
                                             "bootID": "", "kernelVersion": "", "osImage": "",
                                             "containerRuntimeVersion": "", "kubeProxyVersion": "",
                                             "operatingSystem": "linux", "architecture": "amd64"}}),
    ("", "persistentvolumeclaims"): _obj("v1", "PersistentVolumeClaim", spec={
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "standard",
        "volumeMode": "Filesystem"}, status={"phase": "Bound", "capacity": {"storage": "1Gi"}}),
    ("apps", "statefulsets"): _obj("apps/v1", "StatefulSet", spec={
        "replicas": 0, "selector": SELECTOR, "serviceName": "s", "template": TEMPLATE,
        "podManagementPolicy": "Parallel",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": "50%"}},
        "revisionHistoryLimit": 10, "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                                             "whenScaled": "Retain"},
        "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                  "spec": {"accessModes": ["ReadWriteOnce"],
                                           "resources": {"requests": {"storage": "1Gi"}}}}]},
        status={"replicas": 0, "readyReplicas": 0, "currentRevision": "s-1", "updateRevision": "s-1",
                "observedGeneration": 2, "collisionCount": 0, "availableReplicas": 0}),
    ("apps", "controllerrevisions"): _obj("apps/v1", "ControllerRevision", data={"spec": {"template": TEMPLATE}},
                                          revision=3),
    ("apps", "deployments"): _obj("apps/v1", "Deployment", spec={
        "replicas": 2, "selector": SELECTOR, "template": TEMPLATE, "strategy": {
            "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
        "progressDeadlineSeconds": 600, "paused": True},
        status={"replicas": 2,
                "conditions": [{**CONDITION, "type": "Available", "lastUpdateTime": "2026-01-02T03:04:05Z"}]}),
    ("apps", "replicasets"): _obj("apps/v1", "ReplicaSet", spec={
        "replicas": 2, "minReadySeconds": 1, "selector": SELECTOR, "template": TEMPLATE},
        status={"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 1,
                "observedGeneration": 1}),
    ("apps", "daemonsets"): _obj("apps/v1", "DaemonSet", spec={"selector": SELECTOR, "template": TEMPLATE,
                                                                "updateStrategy": {"type": "OnDelete"}},
                                 status={"currentNumberScheduled": 1, "numberMisscheduled": 0,
                                         "desiredNumberScheduled": 1, "numberReady": 1}),
    ("discovery.k8s.io", "endpointslices"): _obj("discovery.k8s.io/v1", "EndpointSlice", addressType="IPv4",
                                                 endpoints=[{"addresses": ["127.1.1.5"], "conditions": {
                                                     "ready": True, "serving": True, "terminating": False},
                                                     "nodeName": "n1", "targetRef": {"kind": "Pod", "name": "x-0"}}],
                                                 ports=[{"name": "http", "port": 8080, "protocol": "TCP"}]),
    ("coordination.k8s.io", "leases"): _obj("coordination.k8s.io/v1", "Lease", spec={
        "holderIdentity": "me", "leaseDurationSeconds": 15, "acquireTime": "2026-01-02T03:04:05.123456Z",
        "renewTime": "2026-01-02T03:04:06.000001Z", "leaseTransitions": 0}),
    ("events.k8s.io", "events"): _obj("events.k8s.io/v1", "Event", eventTime="2026-01-02T03:04:05.123456Z",
                                      reportingController="lws", reportingInstance="lws-1", action="Create",
                                      reason="GroupsProgressing", regarding={"kind": "LeaderWorkerSet", "name": "x"},
                                      note="created", type="Normal",
                                      series={"count": 2, "lastObservedTime": "2026-01-02T03:04:07.000000Z"}),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _obj(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", CLUSTER_META, spec={
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                                   "statusReplicasPath": ".status.replicas"}},
                          "additionalPrinterColumns": [{"name": "Age", "type": "date",
                                                        "jsonPath": ".metadata.creationTimestamp"}],
                          "schema": {"openAPIV3Schema": {
                              "type": "object", "required": ["spec"],
                              "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                      "default": {"size": 1},
                                                      "additionalProperties": False,
                                                      "properties": {"size": {"type": "integer", "minimum": 1,
                                                                              "maximum": 5.5},
                                                                     "mode": {"type": "string", "enum": ["A", "B"]},
                                                                     "port": {"x-kubernetes-int-or-string": True,
                                                                              "anyOf": [{"type": "integer"},
                                                                                        {"type": "string"}]}},
                                                      "x-kubernetes-validations": [{"rule": "self.size > 0",
                                                                                    "message": "positive"}]}}}}}],
            "conversion": {"strategy": "None"}},
        status={"conditions": [CONDITION], "acceptedNames": {"plural": "widgets", "kind": "Widget"},
                "storedVersions": ["v1"]}),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): _obj(
        "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", CLUSTER_META, spec={
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                    "operations": ["CREATE", "UPDATE"],
                                                    "resources": ["statefulsets"]}]},
            "validations": [{"expression": "object.spec.replicas >= 0", "message": "no"}],
            "variables": [{"name": "r", "expression": "object.spec.replicas"}]},
        status={"observedGeneration": 2, "typeChecking": {}}),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): _obj(
        "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", CLUSTER_META, spec={
            "policyName": "p", "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"a": "b"}}}}),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): _obj(
        "admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy", CLUSTER_META, spec={
            "failurePolicy": "Fail", "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                    "operations": ["CREATE"], "resources": ["pods"]}]},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]}),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): _obj(
        "admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding", CLUSTER_META, spec={"policyName": "p"}),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _obj(
        "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", CLUSTER_META, webhooks=[{
            "name": "m.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": 10,
            "clientConfig": {"url": "https://127.0.0.1:9443/mutate", "caBundle": "AAEC"},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"],
                       "scope": "*"}], "reinvocationPolicy": "Never", "failurePolicy": "Fail",
            "matchConditions": [{"name": "c", "expression": "true"}]}]),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _obj(
        "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", CLUSTER_META, webhooks=[{
            "name": "v.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"service": {"namespace": "lws-system", "name": "webhook", "path": "/validate",
                                         "port": 443}},
            "namespaceSelector": {}, "objectSelector": {"matchLabels": {"a": "b"}}}]),
    ("batch", "jobs"): _obj("batch/v1", "Job", spec={
        "parallelism": 2, "completions": 3, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "manualSelector": False, "podReplacementPolicy": "TerminatingOrFailed", "ttlSecondsAfterFinished": 30,
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "6f1c8a6e-0000-4000-8000-000000000001"}},
        "template": {**TEMPLATE, "spec": {**POD_SPEC, "restartPolicy": "Never"}}},
        status={"startTime": "2026-01-02T03:04:05Z", "completionTime": "2026-01-02T03:04:09Z", "succeeded": 3,
                "ready": 0, "terminating": 0, "uncountedTerminatedPods": {},
                "conditions": [{**CONDITION, "type": "Complete", "lastProbeTime": "2026-01-02T03:04:09Z"}]}),
    ("batch", "cronjobs"): _obj("batch/v1", "CronJob", spec={
        "schedule": "*/5 * * * *", "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid", "suspend": False,
        "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1, "startingDeadlineSeconds": 60,
        "jobTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "template": {**TEMPLATE, "spec": {**POD_SPEC, "restartPolicy": "OnFailure"}}}}},
        status={"lastScheduleTime": "2026-01-02T03:05:00Z", "active": [{
            "kind": "Job", "namespace": "demo", "name": "x-29453761", "uid": "6f1c8a6e-0000-4000-8000-000000000004",
            "apiVersion": "batch/v1", "resourceVersion": "9"}]}),
    ("policy", "poddisruptionbudgets"): _obj("policy/v1", "PodDisruptionBudget", spec={
        "minAvailable": 2, "selector": {"matchLabels": {"app": "web"}},
        "unhealthyPodEvictionPolicy": "IfHealthyBudget"},
        status={"observedGeneration": 1, "disruptedPods": {"web-0": "2026-01-02T03:04:05Z"}, "disruptionsAllowed": 1,
                "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
                "conditions": [{**CONDITION, "type": "DisruptionAllowed", "reason": "SufficientPods",
                                "observedGeneration": 1}]}),
    ("authorization.k8s.io", "selfsubjectaccessreviews"): _obj(
        "authorization.k8s.io/v1", "SelfSubjectAccessReview", CLUSTER_META,
        spec={"resourceAttributes": {"namespace": "demo", "verb": "create", "resource": "pods"}},
        status={"allowed": True, "reason": "the sim has one user who may do everything"}),
    ("authorization.k8s.io", "selfsubjectrulesreviews"): _obj(
        "authorization.k8s.io/v1", "SelfSubjectRulesReview", CLUSTER_META, spec={"namespace": "demo"},
        status={"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}),
    ("authentication.k8s.io", "selfsubjectreviews"): _obj(
        "authentication.k8s.io/v1", "SelfSubjectReview", CLUSTER_META,
        status={"userInfo": {"username": "lwsconf-sim-admin", "groups": ["system:masters", "system:authenticated"]}}),
    ("authentication.k8s.io", "tokenreviews"): _obj(
        "authentication.k8s.io/v1", "TokenReview", CLUSTER_META, spec={"token": "abc", "audiences": ["api"]},
        status={"authenticated": True, "user": {"username": "lwsconf-sim-admin", "groups": ["system:masters"]},
                "audiences": ["api"]}),
    ("authorization.k8s.io", "subjectaccessreviews"): _obj(
        "authorization.k8s.io/v1", "SubjectAccessReview", CLUSTER_META,
        spec={"user": "kube-apiserver-kubelet-client", "groups": ["system:masters"],
              "resourceAttributes": {"verb": "get", "version": "v1", "resource": "nodes", "subresource": "proxy",
                                     "name": "cpu-0"}},
        status={"allowed": False, "reason": "no"}),
}
