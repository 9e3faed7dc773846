"""Structural-schema handling: pruning, defaulting, validation messages and CRD schema checks."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.schema import schema, schema_check

INT_OR_STRING = {"x-kubernetes-int-or-string": True}

# A cut-down LeaderWorkerSet v1 schema: the fields docs/lws-contract.md §5.1 validates by schema.
LWS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["leaderWorkerTemplate"],
            "properties": {
                "replicas": {"type": "integer", "format": "int32", "default": 1, "minimum": 0, "maximum": 1000000},
                "startupPolicy": {
                    "type": "string",
                    "default": "LeaderCreated",
                    "enum": ["LeaderCreated", "LeaderReady"],
                },
                "networkConfig": {
                    "type": "object",
                    "properties": {
                        "subdomainPolicy": {
                            "type": "string",
                            "default": "Shared",
                            "enum": ["Shared", "UniquePerReplica"],
                        }
                    },
                },
                "rolloutStrategy": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "type": {"type": "string", "default": "RollingUpdate", "enum": ["RollingUpdate"]},
                        "rollingUpdateConfiguration": {
                            "type": "object",
                            "default": {},
                            "properties": {
                                "maxUnavailable": {**INT_OR_STRING, "default": 1},
                                "maxSurge": {**INT_OR_STRING, "default": 0},
                                "partition": {"type": "integer", "format": "int32"},
                            },
                        },
                    },
                },
                "leaderWorkerTemplate": {
                    "type": "object",
                    "required": ["workerTemplate"],
                    "properties": {
                        "size": {"type": "integer", "format": "int32", "default": 1},
                        "restartPolicy": {
                            "type": "string",
                            "default": "RecreateGroupOnPodRestart",
                            "enum": ["Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"],
                        },
                        "workerTemplate": {
                            "type": "object",
                            "properties": {
                                "metadata": {
                                    "type": "object",
                                    "properties": {
                                        "labels": {
                                            "type": "object",
                                            "additionalProperties": {"type": "string", "maxLength": 63},
                                        }
                                    },
                                },
                                "spec": {
                                    "type": "object",
                                    "required": ["containers"],
                                    "properties": {
                                        "containers": {
                                            "type": "array",
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["name"],
                                            "items": {
                                                "type": "object",
                                                "required": ["name"],
                                                "properties": {
                                                    "name": {"type": "string", "minLength": 1},
                                                    "image": {"type": "string"},
                                                },
                                            },
                                        }
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def lws(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "w"}]}}}}
    body.update(spec)
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "x", "namespace": "ns"},
        "spec": body,
    }


def messages(causes: list[errors.Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


# ---- pruning ----


def test_prune_drops_unknown_spec_field_and_reports_its_path() -> None:
    obj = lws(foo=1)
    assert schema.prune(LWS, obj) == ["spec.foo"]
    assert "foo" not in obj["spec"]


def test_prune_keeps_apiversion_kind_and_objectmeta_at_the_root_and_reports_other_metadata_fields() -> None:
    # kube-apiserver decodes a custom resource's metadata as a typed ObjectMeta: other fields are dropped
    # and reported (strict decoding error: unknown field "metadata.whatever").
    obj = lws()
    obj["metadata"]["whatever"] = {"deep": True}
    obj["metadata"]["labels"] = {"a": "b"}
    obj["extra"] = 1
    assert schema.prune(LWS, obj) == ["extra", "metadata.whatever"]
    assert obj["metadata"] == {"name": "x", "namespace": "ns", "labels": {"a": "b"}}
    assert obj["apiVersion"] and obj["kind"]


def test_prune_of_a_non_root_value_drops_apiversion_kind_and_metadata_too() -> None:
    s = {"type": "object", "properties": {"a": {"type": "string"}}}
    obj = {"a": "x", "kind": "K", "metadata": {}}
    assert schema.prune(s, obj, root=False) == ["kind", "metadata"]


def test_prune_reports_array_items_by_index_and_map_values_by_dotted_key() -> None:
    obj = lws()
    tmpl = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    tmpl["spec"]["containers"].append({"name": "b", "bogus": 1})
    tmpl["metadata"] = {"labels": {"app": "x"}, "junk": 2}
    s = {
        "type": "object",
        "properties": {
            "m": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"k": {"type": "string"}}},
            }
        },
    }
    m = {"m": {"one": {"k": "v", "x": 1}}}
    assert schema.prune(LWS, obj) == [
        "spec.leaderWorkerTemplate.workerTemplate.metadata.junk",
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[1].bogus",
    ]
    assert schema.prune(s, m, root=False) == ["m.one.x"]
    assert m == {"m": {"one": {"k": "v"}}}


def test_prune_keeps_unknown_fields_under_preserve_unknown_fields_but_prunes_known_children() -> None:
    s = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
    }
    obj = {"free": {"any": [1, {"x": 2}]}, "known": {"a": "x", "b": 1}}
    assert schema.prune(s, obj, root=False) == ["known.b"]
    assert obj == {"free": {"any": [1, {"x": 2}]}, "known": {"a": "x"}}
    status = lws()
    status["status"] = {"anything": {"goes": 1}}
    assert schema.prune(LWS, status) == []


def test_prune_keeps_type_and_object_meta_of_embedded_resources() -> None:
    s = {
        "type": "object",
        "properties": {
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object"}},
            }
        },
    }
    obj = {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "other": 1}}
    assert schema.prune(s, obj, root=False) == ["template.other"]
    assert set(obj["template"]) == {"apiVersion", "kind", "metadata", "spec"}


# ---- defaulting ----


def test_defaults_fill_absent_fields_and_recurse_into_just_defaulted_objects() -> None:
    obj = lws()
    schema.apply_defaults(LWS, obj)
    spec = obj["spec"]
    assert spec["replicas"] == 1 and spec["startupPolicy"] == "LeaderCreated"
    assert spec["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert spec["leaderWorkerTemplate"]["size"] == 1
    assert "networkConfig" not in spec  # no default for the object itself


def test_defaults_do_not_overwrite_values_and_are_copies() -> None:
    obj = lws(replicas=0, startupPolicy="LeaderReady")
    schema.apply_defaults(LWS, obj)
    obj["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"] = 5
    assert obj["spec"]["replicas"] == 0 and obj["spec"]["startupPolicy"] == "LeaderReady"
    assert LWS["properties"]["spec"]["properties"]["rolloutStrategy"]["default"] == {}


def test_defaults_apply_inside_array_items_and_map_values() -> None:
    item = {"type": "object", "properties": {"port": {"type": "integer", "default": 80}}}
    s = {
        "type": "object",
        "properties": {
            "list": {"type": "array", "items": item},
            "map": {"type": "object", "additionalProperties": item},
        },
    }
    obj: dict[str, Any] = {"list": [{}, {"port": 1}], "map": {"a": {}}}
    schema.apply_defaults(s, obj)
    assert obj == {"list": [{"port": 80}, {"port": 1}], "map": {"a": {"port": 80}}}


def test_null_is_defaulted_when_not_nullable_removed_without_default_and_kept_when_nullable() -> None:
    s = {
        "type": "object",
        "properties": {
            "d": {"type": "string", "default": "Shared"},
            "n": {"type": "string"},
            "ok": {"type": "string", "nullable": True, "default": "x"},
        },
    }
    obj = {"d": None, "n": None, "ok": None}
    schema.apply_defaults(s, obj)
    assert obj == {"d": "Shared", "ok": None}


# ---- validation ----


@dataclass(frozen=True)
class Bad:
    name: str
    spec: dict[str, Any]
    expected: str
    reason: str


BAD = [
    Bad(
        "replicas below 0 (V2)",
        {"replicas": -1},
        "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        "FieldValueInvalid",
    ),
    Bad(
        "replicas above max (V3)",
        {"replicas": 1000001},
        "spec.replicas: Invalid value: 1000001: spec.replicas in body should be less than or equal to 1000000",
        "FieldValueInvalid",
    ),
    Bad(
        "replicas of the wrong type",
        {"replicas": "string"},
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "FieldValueTypeInvalid",
    ),
    Bad(
        "replicas as a bool",
        {"replicas": True},
        'spec.replicas: Invalid value: "boolean": spec.replicas in body must be of type integer: "boolean"',
        "FieldValueTypeInvalid",
    ),
    Bad(
        "startupPolicy outside the enum (V7)",
        {"startupPolicy": "Bogus"},
        'spec.startupPolicy: Unsupported value: "Bogus": supported values: "LeaderCreated", "LeaderReady"',
        "FieldValueNotSupported",
    ),
    Bad(
        "empty startupPolicy is not defaulted (T15)",
        {"startupPolicy": ""},
        'spec.startupPolicy: Unsupported value: "": supported values: "LeaderCreated", "LeaderReady"',
        "FieldValueNotSupported",
    ),
    Bad(
        "rollout type outside the enum (V8)",
        {"rolloutStrategy": {"type": "Recreate"}},
        'spec.rolloutStrategy.type: Unsupported value: "Recreate": supported values: "RollingUpdate"',
        "FieldValueNotSupported",
    ),
    Bad(
        "subdomainPolicy outside the enum (V23)",
        {"networkConfig": {"subdomainPolicy": "Private"}},
        'spec.networkConfig.subdomainPolicy: Unsupported value: "Private": supported values: "Shared", '
        '"UniquePerReplica"',
        "FieldValueNotSupported",
    ),
    Bad(
        "maxSurge neither int nor string",
        {"rolloutStrategy": {"rollingUpdateConfiguration": {"maxSurge": 1.5}}},
        'spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: Invalid value: "number": '
        'spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge in body must be of type integer,string: "number"',
        "FieldValueTypeInvalid",
    ),
    Bad(
        "partition beyond int32",
        {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 2**31}}},
        "spec.rolloutStrategy.rollingUpdateConfiguration.partition: Invalid value: 2147483648: "
        'spec.rolloutStrategy.rollingUpdateConfiguration.partition in body must be of type int32: "2147483648"',
        "FieldValueInvalid",
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[b.name for b in BAD])
def test_lws_schema_rejects_bad_values_with_apiserver_wording(case: Bad) -> None:
    causes = schema.validate(LWS, lws(**case.spec))
    assert messages(causes) == [case.expected]
    assert causes[0].reason == case.reason


def test_missing_required_templates_are_reported_at_the_child_path_v24() -> None:
    obj = lws()
    del obj["spec"]["leaderWorkerTemplate"]
    causes = schema.validate(LWS, obj)
    assert messages(causes) == ["spec.leaderWorkerTemplate: Required value"]
    assert causes[0].reason == "FieldValueRequired"
    obj = lws()
    del obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert messages(schema.validate(LWS, obj)) == ["spec.leaderWorkerTemplate.workerTemplate: Required value"]


def test_valid_defaulted_lws_has_no_causes() -> None:
    obj = lws(replicas=3, rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": "25%", "maxUnavailable": 2}})
    schema.apply_defaults(LWS, obj)
    assert schema.validate(LWS, obj) == []


def test_paths_name_array_indexes_and_map_keys() -> None:
    obj = lws()
    tmpl = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    tmpl["spec"]["containers"] = [{"name": "a"}, {"name": ""}]
    tmpl["metadata"] = {"labels": {"app": "x" * 64}}
    base = "spec.leaderWorkerTemplate.workerTemplate"
    assert sorted(messages(schema.validate(LWS, obj))) == [
        f"{base}.metadata.labels[app]: Too long: may not be more than 63 bytes",
        f'{base}.spec.containers[1].name: Invalid value: "": {base}.spec.containers[1].name in body should be at '
        "least 1 chars long",
    ]


def test_map_list_reports_the_second_item_with_a_duplicate_key() -> None:
    obj = lws()
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"] = [
        {"name": "a"},
        {"name": "a", "image": "x"},
        {"name": "a"},
        {"name": "b"},
    ]
    causes = schema.validate(LWS, obj)
    base = "spec.leaderWorkerTemplate.workerTemplate.spec.containers"
    assert messages(causes) == [f'{base}[1]: Duplicate value: {{"name":"a"}}']
    assert causes[0].reason == "FieldValueDuplicate"


def test_map_list_items_without_keys_share_the_empty_key_and_non_objects_are_refused() -> None:
    s = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    assert messages(schema.validate(s, [{}, {}], path="l")) == ["l[1]: Duplicate value: {}"]
    assert messages(schema.validate(s, [{"name": "a"}, "x"], path="l"))[0] == (
        'l[1]: Invalid value: "x": must be an object for an array of list-type map'
    )


def test_set_list_duplicates() -> None:
    s = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    assert messages(schema.validate(s, ["a", "b", "a", "a"], path="spec.tags")) == [
        'spec.tags[2]: Duplicate value: "a"'
    ]
    assert schema.validate({**s, "items": {"type": "integer"}}, [1, True], path="x") == [
        errors.Cause(
            "x[1]",
            'Invalid value: "boolean": x[1] in body must be of type integer: "boolean"',
            "FieldValueTypeInvalid",
        )
    ]


@pytest.mark.parametrize(
    ("node", "value", "expected"),
    [
        ({"type": "number"}, 1, None),
        ({"type": "number"}, 1.5, None),
        ({"type": "integer"}, 2.0, None),
        ({"type": "integer"}, 2.5, 'Invalid value: "number": f in body must be of type integer: "number"'),
        ({"type": "string"}, None, 'Invalid value: "null": f in body must be of type string: "null"'),
        ({"type": "string", "nullable": True}, None, None),
        ({"type": "boolean"}, 0, 'Invalid value: "integer": f in body must be of type boolean: "integer"'),
        ({"type": "object"}, [], 'Invalid value: "array": f in body must be of type object: "array"'),
        (
            {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
            0,
            "Invalid value: 0: f in body should be greater than 0",
        ),
        (
            {"type": "integer", "maximum": 5, "exclusiveMaximum": True},
            5,
            "Invalid value: 5: f in body should be less than 5",
        ),
        (
            {"type": "integer", "format": "int64"},
            2**63,
            'Invalid value: 9223372036854775808: f in body must be of type int64: "9223372036854775808"',
        ),
        ({"type": "string", "maxLength": 1}, "ab", "Too long: may not be more than 1 byte"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "A", "Invalid value: \"A\": f in body should match '^[a-z]+$'"),
        ({"type": "string", "format": "date-time"}, "2026-01-02T03:04:05Z", None),
        ({"type": "string", "format": "date-time"}, "2026-01-02T03:04:05.123+01:00", None),
        (
            {"type": "string", "format": "date-time"},
            "yesterday",
            'Invalid value: "yesterday": f in body must be of type date-time: "yesterday"',
        ),
        (
            {"type": "array", "items": {"type": "string"}, "minItems": 1},
            [],
            "Invalid value: []: f in body should have at least 1 items",
        ),
        (
            {"type": "array", "items": {"type": "string"}, "maxItems": 1},
            ["a", "b"],
            "Too many: 2: must have at most 1 items",
        ),
        (
            {"type": "object", "minProperties": 1},
            {},
            "Invalid value: {}: f in body should have at least 1 properties",
        ),
        ({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}, "Too many: 2: must have at most 1 items"),
        (INT_OR_STRING, 3, None),
        (INT_OR_STRING, "25%", None),
        (INT_OR_STRING, True, 'Invalid value: "boolean": f in body must be of type integer,string: "boolean"'),
        ({"x-kubernetes-preserve-unknown-fields": True}, {"a": [1]}, None),
        ({"type": "integer", "enum": [1, 2]}, 3, 'Unsupported value: 3: supported values: "1", "2"'),
    ],
    ids=lambda v: repr(v)[:40],
)
def test_value_validations(node: dict[str, Any], value: Any, expected: str | None) -> None:
    causes = schema.validate(node, value, path="f")
    assert [c.message for c in causes] == ([] if expected is None else [expected])


def test_value_only_combinators() -> None:
    any_of = {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]}
    one_of = {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]}
    all_of = {"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 10}]}
    not_ = {"type": "string", "not": {"enum": ["forbidden"]}}
    assert schema.validate(any_of, "bx", path="f") == []
    assert [c.message for c in schema.validate(any_of, "cx", path="f")] == [
        'Invalid value: "cx": f in body must validate at least one schema (anyOf)'
    ]
    assert [c.message for c in schema.validate(one_of, 5, path="f")] == [
        "Invalid value: 5: f in body must validate one and only one schema (oneOf)"
    ]
    assert schema.validate(one_of, 11, path="f") == []
    assert [c.message for c in schema.validate(all_of, 11, path="f")] == [
        "Invalid value: 11: f in body should be less than or equal to 10"
    ]
    assert [c.message for c in schema.validate(not_, "forbidden", path="f")] == [
        'Invalid value: "forbidden": f in body must not validate the schema (not)'
    ]


# ---- CRD schema checks ----


def crd_causes(s: Any) -> list[str]:
    return messages(schema_check.validate_crd_schema(s, path="root"))


def test_lws_like_schema_is_servable() -> None:
    assert schema_check.validate_crd_schema(LWS) == []


def test_controller_gen_int_or_string_any_of_is_structural_and_validates() -> None:
    quantity = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
                "pattern": "^[0-9]+(m|Gi)?$"}
    crd = {"type": "object", "properties": {"maxSurge": quantity,
                                            "limits": {"type": "object", "additionalProperties": quantity}}}
    assert schema_check.validate_crd_schema(crd) == []
    assert schema.validate(crd, {"maxSurge": 1, "limits": {"cpu": "500m", "memory": 2}}) == []
    assert messages(schema.validate(crd, {"limits": {"cpu": "lots"}})) == [
        "limits[cpu]: Invalid value: \"lots\": limits[cpu] in body should match '^[0-9]+(m|Gi)?$'"]
    typed = {"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}}
    assert crd_causes(typed) == ["root.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (
            {"type": "array", "items": {"type": "string"}},
            'root.type: Unsupported value: "array": supported values: "object"',
        ),
        (
            {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}},
            "root.properties[spec].type: Required value: must not be empty for specified fields",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "list"}}},
            'root.properties[a].type: Unsupported value: "list": supported values: "array", "boolean", "integer", '
            '"number", "object", "string"',
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array"}}},
            "root.properties[a].items: Required value: must be specified",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}},
            },
            "root.properties[a].additionalProperties: Forbidden: "
            "additionalProperties and properties are mutual exclusive",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map"}},
            },
            "root.properties[a].x-kubernetes-list-map-keys: Required value: "
            "must not be empty if x-kubernetes-list-type is map",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "integer", "x-kubernetes-int-or-string": True}}},
            'root.properties[a].type: Invalid value: "integer": must be empty if x-kubernetes-int-or-string is true',
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(["}}},
            'root.properties[a].pattern: Invalid value: "([": must be a valid regular expression',
        ),
        (
            {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "default": -1}}},
            "root.properties[a].default: Invalid value: -1: "
            "root.properties[a].default in body should be greater than or equal to 0",
        ),
        (
            {
                "type": "object",
                "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}},
            },
            "root.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but "
            "metadata is implicitly specified",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "allOf": [{"type": "string"}]}}},
            "root.properties[a].allOf[0].type: Forbidden: must be empty to be structural",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": False}},
            },
            "root.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
        ),
    ],
    ids=[
        "root-not-object",
        "object-without-type",
        "unknown-type",
        "array-without-items",
        "properties-and-map",
        "map-list-without-keys",
        "int-or-string-with-type",
        "bad-pattern",
        "bad-default",
        "metadata-fields",
        "type-in-allOf",
        "preserve-unknown-false",
    ],
)
def test_broken_crd_schemas_are_refused_with_the_node_named(bad: dict[str, Any], expected: str) -> None:
    assert crd_causes(bad) == [expected]


# ---- properties ----

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["spec", "replicas", "size", "leaderWorkerTemplate", "x", "metadata"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_any_json_is_pruned_idempotently_and_validated_without_raising(value: Any) -> None:
    obj = {"apiVersion": "v", "kind": "K", "spec": value} if not isinstance(value, dict) else dict(value)
    first = copy.deepcopy(obj)
    schema.prune(LWS, first)
    second = copy.deepcopy(first)
    assert schema.prune(LWS, second) == []
    assert second == first
    schema.apply_defaults(LWS, second)
    for cause in schema.validate(LWS, second):
        assert cause.reason.startswith("FieldValue") and cause.message


SCHEMA_KEYS = [
    "type",
    "properties",
    "items",
    "additionalProperties",
    "required",
    "enum",
    "default",
    "nullable",
    "pattern",
    "minimum",
    "maxLength",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
    "allOf",
    "anyOf",
    "not",
    "format",
]
SCHEMA_VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["object", "array", "string", "integer", "map", "set", "(", "a", "int32", "date-time"])
)
SCHEMAS = st.recursive(
    SCHEMA_VALUES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(SCHEMA_KEYS + ["a", "spec"]), inner, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(SCHEMAS, JSON)
def test_arbitrary_crd_schemas_are_checked_without_raising(candidate: Any, value: Any) -> None:
    from lwsconf.sim.apiserver.schema import cel

    causes = schema_check.validate_crd_schema(candidate)
    assert all(c.message for c in causes)
    cel.check_rules(candidate if isinstance(candidate, dict) else {})
    if not causes:  # a schema that passed the checks can be used on any object
        obj = copy.deepcopy(value)
        schema.prune(candidate, obj)
        schema.apply_defaults(candidate, obj)
        schema.validate(candidate, obj)
