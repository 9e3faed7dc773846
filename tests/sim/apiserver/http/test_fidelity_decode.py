"""Answers of kube-apiserver's typed decoding that the differential corpus (`lwsconf fidelity` against
kube-apiserver 1.37.2) found the sim giving differently: wrong JSON types, nested unknown fields, YAML
1.1 booleans, the DeleteOptions body, continue tokens, unsupported media types, trimmed JSONPatch
expressions. Each test names the corpus interaction and the Kubernetes source that decides the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import reads
from lwsconf.sim.apiserver.patch import yaml_bodies
from lwsconf.sim.apiserver.protobuf import godecode, gostructs
from tests.conftest import SimAPI

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(name: str, **spec: Any) -> dict[str, Any]:
    pod = {"metadata": {"labels": {"app": name}},
           "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": pod, **spec}}


@pytest.mark.parametrize(("api_version", "kind", "body", "expected"), [
    ("v1", "ConfigMap", {"data": {"a": 1}},
     "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
    ("v1", "ConfigMap", {"metadata": {"labels": {"a": 1}}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
    ("v1", "ConfigMap", {"metadata": "cm"},
     "json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"),
    ("apps/v1", "Deployment", {"spec": {"replicas": "3"}},
     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("apps/v1", "Deployment", {"spec": {"replicas": 3000000000}},
     "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("v1", "Pod", {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1, "protocol": 6}]}]}},
     "json: cannot unmarshal number into Go struct field ContainerPort.spec.containers.ports.protocol of type "
     "v1.Protocol"),
    ("v1", "Pod", {"spec": {"volumes": [{"name": "v", "configMap": {"name": 3}}]}},
     "json: cannot unmarshal number into Go struct field ConfigMapVolumeSource.spec.volumes.VolumeSource.configMap"
     ".LocalObjectReference.name of type string"),
])
def test_the_first_wrong_type_is_worded_as_encoding_json(api_version: str, kind: str, body: dict[str, Any],
                                                         expected: str) -> None:
    """requests/bad-requests/wrong-type-*: sigs.k8s.io/json's UnmarshalTypeError, the innermost struct's name,
    the JSON names from the root (embedded structs by their Go names, as decode.go's errorContext pushes them;
    no map keys or list indexes) and reflect's
    name of the type (a named string type keeps its package: `v1.Protocol`)."""
    message = godecode.message_for(api_version, kind)
    assert message is not None
    assert godecode.decode({"apiVersion": api_version, "kind": kind, **body}, message).type_error == expected


def test_unknown_fields_at_any_depth_are_dropped_and_named_in_document_order() -> None:
    """requests/field-validation/nested-unknown-*: the strict decoder's paths (list indexes as [i]) in the order
    the keys come, and the typed object keeps none of them."""
    body = _deployment("d", replicaz=3)
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "x"
    message = godecode.message_for("apps/v1", "Deployment")
    assert message is not None
    found = godecode.decode(body, message, prune=True)
    assert found.type_error is None
    assert found.unknown == ["spec.template.spec.containers[0].imagePullPolice", "spec.replicaz"]
    assert "replicaz" not in body["spec"] and "imagePullPolice" not in body["spec"]["template"]["spec"]["containers"][0]


def test_go_type_names_use_package_names_not_import_aliases() -> None:
    """gofields.json's fifth column: reflect.Type.String() names `metav1.Time` `v1.Time`, a local type by the
    file's package, drops the pointer and spells byte uint8."""
    source = 'package v1\nimport (\n\tmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"\n)\n'
    assert gostructs.go_type_string("*metav1.Time", source) == "v1.Time"
    assert gostructs.go_type_string("[]Container", source) == "[]v1.Container"
    assert gostructs.go_type_string("map[string][]byte", source) == "map[string][]uint8"


