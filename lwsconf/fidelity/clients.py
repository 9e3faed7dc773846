"""The everyday client traffic `lwsconf fidelity record` records besides the conformance suite's.

Two scripts, each run against the recording proxy's kubeconfig, each in namespaces of its own (one held-out
scenario per namespace): kubectl's everyday commands (`KUBECTL`: create, apply client- and server-side, get
-o yaml, describe, label, annotate, patch in its three types, scale, rollout status/history/undo, set image,
wait, logs, create token, delete) and the official Python client (`python_client`: create, list with paging and
selectors, watch from a list's resourceVersion, merge/JSON/strategic/apply patches, replace with a fresh and a
stale resourceVersion, delete with propagation, delete collection, scale subresource, TokenRequest, Secrets,
Leases). They are scripts of what users do, not tests: a command that fails is recorded as it answered, and
the run goes on. Secrets and tokens pass through the recorder's scrubbing like any other answer.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwsconf.waits.core import NotYet, WaitTimeout, wait_until

KUBECTL_TIMEOUT = 180.0
"""Seconds one kubectl command may take (a rollout status waits for pods on the simulated nodes)."""
PYTHON_WAIT = 90.0
"""Seconds the Python client script waits for a Deployment to be available."""
MERGE, STRATEGIC, APPLY = ("application/merge-patch+json", "application/strategic-merge-patch+json",
                           "application/apply-patch+yaml")
"""A patch's type, named: the generated client's default for any body is the first of its list, JSON patch."""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: main, image: "busybox:1.36", command: [sleep, "3600"], ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
"""

STATEFULSET = """\
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  podManagementPolicy: Parallel
  ordinals: {start: 1}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: main, image: "busybox:1.36", command: [sleep, "3600"]}
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: file-made, labels: {source: file}}
data: {key: one}
"""


@dataclass(frozen=True)
class Command:
    args: tuple[str, ...]
    stdin: str | None = None


def _c(*args: str, stdin: str | None = None) -> Command:
    return Command(args, stdin)


