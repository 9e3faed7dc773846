"""Server-side apply: merging, FieldsV1 ownership records, removal of dropped fields, conflicts, force."""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.patch import apply

NOW = "2026-01-01T00:00:00Z"


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "main", "image": "busybox:1"}], **spec}}


def _apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str = "m1", force: bool = False,
           kind: str = "Pod", builtin: bool = True) -> dict[str, Any]:
    return apply.server_side_apply(live, config, manager=manager, force=force, kind=kind, builtin=builtin,
                                   api_version=config["apiVersion"], now=NOW)


def _fields(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    entry = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == manager)
    return entry["fieldsV1"]  # type: ignore[no-any-return]


def test_apply_records_managed_fields_in_fieldsv1_encoding() -> None:
    config = _pod()
    config["metadata"].update(labels={"app": "web"}, finalizers=["example.com/f"])
    config["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    out = _apply(None, config)
    [entry] = out["metadata"]["managedFields"]
    assert {k: v for k, v in entry.items() if k != "fieldsV1"} == {
        "manager": "m1", "operation": "Apply", "apiVersion": "v1", "time": NOW, "fieldsType": "FieldsV1"}
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:app": {}}, "f:finalizers": {'v:"example.com/f"': {}}},
        "f:spec": {"f:containers": {'k:{"name":"main"}': {
            ".": {}, "f:name": {}, "f:image": {},
            "f:env": {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}}}}},
    }
    assert out["spec"] == config["spec"]


def test_fieldsv1_encoding_round_trips() -> None:
    out = _apply(None, _pod(tolerations=[{"key": "a"}]))
    fields = _fields(out, "m1")
    assert fields["f:spec"]["f:tolerations"] == {}
    assert apply.encode(apply.decode(fields)) == fields


def test_reapply_removes_a_field_the_manager_dropped() -> None:
    config = _pod()
    config["metadata"]["labels"] = {"keep": "1", "drop": "2"}
    config["spec"]["containers"].append({"name": "side", "image": "x"})
    first = _apply(None, config)
    config["metadata"]["labels"] = {"keep": "1"}
    config["spec"]["containers"].pop()
    second = _apply(first, config)
    assert second["metadata"]["labels"] == {"keep": "1"}
    assert [c["name"] for c in second["spec"]["containers"]] == ["main"]
    assert 'k:{"name":"side"}' not in _fields(second, "m1")["f:spec"]["f:containers"]


def test_a_dropped_field_owned_by_another_manager_stays() -> None:
    a = _pod()
    a["metadata"]["labels"] = {"shared": "1"}
    obj = _apply(_apply(None, a, "m1"), a, "m2")
    del a["metadata"]["labels"]
    out = _apply(obj, a, "m1")
    assert out["metadata"]["labels"] == {"shared": "1"}
    assert "f:metadata" not in _fields(out, "m1")


def test_fields_not_applied_by_anyone_are_kept() -> None:
    live = _pod(hostname="set-by-update")
    out = _apply(live, _pod())
    assert out["spec"]["hostname"] == "set-by-update"


def test_conflicting_apply_managers_get_409_naming_each_field() -> None:
    obj = _apply(None, _pod(), "m1")
    other = _pod()
    other["spec"]["containers"][0]["image"] = "busybox:2"
    with pytest.raises(errors.StatusError) as info:
        _apply(obj, other, "m2")
    err = info.value
    assert (err.code, err.reason) == (409, "Conflict")
    assert [(c.field, c.reason) for c in err.causes] == [
        ('.spec.containers[name="main"].image', "FieldManagerConflict")]
    assert err.causes[0].message == 'conflict with "m1"'
    # kube-apiserver's getConflictMessage, nothing more (kubectl adds its own --force-conflicts advice)
    assert err.message == 'Apply failed with 1 conflict: conflict with "m1": .spec.containers[name="main"].image'


def test_conflicts_with_several_fields_are_grouped_by_manager() -> None:
    first = _pod()
    first["metadata"]["labels"] = {"a": "1", "b": "1"}
    obj = _apply(None, first, "m1")
    first["metadata"]["labels"] = {"a": "2", "b": "2"}
    with pytest.raises(errors.StatusError) as info:
        _apply(obj, first, "m2")
    assert info.value.message.startswith('Apply failed with 2 conflicts:\nconflicts with "m1":\n'
                                         "- .metadata.labels.a\n- .metadata.labels.b")
    assert len(info.value.causes) == 2


def test_same_value_is_shared_without_conflict() -> None:
    obj = _apply(_apply(None, _pod(), "m1"), _pod(), "m2")
    assert {e["manager"] for e in obj["metadata"]["managedFields"]} == {"m1", "m2"}


