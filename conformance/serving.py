"""The serving side of the `lws` harness: deploy a multi-node server, read its groups, send it traffic.

LWS-SERVING scenarios (conformance/test_serving.py) read as the story they check: deploy a server
(the emulator everywhere, real vLLM on GPU clusters: a `lwsconf.serving.servers.ServingServer`) with
its leader-only Service, wait until the Service routes to every ready leader, then send completions
through it while the test fails a member, rolls the LWS out or scales it. Everything goes through the
Kubernetes API (the pods and services proxies), so the same scenario runs on every backend. Traffic
is timed on the recording timeline's clock and put on it, so the report draws each request on the
rollout picture and gives requests, failures and p50/p99 latency per phase.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from conformance import gpu_serving
from conformance.harness import LWSHarness
from fixtures.serving import gpu_room
from lwsconf.serving import servers, vllm
from lwsconf.serving.traffic import Traffic, running
from lwsconf.timeline.model import Request
from lwsconf.waits import core, proxy

Obj = dict[str, Any]
TRAFFIC_INTERVAL = 0.1
"""Seconds between one client thread's requests: about 15 requests/s with two threads on sim."""


@dataclass
class Serving:
    lws: LWSHarness
    server: servers.ServingServer

    def deploy(self, name: str, *, replicas: int, size: int, rollout: Obj | None = None, prestop_seconds: int = 0,
               grace_seconds: int = 30, env: dict[str, str] | None = None,
               peak_replicas: int | None = None) -> tuple[Obj, str]:
        """Create the server's objects, its LWS and leader Service; wait until every group is ready with its
        model served (ModelReady: the server's `ready_within` timeout) and the Service lists exactly their
        leaders. Returns the manifest and the Service's name.

        A server on GPUs is first checked for room for the whole scenario (`peak_replicas` groups, default
        `replicas`, plus the surge groups `rollout` allows, one pod per node): SKIPPED naming what it needs and
        what the cluster has, before anything is created. Once ready, each group must span `size` nodes and
        every rank must have logged that it joined."""
        if self.server.gpus_per_pod:
            self.room_for(peak_replicas or replicas, size, vllm.surge_groups(rollout, peak_replicas or replicas))
        for obj in self.server.objects():
            self._create_once(obj)
        manifest = self.server.lws(name, replicas=replicas, size=size, rollout=rollout,
                                   prestop_seconds=prestop_seconds, grace_seconds=grace_seconds, env=env)
        self.lws.create(manifest)
        service = servers.leader_service(name, self.server.port)
        self.lws.core.create_namespaced_service(self.lws.namespace, service)  # type: ignore[arg-type]
        svc = str(service["metadata"]["name"])
        self.lws.groups_must_be_ready(name, replicas=replicas, size=size, within=self.server.ready_within)
        self.lws.lws_must_be_available(name)
        gpu_serving.model_must_serve(self.lws, self.server, svc, name)
        if self.server.gpus_per_pod:
            gpu_serving.groups_must_span_nodes(self.lws, name, size)
            gpu_serving.ranks_must_have_joined(self.lws, name, manifest)
        self.leaders_must_be_endpoints(name, svc, replicas)
        return manifest, svc

    def room_for(self, replicas: int, size: int, surge: int) -> None:
        """Skip the scenario unless `replicas` + `surge` groups of `size` pods fit, one pod per node with the
        server's GPUs free (simulated GPUs only where the server runs on them)."""
        inv = gpu_room(self.lws.api, self.server.gpus_per_pod, allow_simulated=self.server.simulated_gpus)
        reason = vllm.room_problem(inv, gpus_per_pod=self.server.gpus_per_pod, replicas=replicas, size=size,
                                   surge=surge, hint="this scenario needs that many at its peak; add GPU nodes")
        if reason:
            pytest.skip(f"{self.server.label}: {reason}")

    def _create_once(self, obj: Obj) -> None:
        """Create a ConfigMap or Secret the server needs; one another LWS of this test made already is kept."""
        kind = obj.get("kind")
        if kind not in ("ConfigMap", "Secret"):
            raise ValueError(f"serving servers may ask for ConfigMaps and Secrets, not {kind}")
        try:
            if kind == "ConfigMap":
                self.lws.core.create_namespaced_config_map(self.lws.namespace, obj)  # type: ignore[arg-type]
            else:
                self.lws.core.create_namespaced_secret(self.lws.namespace, obj)  # type: ignore[arg-type]
        except client.ApiException as exc:
            if exc.status != 409:
                raise

    def leaders_must_be_endpoints(self, name: str, svc: str, replicas: int) -> None:
        self.lws.service_endpoints_must_be(svc, {f"{name}-{i}" for i in range(replicas)}, name=name)

    # --- one pod -------------------------------------------------------------------------------------

    def group_view(self, pod: str) -> Obj:
        """The member's own view of its group (the emulator's /group), read through the pods proxy."""
        reply = proxy.pod_get(self.lws.api, self.lws.namespace, pod, self.server.port, "/group",
                              timeout=self.lws.t.request_timeout)
        return reply.json()

    def crash(self, pod: str, code: int = 137) -> None:
        """Make the member's server process exit with `code` (not the pod: the kubelet restarts it)."""
        reply = proxy.pod_post(self.lws.api, self.lws.namespace, pod, self.server.port, f"/fault/crash?code={code}",
                               {}, timeout=self.lws.t.request_timeout)
        assert reply.status == 202, f"asking {pod} to crash: HTTP {reply.status} {str(reply.body)[:300]}"
        self.lws.step(f"{pod}'s process crashed (exit {code})")

    # --- traffic -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def traffic(self, svc: str, *, workers: int = 2) -> Iterator[Traffic]:
        """Completions through `svc` while the block runs, on the timeline's clock and put on it at the end."""
        client_ = Traffic(self.lws.api, self.lws.namespace, svc, self.server,
                                  request_timeout=self.lws.t.request_timeout, interval=TRAFFIC_INTERVAL,
                                  workers=workers, clock=self.lws.clock)
        self.lws.step("traffic started")
        try:
            with running(client_):
                yield client_
        finally:
            self.lws.add_requests(client_.snapshot())

    def answered(self, sent: Traffic, *, count: int, what: str, pods: set[str] | None = None,
                 since: float | None = None) -> list[Request]:
        """Wait (named timeout ServiceEndpoints) until `count` requests sent since `since` were answered (by
        one of `pods` when given and the server names pods); the answered requests."""
        start = self.lws.clock() if since is None else since

        def enough() -> list[Request]:
            ok = [r for r in sent.since(start) if r.ok and (pods is None or not self.server.identifies_pods
                                                            or r.pod in pods)]
            if len(ok) < count:
                tried = sent.since(start)
                last = tried[-1] if tried else None
                seen = "none" if last is None else (last.error or f"HTTP {last.status} from {last.pod}")
                raise core.NotYet(f"{len(ok)}/{count} answered of {len(tried)} sent; last: {seen}")
            return ok
        return core.wait_until(enough, what=what, timeout=self.lws.t.service_endpoints, poll=self.lws.t.poll_interval,
                               describe=self.lws.describe)


INCOMPLETE_GROUP_REFUSALS = ("the group is not complete", "serves no requests")
"""How the emulator refuses a request a leader of an incomplete group, or a worker, was sent: the Service
routed it to a group that had not finished its rendezvous (or to a worker)."""


def failures(requests: list[Request]) -> list[Request]:
    return [r for r in requests if not r.ok]


def refused_by_incomplete_groups(requests: list[Request]) -> list[Request]:
    """Requests the Service sent to a half-formed group (the emulator's refusals; vLLM does not tell)."""
    return [r for r in requests if r.error and any(m in r.error for m in INCOMPLETE_GROUP_REFUSALS)]


def summary(requests: list[Request], limit: int = 8) -> str:
    """A failed assertion's account of the traffic: counts, then the first failures."""
    bad = failures(requests)
    lines = [f"{len(requests)} requests, {len(bad)} failed"]
    lines += [f"  t={r.t:.2f} after {r.seconds:.2f}s: {r.error}" for r in bad[:limit]]
    return "\n".join(lines)
