"""Builders for corpus data: objects and the usual steps, so each topic reads as a script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lwsconf import lwsapi
from lwsconf.fidelity.model import Step, Until

NS = "${ns}"
CORE = f"/api/v1/namespaces/{NS}"
APPS = f"/apis/apps/v1/namespaces/{NS}"
LWS = f"/apis/{lwsapi.API_VERSION}/namespaces/{NS}/{lwsapi.PLURAL}"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
LWS_CRD_NAME = lwsapi.CRD_NAME


def meta(name: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if labels:
        out["labels"] = labels
    out.update(extra)
    return out


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None,
              **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, labels, **extra),
            "data": data or {"a": "1"}}


def container(name: str = "main", image: str = "busybox:1.36", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def pod_spec(**extra: Any) -> dict[str, Any]:
    # automountServiceAccountToken false: kube-apiserver's ServiceAccount admission otherwise adds a
    # projected token volume with a random name suffix to every pod; that is a separate interaction.
    return {"containers": [container()], "automountServiceAccountToken": False, **extra}


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, labels), "spec": pod_spec(**spec)}


def template(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": pod_spec()}


def deployment(name: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name),
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template(labels), **spec}}


def replicaset(name: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta(name, labels),
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template(labels), **spec}}


def statefulset(name: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta(name),
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels},
                     "template": template(labels), **spec}}


def daemonset(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(name),
            "spec": {"selector": {"matchLabels": labels}, "template": template(labels)}}


def service(name: str, selector: dict[str, str] | None = None, headless: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": selector or {"app": name}, "ports": [{"name": "http", "port": 80,
                                                                          "targetPort": 8080}]}
    if headless:
        spec["clusterIP"] = "None"
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name), "spec": spec}


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta(name), "type": "Opaque",
            "stringData": {"password": "s3cret"}}


def service_account(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name)}


def lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta(name),
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}


def lws(name: str, replicas: int = 1, size: int = 2, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": lwsapi.API_VERSION, "kind": lwsapi.KIND, "metadata": meta(name),
            "spec": {"replicas": replicas,
                     "leaderWorkerTemplate": {"size": size, "workerTemplate": template({"role": "worker"})}, **spec}}


def lws_crd() -> dict[str, Any]:
    """The harness's own LWS CRD (manifests/crd/), as both servers get it installed."""
    path = Path(__file__).resolve().parents[3] / "manifests" / "crd" / "leaderworkersets.yaml"
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def create(name: str, collection: str, obj: Any, **kw: Any) -> Step:
    return Step(name, "POST", collection, obj, **kw)


def get(name: str, path: str, **kw: Any) -> Step:
    return Step(name, "GET", path, **kw)


def put(name: str, path: str, obj: Any, **kw: Any) -> Step:
    return Step(name, "PUT", path, obj, **kw)


def delete(name: str, path: str, body: Any = None, **kw: Any) -> Step:
    return Step(name, "DELETE", path, body, **kw)


def patch(name: str, path: str, body: Any, content_type: str, **kw: Any) -> Step:
    return Step(name, "PATCH", path, body, content_type=content_type, **kw)


def until_code(name: str, path: str, code: int, timeout: float = 60.0) -> Step:
    return Step(name, "GET", path, until=Until("code", code, timeout))