def test_wrong_types_and_nested_unknown_fields_through_the_server(sim_api: SimAPI) -> None:
    """The 400 is `transformDecodeError`'s (apiserver handlers/rest.go) before any validation; Strict refuses a
    nested unknown field, Warn stores the object without it and warns."""
    reply = sim_api.request("POST", DEPLOYMENTS, json=_deployment("w", replicas="3"))
    assert reply.status_code == 400, reply.text
    assert reply.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
        "struct field DeploymentSpec.spec.replicas of type int32")
    reply = sim_api.request("POST", DEPLOYMENTS + "?fieldValidation=Strict", json=_deployment("n1", replicaz=3))
    assert reply.status_code == 400, reply.text
    assert reply.json()["message"].endswith('strict decoding error: unknown field "spec.replicaz"')
    reply = sim_api.request("POST", DEPLOYMENTS + "?fieldValidation=Warn", json=_deployment("n2", replicaz=3))
    assert reply.status_code == 201, reply.text
    assert "replicaz" not in reply.json()["spec"]
    assert reply.headers.get("Warning") == '299 - "unknown field \\"spec.replicaz\\""'


def test_yaml_y_and_n_are_booleans_as_in_go_yaml_v2(sim_api: SimAPI) -> None:
    """requests/bad-requests/yaml-body: sigs.k8s.io/yaml resolves `y` to true (go-yaml v2 resolve.go), so the
    name is a bool and the typed decode refuses it."""
    assert yaml.load("a: y\nb: N\nc: 'y'\nd: yy", Loader=yaml_bodies.KubeYamlLoader) == {
        "a": True, "b": False, "c": "y", "d": "yy"}
    reply = sim_api.request("POST", CMS, data=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n",
                            headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 400, reply.text
    assert reply.json()["message"].endswith(
        "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.name of type string")


def test_delete_body_that_is_not_json_and_unknown_media_type(sim_api: SimAPI) -> None:
    """deletion/delete-propagation/body-not-json: the JSON serializer's SimpleMetaFactory error; requests/
    bad-requests/unsupported-media-type: NewUnsupportedMediaTypeError lists the accepted types only."""
    assert sim_api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": "d"}}).status_code == 201
    reply = sim_api.request("DELETE", f"{CMS}/d", data=b"{nope", headers={"Content-Type": "application/json"})
    assert reply.status_code == 400, reply.text
    assert reply.json()["message"] == ("couldn't get version/kind; json parse error: invalid character 'n' looking "
                                       "for beginning of object key string")
    reply = sim_api.request("POST", CMS, data=b"<xml/>", headers={"Content-Type": "application/xml"})
    assert reply.status_code == 415
    assert reply.json()["message"] == ("the body of the request was in an unknown format - accepted media types "
                                       "include: application/json, application/yaml, "
                                       "application/vnd.kubernetes.protobuf")


def test_continue_tokens_are_read_as_decode_continue_reads_them() -> None:
    """selectors/selectors-labels/continue-garbage: unpadded URL base64, then JSON (Go's syntax error, the byte
    quoted as strconv.Quote does), then the encoded version (apiserver storage/continue.go); the sim's own
    tokens still resume where they stopped."""
    with pytest.raises(errors.StatusError) as caught:
        reads._parse_continue("not-a-token")
    assert caught.value.message == ("invalid continue token: continue key is not valid: invalid character "
                                    "'\\u009e' looking for beginning of value")
    with pytest.raises(errors.StatusError) as caught:
        reads._parse_continue("a*b")
    assert caught.value.message.endswith("illegal base64 data at input byte 1")
    assert reads._parse_continue(reads._continue_token(7, ("ns", "b"))) == ("ns", "b")


def test_jsonpatch_expression_is_compiled_trimmed(sim_api: SimAPI) -> None:
    """policies/policy-mutating/map-bad-expression: the expression is reported, and its syntax error's column
    counted, without the trailing space it was sent with."""
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
              "metadata": {"name": "bad"},
              "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                       "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["CREATE"], "resources": ["pods"]}]},
                       "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: "}}]}}
    reply = sim_api.request("POST", "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
                            data=json.dumps(policy).encode(), headers={"Content-Type": "application/json"})
    assert reply.status_code == 422, reply.text
    message = reply.json()["details"]["causes"][0]["message"]
    assert message.startswith('Invalid value: "[JSONPatch{op:": compilation failed: ERROR: <input>:1:15:')


