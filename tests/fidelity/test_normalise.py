"""The normaliser and the differ (pure): what each rule hides, and that it hides nothing else."""

from __future__ import annotations

from lwsconf.fidelity import diff, normalise
from lwsconf.fidelity.model import Answer, Step


def view(body: object, saved: dict[str, str] | None = None, step: Step | None = None, code: int = 200) -> dict:
    return normalise.normalise(Answer(code, body), step or Step("s"), saved or {})


def cm(**meta: object) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", **meta}, "data": {"k": "v"}}


def test_server_metadata_keeps_presence_not_value() -> None:
    a = view(cm(uid="1111", resourceVersion="5", creationTimestamp="2026-01-01T00:00:00Z"))
    b = view(cm(uid="2222", resourceVersion="812", creationTimestamp="2026-12-02T10:00:00Z"))
    assert a == b
    assert diff.differences(a, view(cm(resourceVersion="5"))) == [
        'body.metadata.creationTimestamp: "<server>" != (absent)', 'body.metadata.uid: "<server>" != (absent)']


def test_real_values_are_compared() -> None:
    other = cm(uid="1")
    other["data"] = {"k": "w"}
    assert diff.differences(view(cm(uid="1")), view(other)) == ['body.data.k: "v" != "w"']
    assert diff.differences(view(cm(), code=200), view(cm(), code=201)) == ["code: 200 != 201"]


def test_saved_values_read_as_their_names_even_inside_messages() -> None:
    uid_a, uid_b = "6f1c0a2e-0000-4000-8000-000000000001", "0b7d9e11-0000-4000-8000-000000000002"
    msg = "Precondition failed: UID in precondition: {}, UID in object meta: x"
    a = view({"kind": "Status", "message": msg.format(uid_a)}, {"uid": uid_a})
    b = view({"kind": "Status", "message": msg.format(uid_b)}, {"uid": uid_b})
    assert a == b and "${uid}" in a["body"]["message"]


