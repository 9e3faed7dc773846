"""kubectl logs, exec, port-forward and attach on the local cluster: through the real kube-apiserver to our node agents.

kube-apiserver 1.36+ proxies kubectl's WebSocket unchanged to a kubelet whose Node declares
`ExtendWebSocketsToKubelet` (our agents do), over HTTPS to the Node's InternalIP
(`--kubelet-preferred-address-types=InternalIP`, controlplane/flags.py) and kubelet port, with its
kubelet client certificate; our agents serve the channel protocol and the SPDY port-forward tunnel, and
refuse an old kubectl's SPDY request with a message the API server passes on. Called directly, the kubelet port
answers only authorised callers (401 without credentials, 403 for an identity RBAC does not allow on nodes/proxy).
The pod is scheduled by the real kube-scheduler. Skips when the release (with its kubectl) is not built;
LWSCONF_REQUIRE_GO=1 turns the skip into a failure.
"""

from __future__ import annotations

import asyncio
import http.client
import ssl
from pathlib import Path
from urllib.parse import urlparse

import pytest
from kubernetes import client, config

from lwsconf.controlplane import build, versions
from lwsconf.localcluster.cluster import LocalCluster
from lwsconf.waits.core import NotYet, wait_until
from tests.sim.nodes.streams.test_kubectl_streams import TICKER, _port_forward, attach_sees_ticks, kubectl
from tests.sim.nodes.streams.test_streams import HTTP_SERVER, python_pod

from .test_local import _binaries_or_skip

POD_READY = 120.0
"""Seconds the pod may take to be scheduled, started and Ready (real scheduler, a loaded machine)."""
ACCOUNT_READY = 60.0
"""Seconds kube-controller-manager may take to create the namespace's default ServiceAccount."""


def _run(binary: Path, kubeconfig: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    return asyncio.run(kubectl(binary, kubeconfig, *args, stdin=stdin))


def _spdy_exec(url: str, context: ssl.SSLContext) -> tuple[int, str]:
    """An old kubectl's SPDY exec request: kube-apiserver proxies it to our kubelet, which refuses it and
    the refusal reaches the client (the apiserver echoes a kubelet's non-101 answer)."""
    parsed = urlparse(url)
    conn = http.client.HTTPSConnection(parsed.hostname or "127.0.0.1", parsed.port, context=context, timeout=60)
    try:
        conn.request("POST", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true",
                     headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                              "X-Stream-Protocol-Version": "v4.channel.k8s.io"})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.kubectl
