"""The converter on a small synthetic recording: what a replay sends, and what it leaves out.

The recording is built with `recorder.interaction` (what the proxy writes for each request, scrubbing
included) from the bytes a client and kube-apiserver would exchange; the converted scenario is then replayed
on a fake server that generates its own uids and resourceVersions, to check that every variable the
converter introduced is saved from the right answer and sent back where the recording sent the original.
"""

from __future__ import annotations

import json
import random
from typing import Any

from lwsconf.fidelity import convert, heldout, recorder, run, scrub
from lwsconf.fidelity.model import Answer, Scenario, Step

NS = "lwsconf-gw0-1-test-labels-3f2a"
BASE = f"/api/v1/namespaces/{NS}"
UID = "0a1b2c3d-1111-2222-3333-444455556666"
POD_UID = "99999999-1111-2222-3333-444455556666"


def rec(seq: int, method: str, target: str, *, body: Any = None, code: int = 200, answer: Any = None,
        content_type: str = "application/json", events: list[dict[str, Any]] | None = None,
        client: str = "kubectl/v1.37.2") -> dict[str, Any]:
    request_body = (body if isinstance(body, str) else json.dumps(body)).encode() if body is not None else b""
    if events is not None:
        response = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    else:
        response = json.dumps(answer).encode() if answer is not None else b""
    return recorder.interaction(
        seq=seq, started="2026-12-07T10:00:00Z", seconds=0.01, method=method, target=target,
        request_headers=[("User-Agent", client), ("Content-Type", content_type), ("Authorization", "Bearer x")],
        request_body=request_body, code=code, response_headers=[("Content-Type", "application/json")],
        response_body=response, streamed=events is not None)


def cm(name: str, uid: str, rv: str, **meta: Any) -> dict[str, Any]:
    return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "namespace": NS, "uid": uid,
                                                                  "resourceVersion": rv, **meta}, "data": {"a": "1"}}