def test_generated_name_suffix_and_cluster_ip() -> None:
    a = {"metadata": {"name": "cfg-ab1c2", "generateName": "cfg-"}, "spec": {"clusterIP": "10.0.0.7",
                                                                           "clusterIPs": ["10.0.0.7"]}}
    b = {"metadata": {"name": "cfg-zz9x8", "generateName": "cfg-"}, "spec": {"clusterIP": "127.96.0.3",
                                                                           "clusterIPs": ["127.96.0.3"]}}
    assert view(a) == view(b)
    headless = {"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}}
    assert view(headless)["body"]["spec"]["clusterIP"] == "None"
    not_generated = {"metadata": {"name": "cfg-toolong", "generateName": "cfg-"}}
    assert view(not_generated)["body"]["metadata"]["name"] == "cfg-toolong"


def test_managed_fields_lose_only_their_time() -> None:
    entry = {"manager": "m", "operation": "Update", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:data": {}}}
    a = view(cm(managedFields=[entry]))
    b = view(cm(managedFields=[{**entry, "time": "2027-01-01T00:00:00Z"}]))
    assert a == b
    c = view(cm(managedFields=[{**entry, "manager": "other"}]))
    assert diff.differences(a, c) == ['body.metadata.managedFields.0.manager: "m" != "other"']


def test_managed_fields_order_within_an_operation_is_the_clock_but_their_content_is_compared() -> None:
    user = {"manager": "user", "operation": "Update", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:spec": {}}}
    kcm = {"manager": "kube-controller-manager", "operation": "Update", "time": "2026-01-01T00:00:01Z",
           "subresource": "status", "fieldsV1": {"f:status": {}}}
    assert view(cm(managedFields=[user, kcm])) == view(cm(managedFields=[kcm, user]))
    wrong = {**kcm, "fieldsV1": {"f:spec": {}}}
    assert diff.differences(view(cm(managedFields=[user, kcm])), view(cm(managedFields=[wrong, user]))) == [
        'body.metadata.managedFields.0.fieldsV1.f:spec: (absent) != {}',
        'body.metadata.managedFields.0.fieldsV1.f:status: {} != (absent)']


def test_owner_uid_keys_in_managed_fields_are_server_values_but_owned_fields_are_compared() -> None:
    def owned(uid: str, fields: dict[str, object]) -> dict[str, object]:
        return {"manager": "m", "operation": "Update", "fieldsV1": {"f:metadata": {"f:ownerReferences": {
            ".": {}, f'k:{{"uid":"{uid}"}}': fields}}}}
    a = view(cm(managedFields=[owned("5bac5daa-b6de-4f80-b279-1b193f4537f5", {})]))
    assert a == view(cm(managedFields=[owned("a3ca7537-9d15-4f36-949b-46d3247379d2", {})]))
    assert a != view(cm(managedFields=[owned("a3ca7537-9d15-4f36-949b-46d3247379d2", {".": {}, "f:name": {}})]))


def test_resource_versions_in_messages() -> None:
    a = view({"kind": "Status", "message": "too old resource version: 1 (57)"})
    b = view({"kind": "Status", "message": "too old resource version: 1 (9120)"})
    assert a == b
    assert view({"kind": "Status", "message": "not found"}) != view({"kind": "Status", "message": "gone"})
    precondition = ("the ResourceVersion in the precondition ({}) does not match the ResourceVersion in record ({}). "
                    "The object might have been modified")
    assert view({"kind": "Status", "message": precondition.format(19, 21)}) == \
        view({"kind": "Status", "message": precondition.format(225, 227)})


def test_periodic_bookmarks_collapse_but_initial_events_end_is_kept() -> None:
    mark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}
    end = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9",
                                                       "annotations": {"k8s.io/initial-events-end": "true"}}}}
    added = {"type": "ADDED", "object": cm()}
    one = normalise.normalise(Answer(200, None, events=[added, mark, mark, mark]), Step("w"), {})
    two = normalise.normalise(Answer(200, None, events=[added, mark]), Step("w"), {})
    assert one == two
    with_end = normalise.normalise(Answer(200, None, events=[added, end, mark]), Step("w"), {})
    assert with_end != two and len(with_end["events"]) == 3
    none = normalise.normalise(Answer(200, None, events=[added]), Step("w"), {})
    assert none != two, "whether a bookmark came at all is still compared"


def test_controller_events_compare_names_in_order_without_modified() -> None:
    def ev(t: str, name: str) -> dict:
        return {"type": t, "object": {"metadata": {"name": name}}}
    step = Step("w", events="names")
    a = normalise.normalise(Answer(200, events=[ev("ADDED", "web-0"), ev("MODIFIED", "web-0"), ev("ADDED", "web-1")]),
                            step, {})
    b = normalise.normalise(Answer(200, events=[ev("ADDED", "web-0"), ev("ADDED", "web-1"), ev("MODIFIED", "web-1")]),
                            step, {})
    assert a == b == {"code": 200, "events": ["ADDED web-0", "ADDED web-1"]}
    c = normalise.normalise(Answer(200, events=[ev("ADDED", "web-1"), ev("ADDED", "web-0")]), step, {})
    assert c != a, "order is behaviour"


def test_vary_paths_are_dropped_on_both_sides_only_where_named() -> None:
    step = Step("s", vary=("body.status",))
    a = view({**cm(), "status": {"x": 1}}, step=step)
    b = view({**cm(), "status": {"x": 2}}, step=step)
    assert a == b and a["body"]["status"] == "<varies>"


