"""Cluster DNS for real nodes: CoreDNS (our build of v1.15.0, nodes/coredns) run in the cluster as clusters run it.

Pods resolve Service names and the `<hostname>.<subdomain>.<namespace>` names of headless Services' pods (what
LWS_LEADER_ADDRESS holds) through the kubelet's `clusterDNS`, which is the `kube-dns` Service's fixed ClusterIP:
the 10th address of the cluster's Service range (`service_ip`, as kubeadm picks it: k8s.io/kubernetes v1.37.2
cmd/kubeadm/app/constants/constants.go:676 GetDNSIP). Behind it, a CoreDNS Deployment in kube-system answers from
the API (its kubernetes plugin lists and watches Services, Pods, EndpointSlices and Namespaces with its own
ServiceAccount: coredns v1.15.0 plugin/kubernetes/controller.go:148-215).

Nothing leaves the machine: the Corefile has no `forward` (and our binary has no forward plugin built in), so
only `cluster.local` and the reverse zones are answered; any other name reaches the end of the plugin chain and
gets SERVFAIL (coredns v1.15.0 plugin/kubernetes/handler.go:19 -> plugin/plugin.go:88 "no next plugin found"), and
a pod has no route out anyway (`network`).

    objects(plan)                     -> the manifests, in creation order (pure)
    install(api_client, plan)         -> creates them through the API
    wait_available(api_client)        -> every replica available (DNS_READY; LWSCONF_REALNODES_DNS_READY overrides)
"""

from __future__ import annotations

import ipaddress
import os
import time
from typing import Any

from lwsconf.realnodes import catalog
from lwsconf.realnodes.network import NetworkPlan
from lwsconf.waits.core import NotYet, WaitTimeout, wait_until

IMAGE = catalog.COREDNS
"""The reference our image of nodes/coredns is imported under: upstream's name and tag, our binary."""
NAMESPACE = "kube-system"
NAME = "coredns"
SERVICE = "kube-dns"
"""The Service's name real clusters use (kubeadm, kube-up), which tools look for."""
DOMAIN = "cluster.local"
"""The kubelet's clusterDomain (`node.kubelet_config`)."""
LABELS = {"k8s-app": "kube-dns"}
REPLICAS = 2
READY_PORT = 8181
HEALTH_PORT = 8080
DNS_READY = 120.0
"""Default seconds for the CoreDNS Deployment to be Available once the nodes are Ready."""
DNS_READY_ENV = "LWSCONF_REALNODES_DNS_READY"


class DNSError(Exception):
    """The cluster's DNS cannot be set up; the message says what was seen."""


def service_ip(plan: NetworkPlan) -> str:
    """The kube-dns Service's ClusterIP: the 10th address of the Service range. Pure."""
    return str(ipaddress.ip_network(plan.service_cidr).network_address + 10)


def corefile() -> str:
    """CoreDNS's configuration: the kubernetes plugin for the cluster domain and reverse zones, no forwarding.

    `pods insecure` answers `<a-b-c-d>.<namespace>.pod.cluster.local` as kubeadm's Corefile does; health's lameduck
    keeps a stopping replica answering while its endpoint is removed."""
    return (".:53 {\n"
            "    errors\n"
            f"    health {{\n        lameduck 5s\n    }}\n"
            "    ready\n"
            f"    kubernetes {DOMAIN} in-addr.arpa ip6.arpa {{\n"
            "        pods insecure\n"
            "        ttl 30\n"
            "    }\n"
            "    cache 30\n"
            "}\n")


