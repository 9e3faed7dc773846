"""The snapshot normaliser (pure): what each rule hides, that it keeps presence, that hashes become stable tokens."""

from __future__ import annotations

import copy
from typing import Any

from lwsconf import lwsapi
from lwsconf.implcompare import diff, normalise

HASH = lwsapi.TEMPLATE_REVISION_HASH


def pod(name: str, *, rev: str = "abcde12345", node: str = "node-3", ip: str = "127.5.1.7", uid: str = "u-1",
        crh: str | None = None) -> dict[str, Any]:
    labels = {HASH: rev, lwsapi.NAME: "x"}
    if crh:
        labels["controller-revision-hash"] = crh
    return {"kind": "Pod", "metadata": {"name": name, "uid": uid, "resourceVersion": "77", "labels": labels,
                                        "creationTimestamp": "2026-12-06T06:00:00Z", "generation": 1,
                                        "managedFields": [{"manager": "lws-reference"}],
                                        "ownerReferences": [{"kind": "StatefulSet", "name": "x", "uid": "o-1"}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]},
            "status": {"podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "127.5.0.2", "startTime": "2026-12-06T06:00:01Z",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t1"},
                                      {"type": "Initialized", "status": "True", "lastTransitionTime": "t0"}],
                       "containerStatuses": [{"name": "c", "containerID": "sim://1", "restartCount": 0,
                                              "state": {"running": {"startedAt": "2026-12-06T06:00:02Z"}}}]}}


def snap(objects: list[dict[str, Any]], tokens: normalise.Tokens | None = None) -> dict[str, Any]:
    return normalise.snapshot(objects, "x", tokens or normalise.Tokens())


def test_generated_values_become_placeholders_and_keep_presence() -> None:
    a = snap([pod("x-0")])
    b = snap([pod("x-0", node="node-1", ip="127.9.2.3", uid="u-2")])
    assert a == b
    meta = a["Pod/x-0"]["metadata"]
    assert (meta["uid"], meta["resourceVersion"], meta["creationTimestamp"]) == ("<server>",) * 3
    assert "managedFields" not in meta and meta["ownerReferences"][0]["uid"] == "<server>"
    assert a["Pod/x-0"]["spec"]["nodeName"] == "<node>" and a["Pod/x-0"]["status"]["podIP"] == "<ip>"
    missing = pod("x-0")
    del missing["metadata"]["uid"]
    assert diff.differences("s", "steady", a, snap([missing])) != []


def test_what_an_implementation_writes_is_compared() -> None:
    other = pod("x-0")
    other["spec"]["containers"][0]["env"][0]["value"] = "2"
    other["status"]["containerStatuses"][0]["restartCount"] = 1
    found = {(d.obj, d.path) for d in diff.differences("s", "steady", snap([pod("x-0")]), snap([other]))}
    assert found == {("x-0", "spec.containers[c].env[A].value"), ("x-0", "status.containerStatuses[c].restartCount")}


def test_conditions_compare_sorted_by_type() -> None:
    other = pod("x-0")
    other["status"]["conditions"].reverse()
    assert snap([pod("x-0")]) == snap([other])


def test_revision_hashes_become_tokens_that_keep_their_equality_pattern() -> None:
    a = snap([pod("x-0", rev="aaaa1111"), pod("x-1", rev="aaaa1111"), pod("x-2", rev="bbbb2222")])
    b = snap([pod("x-0", rev="zzzz9999"), pod("x-1", rev="zzzz9999"), pod("x-2", rev="yyyy8888")])
    assert a == b
    assert a["Pod/x-0"]["metadata"]["labels"][HASH] == "<template-revision-hash:1>"
    assert a["Pod/x-2"]["metadata"]["labels"][HASH] == "<template-revision-hash:2>"
    same = snap([pod("x-0", rev="q1"), pod("x-1", rev="q2"), pod("x-2", rev="q2")])
    assert diff.differences("s", "steady", a, same)  # pods sharing a revision on one side only: a difference