def test_force_takes_ownership_from_the_other_manager() -> None:
    obj = _apply(None, _pod(), "m1")
    other = _pod()
    other["spec"]["containers"][0]["image"] = "busybox:2"
    out = _apply(obj, other, "m2", force=True)
    assert out["spec"]["containers"][0]["image"] == "busybox:2"
    owned_by_m1 = apply.decode(_fields(out, "m1"))
    assert ("f:spec", "f:containers", 'k:{"name":"main"}', "f:image") not in owned_by_m1
    assert ("f:spec", "f:containers", 'k:{"name":"main"}', "f:name") in owned_by_m1


def test_apply_conflicts_with_an_update_manager_and_force_takes_the_field() -> None:
    """structured-merge-diff's Updater.Apply checks every other manager, Update ones included, against the
    fields the apply changes; kube-apiserver names an Update manager with its apiVersion ("using v1"), as
    fidelity's apply/apply-configmap/apply-over-update-manager shows. With force the field leaves its entry."""
    live = _pod()
    live["metadata"]["managedFields"] = [{
        "manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"main"}': {"f:image": {}, "f:name": {}}}}}}]
    other = _pod()
    other["spec"]["containers"][0]["image"] = "busybox:9"
    with pytest.raises(errors.StatusError) as caught:
        _apply(live, other, "m2")
    assert caught.value.code == 409
    assert [(c.field, c.message) for c in caught.value.causes] == [
        ('.spec.containers[name="main"].image', 'conflict with "kubectl-edit" using v1')]
    out = _apply(live, other, "m2", force=True)
    assert out["spec"]["containers"][0]["image"] == "busybox:9"
    assert _fields(out, "kubectl-edit") == {"f:spec": {"f:containers": {'k:{"name":"main"}': {"f:name": {}}}}}


def test_apply_with_the_same_value_is_no_conflict() -> None:
    """Only fields the apply adds or modifies conflict (Comparison.Modified/Added): applying a value another
    manager already set shares the field."""
    live = _apply(None, _pod(), "m1")
    out = _apply(live, _pod(), "m2")
    assert _fields(out, "m1") == _fields(out, "m2")


def test_custom_resources_replace_lists_and_own_them_atomically() -> None:
    lws: dict[str, Any] = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                           "metadata": {"name": "l"},
                           "spec": {"replicas": 2, "items": [{"name": "a"}, {"name": "b"}]}}
    first = _apply(None, lws, kind="LeaderWorkerSet", builtin=False)
    lws["spec"]["items"] = [{"name": "c"}]
    out = _apply(first, lws, kind="LeaderWorkerSet", builtin=False)
    assert out["spec"]["items"] == [{"name": "c"}]
    assert _fields(out, "m1") == {"f:spec": {"f:replicas": {}, "f:items": {}}}


@pytest.mark.parametrize("config, code, fragment", [
    ({"kind": "Pod", "metadata": {"name": "p"}}, 400, "apiVersion and kind"),
    ({"apiVersion": "apps/v1", "kind": "Deployment"}, 400, "invalid object type: apps/v1, Kind=Deployment"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"managedFields": []}}, 400, "managedFields must be nil"),
    ({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"image": "x"}]}}, 400, "omits key field"),
])
def test_malformed_apply_configurations_are_rejected(config: dict[str, Any], code: int, fragment: str) -> None:
    with pytest.raises(errors.StatusError) as info:
        apply.server_side_apply(None, config, manager="m", force=False, kind="Pod", builtin=True,
                                api_version="v1", now=NOW)
    assert info.value.code == code and fragment in info.value.message


def test_apply_without_a_field_manager_is_422() -> None:
    with pytest.raises(errors.StatusError) as info:
        apply.server_side_apply(None, _pod(), manager="", force=False, kind="Pod", builtin=True,
                                api_version="v1", now=NOW)
    assert info.value.code == 422 and info.value.causes[0].field == "fieldManager"


def test_apply_to_status_owns_only_status_under_its_subresource() -> None:
    """An apply through /status is recorded with subresource "status" and owns no spec field (the status
    strategy's reset fields are the field manager's ignored fields); an apply to the object of a kind with a
    status subresource owns no status."""
    live = _apply(None, _pod(), "m1")
    config = {**_pod(), "status": {"phase": "Running"}}
    out = apply.server_side_apply(live, config, manager="kubelet", force=False, kind="Pod", builtin=True,
                                  api_version="v1", now=NOW, subresource="status", status_reset=True)
    entry = next(e for e in out["metadata"]["managedFields"] if e["manager"] == "kubelet")
    assert entry["subresource"] == "status" and entry["fieldsV1"] == {"f:status": {"f:phase": {}}}
    main = apply.server_side_apply(live, config, manager="m1", force=False, kind="Pod", builtin=True,
                                   api_version="v1", now=NOW, status_reset=True)
    assert "f:status" not in _fields(main, "m1")