def kubectl_script(prefix: str) -> list[Command]:
    """kubectl's everyday commands in three namespaces `<prefix>-a`, `-b`, `-c` (each its own scenario)."""
    a, b, c = f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"
    return [
        _c("create", "namespace", a),
        _c("-n", a, "create", "configmap", "cfg", "--from-literal=a=1"),
        _c("-n", a, "get", "configmap", "cfg", "-o", "yaml"),
        _c("-n", a, "get", "configmaps"),
        _c("-n", a, "label", "configmap", "cfg", "tier=web"),
        _c("-n", a, "annotate", "configmap", "cfg", "note=hello"),
        _c("-n", a, "patch", "configmap", "cfg", "--type=merge", "-p", '{"data":{"b":"2"}}'),
        _c("-n", a, "patch", "configmap", "cfg", "--type=json", "-p", '[{"op":"add","path":"/data/c","value":"3"}]'),
        _c("-n", a, "patch", "configmap", "cfg", "-p", '{"data":{"d":"4"}}'),
        _c("-n", a, "get", "configmap", "cfg", "-o", "jsonpath={.data}"),
        _c("-n", a, "describe", "configmap", "cfg"),
        _c("-n", a, "get", "configmaps", "-l", "tier=web", "-o", "name"),
        _c("-n", a, "get", "configmap", "missing"),
        _c("-n", a, "create", "-f", "-", stdin=CONFIGMAP),
        _c("-n", a, "replace", "-f", "-", stdin=CONFIGMAP.replace("key: one", "key: two")),
        _c("-n", a, "apply", "-f", "-", stdin=CONFIGMAP.replace("key: one", "key: three")),
        _c("-n", a, "create", "secret", "generic", "creds", "--from-literal=password=hunter2"),
        _c("-n", a, "get", "secret", "creds", "-o", "yaml"),
        _c("-n", a, "create", "serviceaccount", "robot"),
        _c("-n", a, "create", "token", "robot"),
        _c("-n", a, "delete", "configmap", "cfg"),
        _c("-n", a, "delete", "configmap", "file-made", "--wait=true"),
        _c("create", "namespace", b),
        _c("-n", b, "apply", "-f", "-", stdin=DEPLOYMENT),
        _c("-n", b, "rollout", "status", "deployment/web", "--timeout=120s"),
        _c("-n", b, "get", "deployment", "web", "-o", "yaml"),
        _c("-n", b, "get", "all"),
        _c("-n", b, "describe", "deployment", "web"),
        _c("-n", b, "scale", "deployment", "web", "--replicas=3"),
        _c("-n", b, "rollout", "status", "deployment/web", "--timeout=120s"),
        _c("-n", b, "set", "image", "deployment/web", "main=busybox:1.37"),
        _c("-n", b, "rollout", "status", "deployment/web", "--timeout=120s"),
        _c("-n", b, "rollout", "history", "deployment/web"),
        _c("-n", b, "rollout", "undo", "deployment/web"),
        _c("-n", b, "rollout", "status", "deployment/web", "--timeout=120s"),
        _c("-n", b, "get", "pods", "-l", "app=web", "-o", "wide"),
        _c("-n", b, "logs", "deployment/web", "--tail=5"),
        _c("-n", b, "get", "events"),
        _c("-n", b, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=DEPLOYMENT),
        _c("-n", b, "label", "deployment", "web", "tier=frontend", "--overwrite"),
        _c("-n", b, "annotate", "service", "web", "owner=team-a"),
        _c("-n", b, "get", "service", "web", "-o", "json"),
        _c("-n", b, "delete", "-f", "-", "--wait=true", stdin=DEPLOYMENT),
        _c("create", "namespace", c),
        _c("-n", c, "run", "p", "--image=busybox:1.36", "--restart=Never", "--", "sleep", "3600"),
        _c("-n", c, "wait", "--for=condition=Ready", "pod/p", "--timeout=90s"),
        _c("-n", c, "get", "pod", "p", "-o", "yaml"),
        _c("-n", c, "apply", "-f", "-", stdin=STATEFULSET),
        _c("-n", c, "rollout", "status", "statefulset/db", "--timeout=120s"),
        _c("-n", c, "get", "pods", "-l", "app=db", "-o", "yaml"),
        _c("-n", c, "get", "controllerrevisions"),
        _c("-n", c, "scale", "statefulset", "db", "--replicas=1"),
        _c("-n", c, "get", "endpointslices", "-l", "kubernetes.io/service-name=db"),
        _c("-n", c, "delete", "pod", "p", "--wait=true"),
        _c("delete", "namespace", a, b, c, "--wait=true"),
    ]


def run_kubectl(kubectl: Path, kubeconfig: Path, commands: list[Command]) -> list[tuple[Command, int]]:
    """Each command in order, with `--kubeconfig` (nothing from the environment's): its exit status."""
    results = []
    for command in commands:
        try:
            done = subprocess.run([str(kubectl), f"--kubeconfig={kubeconfig}", *command.args],  # noqa: S603
                                  input=command.stdin, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT,
                                  check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(kubeconfig.parent)})
            results.append((command, done.returncode))
        except subprocess.TimeoutExpired:
            results.append((command, -1))
    return results


def _quietly(call: Callable[[], Any]) -> Any:
    """A client call whose failure is part of the script (a 404, a 409): recorded by the proxy, not raised."""
    from kubernetes.client.exceptions import ApiException

    try:
        return call()
    except ApiException as exc:
        return exc


def python_client(kubeconfig: Path, prefix: str) -> None:
    """The official Python client's everyday calls in namespaces `<prefix>-a` (core) and `<prefix>-b` (apps)."""
    from kubernetes import client, config, watch

    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    try:
        _core(client.CoreV1Api(api_client), client.CoordinationV1Api(api_client), watch, f"{prefix}-a")
        _apps(client.CoreV1Api(api_client), client.AppsV1Api(api_client), f"{prefix}-b")
    finally:
        api_client.close()


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": name}}


