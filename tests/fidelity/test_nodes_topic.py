"""The nodes topic's plumbing and normalisation (pure): rules kubelet-generated, pod-addresses and event-reasons,
`until` with several conditions and `key=value` lookups, the opt-in topic, and the one-line skip without real
nodes."""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.controlplane import versions
from lwsconf.fidelity import cli, corpus, diff, normalise, run, servers
from lwsconf.fidelity.model import Answer, Scenario, Step, Until


def view(body: object, step: Step | None = None, saved: dict[str, str] | None = None) -> dict[str, Any]:
    return normalise.normalise(Answer(200, body), step or Step("s"), saved or {})


def pod(pod_ip: str, host_ip: str, message: str, cid: str, started: str) -> dict[str, Any]:
    terminated = {"exitCode": 0, "reason": "Completed", "message": message, "startedAt": started,
                  "finishedAt": started, "containerID": cid}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "status": {"phase": "Succeeded", "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "hostIP": host_ip,
                       "hostIPs": [{"ip": host_ip}], "startTime": started,
                       "containerStatuses": [{"name": "main", "image": "docker.io/library/python:3.12-slim",
                                              "imageID": f"sha256:{cid[-6:]}", "containerID": cid,
                                              "state": {"terminated": terminated}}]}}


def test_kubelet_values_and_addresses_keep_presence_and_the_pods_own_ip() -> None:
    sim = view(pod("127.5.1.7", "127.5.0.1", '{"POD_IP": "127.5.1.7", "OTHER": "127.5.9.9"}', "containerd://aa",
                   "2026-12-06T19:00:00Z"))
    real = view(pod("198.19.1.4", "198.19.0.1", '{"POD_IP": "198.19.1.4", "OTHER": "198.19.3.3"}',
                    "containerd://bb", "2026-12-06T19:00:05Z"))
    assert sim == real
    status = sim["body"]["status"]
    assert status["podIP"] == "<pod-ip>" and status["hostIPs"] == [{"ip": "<node-ip>"}]
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated["message"] == '{"POD_IP": "<pod-ip>", "OTHER": "<ip>"}'
    assert terminated["containerID"] == "<container-id>" and terminated["startedAt"] == "<time>"
    # a message naming another address where the pod's own is expected still differs
    wrong = view(pod("198.19.1.4", "198.19.0.1", '{"POD_IP": "198.19.0.1", "OTHER": "198.19.3.3"}', "c", "t"))
    assert diff.differences(real, wrong)
    # what a client chose or the kubelet reports as behaviour is compared: the image it says runs
    other_image = pod("198.19.1.4", "198.19.0.1", "", "c", "t")
    other_image["status"]["containerStatuses"][0]["image"] = "python:3.12-slim"
    assert any("image" in line for line in diff.differences(
        view(pod("198.19.1.4", "198.19.0.1", "", "c", "t")), view(other_image)))


def event(reason: str, message: str, name: str, kind: str = "Normal", count: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name}, "type": kind, "reason": reason, "message": message, "count": count,
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{main}"},
            "source": {"component": "kubelet", "host": "fid-cpu"}, "firstTimestamp": "2026-12-06T19:00:00Z"}


def test_event_reasons_are_ordered_distinct_lines_without_timing() -> None:
    step = Step("events", view="event-reasons")
    uid = "0b7d9e11-0000-4000-8000-000000000002"
    items = [event("Pulled", 'Successfully pulled image "x" in 1.234s (1.3s including waiting)', "p.1"),
             event("BackOff", f"Back-off restarting failed container main in pod p_ns({uid})", "p.2", "Warning", 3),
             event("BackOff", f"Back-off restarting failed container main in pod p_ns({uid})", "p.3", "Warning")]
    got = view({"kind": "EventList", "metadata": {}, "items": items}, step)["body"]
    assert got == {"events": [
        'Normal Pulled kubelet spec.containers{main}: Successfully pulled image "x" in <duration> (<duration> '
        "including waiting)",
        "Warning BackOff kubelet spec.containers{main}: Back-off restarting failed container main in pod p_ns(<uid>)"],
        "seen": {"Pulled": True, "BackOff": True}}
    assert normalise.lookup({"body": got}, "body.seen.BackOff") is True