def objects(plan: NetworkPlan) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole, ClusterRoleBinding, ConfigMap, Deployment and Service, in creation order. Pure."""
    meta = {"name": NAME, "namespace": NAMESPACE, "labels": dict(LABELS)}
    role = f"system:{NAME}"
    pod_spec: dict[str, Any] = {
        "serviceAccountName": NAME, "priorityClassName": "system-cluster-critical",
        # CoreDNS must not resolve through itself: the node's resolver, not the cluster's
        "dnsPolicy": "Default",
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": dict(LABELS)},
                                                "topologyKey": "kubernetes.io/hostname"}}]}},
        "containers": [{
            "name": NAME, "image": IMAGE, "imagePullPolicy": "Never", "args": ["-conf", "/etc/coredns/Corefile"],
            "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                      {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"}],
            "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns", "readOnly": True}],
            "livenessProbe": {"httpGet": {"path": "/health", "port": HEALTH_PORT}, "initialDelaySeconds": 10,
                              "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 5},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": READY_PORT}, "periodSeconds": 2,
                               "timeoutSeconds": 2},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}}}],
        "volumes": [{"name": "config", "configMap": {"name": NAME, "items": [{"key": "Corefile",
                                                                             "path": "Corefile"}]}}]}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": role, "labels": dict(LABELS)},
         "rules": [{"apiGroups": [""], "resources": ["services", "pods", "namespaces"], "verbs": ["list", "watch"]},
                   {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                    "verbs": ["list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": role, "labels": dict(LABELS)},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"Corefile": corefile()}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
         "spec": {"replicas": REPLICAS, "selector": {"matchLabels": dict(LABELS)},
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                  "template": {"metadata": {"labels": dict(LABELS)}, "spec": pod_spec}}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": SERVICE, "namespace": NAMESPACE,
                      "labels": {**LABELS, "kubernetes.io/name": "CoreDNS"}},
         "spec": {"selector": dict(LABELS), "clusterIP": service_ip(plan),
                  "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                            {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53}]}},
    ]


def _kube_system_must_exist(core: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        core.read_namespace(NAMESPACE)
    except ApiException as exc:
        if exc.status != 404:
            raise
        raise NotYet(f"namespace {NAMESPACE} not created yet by the API server") from None


def install(api_client: Any, plan: NetworkPlan) -> None:
    """Create every object of `objects(plan)` through the API, once the API server has made kube-system (its
    system-namespaces controller does, just after it starts serving)."""
    from kubernetes import client

    core: Any = client.CoreV1Api(api_client)
    apps: Any = client.AppsV1Api(api_client)
    rbac: Any = client.RbacAuthorizationV1Api(api_client)
    timeout = dns_ready_timeout()
    try:
        wait_until(lambda: _kube_system_must_exist(core), what=f"namespace {NAMESPACE}", timeout=timeout, poll=0.2)
    except WaitTimeout as exc:
        raise DNSError(f"no {NAMESPACE} namespace within {timeout:g}s ({DNS_READY_ENV} raises it): {exc}") from None
    create: dict[str, Any] = {
        "ServiceAccount": lambda o: core.create_namespaced_service_account(NAMESPACE, o),
        "ClusterRole": rbac.create_cluster_role, "ClusterRoleBinding": rbac.create_cluster_role_binding,
        "ConfigMap": lambda o: core.create_namespaced_config_map(NAMESPACE, o),
        "Deployment": lambda o: apps.create_namespaced_deployment(NAMESPACE, o),
        "Service": lambda o: core.create_namespaced_service(NAMESPACE, o)}
    for obj in objects(plan):
        create[obj["kind"]](obj)


def dns_ready_timeout() -> float:
    raw = os.environ.get(DNS_READY_ENV)
    try:
        return float(raw) if raw else DNS_READY
    except ValueError as exc:
        raise DNSError(f"{DNS_READY_ENV}={raw!r} is not a number of seconds") from exc


def _state(api_client: Any) -> str:
    """The Deployment's status and each of its pods (phase, node, container state), for a timeout's message."""
    from kubernetes import client

    apps: Any = client.AppsV1Api(api_client)
    core: Any = client.CoreV1Api(api_client)
    status = apps.read_namespaced_deployment(NAME, NAMESPACE).status
    lines = [f"deployment {NAMESPACE}/{NAME}: replicas={status.replicas} ready={status.ready_replicas} "
             f"available={status.available_replicas} conditions="
             + "; ".join(f"{c.type}={c.status} ({c.reason}: {c.message})" for c in status.conditions or [])]
    pods = core.list_namespaced_pod(
        NAMESPACE, label_selector=",".join(f"{k}={v}" for k, v in LABELS.items())).items
    for pod in pods:
        states = []
        for c in pod.status.container_statuses or []:
            waiting, terminated = c.state.waiting, c.state.terminated
            detail = (f"waiting {waiting.reason}: {waiting.message}" if waiting else
                      f"terminated {terminated.reason} exit {terminated.exit_code}" if terminated else "running")
            states.append(f"{c.name} ready={c.ready} restarts={c.restart_count} {detail}")
        lines.append(f"pod {pod.metadata.name} on {pod.spec.node_name}: {pod.status.phase}; " + "; ".join(states))
    return "\n".join(lines) if pods else "\n".join([*lines, "no pod of the Deployment exists"])


def _coredns_must_be_available(api_client: Any) -> None:
    from kubernetes import client

    apps: Any = client.AppsV1Api(api_client)
    status = apps.read_namespaced_deployment(NAME, NAMESPACE).status
    available = any(c.type == "Available" and c.status == "True" for c in status.conditions or [])
    if not available or (status.available_replicas or 0) < REPLICAS:
        raise NotYet(f"{NAMESPACE}/{NAME} not Available: {status.available_replicas or 0} of {REPLICAS} available")


def wait_available(api_client: Any) -> float:
    """Wait for the Deployment to be Available with every replica ready (each node's pods then resolve through
    either); the seconds waited. On timeout a DNSError with the Deployment's and its pods' observed state."""
    timeout = dns_ready_timeout()
    began = time.monotonic()
    try:
        wait_until(lambda: _coredns_must_be_available(api_client), what=f"{NAMESPACE}/{NAME} to be Available",
                   timeout=timeout, poll=0.5, describe=lambda: _state(api_client))
    except WaitTimeout as exc:
        raise DNSError(f"cluster DNS not Available within {timeout:g}s ({DNS_READY_ENV} raises it): {exc}") from None
    return time.monotonic() - began