def test_list_metadata_and_warnings() -> None:
    a = normalise.normalise(Answer(200, {"kind": "ConfigMapList",
                                         "metadata": {"resourceVersion": "5", "continue": "abc"}, "items": []},
                                   ["299 a"]), Step("l"), {})
    b = normalise.normalise(Answer(200, {"kind": "ConfigMapList", "metadata": {"resourceVersion": "77",
                                                                               "continue": "zzz"}, "items": []},
                                   ["299 a"]), Step("l"), {})
    assert a == b
    c = normalise.normalise(Answer(200, {"kind": "ConfigMapList", "metadata": {"resourceVersion": "77"}, "items": []}),
                            Step("l"), {})
    assert diff.differences(a, c) == ['body.metadata.continue: "<server>" != (absent)',
                                      'warnings: ["299 a"] != (absent)']


def test_differ_summary_is_bounded() -> None:
    a = {f"k{i}": i for i in range(50)}
    lines = diff.summary(a, {})
    assert len(lines) == diff.MAX_LINES + 1 and lines[-1] == "... and 30 more"
    assert diff.differences([1, 2], [1, 2, 3]) == ["(answer): [1, 2] != [1, 2, 3]"]


def test_status_details_uid_is_server_generated_but_the_rest_is_compared() -> None:
    def status(uid: str, name: str = "a") -> dict:
        return {"kind": "Status", "apiVersion": "v1", "status": "Success",
                "details": {"name": name, "kind": "configmaps", "uid": uid}}
    assert view(status("1111")) == view(status("2222"))
    assert diff.differences(view(status("1")), view(status("1", "b"))) == ['body.details.name: "a" != "b"']


def test_embedded_object_metadata_in_a_message_is_a_placeholder_and_the_rest_is_compared() -> None:
    """Rule embedded-metadata: uid, resourceVersion and times quoted inside a message (a patch kube-apiserver
    could not decode) are the servers' own; a different data value in the same quote is still a difference."""
    def quoted(uid: str, rv: str, when: str, value: str) -> dict:
        inner = ('{\\"data\\":{\\"a\\":' + value + '},\\"metadata\\":{\\"uid\\":\\"' + uid
                 + '\\",\\"resourceVersion\\":\\"' + rv + '\\",\\"creationTimestamp\\":\\"' + when + '\\"}}')
        return {"kind": "Status", "message": f'patch: Invalid value: "{inner}": json: cannot unmarshal number'}
    a = view(quoted("1111-aaaa", "5", "2026-01-01T00:00:00Z", "5"))
    b = view(quoted("2222-bbbb", "812", "2026-12-02T10:00:00Z", "5"))
    assert a == b and '\\"uid\\":\\"<server>\\"' in a["body"]["message"]
    assert diff.differences(a, view(quoted("1111-aaaa", "5", "2026-01-01T00:00:00Z", "6")))


def test_a_generated_namespace_name_is_masked_in_its_name_label_too() -> None:
    """Rule generated-name: the kubernetes.io/metadata.name label of a generated Namespace copies the random
    name; it is masked only where it equals the name, so a label naming something else still differs."""
    def ns(name: str, label: str) -> dict:
        return {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"generateName": "gen-", "name": name, "labels": {"kubernetes.io/metadata.name": label}}}
    assert view(ns("gen-abcde", "gen-abcde")) == view(ns("gen-vwxyz", "gen-vwxyz"))
    assert diff.differences(view(ns("gen-abcde", "gen-abcde")), view(ns("gen-vwxyz", "other")))


def _cm(rv: str, uid: str = "u-1", **status: object) -> dict[str, object]:
    return {"kind": "ConfigMap", "metadata": {"name": "c", "uid": uid, "resourceVersion": rv}, **status}