def test_lookup_by_key_value_and_until_with_several_conditions() -> None:
    status = {"body": {"status": {"conditions": [{"type": "PodScheduled", "status": "True"},
                                                 {"type": "Ready", "status": "False"}]}}}
    assert normalise.lookup(status, "body.status.conditions.type=Ready.status") == "False"
    assert normalise.lookup(status, "body.status.conditions.type=Nope.status") is None
    until = Until("a", 1, 5.0, (("b", 2),))
    assert until.conditions() == (("a", 1), ("b", 2))


class Scripted:
    """An endpoint answering a fixed sequence, to see `until` wait for every condition at once."""

    name = "scripted"

    def __init__(self, bodies: list[dict[str, Any]]) -> None:
        self.bodies = bodies
        self.sent = 0

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        if request["path"].endswith("namespaces") or request["path"].endswith("serviceaccounts"):
            return Answer(201, {})
        body = self.bodies[min(self.sent, len(self.bodies) - 1)]
        self.sent += 1
        return Answer(200, body)


def test_until_waits_for_all_its_conditions_together() -> None:
    bodies = [{"n": 1, "r": "Running"}, {"n": 0, "r": "Waiting"}, {"n": 1, "r": "Waiting"}, {"n": 2, "r": "Waiting"}]
    endpoint = Scripted(bodies)
    step = Step("x", "GET", "/p", until=Until("body.r", "Waiting", 5.0, (("body.n", 1),)))
    records = run.run_scenario(endpoint, Scenario("t", "t", (step,)))  # type: ignore[arg-type]
    assert records[0].answer.body == {"n": 1, "r": "Waiting"}


def test_nodes_topic_is_opt_in_and_every_scenario_needs_nodes() -> None:
    assert "nodes" in corpus.topics() and "nodes" in corpus.OPT_IN
    assert all(s.topic != "nodes" for s in corpus.select(None))
    chosen = corpus.select(["nodes"])
    assert chosen and all(s.nodes and s.controllers for s in chosen)


def test_without_real_nodes_the_topic_is_skipped_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(servers, "nodes_unavailable", lambda release: "real nodes need root")
    kept, line = cli.without_unrunnable(versions.DEFAULT, corpus.select(["nodes", "crud"]))
    assert {s.topic for s in kept} == {"crud"}
    assert line == "lwsconf fidelity: skipping nodes: real nodes need root"
    monkeypatch.setattr(servers, "release_or_not_built", lambda version: versions.DEFAULT)
    monkeypatch.setattr(cli, "run_both", lambda release, scenarios, prelude=(): [])
    assert cli.main(["--topics", "nodes"]) == 0
    err = capsys.readouterr().err
    assert err.strip() == "lwsconf fidelity: skipping nodes: real nodes need root"


def test_both_sides_get_the_same_nodes() -> None:
    sim = servers.sim_node_specs()
    assert [(s.name, dict(s.labels)) for s in sim] == [(n.name, n.labels) for n in servers.NODES]
    assert [s.devices for s in sim] == [n.devices for n in servers.NODES]


def test_managed_fields_keys_and_event_messages_name_addresses_by_role() -> None:
    def with_fields(ip: str) -> dict[str, Any]:
        body = pod(ip, "10.0.0.1", "", "c", "t")
        body["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {"f:status": {"f:podIPs": {
            f'k:{{"ip":"{ip}"}}': {".": {}, "f:ip": {}}}}}}]
        return body
    got = view(with_fields("127.5.1.7"))
    assert got == view(with_fields("198.19.1.4"))
    assert got["body"]["metadata"]["managedFields"][0]["fieldsV1"]["f:status"]["f:podIPs"] == {
        'k:{"ip":"<pod-ip>"}': {".": {}, "f:ip": {}}}
    step = Step("events", view="event-reasons")
    refused = 'Readiness probe failed: Get "http://{0}:8080/ready": dial tcp {0}:8080: connect: connection refused'
    a = view({"items": [event("Unhealthy", refused.format("127.5.1.7"), "p.1", "Warning")], "metadata": {}}, step)
    b = view({"items": [event("Unhealthy", refused.format("198.19.1.4"), "p.1", "Warning")], "metadata": {}}, step)
    assert a == b and "dial tcp <ip>:8080" in a["body"]["events"][0]
