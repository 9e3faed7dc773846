"""managedFields on every write, as kube-apiserver's field manager records them (fieldmanager package).

The expected FieldsV1 documents are the ones kube-apiserver 1.37.2 answered in `lwsconf fidelity`
(crud/crud-deployments/create, apply/apply-configmap/*), and the rules are structured-merge-diff's
(`merge.Updater.update`, `typed.compareWalker`) and the apiserver's `managedFieldsUpdater` /
`FieldManager.Update`, cited per test.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.patch.fieldmanager import compare, entries, types

NOW, LATER = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def _record(old: dict[str, Any] | None, new: dict[str, Any], manager: str = "m", *, kind: str = "ConfigMap",
            subresource: str | None = None, now: str = NOW, status_reset: bool = False,
            sent: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
    entries.record_update(old, new, manager=manager, api_version=kw.pop("api_version", "v1"), subresource=subresource,
                          now=now, kind=kind, builtin=kw.pop("builtin", True), status_reset=status_reset, sent=sent,
                          **kw)
    return list(new["metadata"].get("managedFields", []))


def _cm(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": data}


def test_create_owns_what_it_set_and_a_new_map_is_a_member() -> None:
    """A create is compared with the kind's empty object: `data` is added (a "." member, as kube-apiserver
    answers `kubectl create configmap`); name, namespace and apiVersion are in the strip set."""
    [entry] = _record(None, _cm(a="1"))
    assert entry == {"manager": "m", "operation": "Update", "apiVersion": "v1", "time": NOW,
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "main", "image": "busybox",
                                                           "ports": [{"containerPort": 80}]}]}}}}


def test_create_of_a_deployment_matches_kube_apiservers_fieldsv1() -> None:
    """Structs Go always serialises (spec, strategy, template) are no "." members, the selector is atomic
    (LabelSelector is +structType=atomic), containers are keyed by name and their ports by containerPort and
    protocol with the schema default TCP (fidelity crud/crud-deployments/create)."""
    [entry] = _record(None, _deployment(), kind="Deployment", api_version="apps/v1", status_reset=True)
    assert entry["fieldsV1"] == {"f:spec": {
        "f:replicas": {}, "f:selector": {},
        "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}},
        "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                       "f:spec": {"f:containers": {'k:{"name":"main"}': {
                           ".": {}, "f:image": {}, "f:name": {},
                           "f:ports": {".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': {
                               ".": {}, "f:containerPort": {}}}}}}}}}


def test_updates_merge_per_manager_and_take_fields_from_others() -> None:
    """`managedFieldsUpdater`: the writer's fields join its entry for the same manager, operation and
    apiVersion, with the write's time; structured-merge-diff's update takes modified fields from every other
    manager and drops entries left empty."""
    first = _cm(a="1", b="2")
    _record(None, first, "alice")
    second = _cm(a="changed", b="2")
    second["metadata"]["managedFields"] = first["metadata"]["managedFields"]
    out = _record(first, second, "bob", now=LATER)
    assert [(e["manager"], e["fieldsV1"], e["time"]) for e in out] == [
        ("alice", {"f:data": {".": {}, "f:b": {}}}, NOW), ("bob", {"f:data": {"f:a": {}}}, LATER)]
    third = _cm(a="again", b="again")
    third["metadata"]["managedFields"] = out
    out = _record(second, third, "bob", now=LATER)
    assert [(e["manager"], e["fieldsV1"]) for e in out] == [
        ("alice", {"f:data": {}}), ("bob", {"f:data": {"f:a": {}, "f:b": {}}})]


def test_a_write_that_changes_nothing_leaves_the_entries_alone() -> None:
    """No field added or modified: no entry for the writer and no new time (managedFieldsUpdater only
    stamps the manager whose operation took fields)."""
    live = _cm(a="1")
    before = _record(None, live, "alice")
    same = _cm(a="1")
    assert _record(live, same, "bob", now=LATER) == before


def test_removed_fields_leave_every_entry() -> None:
    live = _cm(a="1", b="2")
    _record(None, live, "alice")
    out = _record(live, _cm(a="1"), "bob", now=LATER)
    assert [(e["manager"], e["fieldsV1"]) for e in out] == [("alice", {"f:data": {".": {}, "f:a": {}}})]


def test_managed_fields_sent_are_honoured_and_one_empty_entry_resets_them() -> None:
    """FieldManager.Update starts from the request's managedFields when it has some (an empty list keeps the
    stored ones); `[{}]` is one entry owning nothing, dropped, so a write that changes nothing else clears
    them (the Kubernetes documentation's way to strip managedFields)."""
    live = _cm(a="1")
    _record(None, live, "alice")
    kept = _cm(a="1")
    kept["metadata"]["managedFields"] = []
    assert _record(live, kept, "bob") == live["metadata"]["managedFields"]
    reset = _cm(a="1")
    reset["metadata"]["managedFields"] = [{}]
    assert _record(live, reset, "bob") == []
    assert "managedFields" not in reset["metadata"]


def test_status_writes_record_the_subresource_and_only_status() -> None:
    """A /status write owns status fields only (the status strategies' reset fields), in an entry naming the
    subresource; a main-resource write of a kind with a status subresource owns no status."""
    live = {**_deployment(), "status": {}}
    _record(None, live, "alice", kind="Deployment", api_version="apps/v1", status_reset=True)
    new = {**_deployment(), "status": {"replicas": 1}, "metadata": {**live["metadata"]}}
    out = _record(live, new, "kubelet", kind="Deployment", api_version="apps/v1", subresource="status",
                  status_reset=True)
    status = next(e for e in out if e["manager"] == "kubelet")
    assert status["subresource"] == "status" and status["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_fields_admission_sets_are_owned_only_when_sent() -> None:
    """Priority and ServiceAccount admission set a pod's priority and serviceAccountName after the field
    manager ran, so a client that did not send them does not own them (fidelity crud/crud-pods/create)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}], "serviceAccountName": "default", "priority": 0}}
    sent = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], "priority": 0}}
    [entry] = _record(None, pod, kind="Pod", status_reset=True, sent=sent)
    assert entry["fieldsV1"]["f:spec"].keys() == {"f:containers", "f:priority"}


def test_custom_resources_read_list_types_from_their_schema() -> None:
    """x-kubernetes-list-type map with its keys, set, and the default atomic list; a custom resource's
    empty object is unstructured, so its spec is a "." member too."""
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "string"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}}}}}}
    obj = {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t", "labels": {"a": "b"}},
           "spec": {"items": [{"name": "a", "v": "1"}], "tags": ["x"], "args": ["1", "2"]}}
    [entry] = _record(None, obj, kind="Thing", builtin=False, custom_schema=schema, api_version="x.io/v1")
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {".": {}, "f:args": {}, "f:items": {".": {}, 'k:{"name":"a"}': {".": {}, "f:name": {}, "f:v": {}}},
                   "f:tags": {".": {}, 'v:"x"': {}}}}


def test_the_manager_is_the_field_manager_or_the_user_agent_prefix() -> None:
    """handlers' managerOrUserAgent / prefixFromUserAgent: up to the first "/", at most 128 bytes."""
    assert entries.manager_name("", "kubectl/v1.37.2 (linux/amd64) kubernetes/abc") == "kubectl"
    assert entries.manager_name("mine", "kubectl/v1.37.2") == "mine"
    assert entries.manager_name("", "x" * 200) == "x" * 128


def test_compare_reports_a_null_field_filled_in_as_modified_not_added() -> None:
    """compareWalker: a field present but null on the left (a nil Go slice) is modified when set; only
    absent fields are added, and only those get their own path besides their members."""
    out = compare.compare({"spec": {"containers": None}}, {"spec": {"containers": [{"name": "a"}]}},
                          types.of_kind("Pod"))
    assert out.added == {("f:spec", "f:containers", 'k:{"name":"a"}'),
                         ("f:spec", "f:containers", 'k:{"name":"a"}', "f:name")}
    assert out.modified == set() and out.removed == set()


def test_a_scale_write_is_the_parents_entry_for_replicas_without_a_time() -> None:
    """kube-apiserver 1.37.2 records a /scale write as an Update of the parent's apiVersion with subresource
    "scale" and no time (fidelity subresources/scale-subresource/deployment-after-scale); the replicas leave
    the creator's entry."""
    live = _deployment()
    _record(None, live, "creator", kind="Deployment", api_version="apps/v1", status_reset=True)
    scaled = {**live, "spec": {**live["spec"], "replicas": 3}}
    out = _record(live, scaled, "hpa", kind="Deployment", api_version="apps/v1", subresource="scale", now="",
                  status_reset=True)
    assert out[0] == {"manager": "hpa", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                      "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"}
    assert "f:replicas" not in out[1]["fieldsV1"]["f:spec"]


def test_sim_controllers_are_named_after_the_component_they_stand_for() -> None:
    """The manager is the User-Agent up to "/", so the sim's controllers send their binary's name first, as
    kube-controller-manager and kube-scheduler do (fidelity controllers/ctl-statefulset/*)."""
    from lwsconf.sim import cluster

    assert entries.manager_name("", cluster.user_agent("statefulset-controller")) == "kube-controller-manager"
    assert entries.manager_name("", cluster.user_agent("scheduler")) == "kube-scheduler"
    assert entries.manager_name("", cluster.user_agent("kubelet/node-1")) == "kubelet"


def test_more_than_ten_update_managers_merge_the_oldest_into_ancient_changes() -> None:
    """capManagersManager (DefaultMaxUpdateManagers 10): the oldest Update entries of an apiVersion after its
    first are merged into "ancient-changes", which takes the time of the last one merged; Apply entries stay."""
    live = _cm(**{f"k{i:02}": "1" for i in range(10)})
    live["metadata"]["managedFields"] = [
        {"manager": f"m{i:02}", "operation": "Update", "apiVersion": "v1", "time": f"2026-01-01T00:00:{i:02}Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {f"f:k{i:02}": {}}}} for i in range(10)] + [
        {"manager": "applier", "operation": "Apply", "apiVersion": "v1", "time": NOW, "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:k00": {}}}}]
    new = _cm(**{f"k{i:02}": "1" for i in range(10)}, extra="1")
    new["metadata"]["managedFields"] = live["metadata"]["managedFields"]
    out = _record(live, new, "newcomer", now="2026-01-01T00:01:00Z")
    managers = [e["manager"] for e in out]
    assert len([e for e in out if e["operation"] == "Update"]) == 10
    assert "m00" not in managers and "m01" not in managers and "applier" in managers
    bucket = next(e for e in out if e["manager"] == "ancient-changes")
    assert bucket["fieldsV1"] == {"f:data": {"f:k00": {}, "f:k01": {}}} and bucket["time"] == "2026-01-01T00:00:01Z"


def test_a_daemonsets_template_generation_is_owned_by_its_writer() -> None:
    """apps/v1 conversion always shows TemplateGeneration as the deprecated.daemonset.template.generation
    annotation, so the creator owns it though the strategy sets its value later (fidelity
    crud/crud-daemonsets/create)."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"}, "spec": {"selector": None}}
    sent = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"}}
    [entry] = _record(None, ds, kind="DaemonSet", api_version="apps/v1", status_reset=True, sent=sent)
    assert entry["fieldsV1"]["f:metadata"] == {"f:annotations": {".": {},
                                                                 "f:deprecated.daemonset.template.generation": {}}}


def test_compare_skips_equal_subtrees_but_not_a_type_change() -> None:
    out = compare.compare({"spec": {"a": {"b": 1}, "c": 1}}, {"spec": {"a": {"b": 1}, "c": "1"}}, types.of_kind("X"))
    assert out.modified == {("f:spec", "f:c")} and not out.added and not out.removed


def test_an_events_involved_object_is_atomic() -> None:
    """core/v1 ObjectReference is +structType=atomic (fidelity webhooks/webhooks-exact/core-event-not-hooked)."""
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "R",
             "involvedObject": {"kind": "Pod", "name": "p"}}
    [entry] = _record(None, event, kind="Event")
    assert entry["fieldsV1"] == {"f:involvedObject": {}, "f:reason": {}}


def test_a_controller_revisions_data_is_owned_whole() -> None:
    """apps/v1 ControllerRevision.data is a RawExtension: kube-apiserver 1.37.2 records `f:data: {}` for the
    reference's revisions (held-out corpus, issue 33), never the fields inside the stored template."""
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"}, "revision": 1,
                "data": {"spec": {"leaderWorkerTemplate": {"size": 2}}}}
    [entry] = _record(None, revision, kind="ControllerRevision", api_version="apps/v1")
    assert entry["fieldsV1"] == {"f:data": {}, "f:revision": {}}
