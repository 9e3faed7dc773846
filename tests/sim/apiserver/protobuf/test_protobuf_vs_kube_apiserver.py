"""Byte for byte against kube-apiserver 1.37.2: the same objects, fetched as JSON and as protobuf from the real
server; our codec must turn the JSON into the very protobuf bytes the server sent, and decode those bytes into
the very JSON it sent. Also the wire shapes the sim copies: watch frames, Status errors, negotiation.

Needs the control plane built (`lwsconf controlplane build`); skips saying so, unless LWSCONF_REQUIRE_GO=1.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from lwsconf.controlplane import versions
from lwsconf.fidelity import servers
from lwsconf.fidelity.client import Endpoint
from lwsconf.sim.apiserver.protobuf import envelope

PB = "application/vnd.kubernetes.protobuf"
NS = "pb-compare"
OBJECTS: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}}),
    ("/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "cm", "labels": {"a": "b"}},
                                            "data": {"k": "v", "e": ""}, "binaryData": {"b": "AAE="}}),
    ("/api/v1/namespaces/{ns}/pods", {"metadata": {"name": "p"}, "spec": {"containers": [{
        "name": "c", "image": "busybox", "ports": [{"containerPort": 80, "name": "http"}],
        "resources": {"limits": {"cpu": "100m", "memory": "1Gi"}},
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}}}], "volumes": [{"name": "v", "emptyDir": {}}]}}),
    ("/apis/apps/v1/namespaces/{ns}/statefulsets", {"metadata": {"name": "s"}, "spec": {
        "replicas": 0, "selector": {"matchLabels": {"a": "b"}}, "serviceName": "s",
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
    ("/api/v1/namespaces/{ns}/services", {"metadata": {"name": "svc"}, "spec": {
        "ports": [{"name": "a", "port": 80, "targetPort": 8080}, {"name": "n", "port": 81, "targetPort": "web"}],
        "selector": {"a": "b"}}}),
    ("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", {"metadata": {"name": "l"}, "spec": {
        "holderIdentity": "me", "leaseDurationSeconds": 15, "acquireTime": "2026-01-02T03:04:05.123456Z",
        "renewTime": "2026-01-02T03:04:06.000001Z"}}),
    ("/apis/events.k8s.io/v1/namespaces/{ns}/events", {"metadata": {"name": "e"},
                                                       "eventTime": "2026-01-02T03:04:05.123456Z",
                                                       "reportingController": "x/y", "reportingInstance": "i",
                                                       "action": "A", "reason": "R", "type": "Normal",
                                                       "regarding": {"kind": "Pod", "name": "p", "namespace": NS}}),
    ("/apis/apps/v1/namespaces/{ns}/controllerrevisions", {"metadata": {"name": "r"}, "revision": 1,
                                                           "data": {"spec": {"b": [1, 2], "a": "x"}}}),
]


@pytest.fixture(scope="module")
def real() -> Iterator[Endpoint]:
    try:
        release = servers.release_or_not_built(versions.DEFAULT.kubernetes)
    except servers.NotBuilt as exc:
        if os.environ.get("LWSCONF_REQUIRE_GO") == "1":
            raise
        pytest.skip(str(exc))
    with servers.real(release, controllers=False) as endpoint:
        yield endpoint


def _get(endpoint: Endpoint, path: str, accept: str) -> requests.Response:
    return endpoint.session.get(endpoint.url + path, headers={"Accept": accept}, timeout=30)


@pytest.fixture(scope="module")
def created(real: Endpoint) -> list[str]:
    s = real.session
    assert s.post(real.url + "/api/v1/namespaces", json={"metadata": {"name": NS}}, timeout=30).status_code == 201
    paths = []
    for collection, body in OBJECTS:
        url = real.url + collection.format(ns=NS)
        # compact JSON: kube-apiserver keeps a RawExtension's bytes as sent (ControllerRevision.data), the sim
        # keeps the parsed value and writes it compact
        answer = s.post(url, data=json.dumps(body, separators=(",", ":")),
                        headers={"Content-Type": "application/json"}, timeout=30)
        assert answer.status_code == 201, answer.text
        paths.append(f"{collection.format(ns=NS)}/{body['metadata']['name']}")
    return [f"/api/v1/namespaces/{NS}", *paths, f"/api/v1/namespaces/{NS}/configmaps"]


@pytest.mark.slow
def test_our_encoding_of_the_servers_json_is_the_servers_protobuf_byte_for_byte(real: Endpoint,
                                                                                  created: list[str]) -> None:
    for path in created:
        as_json = _get(real, path, "application/json").json()
        as_pb = _get(real, path, PB)
        assert as_pb.headers["Content-Type"] == PB
        assert envelope.encode_object(as_json) == as_pb.content, f"{path}: our bytes differ from kube-apiserver's"
        assert envelope.decode_object(as_pb.content) == as_json, f"{path}: decoded protobuf differs from its JSON"


@pytest.mark.slow
def test_statuses_watch_frames_and_negotiation_are_shaped_as_ours(real: Endpoint, created: list[str]) -> None:
    missing = _get(real, f"/api/v1/namespaces/{NS}/configmaps/nope", PB)
    assert missing.status_code == 404
    assert envelope.encode_object(_get(real, f"/api/v1/namespaces/{NS}/configmaps/nope",
                                       "application/json").json()) == missing.content
    watch = _get(real, f"/api/v1/namespaces/{NS}/configmaps?watch=1&timeoutSeconds=1", PB)
    assert watch.headers["Content-Type"] == f"{PB};stream=watch"
    (size,) = struct.unpack(">I", watch.content[:4])
    assert size == len(watch.content) - 4, "one ADDED frame for the one ConfigMap"
    events = envelope.read_watch_frames(watch.content)
    stored = _get(real, f"/api/v1/namespaces/{NS}/configmaps/cm", "application/json").json()
    assert events == [("ADDED", stored)]
    assert watch.content == envelope.watch_frame("ADDED", stored)
    json_wins = _get(real, f"/api/v1/namespaces/{NS}/configmaps/cm", f"{PB};q=0.5, application/json;q=0.9")
    assert json_wins.headers["Content-Type"].startswith("application/json")
    table = _get(real, f"/api/v1/namespaces/{NS}/configmaps", f"{PB};as=Table;v=v1;g=meta.k8s.io, application/json")
    assert json.loads(table.content)["kind"] == "ConfigMapList", "a protobuf Table clause is passed over"
