"""The same webhook server, the same requests: the sim API server and kube-apiserver must answer alike.

The fidelity corpus (`lwsconf/fidelity/corpus/webhooks.py`) compares what needs no webhook server; this test
runs a real HTTPS webhook server on loopback and builds corpus scenarios pointing at it, then runs them on the
sim and on the pinned kube-apiserver (etcd + kube-apiserver only, `lwsconf.fidelity.servers.real`) with the
corpus' own runner, normaliser and differ. Compared: each answer (JSON-patched objects, denial Statuses,
failed-call messages, Warning headers, reinvocation) and each AdmissionReview the webhook received (uid and
userInfo dropped, server-stamped metadata compared for presence). managedFields are left out of the
answers: the sim keeps none for Update writes, a general difference the corpus reports on its own.

Needs the control plane built (`lwsconf controlplane build`); skips saying so, unless LWSCONF_REQUIRE_GO=1.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from lwsconf.fidelity import accepted, compare, run, servers
from lwsconf.fidelity.corpus import webhooks as corpus
from lwsconf.fidelity.corpus._build import CORE, configmap, create, delete, get, patch
from lwsconf.fidelity.model import MERGE, Scenario, Step
from tests.sim.apiserver.policies.webhook_server import WebhookServer, json_patch

REQUIRE_ENV = "LWSCONF_REQUIRE_GO"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_EVENT_DEFAULTS = ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedSource", "eventTime")
"""Null/empty Event fields kube-apiserver's defaulting fills and the sim leaves out: a general Event difference
(the corpus shows it for core Events too), so left out of the Event a webhook is sent."""
_SERVER_STAMPED = ("uid", "resourceVersion", "creationTimestamp", "generation")
"""Metadata each server stamps with its own values: compared for presence only (managedFields, which the sim
keeps none of for Update writes, are left out)."""


def _answer(path: str, review: dict[str, Any]) -> dict[str, Any] | None:
    """The webhook: what it does is chosen by the URL path."""
    request = review["request"]
    if path == "/patch":
        return json_patch({"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}},
                          {"op": "add", "path": "/data/added", "value": "by-webhook"})
    if path == "/deny":
        return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": "owner label required"}}
    if path == "/deny-bare":
        return {"allowed": False}
    if path == "/warn":
        return {"warnings": ["first warning", "second warning"]}
    if path == "/bad-uid":
        return {"raw": {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "response": {"uid": "not-the-uid", "allowed": True}}}
    if path == "/bad-patch":
        return json_patch({"op": "remove", "path": "/data/missing"})
    if path == "/second" and "second" not in (request["object"].get("data") or {}):
        return json_patch({"op": "add", "path": "/data/second", "value": "1"})
    if path == "/slow":
        return {"sleep": 2.5}
    return None


def _scenarios(server: WebhookServer) -> list[Scenario]:
    def hook(name: str, path: str, **extra: Any) -> dict[str, Any]:
        return corpus.webhook(name, **extra) | {"clientConfig": {"url": server.url(path), "caBundle": server.ca_bundle}}

    def scenario(name: str, config: dict[str, Any], *steps: Step) -> Scenario:
        collection = corpus.MWC if config["kind"] == "MutatingWebhookConfiguration" else corpus.VWC
        item = f"{collection}/{config['metadata']['name']}"
        return Scenario("webhooks-live", name, (create("install", collection, corpus.with_probe(config)), corpus.ACTIVE,
                                                *steps, delete("uninstall", item)))

    cms = f"{CORE}/configmaps"
    return [
        scenario("live-patch", corpus.mutating("live-patch", hook("patch.example.com", "/patch")),
                 create("create-patched", cms, configmap("c1")), get("read-patched", f"{cms}/c1"),
                 patch("update-patched", f"{cms}/c1", {"data": {"a": "2"}}, MERGE),
                 create("dry-run-patched", cms, configmap("c2"), query={"dryRun": "All"})),
        scenario("live-deny", corpus.validating("live-deny", hook("deny.example.com", "/deny")),
                 create("denied", cms, configmap("c1"))),
        scenario("live-missing-namespace", corpus.validating("live-missing-namespace", hook(
            "nsless.example.com", "/deny") | {"namespaceSelector": {}}),
            create("refused-before-webhooks", "/api/v1/namespaces/fid-nowhere/configmaps", configmap("c1"))),
        scenario("live-deny-bare", corpus.mutating("live-deny-bare", hook("bare.example.com", "/deny-bare")),
                 create("denied-without-result", cms, configmap("c1"))),
        scenario("live-warn", corpus.validating("live-warn", hook("warn.example.com", "/warn")),
                 create("warned", cms, configmap("c1"))),
        scenario("live-bad-uid", corpus.validating("live-bad-uid", hook("uid.example.com", "/bad-uid")),
                 create("invalid-response", cms, configmap("c1"))),
        scenario("live-bad-patch", corpus.mutating("live-bad-patch", hook("bp.example.com", "/bad-patch")),
                 create("patch-does-not-apply", cms, configmap("c1"))),
        scenario("live-timeout", corpus.validating("live-timeout", hook("slow.example.com", "/slow", timeoutSeconds=1)),
                 create("timed-out", cms, configmap("c1"))),
        scenario("live-reinvoke", corpus.mutating(
            "live-reinvoke", hook("first.example.com", "/first", reinvocationPolicy="IfNeeded"),
            hook("second.example.com", "/second")),
            create("reinvoked", cms, configmap("c1"))),
        scenario("live-equivalent", corpus.validating("live-equivalent", hook(
            "events.example.com", "/allow",
            rules=[corpus.rule("events", group="events.k8s.io", operations=("CREATE",))])),
            create("core-event-sent-as-events-v1", f"{CORE}/events", {
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"}, "reason": "Test", "message": "m",
                "type": "Normal", "involvedObject": {"kind": "Pod", "name": "p", "namespace": "${ns}"}})),
        scenario("live-delete", corpus.validating("live-delete", hook(
            "del.example.com", "/deny", rules=[corpus.rule(operations=("DELETE",))])),
            create("create", cms, configmap("c1")), delete("delete-denied", f"{cms}/c1")),
    ]


GENERAL: dict[str, tuple[str, ...]] = {
    # A dry-run create answers without a resourceVersion on kube-apiserver, the sim gives one: a general
    # difference (the corpus' dryRun topic shows it), not a webhook one.
    "webhooks-live/live-patch/dry-run-patched": ("body.metadata.resourceVersion",),
    # Core Event fields kube-apiserver answers as null or empty and the sim leaves out (the corpus shows it).
    "webhooks-live/live-equivalent/core-event-sent-as-events-v1": (
        "body.eventTime", "body.firstTimestamp", "body.lastTimestamp", "body.reportingComponent",
        "body.reportingInstance", "body.source"),
}
"""Differences that are not about webhooks, dropped from the answers of the steps named."""


def _view(answer: Any, ident: str) -> str:
    """A normalised answer without managedFields, each request's random uid masked (a failed uid check names it)."""
    answer = json.loads(json.dumps(answer))
    for path in GENERAL.get(ident, ()):
        *parents, last = path.split(".")
        node = answer
        for key in parents:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(last, None)

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "managedFields"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return _UUID.sub("<uid>", json.dumps(strip(answer), sort_keys=True))


