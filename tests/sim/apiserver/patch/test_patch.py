"""PATCH bodies: JSON patch, merge patch, strategic merge patch, server-side apply, media-type dispatch."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.patch import merge_patches, patch
from tests.conftest import SimAPI

NOW = "2026-01-01T00:00:00Z"


def _status(exc_info: pytest.ExceptionInfo[errors.StatusError]) -> errors.StatusError:
    return exc_info.value


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "main", "image": "busybox:1"}], **spec}}


def _smp(obj: dict[str, Any], body: dict[str, Any], kind: str = "Pod") -> dict[str, Any]:
    return merge_patches.strategic_merge_patch(obj, body, kind=kind)


def _dispatch(obj: dict[str, Any] | None, body: Any, content_type: str, *, builtin: bool = True,
              kind: str = "Pod", **kw: Any) -> dict[str, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return patch.apply_patch(obj, raw, content_type, kind=kind, builtin=builtin, **kw)


# --- dispatch on the media type --------------------------------------------------------------------

def test_each_media_type_reaches_its_patch_kind() -> None:
    pod = _pod()
    assert _dispatch(pod, [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}],
                     patch.JSON_PATCH)["metadata"]["labels"] == {"a": "b"}
    merged = _dispatch(pod, {"spec": {"containers": [{"name": "side", "image": "x"}]}}, patch.MERGE_PATCH)
    assert [c["name"] for c in merged["spec"]["containers"]] == ["side"]
    strategic = _dispatch(pod, {"spec": {"containers": [{"name": "side", "image": "x"}]}},
                          patch.STRATEGIC_MERGE_PATCH + "; charset=utf-8")
    # a new keyed item goes before the existing ones, as kube-apiserver 1.37.2 answers (lwsconf fidelity,
    # patches/patch-strategic/add-container)
    assert [c["name"] for c in strategic["spec"]["containers"]] == ["side", "main"]


def test_strategic_merge_patch_on_a_custom_resource_is_415_listing_the_accepted_types() -> None:
    with pytest.raises(errors.StatusError) as info:
        _dispatch({"kind": "LeaderWorkerSet"}, {}, patch.STRATEGIC_MERGE_PATCH, builtin=False,
                  kind="LeaderWorkerSet")
    assert info.value.code == 415
    assert patch.MERGE_PATCH in info.value.message and patch.STRATEGIC_MERGE_PATCH not in \
        info.value.message.split("include:")[1].split("(got")[0]


def test_unknown_media_type_is_415() -> None:
    with pytest.raises(errors.StatusError) as info:
        _dispatch(_pod(), {}, "application/json")
    assert info.value.code == 415 and info.value.reason == "UnsupportedMediaType"


@pytest.mark.parametrize("media", [patch.JSON_PATCH, patch.MERGE_PATCH, patch.STRATEGIC_MERGE_PATCH])
def test_malformed_json_body_is_400_saying_so(media: str) -> None:
    with pytest.raises(errors.StatusError) as info:
        _dispatch(_pod(), b'{"spec": ', media)
    assert (info.value.code, info.value.message) == (400, "invalid JSON patch")  # patch.go validateAndTranscodePatch


def test_non_utf8_and_nan_bodies_are_400() -> None:
    for body in (b"\xff\xfe{}", b'{"a": NaN}'):
        with pytest.raises(errors.StatusError) as info:
            _dispatch(_pod(), body, patch.MERGE_PATCH)
        assert info.value.code == 400


def test_force_on_a_non_apply_patch_is_422() -> None:
    with pytest.raises(errors.StatusError) as info:
        _dispatch(_pod(), {}, patch.MERGE_PATCH, force=True)
    assert info.value.code == 422 and info.value.causes[0].field == "force"


def test_apply_body_may_be_yaml_and_keeps_timestamps_as_strings() -> None:
    body = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    when: 2024-01-01T00:00:00Z\n"
    out = _dispatch(None, body, patch.APPLY_PATCH, manager="kubectl", api_version="v1", now=NOW)
    assert out["metadata"]["annotations"]["when"] == "2024-01-01T00:00:00Z"
    assert out["metadata"]["managedFields"][0]["manager"] == "kubectl"


def test_apply_body_sent_as_json_is_read_as_json() -> None:
    body = b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 1e3}}'
    out = _dispatch(None, body, patch.APPLY_PATCH, manager="m", api_version="v1", now=NOW)
    assert out["spec"]["priority"] == 1000


@pytest.mark.parametrize("media", [patch.MERGE_PATCH, patch.STRATEGIC_MERGE_PATCH, patch.APPLY_PATCH])
def test_absurdly_nested_bodies_are_400(media: str) -> None:
    body = b'{"apiVersion": "v1", "kind": "Pod", "spec": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001
    with pytest.raises(errors.StatusError) as info:
        _dispatch(_pod(), body, media, manager="m")
    assert info.value.code == 400


@pytest.mark.parametrize("body, fragment", [
    (b"", "empty"),
    (b"- a\n- b\n", "a list"),
    (b"a: [1\n", "error encoding patch: yaml: line 1: did not find expected ',' or ']'"),  # go-yaml's words
    (b"a: 1\n---\nb: 2\n", "not valid YAML or JSON"),
    (b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\ndata: !!binary aGk=\n", "cannot be expressed in JSON"),
])
def test_malformed_apply_bodies_are_400(body: bytes, fragment: str) -> None:
    with pytest.raises(errors.StatusError) as info:
        _dispatch(None, body, patch.APPLY_PATCH, manager="m")
    assert info.value.code == 400 and fragment in info.value.message


# --- RFC 6902 JSON patch ---------------------------------------------------------------------------

def test_json_patch_applies_operations_without_mutating_the_input() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    out = patch.json_patch(pod, [{"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:2"},
                                 {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}},
                                 {"op": "test", "path": "/metadata/name", "value": "p"}])
    assert out["spec"]["containers"][0]["image"] == "busybox:2" and out["metadata"]["labels"] == {"x": "y"}
    assert pod == before


def test_failing_test_operation_is_422_invalid() -> None:
    with pytest.raises(errors.StatusError) as info:
        patch.json_patch(_pod(), [{"op": "test", "path": "/metadata/name", "value": "other"}])
    assert (info.value.code, info.value.reason) == (422, "Invalid")
    assert "the server rejected our request due to an error in our request" in info.value.message


@pytest.mark.parametrize("ops", [
    [{"op": "remove", "path": "/metadata/labels"}],
    [{"op": "replace", "path": "/nope/deeper", "value": 1}],
    [{"op": "add", "path": "/spec/containers/7", "value": {}}],
    [{"op": "remove", "path": ""}],
])
def test_operations_on_missing_paths_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(errors.StatusError) as info:
        patch.json_patch(_pod(), ops)
    assert info.value.code == 422


def test_a_json_patch_that_is_not_a_list_of_objects_is_400_as_go_decodes_it() -> None:
    """patches/patch-json/not-a-list: the handler decodes the body into []handlers.jsonPatchOp first."""
    for body, what in ((b'{"op": "add"}', "object into Go value of type []handlers.jsonPatchOp"),
                       (b'["x"]', "string into Go value of type handlers.jsonPatchOp")):
        with pytest.raises(errors.StatusError) as info:
            _dispatch(_pod(), body, patch.JSON_PATCH)
        assert (info.value.code, info.value.message) == (400, f"error decoding patch: json: cannot unmarshal {what}")


@pytest.mark.parametrize("ops", [[{"op": "frobnicate", "path": "/a"}], [{"path": "/a"}], ["x"]])
def test_operations_json_patch_cannot_run_are_422(ops: Any) -> None:
    """patches/patch-json/bad-op: evanphx/json-patch decodes any operation and fails in Apply ("Unexpected
    kind"), which kube-apiserver answers as its generic 422."""
    with pytest.raises(errors.StatusError) as info:
        patch.json_patch(_pod(), ops)
    assert (info.value.code, info.value.message) == (422, "the server rejected our request due to an error in "
                                                          "our request")


def test_replacing_a_missing_key_of_an_object_adds_it() -> None:
    """patches/patch-json/replace-missing: json-patch v4's replace reads the key with partialDoc.get, which
    does not fail for a missing key, so the value is set; a missing parent still fails."""
    out = patch.json_patch({"data": {"a": "1"}}, [{"op": "replace", "path": "/data/nope", "value": "x"}])
    assert out == {"data": {"a": "1", "nope": "x"}}
    with pytest.raises(errors.StatusError):
        patch.json_patch({"data": {}}, [{"op": "replace", "path": "/spec/nope", "value": "x"}])


# --- RFC 7386 merge patch --------------------------------------------------------------------------

@pytest.mark.parametrize("target, body, expected", [  # RFC 7386 appendix A
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_merge_patch_follows_rfc_7386(target: dict[str, Any], body: dict[str, Any],
                                      expected: dict[str, Any]) -> None:
    assert merge_patches.merge_patch(target, body) == expected


def test_merge_patch_must_be_an_object() -> None:
    with pytest.raises(errors.StatusError) as info:
        merge_patches.merge_patch({}, ["a"])
    assert info.value.code == 400


_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=3)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=12)
_objects = st.dictionaries(st.text(max_size=3), _json, max_size=4)


def _diff(a: Any, b: Any) -> Any:
    """The merge patch that turns `a` into `b` (exists when `b` holds no nulls in maps)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return b
    out = {k: None for k in a if k not in b}
    out.update({k: _diff(a.get(k), v) for k, v in b.items() if k not in a or a[k] != v})
    return out


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    return value


@given(_objects, _objects)
def test_merge_patch_of_the_diff_reaches_the_target_and_is_idempotent(a: dict[str, Any],
                                                                       b: dict[str, Any]) -> None:
    target = _no_nulls(b)
    body = _diff(a, target)
    once = merge_patches.merge_patch(a, body)
    assert once == target
    assert merge_patches.merge_patch(once, body) == once


# --- strategic merge patch -------------------------------------------------------------------------

def test_containers_merge_by_name_and_env_by_name() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    out = _smp(pod, {"spec": {"containers": [
        {"name": "main", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]},
        {"name": "sidecar", "image": "envoy"}]}})
    main, sidecar = out["spec"]["containers"]
    assert main["image"] == "busybox:1"
    assert main["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]
    assert sidecar == {"name": "sidecar", "image": "envoy"}


def test_kubectl_apply_patch_removes_an_env_var_and_sets_the_order() -> None:
    pod = _pod()
    pod["spec"]["containers"] = [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"},
                                                                     {"name": "Y", "value": "2"}]},
                                 {"name": "b", "image": "1"}]
    body = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                     "containers": [{"$setElementOrder/env": [{"name": "Y"}], "name": "a",
                                     "env": [{"$patch": "delete", "name": "X"}]}]}}
    out = _smp(pod, body)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "a"]
    assert out["spec"]["containers"][1]["env"] == [{"name": "Y", "value": "2"}]
    assert "kubectl.kubernetes.io/last-applied-configuration" in out["metadata"]["annotations"]


def test_deleting_a_container_by_merge_key() -> None:
    pod = _pod()
    pod["spec"]["containers"].append({"name": "side", "image": "x"})
    out = _smp(pod, {"spec": {"containers": [{"$patch": "delete", "name": "main"}]}})
    assert out["spec"]["containers"] == [{"name": "side", "image": "x"}]


def test_ports_are_keyed_by_container_port_in_containers_and_by_port_in_services() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "name": "http"}]
    out = _smp(pod, {"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 80, "protocol": "TCP"},
                                                                        {"containerPort": 81}]}]}})
    assert out["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"},
                                                      {"containerPort": 81}]
    svc = {"kind": "Service", "spec": {"ports": [{"port": 80, "targetPort": 8080}]}}
    out = _smp(svc, {"spec": {"ports": [{"port": 80, "name": "web"}, {"port": 443}]}}, kind="Service")
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 8080, "name": "web"}, {"port": 443}]


def test_pod_template_inside_a_statefulset_merges_containers_by_name() -> None:
    sts = {"kind": "StatefulSet", "spec": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "leader", "image": "v1"}, {"name": "helper", "image": "h"}]}}}}
    out = _smp(sts, {"spec": {"template": {"spec": {"containers": [{"name": "leader", "image": "v2"}]}}}},
               kind="StatefulSet")
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "leader", "image": "v2"},
                                                             {"name": "helper", "image": "h"}]


def test_status_conditions_merge_by_type_and_node_addresses_by_type() -> None:
    dep = {"kind": "Deployment", "status": {"conditions": [{"type": "Available", "status": "False"},
                                                           {"type": "Progressing", "status": "True"}]}}
    out = _smp(dep, {"status": {"conditions": [{"type": "Available", "status": "True"}]}}, kind="Deployment")
    assert [c["status"] for c in out["status"]["conditions"]] == ["True", "True"]
    node = {"kind": "Node", "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}
    out = _smp(node, {"status": {"addresses": [{"type": "Hostname", "address": "n1"}]}}, kind="Node")
    assert len(out["status"]["addresses"]) == 2


def test_lists_without_a_merge_key_are_replaced() -> None:
    pod = _pod(tolerations=[{"key": "a"}])
    pod["spec"]["containers"][0]["args"] = ["one"]
    out = _smp(pod, {"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "main", "args": ["two"]}]}})
    assert out["spec"]["tolerations"] == [{"key": "b"}]
    assert out["spec"]["containers"][0]["args"] == ["two"]


def test_unknown_kinds_replace_lists_but_know_metadata() -> None:
    cm = {"kind": "Thing", "metadata": {"finalizers": ["a"]}, "spec": {"items": [{"name": "x", "v": 1}]}}
    out = _smp(cm, {"metadata": {"finalizers": ["b"]}, "spec": {"items": [{"name": "x"}]}}, kind="Thing")
    assert out["metadata"]["finalizers"] == ["a", "b"]
    assert out["spec"]["items"] == [{"name": "x"}]


def test_finalizers_union_and_delete_from_primitive_list() -> None:
    pod = _pod()
    pod["metadata"]["finalizers"] = ["a", "b"]
    assert _smp(pod, {"metadata": {"finalizers": ["c", "a"]}})["metadata"]["finalizers"] == ["b", "c", "a"]
    out = _smp(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]


def test_owner_references_merge_by_uid() -> None:
    pod = _pod()
    pod["metadata"]["ownerReferences"] = [{"uid": "1", "name": "a", "controller": True}]
    out = _smp(pod, {"metadata": {"ownerReferences": [{"uid": "1", "controller": False}, {"uid": "2"}]}})
    assert out["metadata"]["ownerReferences"] == [{"uid": "1", "name": "a", "controller": False}, {"uid": "2"}]


def test_patch_replace_directive_on_a_map_and_in_a_list() -> None:
    pod = _pod(nodeSelector={"a": "1", "b": "2"})
    out = _smp(pod, {"spec": {"nodeSelector": {"$patch": "replace", "c": "3"}}})
    assert out["spec"]["nodeSelector"] == {"c": "3"}
    out = _smp(pod, {"spec": {"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}})
    assert out["spec"]["containers"] == [{"name": "only", "image": "x"}]


def test_patch_delete_directive_on_a_map_empties_it() -> None:
    out = _smp(_pod(nodeSelector={"a": "1"}), {"spec": {"nodeSelector": {"$patch": "delete"}}})
    assert out["spec"]["nodeSelector"] == {}


def test_patch_merge_directive_is_the_default() -> None:
    out = _smp(_pod(nodeSelector={"a": "1"}), {"spec": {"nodeSelector": {"$patch": "merge", "b": "2"}}})
    assert out["spec"]["nodeSelector"] == {"a": "1", "b": "2"}


def test_retain_keys_drops_fields_not_listed() -> None:
    dep = {"kind": "Deployment", "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    out = _smp(dep, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, kind="Deployment")
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_set_element_order_alone_reorders_a_list() -> None:
    pod = _pod()
    pod["spec"]["containers"].append({"name": "b", "image": "x"})
    out = _smp(pod, {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "main"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "main"]


def test_null_deletes_a_field_and_new_values_are_cleaned_of_nulls() -> None:
    out = _smp(_pod(hostname="h"), {"spec": {"hostname": None, "securityContext": {"runAsUser": None,
                                                                                    "fsGroup": 2}}})
    assert "hostname" not in out["spec"] and out["spec"]["securityContext"] == {"fsGroup": 2}


@pytest.mark.parametrize("body, fragment", [
    ({"spec": {"containers": [{"image": "no-name"}]}}, "merge key 'name'"),
    ({"spec": {"containers": [{"$patch": "delete"}]}}, "merge key 'name'"),
    ({"spec": {"$retainKeys": "type"}}, "$retainKeys must be a list"),
    ({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}, "must be a list"),
    ({"spec": {"$setElementOrder/containers": ["main"]}}, "$setElementOrder/containers entry"),
    ({"$patch": "delete"}, "send DELETE"),
])
def test_bad_strategic_patches_are_400_naming_the_problem(body: dict[str, Any], fragment: str) -> None:
    with pytest.raises(errors.StatusError) as info:
        _smp(_pod(), body)
    assert info.value.code == 400 and fragment in info.value.message


def test_an_unknown_directive_is_worded_as_go_but_a_400() -> None:
    """patches/patch-strategic/bad-directive: mergepatch.ErrBadPatchType's words, the map printed as Go's %v
    does; kube-apiserver's reasonless 500 is a 400 on the sim (an accepted difference: no 5xx for bad input)."""
    for body in ({"spec": {"nodeSelector": {"$patch": "explode", "b": 1.5, "a": [1, True]}}},
                 {"spec": {"containers": [{"name": "main", "$patch": "explode"}]}}):
        with pytest.raises(errors.StatusError) as info:
            _smp(_pod(), body)
        status = info.value.to_status()
        assert info.value.code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == "unknown patch type: explode in map: map[$patch:explode name:main]"
    with pytest.raises(errors.StatusError) as info:
        _smp(_pod(), {"spec": {"nodeSelector": {"$patch": "explode", "b": 1.5, "a": [1, True]}}})
    assert info.value.message == "unknown patch type: explode in map: map[$patch:explode a:[1 true] b:1.5]"


def test_strategic_merge_patch_does_not_mutate_its_inputs() -> None:
    pod, body = _pod(), {"spec": {"containers": [{"name": "main", "image": "x"}]}}
    before = copy.deepcopy((pod, body))
    _smp(pod, body)
    assert (pod, body) == before


_directive_keys = st.sampled_from(["$patch", "$retainKeys", "$setElementOrder/containers", "name",
                                   "$deleteFromPrimitiveList/finalizers", "containers", "env", "spec",
                                   "metadata", "finalizers", "ports", "containerPort", "template"])
_smp_json = st.recursive(_scalars | st.sampled_from(["replace", "delete", "merge"]),
                         lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(_directive_keys | st.text(max_size=2), inner, max_size=4),
                         max_leaves=20)


@settings(max_examples=300)
@given(st.sampled_from(["Pod", "StatefulSet", "Node", "Service", "Thing"]), _smp_json, _smp_json)
def test_strategic_merge_patch_raises_only_status_errors(kind: str, original: Any, body: Any) -> None:
    obj = original if isinstance(original, dict) else {"spec": original}
    try:
        out = merge_patches.strategic_merge_patch(obj, body, kind=kind)
    except errors.StatusError as err:
        assert err.code == 400  # the sim answers no 5xx to a malformed patch
    else:
        assert isinstance(out, dict)


CMS = "/api/v1/namespaces/default/configmaps"


def test_a_json_patch_that_does_not_apply_is_the_bare_invalid_status(sim_api: SimAPI) -> None:
    """patches/patch-json/test-fails and remove-missing: kube-apiserver answers 422 Invalid "the server
    rejected our request due to an error in our request" with empty details, whatever failed."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "data": {"a": "1"}}
    assert sim_api.request("POST", CMS, json=cm).status_code == 201
    for ops in ([{"op": "test", "path": "/data/a", "value": "2"}], [{"op": "remove", "path": "/data/nope"}]):
        reply = sim_api.request("PATCH", f"{CMS}/j", json=ops, headers={"Content-Type": "application/json-patch+json"})
        assert reply.status_code == 422
        assert reply.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": "the server rejected our request due to an error in our request",
                                "reason": "Invalid", "details": {}, "code": 422}