def test_an_update_of_an_object_without_managed_fields_tracks_none(sim_api: SimAPI) -> None:
    """crud/crud-serviceaccounts/replace: skipNonAppliedManager (apimachinery managedfields/internal/
    skipnonapplied.go) skips an update whose object has no managed fields (a ServiceAccount created with
    nothing to own); an object that has some keeps being tracked."""
    sas = "/api/v1/namespaces/default/serviceaccounts"
    created = sim_api.request("POST", sas, json={"apiVersion": "v1", "kind": "ServiceAccount",
                                                 "metadata": {"name": "plain"}})
    assert created.status_code == 201 and "managedFields" not in created.json()["metadata"], created.text
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "plain", "labels": {"changed": "yes"}}}
    replaced = sim_api.request("PUT", f"{sas}/plain", json=body)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["metadata"]["labels"] == {"changed": "yes"}
    assert "managedFields" not in replaced.json()["metadata"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tracked"}, "data": {"a": "1"}}
    assert sim_api.request("POST", CMS, json=cm).status_code == 201
    relabelled = sim_api.request("PUT", f"{CMS}/tracked", json={**cm, "metadata": {"name": "tracked",
                                                                                    "labels": {"x": "1"}}})
    assert "f:labels" in relabelled.json()["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]


def test_an_unscheduled_pod_deleted_is_answered_at_the_delete_revision(sim_api: SimAPI) -> None:
    """crud/crud-pods/delete: the pod as marked for deletion, with the resourceVersion of the delete, as the
    etcd3 store decodes the object it deleted."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], "automountServiceAccountToken": False}}
    pods = "/api/v1/namespaces/default/pods"
    created = sim_api.request("POST", pods, json=pod)
    assert created.status_code == 201, created.text
    deleted = sim_api.request("DELETE", f"{pods}/p")
    assert deleted.status_code == 200, deleted.text
    meta = deleted.json()["metadata"]
    assert meta["deletionTimestamp"]
    assert int(meta["resourceVersion"]) > int(created.json()["metadata"]["resourceVersion"])


def test_a_crd_create_answers_the_stored_crd_and_establishes_it_in_a_write_of_its_own(sim_api: SimAPI) -> None:
    """crd/crd-install/create-crd: the answer has the strategy's status (no conditions, empty accepted names)
    and only the client's managed fields; the naming and establishing controllers' status write follows, as
    manager kube-apiserver on subresource status, with a new resourceVersion."""
    from tests.sim.apiserver.schema.test_server_crds import widget_crd
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    created = sim_api.request("POST", crds, json=widget_crd())
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["status"]["conditions"] is None and body["status"]["acceptedNames"] == {"plural": "", "kind": ""}
    assert all(e["manager"] != "kube-apiserver" for e in body["metadata"]["managedFields"])
    now = sim_api.request("GET", f"{crds}/{body['metadata']['name']}").json()
    assert [c["type"] for c in now["status"]["conditions"]] == ["NamesAccepted", "Established"]
    assert int(now["metadata"]["resourceVersion"]) > int(body["metadata"]["resourceVersion"])
    assert any(e["manager"] == "kube-apiserver" and e.get("subresource") == "status"
               for e in now["metadata"]["managedFields"])


@pytest.mark.parametrize(("body", "expected"), [
    ("a: [unclosed\n", "yaml: line 1: did not find expected ',' or ']'"),
    ("a: {b: 1\n", "yaml: line 1: did not find expected ',' or '}'"),
    ("a: b: c\n", "yaml: mapping values are not allowed in this context"),
    ("a:\n  b: 1\n c: 2\n", "yaml: line 2: did not find expected key"),
])
def test_yaml_syntax_errors_are_worded_as_go_yaml(body: str, expected: str) -> None:
    """apply/apply-configmap/not-yaml: libyaml's problem words, and decode.go parser.fail's line (the problem
    mark's 0-based line for a parser error, none when it is 0)."""
    with pytest.raises(yaml.YAMLError) as caught:
        yaml.load(body, Loader=yaml_bodies.KubeYamlLoader)
    assert yaml_bodies.go_yaml_error(caught.value) == expected


def test_a_custom_resource_of_another_version_warns_of_its_fields(sim_api: SimAPI) -> None:
    """crd/lws-validation/wrong-api-version: decoded with no schema, every field but TypeMeta and metadata is
    unknown, so fieldValidation=Warn warns of each before the versioning decoder's 400; Ignore does not."""
    from tests.sim.apiserver.schema.test_server_crds import GROUP, PLURAL, VERSION, widget, widget_crd
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert sim_api.request("POST", crds, json=widget_crd()).status_code == 201
    body = {**widget("w1"), "apiVersion": f"{GROUP}/v9"}
    url = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
    reply = sim_api.request("POST", url, json=body)
    assert reply.status_code == 400, reply.text
    assert reply.headers.get("Warning") == '299 - "unknown field \\"spec\\""'
    assert "Warning" not in sim_api.request("POST", url + "?fieldValidation=Ignore", json=body).headers


def test_merged_json_text_keeps_untouched_values_and_sorts_what_it_merged() -> None:
    """evanphx/json-patch MergePatch as kube-apiserver runs it: untouched values raw (Go's struct order), objects
    merged into or taken from the patch written as Go maps (sorted keys, nulls pruned), HTML characters escaped."""
    from lwsconf.sim.apiserver.patch import merge_patches
    current = {"metadata": {"name": "x", "namespace": "n", "note": "<b>"}, "data": {"c": "3", "b": "2"}, "kind": "K"}
    text = merge_patches.merged_json_text(current, {"data": {"a": 5}, "extra": {"z": 1, "y": None, "x": 2}})
    assert text == ('{"data":{"a":5,"b":"2","c":"3"},"extra":{"x":2,"z":1},"kind":"K",'
                    '"metadata":{"name":"x","namespace":"n","note":"\\u003cb\\u003e"}}')


def test_a_merge_patch_its_type_cannot_hold_is_a_422_on_patch(sim_api: SimAPI) -> None:
    """patches/patch-merge/wrong-type and requests/field-validation/patch-unknown-strict: jsonPatcher's
    NewInvalid with no kind or name, the field `patch` holding the patched JSON, the decoder's error as the
    detail; under Strict an unknown field, under Warn a warning and the field dropped."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mp"}, "data": {"b": "2"}}
    assert sim_api.request("POST", CMS, json=cm).status_code == 201
    merge = {"Content-Type": "application/merge-patch+json"}
    reply = sim_api.request("PATCH", f"{CMS}/mp", data=b'{"data": {"a": 5}}', headers=merge)
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert body["message"].startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":\\"v1\\",'
                                      '\\"data\\":{\\"a\\":5,\\"b\\":\\"2\\"},\\"kind\\":\\"ConfigMap\\",'
                                      '\\"metadata\\":{\\"name\\":\\"mp\\",\\"namespace\\":\\"default\\",')
    assert body["message"].endswith(": json: cannot unmarshal number into Go struct field ConfigMap.data "
                                    "of type string")
    assert [c["field"] for c in body["details"]["causes"]] == ["patch"] and "kind" not in body["details"]
    reply = sim_api.request("PATCH", f"{CMS}/mp?fieldValidation=Strict", data=b'{"colour": "red"}', headers=merge)
    assert reply.status_code == 422 and reply.json()["message"].endswith(
        ': strict decoding error: unknown field "colour"'), reply.text
    reply = sim_api.request("PATCH", f"{CMS}/mp", data=b'{"colour": "red"}', headers=merge)
    assert reply.status_code == 200 and "colour" not in reply.json(), reply.text


def test_a_new_node_is_tainted_not_ready_once(sim_api: SimAPI) -> None:
    """controllers/ctl-endpointslices/node: TaintNodesByCondition (plugin/pkg/admission/nodetaint) adds
    node.kubernetes.io/not-ready:NoSchedule at create, after the node's own taints and not twice."""
    nodes = "/api/v1/nodes"
    own = {"key": "example.com/gpu", "effect": "NoSchedule"}
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    made = sim_api.request("POST", nodes, json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "t1"},
                                                "spec": {"taints": [own]}})
    assert made.status_code == 201, made.text
    assert made.json()["spec"]["taints"] == [own, not_ready]
    again = sim_api.request("POST", nodes, json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "t2"},
                                                 "spec": {"taints": [not_ready]}})
    assert again.json()["spec"]["taints"] == [not_ready]