def recording() -> list[dict[str, Any]]:
    crd = {"kind": "CustomResourceDefinition", "metadata": {"name": "things.example.com"},
           "spec": {"group": "example.com", "versions": [{"name": "v1", "served": True}]}}
    records = [
        rec(1, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd, code=201, answer=crd),
        rec(2, "POST", "/api/v1/namespaces", body={"metadata": {"name": NS}}, code=201, answer={"kind": "Namespace"}),
        rec(3, "GET", "/apis", answer={"kind": "APIGroupList"}),
        rec(4, "POST", f"{BASE}/configmaps?fieldManager=kubectl-create",
            body={"metadata": {"name": "cm", "annotations": {"addr": f"leader.{NS}.svc"}}, "data": {"a": "1"}},
            code=201, answer=cm("cm", UID, "100")),
        # a client polling two reads in turn: each kept once, its last time
        *[rec(5 + i / 4, "GET", f"{BASE}/configmaps/cm" if i % 2 else f"{BASE}/configmaps",
              answer=cm("cm", UID, "100")) for i in range(4)],
        rec(8, "PUT", f"{BASE}/configmaps/cm", body=cm("cm", UID, "100"), answer=cm("cm", UID, "101")),
        rec(9, "POST", f"{BASE}/secrets", body={"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}},
            code=201, answer={"kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "aHVudGVyMg=="}}),
        rec(10, "POST", f"{BASE}/configmaps", body={"metadata": {"generateName": "gen-"}}, code=201,
            answer=cm("gen-x7k2p", "abcdef00-1111-2222-3333-444455556666", "102", generateName="gen-")),
        rec(11, "GET", f"{BASE}/configmaps/gen-x7k2p", answer=cm("gen-x7k2p", "u", "102")),
        rec(12, "POST", f"{BASE}/configmaps", code=201, answer=cm("owned", "u2", "103"),
            body={"metadata": {"name": "owned", "ownerReferences": [{"kind": "ConfigMap", "name": "cm", "uid": UID}]}}),
        rec(13, "GET", f"{BASE}/configmaps?watch=true&resourceVersion=101&timeoutSeconds=300",
            events=[{"type": "ADDED", "object": cm("gen-x7k2p", "u", "102")}]),
        rec(14, "GET", "/api/v1/nodes", answer={"kind": "NodeList", "items": []}),
        rec(14.5, "GET", f"{BASE}/events?fieldSelector=involvedObject.uid%3D{UID}", answer={"kind": "EventList"}),
        rec(15, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", body={"metadata": {}},
            answer={"kind": "Lease"}),
        rec(16, "PATCH", f"{BASE}/configmaps/cm", body='{"data":{"b":"2"}}',
            content_type="application/strategic-merge-patch+json", answer=cm("cm", UID, "104")),
        # an informer's client: the resourceVersion came from a watch event, newer than any answer here carried
        rec(17, "PUT", f"{BASE}/configmaps/cm", body=cm("cm", UID, "110"), answer=cm("cm", UID, "111")),
        rec(18, "DELETE", f"/api/v1/namespaces/{NS}", answer={"kind": "Namespace"}),
        rec(19, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.example.com",
            answer={"kind": "Status"}),
    ]
    random.Random(4).shuffle(records)  # written as each interaction ended: the converter orders by arrival
    return records


def test_a_recording_becomes_one_scenario_per_namespace_in_arrival_order() -> None:
    out = convert.convert(recording(), source="kubectl")
    assert [s["name"] for s in out.prelude] == ["000-post-customresourcedefinitions"]
    assert len(out.scenarios) == 1
    scenario = out.scenarios[0]
    assert scenario["recordedNamespace"] == NS and scenario["name"] == "kubectl-001-gw0-1-test-labels-3f2a"
    steps = scenario["steps"]
    assert [(s["method"], s["seq"]) for s in steps] == [
        ("POST", 4), ("GET", 5.5), ("GET", 5.75), ("PUT", 8), ("POST", 9), ("POST", 10), ("GET", 11), ("POST", 12),
        ("GET", 13), ("GET", 14.5), ("PATCH", 16), ("PUT", 17), ("DELETE", 18)]
    assert out.skipped == {
        "the namespace's create (the replay's setup makes it)": 1, "discovery or OpenAPI document": 1,
        convert.POLL_REASON: 2, "cluster-scoped or all-namespace read": 1,
        "system namespace (controllers' and the reconciler's bookkeeping)": 1,
        "cluster-scoped write once the scenarios began (a node's labels, a teardown)": 1}
    assert all(NS not in json.dumps(s) for s in steps)
    assert steps[0]["path"] == "/api/v1/namespaces/${ns}/configmaps"
    assert steps[0]["body"]["metadata"]["annotations"]["addr"] == "leader.${ns}.svc"
    assert steps[0]["query"] == {"fieldManager": "kubectl-create"} and steps[0]["headers"] == {
        "User-Agent": "kubectl/v1.37.2"}
    assert steps[10]["body"] == {"data": {"b": "2"}}  # decoded JSON, sent re-encoded
    assert steps[10]["contentType"] == "application/strategic-merge-patch+json"


def test_server_generated_values_become_saved_variables() -> None:
    steps = convert.convert(recording(), source="kubectl").scenarios[0]["steps"]
    create, put, gen, get_gen, owned, watch, events = (steps[i] for i in (0, 3, 5, 6, 7, 8, 9))
    uid_var = owned["body"]["metadata"]["ownerReferences"][0]["uid"]
    rv_var = put["body"]["metadata"]["resourceVersion"]
    assert uid_var.startswith("${") and rv_var.startswith("${")
    assert create["save"] == {uid_var[2:-1]: "metadata.uid", rv_var[2:-1]: "metadata.resourceVersion"}
    name_var = get_gen["path"].rsplit("/", 1)[1]
    assert gen["save"] == {name_var[2:-1]: "metadata.name", "v3": "metadata.uid"}  # a created object's uid: always
    assert put["body"]["metadata"]["uid"] == uid_var
    assert events["query"]["fieldSelector"] == f"involvedObject.uid={uid_var}"
    assert watch["watch"] is True and watch["query"]["timeoutSeconds"] == str(convert.WATCH_SECONDS)
    assert watch["query"]["resourceVersion"] == "${" + next(iter(put.get("save", {}))) + "}"


def test_a_resource_version_from_elsewhere_is_the_objects_latest_saved_one() -> None:
    out = convert.convert(recording(), source="kubectl")
    patch, put = out.scenarios[0]["steps"][10:12]
    var = put["body"]["metadata"]["resourceVersion"]
    assert patch["save"] == {var[2:-1]: "metadata.resourceVersion"}
    assert out.rewritten == {
        "resourceVersion from a watch or cluster list: the object's latest saved one": 1,
        f"watch timeoutSeconds set to {convert.WATCH_SECONDS}": 1}


def test_secrets_never_reach_the_corpus() -> None:
    text = json.dumps(convert.convert(recording(), source="kubectl").document({}))
    assert "hunter2" not in text and "aHVudGVyMg==" not in text and "Bearer" not in text
    assert scrub.PLACEHOLDER in text


class FakeServer:
    """Answers like an API server with its own uids, resourceVersions and generated names."""

    name = "fake"

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.sent: list[dict[str, Any]] = []
        self.rv = 5000

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        self.sent.append(request)
        body = json.loads(request["body"]) if request["body"] and request["body"][:1] == b"{" else None
        path = request["path"]
        if watch:
            return Answer(200, None, [], [])
        if request["method"] in ("POST", "PUT") and isinstance(body, dict):
            self.rv += 1
            meta = body.setdefault("metadata", {})
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + "zzzzz"
            meta.setdefault("uid", f"{self.rv:08d}-aaaa-bbbb-cccc-dddddddddddd")
            meta["resourceVersion"] = str(self.rv)
            key = path if request["method"] == "PUT" else f"{path}/{meta.get('name')}"
            self.objects[key] = body
            return Answer(201, body)
        found = self.objects.get(path)
        return Answer(200, found) if found else Answer(404, {"kind": "Status"})


def test_a_replay_sends_each_server_its_own_values_back() -> None:
    document = convert.convert(recording(), source="kubectl").document({"note": "test"})
    _, scenarios = heldout.scenarios_from(document)
    server = FakeServer()
    records = run.run_steps(server, scenarios[0].steps, {"ns": "fid-x"})
    by_seq = dict(zip([s["seq"] for s in document["scenarios"][0]["steps"]], server.sent, strict=True))
    created = records[0].answer.body["metadata"]
    put = json.loads(by_seq[8]["body"])["metadata"]
    assert (put["uid"], put["resourceVersion"]) == (created["uid"], created["resourceVersion"])
    assert by_seq[11]["path"] == "/api/v1/namespaces/fid-x/configmaps/gen-zzzzz"
    assert json.loads(by_seq[12]["body"])["metadata"]["ownerReferences"][0]["uid"] == created["uid"]
    assert by_seq[13]["query"]["resourceVersion"] == records[3].answer.body["metadata"]["resourceVersion"] == "5002"
    assert isinstance(scenarios[0], Scenario) and scenarios[0].topic == "held-out-kubectl"


def test_protobuf_bodies_are_read_scrubbed_and_sent_as_protobuf_again() -> None:
    from lwsconf.sim.apiserver.protobuf import envelope

    pb = "application/vnd.kubernetes.protobuf"
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS},
                 "data": {"a": "1"}}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": NS},
              "data": {"password": "aHVudGVyMg=="}}
    records = []
    for seq, (obj, plural) in enumerate(((configmap, "configmaps"), (secret, "secrets")), 1):
        raw = envelope.encode_object(obj)
        records.append(recorder.interaction(
            seq=seq, started="t", seconds=0.0, method="POST", target=f"{BASE}/{plural}",
            request_headers=[("Content-Type", pb), ("User-Agent", "kubectl")], request_body=raw, code=201,
            response_headers=[("Content-Type", pb)], response_body=raw, streamed=False))
    assert records[0]["body"] == configmap and records[0]["bodyEncoding"] == "protobuf"
    assert "aHVudGVyMg==" not in json.dumps(records)
    step = convert.convert(records, source="kubectl").scenarios[0]["steps"][0]
    assert step["contentType"] == pb
    sent = run.build_request(heldout.step_from(step), {"ns": NS})
    assert sent["body"] == envelope.encode_object(configmap) and sent["headers"]["Content-Type"] == pb