def test_resource_versions_are_compared_by_their_order_within_a_scenario() -> None:
    """Issue 33 item 2: a no-op write keeps the resourceVersion, a write moves it on; the numbers differ
    between servers, the order does not."""
    history = normalise.History()
    first, same, newer = (normalise.normalise_body(_cm(rv), {}, history) for rv in ("10", "10", "12"))
    assert [b["metadata"]["resourceVersion"] for b in (first, same, newer)] == ["<server>", "<rv:same>", "<rv:newer>"]
    older = normalise.normalise_body(_cm("11"), {}, history)
    assert older["metadata"]["resourceVersion"] == "<rv:older>"
    fresh = normalise.normalise_body({"kind": "ConfigMapList", "metadata": {"resourceVersion": "12"},
                                      "items": [_cm("12", uid="u-2")]}, {}, history)
    assert fresh["metadata"]["resourceVersion"] == "<rv:current>"
    assert fresh["items"][0]["metadata"]["resourceVersion"] == "<server>"  # first sight of that object
    stale = normalise.normalise_body({"kind": "ConfigMapList", "metadata": {"resourceVersion": "9"}, "items": []},
                                     {}, history)
    assert stale["metadata"]["resourceVersion"] == "<rv:stale>"
    bookmark = normalise.normalise_body({"kind": "ConfigMap", "metadata": {"resourceVersion": "15"}}, {}, history)
    assert bookmark["metadata"]["resourceVersion"] == "<rv:current>"


def test_two_servers_with_different_counters_but_the_same_order_compare_equal() -> None:
    sim, real = normalise.History(), normalise.History()
    for sim_rv, real_rv in (("3", "1042"), ("3", "1042"), ("8", "1077")):
        assert normalise.normalise_body(_cm(sim_rv), {}, sim) == normalise.normalise_body(_cm(real_rv), {}, real)
    no_op_bumped = normalise.normalise_body(_cm("9"), {}, sim)   # the sim bumps where kube-apiserver keeps
    kept = normalise.normalise_body(_cm("1077"), {}, real)
    assert no_op_bumped != kept


def test_a_conditions_transition_time_is_compared_as_kept_or_changed() -> None:
    history = normalise.History()

    def ready(status: str, when: str) -> dict[str, object]:
        return _cm("1", status={"conditions": [{"type": "Ready", "status": status, "lastTransitionTime": when}]})

    views = [normalise.normalise_body(ready(s, t), {}, history)["status"]["conditions"][0]["lastTransitionTime"]
             for s, t in (("False", "T1"), ("False", "T1"), ("True", "T2"))]
    assert views == ["<time>", "<time:kept>", "<time:changed>"]


def test_the_token_volumes_random_name_is_erased_but_its_use_is_compared() -> None:
    def pod(suffix: str, path: str = "/var/run/secrets/kubernetes.io/serviceaccount") -> dict[str, object]:
        name = f"kube-api-access-{suffix}"
        return {"kind": "Pod", "metadata": {"name": "p"}, "spec": {
            "volumes": [{"name": name, "projected": {"defaultMode": 420}}],
            "containers": [{"name": "c", "volumeMounts": [{"name": name, "mountPath": path}]}]}}
    assert view(pod("vz9vf")) == view(pod("pplxb"))
    assert view(pod("vz9vf"))["body"]["spec"]["volumes"][0]["name"] == "kube-api-access-*****"
    assert view(pod("vz9vf")) != view(pod("pplxb", path="/elsewhere"))


def test_an_events_clock_and_the_regarded_objects_counters_are_erased_its_content_is_not() -> None:
    def event(name: str, when: str, uid: str, note: str = "no nodes available") -> dict[str, object]:
        return {"kind": "Event", "metadata": {"name": name}, "eventTime": when, "firstTimestamp": None,
                "involvedObject": {"kind": "Pod", "name": "p", "uid": uid, "resourceVersion": "7"},
                "reason": "FailedScheduling", "message": note}
    one = view(event("p.18eefbd3588ad922", "2026-12-07T13:29:46.1Z", "u-1"))
    two = view(event("p.18eefc23d18afaa0", "2026-12-07T13:35:32.137003Z", "u-2"))
    assert one == two and one["body"]["metadata"]["name"] == "p.<hex time>"
    assert one["body"]["firstTimestamp"] is None
    assert one != view(event("p.18eefc23d18afaa0", "2026-12-07T13:35:32Z", "u-2", note="other"))
