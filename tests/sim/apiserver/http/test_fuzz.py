"""Fuzz: bad requests to the sim API server get a 4xx Kubernetes Status, never a 5xx, a hang or a lost write.

The grammar of bad requests is `fuzz_requests` (twelve families: malformed bodies, wrong types in every
LWS field, unknown fields under Strict/Warn/Ignore, bad selectors and resourceVersions, unknown media
types, bad patches of every type, huge bodies, path traversal, bad query parameters, bad subresource
bodies, bad pod binding/eviction/namespace finalize bodies); the judge is `fuzz_oracle`. Each drawn
request is sent over TLS to a live server with the LWS CRD installed; then /readyz must answer and
the targets and sentinels must read back byte-identical.

This is the short, deterministic profile `make test` runs; `bench/fuzz_apiserver.py` runs the long one
and records the figures in bench/results.json. Each `@example` is an input that once broke the server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.sim.apiserver.http import fuzz_requests as fr
from tests.sim.apiserver.http.fuzz_oracle import FuzzServer, Reply, judge

SHORT = settings(max_examples=250, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                        HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzServer]:
    server = FuzzServer.start(tmp_path_factory.mktemp("fuzz"))
    yield server
    server.stop()


R = fr.FuzzRequest


@SHORT
@given(req=fr.any_request)
# Regressions: each input below once got a 500, a hang, a 2xx or a lost write (fixed at the decoder or validator
# that should refuse it).
@example(req=R("malformed_body/deep_list", "PUT", fr.TARGETS[1], b"[" * 5000 + b"]" * 5000))
@example(req=R("bad_query/limit", "GET", fr.CM + "?limit=-1", content_type=None, expect=fr.ACCEPT))
@example(req=R("bad_query/limit", "GET", fr.CM + "?limit=99999999999999999999", content_type=None,
               names=("limit|strconv.ParseInt",)))
@example(req=R("bad_query/timeoutSeconds", "GET", fr.LWS + "?watch=true&timeoutSeconds=inf", content_type=None,
                names=("timeoutSeconds|strconv.ParseInt",)))
@example(req=R("resource_version/watch", "GET", fr.CM + "?watch=true&timeoutSeconds=1&resourceVersion=%D9%A3",
                content_type=None, names=("resourceVersion",)))
@example(req=R("resource_version/list", "GET", fr.LWS + "?resourceVersion=abc", content_type=None,
                names=("resourceVersion",)))
@example(req=R("resource_version/match", "GET", fr.CM + "?resourceVersionMatch=exact", content_type=None,
                names=("resourceVersion",)))
@example(req=R("bad_patch/merge", "PATCH", fr.TARGETS[0], b'{"metadata": 5}', fr.MERGE))
@example(req=R("subresource/scale", "PUT", fr.TARGETS[0] + "/scale", b'{"spec": 5}'))
@example(req=R("subresource/scale", "PATCH", fr.TARGETS[0] + "/scale", b'{"metadata": 5, "spec": {"replicas": 2}}',
               fr.MERGE))
@example(req=R("resource_version/delete", "DELETE", fr.TARGETS[1], b'{"preconditions": "x"}'))
@example(req=R("bad_query/dryRun", "DELETE", fr.TARGETS[1] + "?dryRun=Bogus", content_type=None, names=("dryRun",)))
@example(req=R("content_type/update", "PUT", fr.TARGETS[0], fr.dump(fr.target_body(fr.LWS)), "image/png",
                names=("accepted media types include",)))
@example(req=R("content_type/create", "POST", fr.LWS + "?dryRun=All", b"k8s\x00\n\x0c",
               "application/vnd.kubernetes.protobuf", names=("application/vnd.kubernetes.protobuf",)))
@example(req=R("bad_query/fieldManager", "PATCH", fr.TARGETS[1] + "?fieldManager=" + "m" * 129,
                b'{"metadata": {"labels": {"changed": "yes"}}}', fr.MERGE, names=("fieldManager",)))
@example(req=R("bad_query/fieldManager", "POST", fr.LWS + "?fieldManager=bad%01manager", fr.dump(fr.lws("badquery")),
                names=("fieldManager",)))
@example(req=R("malformed_body/nan", "PUT", fr.TARGETS[1], fr.dump(fr.target_body(fr.CM))[:-1] + b', "zz": NaN}'))
@example(req=R("malformed_body/yaml_keys", "POST", fr.CM, b"metadata: {name: x, labels: {[a]: b}}", "application/yaml"))
@example(req=R("bad_patch/apply", "PATCH", fr.TARGETS[1] + "?fieldManager=f", fr.alias_bomb(10), fr.APPLY))
@example(req=R("bad_patch/merge", "PATCH", fr.TARGETS[1], b'{"immutable": "yes"}', fr.MERGE))
@example(req=R("bad_patch/strategic", "PATCH", fr.TARGETS[1], b'{"data": 5}', fr.STRATEGIC))
@example(req=R("bad_patch/merge", "PATCH", fr.TARGETS[1], b'{"metadata": {"name": null}}', fr.MERGE))
@example(req=R("malformed_body/yaml_deep", "PUT", fr.TARGETS[1], b"a: " + b"[" * 100000 + b"]" * 100000,
               "application/yaml"))
@example(req=R("unknown_fields/strict", "POST", fr.LWS + "?dryRun=All&fieldValidation=Strict",
               fr.dump(fr.lws("uf", zzf=1)), names=("strict decoding error", 'unknown field "metadata.zzf"')))
@example(req=R("pod_subresource/binding", "POST", fr.POD_TARGET + "/binding", b'{"target": 5}'))
@example(req=R("pod_subresource/finalize", "PUT", f"/api/v1/namespaces/{fr.NS}/finalize", b'{"spec": 5}'))
@example(req=R("unknown_fields/strict", "POST", fr.CM + "?dryRun=All&fieldValidation=Strict",
                b'{"metadata": {"generateName": "uf-"}, "data": {"k": "v"}, "zza": null}',
                names=("strict decoding error", 'unknown field "zza"')))
@example(req=R("malformed_body/yaml_bomb", "POST", fr.CM, fr.alias_bomb(10), "application/yaml"))
def test_a_bad_request_gets_a_4xx_status_and_changes_nothing(fuzz: FuzzServer, req: fr.FuzzRequest) -> None:
    problems = fuzz.exercise(req)
    assert not problems, req.describe() + "\n" + "\n".join(problems)


def test_every_watched_object_exists_so_that_a_lost_write_would_show(fuzz: FuzzServer) -> None:
    """The lost-write check compares bytes read back; comparing two 404s would prove nothing."""
    import json
    assert fuzz.alive()
    assert sorted(fuzz.baseline) == sorted(fuzz.watched_paths())
    for path, body in fuzz.baseline.items():
        meta = json.loads(body).get("metadata") or {}
        assert meta.get("resourceVersion") and meta.get("uid"), (path, body[:300])
    assert fuzz.lost_writes() == []


# --- the judge itself: each rule can fail ---------------------------------------------------------------

BAD = fr.FuzzRequest("t", "POST", fr.CM, b"{", names=("JSON",))


def _status(code: int, message: str = "the body is not valid JSON", **over: object) -> bytes:
    import json
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "BadRequest", "code": code, **over}
    return json.dumps(body).encode()


def test_the_judge_accepts_a_4xx_status_naming_the_problem() -> None:
    assert judge(BAD, Reply(400, {}, _status(400))) == []


@pytest.mark.parametrize(("reply", "complaint"), [
    (Reply(500, {}, _status(500)), "server error"),
    (Reply(201, {}, b"{}"), "expected reject"),
    (Reply(400, {}, b"Bad Request"), "not JSON"),
    (Reply(400, {}, _status(422)), "Status.code"),
    (Reply(400, {}, _status(400, kind="Pod")), "Status.kind"),
    (Reply(400, {}, _status(400, message="")), "no message"),
    (Reply(400, {}, _status(400, message="something went wrong")), "does not name"),
])
def test_the_judge_flags_each_kind_of_wrong_answer(reply: Reply, complaint: str) -> None:
    problems = judge(BAD, reply)
    assert any(complaint in p for p in problems), problems


def test_the_judge_wants_the_warning_to_name_the_unknown_field() -> None:
    req = fr.FuzzRequest("t", "POST", fr.CM, b"{}", expect=fr.WARN, names=('unknown field \\"zzx\\"',))
    assert judge(req, Reply(201, {"warning": '299 - "unknown field \\"zzx\\""'}, b"{}")) == []
    assert judge(req, Reply(201, {}, b"{}")) != []