def _reviews(server: WebhookServer) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path, review in server.reviews:
        request = dict(review["request"])
        request.pop("uid")
        request.pop("userInfo")  # the sim's admin token vs the real server's client certificate
        for key in ("object", "oldObject"):
            if isinstance(request.get(key), dict):
                meta = {k: "<server>" if k in _SERVER_STAMPED else v
                        for k, v in request[key]["metadata"].items() if k != "managedFields"}
                request[key] = {k: v for k, v in request[key].items() if k not in _EVENT_DEFAULTS} | {"metadata": meta}
        out.append((path.split("?")[0], {**review, "request": request}))
    server.reviews.clear()
    return out


@pytest.mark.slow
def test_webhook_calls_answer_as_kube_apiserver_does(tmp_path: Path) -> None:
    try:
        release = servers.release_or_not_built(None)
    except servers.NotBuilt as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{exc}; {REQUIRE_ENV}=1 forbids skipping", pytrace=False)
        pytest.skip(str(exc))
    server = WebhookServer(tmp_path, handler=_answer)
    try:
        scenarios = _scenarios(server)
        with servers.sim(False) as endpoint:
            sim_records = run.run_corpus(endpoint, scenarios)
        sim_reviews = _reviews(server)
        with servers.real(release, False) as endpoint:
            real_records = run.run_corpus(endpoint, scenarios)
        real_reviews = _reviews(server)
    finally:
        server.close()
    results = compare.compare(scenarios, sim_records, real_records, accepted.ACCEPTED)
    different = {r.id: (_view(r.sim, r.id), _view(r.real, r.id)) for r in results
                 if _view(r.sim, r.id) != _view(r.real, r.id)
                 and not r.id.endswith("/uninstall")}  # DELETE answering the object vs a Status: general
    assert different == {}, different
    assert len(sim_reviews) == len(real_reviews) > 10, (len(sim_reviews), len(real_reviews))
    for sim_review, real_review in zip(sim_reviews, real_reviews, strict=True):
        assert json.dumps(sim_review, sort_keys=True, indent=1) == json.dumps(real_review, sort_keys=True, indent=1)