def _core(core: Any, coordination: Any, watch: Any, ns: str) -> None:
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for i in range(5):
        core.create_namespaced_config_map(ns, _cm(f"cm-{i}", group="even" if i % 2 == 0 else "odd"))
    first = core.list_namespaced_config_map(ns, limit=2, label_selector="group")
    core.list_namespaced_config_map(ns, limit=2, label_selector="group", _continue=first.metadata._continue)
    core.list_namespaced_config_map(ns, label_selector="group=even")
    core.list_namespaced_config_map(ns, field_selector="metadata.name=cm-1")
    listed = core.list_namespaced_config_map(ns)
    core.patch_namespaced_config_map("cm-0", ns, {"data": {"patched": "merge"}}, _content_type=MERGE)
    core.patch_namespaced_config_map("cm-1", ns, [{"op": "add", "path": "/data/json", "value": "patch"}])
    _quietly(lambda: core.patch_namespaced_config_map(
        "cm-2", ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-2"}, "data": {"k": "applied"}},
        field_manager="lwsconf-script", _content_type=APPLY))
    since = listed.metadata.resource_version
    for _ in watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=since, timeout_seconds=2):
        pass  # read to its end: the server closes it after timeoutSeconds
    current = core.read_namespaced_config_map("cm-3", ns)
    current.data = {"k": "replaced"}
    core.replace_namespaced_config_map("cm-3", ns, current)
    _quietly(lambda: core.replace_namespaced_config_map("cm-3", ns, current))  # the old resourceVersion: 409
    _quietly(lambda: core.read_namespaced_config_map("absent", ns))
    _quietly(lambda: core.create_namespaced_config_map(ns, _cm("cm-0")))  # exists: 409
    core.create_namespaced_config_map(ns, {"metadata": {"generateName": "gen-"}, "data": {"a": "b"}})
    core.delete_collection_namespaced_config_map(ns, label_selector="group=odd")
    core.list_namespaced_config_map(ns)
    core.create_namespaced_secret(ns, {"metadata": {"name": "creds"}, "stringData": {"password": "hunter2"}})
    core.read_namespaced_secret("creds", ns)
    core.create_namespaced_service_account(ns, {"metadata": {"name": "robot"}})
    _quietly(lambda: core.create_namespaced_service_account_token("robot", ns, {"spec": {"expirationSeconds": 600}}))
    lease = {"metadata": {"name": "lock"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                                                     "renewTime": "2026-01-01T00:00:00.000000Z"}}
    # the generated client re-serialises renewTime as "...T00:00:00+00:00": kube-apiserver refuses it (400), as recorded
    _quietly(lambda: coordination.create_namespaced_lease(ns, lease))
    _quietly(lambda: coordination.patch_namespaced_lease("lock", ns, {"spec": {"holderIdentity": "you"}},
                                                         _content_type=STRATEGIC))
    core.delete_namespaced_config_map("cm-0", ns, propagation_policy="Background")
    core.delete_namespace(ns)


def _apps(core: Any, apps: Any, ns: str) -> None:
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    labels = {"app": "api"}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                           "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                               {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}}
    apps.create_namespaced_deployment(ns, deployment)

    def available() -> bool:
        status = apps.read_namespaced_deployment_status("api", ns).status
        if (status.available_replicas or 0) < 1:
            raise NotYet(f"api: {status.available_replicas} available")
        return True

    with contextlib.suppress(WaitTimeout):  # recorded as it stood: the script goes on
        wait_until(available, what=f"Deployment {ns}/api available", timeout=PYTHON_WAIT, poll=0.5)
    apps.patch_namespaced_deployment_scale("api", ns, {"spec": {"replicas": 2}}, _content_type=MERGE)
    apps.read_namespaced_deployment_scale("api", ns)
    apps.list_namespaced_replica_set(ns, label_selector="app=api")
    core.list_namespaced_pod(ns, label_selector="app=api")
    core.create_namespaced_service(ns, {"metadata": {"name": "api"}, "spec": {"selector": labels,
                                                                               "ports": [{"port": 80}]}})
    core.read_namespaced_service("api", ns)
    core.patch_namespaced_service("api", ns, {"metadata": {"labels": {"exposed": "yes"}}}, _content_type=MERGE)
    apps.patch_namespaced_deployment("api", ns, {"spec": {"template": {"metadata": {"annotations": {"rev": "2"}}}}},
                                 _content_type=STRATEGIC)
    apps.read_namespaced_deployment("api", ns)
    apps.delete_namespaced_deployment("api", ns, propagation_policy="Foreground")
    _quietly(lambda: apps.read_namespaced_deployment("api", ns))
    core.delete_namespace(ns)