def test_an_exact_list_at_an_older_resource_version_answers_the_objects_as_they_were(sim_api: SimAPI) -> None:
    """versions/rv-lists/list-exact-after-a and list-exact-too-old: resourceVersionMatch=Exact reads etcd's
    snapshot of that revision, rebuilt by the sim from its event history: later creates absent, later changes
    undone, later deletes present again; the list's resourceVersion is the one asked for."""
    ns = "/api/v1/namespaces/exact"
    assert sim_api.request("POST", "/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": "exact"}}).status_code == 201
    start = sim_api.request("GET", f"{ns}/configmaps").json()["metadata"]["resourceVersion"]
    a = sim_api.request("POST", f"{ns}/configmaps", json={"apiVersion": "v1", "kind": "ConfigMap",
                                                          "metadata": {"name": "a"}, "data": {"v": "1"}}).json()
    rv_a = a["metadata"]["resourceVersion"]
    sim_api.request("POST", f"{ns}/configmaps",
                    json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}})
    sim_api.request("PATCH", f"{ns}/configmaps/a", data=b'{"data": {"v": "2"}}',
                    headers={"Content-Type": "application/merge-patch+json"})
    sim_api.request("DELETE", f"{ns}/configmaps/b")

    def at(rv: str) -> dict[str, Any]:
        reply = sim_api.request("GET", f"{ns}/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact")
        assert reply.status_code == 200, reply.text
        return reply.json()  # type: ignore[no-any-return]
    then = at(rv_a)
    assert then["metadata"]["resourceVersion"] == rv_a
    assert [(i["metadata"]["name"], i["data"]) for i in then["items"]] == [("a", {"v": "1"})]
    assert at(start)["items"] == []
    now = sim_api.request("GET", f"{ns}/configmaps").json()
    assert [(i["metadata"]["name"], i["data"]) for i in now["items"]] == [("a", {"v": "2"})]


def test_nested_kinds_keep_their_type_meta_and_other_structs_have_none() -> None:
    """TypeMeta is inlined without a protobuf tag: a StatefulSet's volumeClaimTemplates (PersistentVolumeClaims)
    keep apiVersion and kind, as kube-apiserver's decoder does, while a PodTemplateSpec has no such fields."""
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
           "spec": {"template": {"apiVersion": "v1", "metadata": {}},
                    "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                              "metadata": {"name": "d"}}]}}
    message = godecode.message_for("apps/v1", "StatefulSet")
    assert message is not None
    assert godecode.decode(sts, message, prune=True).unknown == ["spec.template.apiVersion"]
    assert sts["spec"]["volumeClaimTemplates"][0]["kind"] == "PersistentVolumeClaim"


def test_strict_decoding_errors_name_the_kind_and_version(sim_api: SimAPI) -> None:
    """requests/field-validation/unknown-strict: kube-apiserver's decoder prefixes the strict error with
    `ConfigMap in version "v1" cannot be handled as a ConfigMap: `."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "colour": "blue"}
    reply = sim_api.request("POST", CMS, json=body, params={"fieldValidation": "Strict"})
    assert reply.status_code == 400
    assert reply.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding '
                                       'error: unknown field "colour"')