def test_a_body_sent_without_content_type_is_replayed_without_one() -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "uid": UID}})
    records = [rec(1, "POST", f"{BASE}/configmaps", body={"metadata": {"name": "x"}}, code=201,
                   answer=cm("x", UID, "5")),
               recorder.interaction(seq=2, started="t", seconds=0.0, method="PUT", target=f"{BASE}/configmaps/cm",
                                    request_headers=[("User-Agent", "OpenAPI-Generator/37.0.3/python")],
                                    request_body=body.encode(), code=200, response_headers=[], response_body=b"",
                                    streamed=False)]
    step = convert.convert(records, source="python").scenarios[0]["steps"][1]
    assert step["contentType"] == "" and step["body"]["metadata"]["uid"].startswith("${")
    sent = run.build_request(heldout.step_from(step), {"ns": NS, step["body"]["metadata"]["uid"][2:-1]: UID})
    assert "Content-Type" not in sent["headers"] and sent["body"] == body.encode()


class SlowController:
    """A server whose controller makes pod web-0 only on the third look."""

    name = "slow"

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.looks = 0

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        self.sent.append((request["method"], request["path"].rsplit("/", 1)[-1]))
        if request["path"].endswith("/pods/web-0"):
            self.looks += 1
            return Answer(200, {"kind": "Pod"}) if self.looks >= 3 else Answer(404, {"kind": "Status"})
        return Answer(201, {})