@pytest.mark.parametrize("release", versions.under_test(), ids=lambda r: r.kubernetes)
def test_logs_exec_and_port_forward_through_kube_apiserver(release: versions.Release) -> None:
    _binaries_or_skip(release)
    binaries = build.installed(release)
    assert binaries is not None
    kubectl_bin = binaries["kubectl"]
    with LocalCluster(release) as cluster:
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))

        def account() -> bool:
            if not [a for a in core.list_namespaced_service_account("default").items if a.metadata.name == "default"]:
                raise NotYet("no ServiceAccount default/default yet")
            return True

        wait_until(account, what="ServiceAccount default/default", timeout=ACCOUNT_READY, poll=0.5)
        core.create_namespaced_pod("default", python_pod("p", HTTP_SERVER))

        def ready(name: str = "p") -> str:
            pod = core.read_namespaced_pod(name, "default")
            conditions = {c.type: c.status for c in pod.status.conditions or ()}
            if conditions.get("Ready") != "True":
                raise NotYet(f"phase {pod.status.phase}, node {pod.spec.node_name}, conditions {conditions}")
            return str(pod.spec.node_name)

        def pod_state() -> str:
            """What a timeout shows: the container's state and the pod's events (a fresh-clone run at load once
            left it Pending, ContainersReady False, for 120 s, and said no more)."""
            pod = core.read_namespaced_pod("p", "default")
            events = core.list_namespaced_event("default", field_selector="involvedObject.name=p").items
            return (f"container statuses: {[s.to_dict() for s in pod.status.container_statuses or ()]}\n"
                    "events:\n" + "\n".join(f"  {e.type} {e.reason}: {e.message}" for e in events))

        node = wait_until(ready, what="pod default/p Ready", timeout=POD_READY, poll=0.5, describe=pod_state)
        assert node in cluster.node_names
        config_path = cluster.kubeconfig
        code, out, err = _run(kubectl_bin, config_path, "logs", "p")
        assert (code, out) == (0, "serving\n"), err
        code, out, err = _run(kubectl_bin, config_path, "exec", "p", "--", "python", "-c", "print(1)")
        assert (code, out) == (0, "1\n"), err
        code, out, err = _run(kubectl_bin, config_path, "exec", "p", "--", "python", "-c", "import sys; sys.exit(7)")
        assert code == 7 and "command terminated with exit code 7" in err, (code, out, err)
        code, out, err = _run(kubectl_bin, config_path, "exec", "-i", "p", "--", "python", "-c",
                              "import sys; print(sys.stdin.read()[::-1], end='')", stdin=b"stressed")
        assert (code, out) == (0, "desserts"), err
        asyncio.run(_port_forward(kubectl_bin, config_path))
        assert cluster.controlplane is not None
        status, body = _spdy_exec(cluster.url, cluster.controlplane.ssl_context())
        assert status == 400 and "WebSocket only" in body and "kubectl 1.31" in body, (status, body)
        core.create_namespaced_pod("default", python_pod("ticker", TICKER, readinessProbe=None))
        wait_until(lambda: ready("ticker"), what="pod default/ticker Ready", timeout=POD_READY, poll=0.5)
        asyncio.run(attach_sees_ticks(kubectl_bin, config_path, "ticker"))
        _only_authorised_callers_reach_the_kubelet(cluster, core, node)


def _kubelet_get(url: str, context: ssl.SSLContext, token: str = "") -> tuple[int, str]:
    parsed = urlparse(url)
    conn = http.client.HTTPSConnection(parsed.hostname or "127.0.0.1", parsed.port, context=context, timeout=60)
    try:
        conn.request("GET", parsed.path, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


def _only_authorised_callers_reach_the_kubelet(cluster: LocalCluster, core: client.CoreV1Api, node: str) -> None:
    """The node's kubelet port called directly (`lwsconf.sim.nodes.streams.kubeletauth`): no credentials 401; a
    ServiceAccount token kube-apiserver authenticates (TokenReview) but RBAC does not allow on nodes/proxy
    (SubjectAccessReview) 403; the admin certificate, signed by the cluster CA (the kubelets' client CA), 200."""
    assert cluster.fleet is not None and cluster.controlplane is not None and cluster.controlplane.admin is not None
    agent = cluster.fleet.agents[node]
    url = f"https://{agent.host_ip}:{agent.logs.port}/containerLogs/default/p/main"
    anonymous = ssl.create_default_context()
    anonymous.check_hostname = False
    anonymous.verify_mode = ssl.CERT_NONE  # the kubelet's serving certificate is self-signed
    assert _kubelet_get(url, anonymous) == (401, "Unauthorized")
    core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(
        name="nobody")))
    token = core.create_namespaced_service_account_token("nobody", "default", client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))).status.token
    assert _kubelet_get(url, anonymous, token) == (
        403, "Forbidden (user=system:serviceaccount:default:nobody, verb=get, resource=nodes, "
             "subresource(s)=[proxy])\n")
    admin = ssl.create_default_context()
    admin.check_hostname = False
    admin.verify_mode = ssl.CERT_NONE
    admin.load_cert_chain(str(cluster.controlplane.admin.cert), str(cluster.controlplane.admin.key))
    status, body = _kubelet_get(url, admin)
    assert status == 200 and body.startswith("serving\n"), (status, body)  # then the port-forward's access log