def test_tokens_last_across_a_scenarios_snapshots_and_names() -> None:
    tokens = normalise.Tokens()
    first = snap([pod("x-0", rev="old12345", crh="x-5d8f9")], tokens)
    revision = {"kind": "ControllerRevision", "revision": 1,
                "metadata": {"name": "x-5d8f9", "ownerReferences": [{"kind": "StatefulSet", "name": "x"}]}}
    later = snap([pod("x-0", rev="new67890", crh="x-77aa1"), revision], tokens)
    assert first["Pod/x-0"]["metadata"]["labels"][HASH] == "<template-revision-hash:1>"
    assert later["Pod/x-0"]["metadata"]["labels"][HASH] == "<template-revision-hash:2>"
    # keyed by owner and revision number, its hashed name as the token it was given at the first snapshot
    assert later["ControllerRevision/StatefulSet/x#1"]["metadata"]["name"] == "<controller-revision-hash:1>"


def test_events_are_compared_as_the_set_of_reasons_regarding_the_lws() -> None:
    def event(reason: str, count: int, kind: str = "LeaderWorkerSet") -> dict[str, Any]:
        return {"kind": "Event", "type": "Normal", "reason": reason, "count": count, "message": f"n={count}",
                "involvedObject": {"kind": kind, "name": "x"}, "metadata": {"name": f"x.{count}"}}

    a = snap([event("CreatingRevision", 1), event("GroupsProgressing", 3), event("Scheduled", 1, "Pod")])
    b = snap([event("GroupsProgressing", 1), event("CreatingRevision", 2)])
    assert a == b
    assert a["Events/x"]["reasons"] == ["Normal CreatingRevision", "Normal GroupsProgressing"]


def test_write_counts_keep_whether_the_controller_caught_up() -> None:
    sts = {"kind": "StatefulSet", "metadata": {"name": "x", "generation": 3}, "status": {"observedGeneration": 3}}
    behind = copy.deepcopy(sts)
    behind["status"]["observedGeneration"] = 2
    lws = {"kind": "LeaderWorkerSet", "metadata": {"name": "x", "generation": 2}}
    a, b = snap([sts, lws]), snap([behind, lws])
    assert a["StatefulSet/x"]["metadata"]["generation"] == "<generation>"
    assert a["StatefulSet/x"]["status"]["observedGeneration"] == "<current>"
    assert b["StatefulSet/x"]["status"]["observedGeneration"] == "<behind>"
    assert a["LeaderWorkerSet/x"]["metadata"]["generation"] == 2  # the scenario's own writes: compared


def test_every_rule_is_documented_with_a_name_and_reason() -> None:
    for rule in normalise.RULES:
        doc = rule.__doc__ or ""
        assert doc.startswith("Rule `") and "Why" in doc, rule.__name__


def test_what_a_real_api_server_adds_at_random_is_normalised() -> None:
    """On `local`: the projected token volume's random suffix, the node's zone copied onto the pod, and
    kube-controller-manager's hash label on a StatefulSet's revisions."""
    def real_pod(suffix: str, zone: str) -> dict[str, Any]:
        p = pod("x-0")
        p["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone
        p["spec"]["volumes"] = [{"name": f"kube-api-access-{suffix}", "projected": {"sources": []}}]
        p["spec"]["containers"][0]["volumeMounts"] = [{"name": f"kube-api-access-{suffix}", "mountPath": "/var/x"}]
        return p

    def revision(h: str) -> dict[str, Any]:
        return {"kind": "ControllerRevision", "revision": 1, "metadata": {
            "name": f"x-{h}", "labels": {"controller.kubernetes.io/hash": h},
            "ownerReferences": [{"kind": "StatefulSet", "name": "x"}]}}

    assert snap([real_pod("4tpcp", "zone-a"), revision("5889fd6c85")]) == snap([real_pod("x4g74", "zone-b"),
                                                                              revision("79ff55d858")])
    mounted = real_pod("4tpcp", "zone-a")
    mounted["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] = "/elsewhere"
    assert diff.differences("s", "steady", snap([real_pod("4tpcp", "zone-a")]), snap([mounted]))
