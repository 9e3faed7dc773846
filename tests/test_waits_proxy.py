"""Proxied requests and Service waits, against a bare simulated API server and a real probe process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from lwsconf import probe
from lwsconf.ports import reserve_port
from lwsconf.timeouts import Timeouts
from lwsconf.waits import proxy, services
from tests.conftest import SimAPI
from tests.probe.test_probe import wait_listening

NS = "default"
T = Timeouts(service_endpoints=5, max_time_to_consistency=5, poll_interval=0.05)


@pytest.fixture
def probe_pod(sim_api: SimAPI) -> Iterator[int]:
    """A probe process on 127.0.0.1:<port>, published as pod demo-0 with that podIP."""
    held = reserve_port("127.0.0.1")  # held while the probe runs, not picked and released (lwsconf/ports.py)
    port = held.port
    proc = subprocess.Popen([sys.executable, str(probe.PROGRAM), "--port", str(port)],
                            env={**os.environ, "POD_IP": "127.0.0.1", "POD_NAME": "demo-0"}, stderr=subprocess.DEVNULL)
    wait_listening(f"http://127.0.0.1:{port}", proc)
    core = client.CoreV1Api(sim_api.api)
    body: dict[str, Any] = {"metadata": {"name": "demo-0"},
                            "spec": {"containers": [{"name": "c", "image": "python:3.12-slim"}]}}
    core.create_namespaced_pod(NS, body)  # type: ignore[arg-type]
    pod = core.read_namespaced_pod("demo-0", NS)
    pod.status = client.V1PodStatus(phase="Running", pod_ip="127.0.0.1")
    core.replace_namespaced_pod_status("demo-0", NS, pod)
    yield port
    proc.kill()
    proc.wait()
    held.release()


def test_pod_get_passes_path_and_query_through_the_proxy(sim_api: SimAPI, probe_pod: int) -> None:
    reply = proxy.pod_get(sim_api.api, NS, "demo-0", probe_pod, "/ready", query={"value": "false"})
    assert reply.ok and reply.json() == {"ready": False}
    assert proxy.pod_get(sim_api.api, NS, "demo-0", probe_pod, "/readyz").status == 503
    assert proxy.pod_get(sim_api.api, NS, "demo-0", probe_pod, "/").json()["pod"] == "demo-0"


def test_pod_get_reports_errors_instead_of_raising(sim_api: SimAPI) -> None:
    reply = proxy.pod_get(sim_api.api, NS, "missing", 8080, "/")
    assert not reply.ok and reply.status == 404
    with pytest.raises(AssertionError, match="HTTP 404"):
        reply.json()


def test_service_waits_see_endpoints_and_route(sim_api: SimAPI, probe_pod: int) -> None:
    core, discovery = client.CoreV1Api(sim_api.api), client.DiscoveryV1Api(sim_api.api)
    svc: dict[str, Any] = {"metadata": {"name": "leaders"}, "spec": {"ports": [{"port": 80, "targetPort": probe_pod}]}}
    core.create_namespaced_service(NS, svc)  # type: ignore[arg-type]
    eps: dict[str, Any] = {
        "metadata": {"name": "leaders-x", "labels": {services.SERVICE_NAME_LABEL: "leaders"}}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True},
                       "targetRef": {"kind": "Pod", "name": "demo-0", "namespace": NS}}],
        "ports": [{"port": probe_pod, "protocol": "TCP"}]}
    discovery.create_namespaced_endpoint_slice(NS, eps)  # type: ignore[arg-type]
    assert services.service_endpoints_must_be(sim_api.api, NS, "leaders", {"demo-0"}, T) == {"demo-0": True}
    seen = services.service_must_route_only_to(sim_api.api, NS, "leaders", 80, {"demo-0"}, T, must_reach={"demo-0"})
    assert seen == {"demo-0"}
    with pytest.raises(AssertionError, match="not one of"):
        services.service_must_route_only_to(sim_api.api, NS, "leaders", 80, {"other-0"},
                                            Timeouts(max_time_to_consistency=0.3, poll_interval=0.05))


def test_port_forward_never_patches_the_callers_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """kubernetes.stream swaps `call_api` on the client it is handed for the whole call; handed the caller's
    shared client, a recorder's watches on other threads went out as port-forwards and failed "Missing required
    parameter `ports`" (run 20261203-043538-b547). The port-forward gets a client of its own, same configuration."""
    from lwsconf.waits import portforward

    shared = client.ApiClient(client.Configuration())
    seen: list[client.ApiClient] = []

    def fake_portforward(method: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(method.__self__.api_client)
        raise OSError("no cluster here")

    monkeypatch.setattr(portforward, "portforward", fake_portforward)
    status, message = portforward.http_get(shared, NS, "demo-0", 8080, "/", None, 1.0)
    assert (status, message) == (0, "port-forward failed: no cluster here")
    assert len(seen) == 1 and seen[0] is not shared and seen[0].configuration is shared.configuration, seen