def test_a_request_on_a_controllers_object_waits_for_it_in_the_replay() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "web-0", "generateName": "web-",
                                       "ownerReferences": [{"kind": "StatefulSet", "name": "web"}]},
           "status": {"phase": "Running"}}
    replica = {"metadata": {"name": "api-7f7c4bc59d-x2k9p", "generateName": "api-7f7c4bc59d-"}}
    records = [rec(1, "POST", f"{BASE}/statefulsets", body={"metadata": {"name": "web"}}, code=201, answer={}),
               rec(2, "PATCH", f"{BASE}/pods/web-0", body={"metadata": {"labels": {"a": "b"}}},
                   content_type="application/merge-patch+json", answer=pod),
               rec(3, "GET", f"{BASE}/pods/web-0", answer=pod),
               rec(4, "GET", f"{BASE}/pods?labelSelector=app", answer={"kind": "PodList", "items": [pod]}),
               rec(5, "GET", f"{BASE}/pods?labelSelector=api", answer={"kind": "PodList", "items": [replica]}),
               rec(6, "GET", f"{BASE}/pods/api-7f7c4bc59d-x2k9p/log", answer="log text")]
    scenario = convert.convert(records, source="suite").scenarios[0]
    listed, random_named, log = scenario["steps"][3:]
    assert "after" not in log  # a ReplicaSet's pod: its random name never comes back in a replay
    assert listed["until"] == {"path": "body.items.0.metadata.name", "value": "web-0", "timeout": convert.UNTIL_SECONDS}
    assert "until" not in random_named  # its name is the recording's random one: no replay makes it again
    scenario["steps"] = scenario["steps"][:3]
    assert scenario["controllers"] is True
    patch, get = scenario["steps"][1:3]
    assert patch["after"] == get["after"] == "/api/v1/namespaces/${ns}/pods/web-0"
    assert get["vary"] == ["body.status"]
    server = SlowController()
    _, scenarios = heldout.scenarios_from({"source": "suite", "scenarios": [scenario]})
    done = run.run_steps(server, scenarios[0].steps, {"ns": "fid-x"})
    assert server.sent[:5] == [("POST", "statefulsets"), ("GET", "web-0"), ("GET", "web-0"), ("GET", "web-0"),
                               ("PATCH", "web-0")]
    assert [r.answer.code for r in done] == [201, 200, 200]


class LateAdmission:
    """kube-apiserver just after a CRD is created: schema validation judges an invalid object at once (422),
    a valid one meets the admission policies, which answer 503 until they resolve the new kind."""

    name = "late"

    def __init__(self) -> None:
        self.probes: list[dict[str, Any]] = []

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        body = json.loads(request["body"]) if request["body"] else {}
        if request["path"].endswith("/customresourcedefinitions"):
            return Answer(201, body)
        self.probes.append(body)
        if "spec" not in body:
            return Answer(422, {"kind": "Status"})
        return Answer(503, {"kind": "Status"}) if len(self.probes) < 3 else Answer(201, body)


def test_the_prelude_waits_with_a_valid_object_of_the_new_kind_from_the_scenarios() -> None:
    """A dry-run of an empty object is refused by schema validation before admission, so it never sees the
    admission policies' 503 that the scenarios' first create met (96 interactions of the first held-out runs)."""
    crd = Step("crd", "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {"spec": {
        "group": "example.com", "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": True}]}})
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "x"},
              "spec": {"size": 2}}
    scenario = Scenario("t", "s", (Step("create", "POST", "/apis/example.com/v1/namespaces/${ns}/gadgets", gadget),))
    server = LateAdmission()
    run.run_prelude(server, [crd], [scenario])
    assert [p.get("spec") for p in server.probes] == [{"size": 2}] * 3
    assert {p["metadata"]["name"] for p in server.probes} == {"lwsconf-served-probe"}
    assert run.first_created([scenario], "example.com/v1", "widgets") is None


def test_a_proxied_requests_wait_is_for_the_object_not_its_port() -> None:
    """`.../pods/web-0:8080/proxy/x` acts on pod web-0: its `after` waits for that pod (waiting for `web-0:8080`
    ran out on both servers, 10 s each, found by counting the waits that ran out)."""
    assert [convert.proxied_name(s) for s in ("web-0", "web-0:8080", "https:web-0:8443", "http:web-0")] == \
        ["web-0"] * 4
    pod = {"kind": "Pod", "metadata": {"name": "web-0", "ownerReferences": [{"kind": "StatefulSet", "name": "web"}]}}
    records = [rec(1, "POST", f"{BASE}/statefulsets", body={"metadata": {"name": "web"}}, code=201, answer={}),
               rec(2, "GET", f"{BASE}/pods/web-0", answer=pod),
               rec(3, "GET", f"{BASE}/pods/web-0:8080/proxy/healthz", answer={"ok": True})]
    proxied = convert.convert(records, source="suite").scenarios[0]["steps"][2]
    assert proxied["after"] == "/api/v1/namespaces/${ns}/pods/web-0"
