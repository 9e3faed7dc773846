"""CEL validation rules (`x-kubernetes-validations`): compiling against a CRD, evaluating on writes,
and the Kubernetes CEL libraries registered with cel-expr-python."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.schema import cel, cel_ext, schema
from tests.conftest import SimAPI

DNS1035 = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
PERCENT = "type(self) == int ? self >= 0 : self.matches('^[0-9]+%$') && int(self.replace('%', '')) <= 100"


def rule(text: str, **extra: Any) -> dict[str, Any]:
    return {"rule": text, **extra}


def surge(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"x-kubernetes-int-or-string": True, "x-kubernetes-validations": list(rules)}


# An LWS-like schema carrying the rules docs/lws-contract.md §5.1 needs (V1, V5, V10/V11, V14/V15, V20).
LWS: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [rule(DNS1035, message="name must be a DNS-1035 label")],
    "properties": {
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                rule(
                    "self.replicas * self.leaderWorkerTemplate.size <= 2147483647",
                    message="replicas * size must not exceed 2147483647",
                )
            ],
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "rolloutStrategy": {
                    "type": "object",
                    "properties": {
                        "rollingUpdateConfiguration": {
                            "type": "object",
                            "properties": {
                                "maxSurge": surge(rule(PERCENT, message="invalid percent")),
                                "maxUnavailable": surge(rule(PERCENT)),
                            },
                        }
                    },
                },
                "leaderWorkerTemplate": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer", "format": "int32"},
                        "subGroupPolicy": {
                            "type": "object",
                            "x-kubernetes-validations": [
                                rule(
                                    "self.subGroupSize == oldSelf.subGroupSize",
                                    message="subGroupSize is immutable",
                                ),
                            ],
                            "properties": {"subGroupSize": {"type": "integer", "format": "int32"}},
                        },
                    },
                    "x-kubernetes-validations": [
                        rule(
                            "!has(self.subGroupPolicy) || self.subGroupPolicy.subGroupSize >= 1",
                            message="subGroupSize must be equal or greater than 1",
                            fieldPath=".subGroupPolicy.subGroupSize",
                        ),
                        rule(
                            "!has(self.subGroupPolicy) || self.subGroupPolicy.subGroupSize <= self.size",
                            messageExpression="'subGroupSize cannot be larger than size ' + string(self.size)",
                        ),
                    ],
                },
            },
        },
    },
}
COMPILED = cel.compile_rules(LWS)


def lws(name: str = "my-lws", replicas: int = 2, size: int = 4, **extra: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"size": size}
    if "sgs" in extra:
        template["subGroupPolicy"] = {"subGroupSize": extra.pop("sgs")}
    spec: dict[str, Any] = {"replicas": replicas, "leaderWorkerTemplate": template, **extra}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "ns", "labels": {"a": "b"}},
        "spec": spec,
    }


def lines(causes: list[errors.Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def one_rule(node: dict[str, Any], text: str, **extra: Any) -> cel.CompiledRules:
    compiled = cel.compile_rules({**node, "x-kubernetes-validations": [rule(text, **extra)]})
    assert compiled.errors == ()
    return compiled


def holds(expression: str, value: Any = None, node: dict[str, Any] | None = None) -> bool:
    """Whether `expression` is true with `self` = value at a node of the given schema."""
    compiled = one_rule(node or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}, expression)
    causes = cel.evaluate(compiled, {} if value is None else value)
    assert all("evaluating rule" not in c.message for c in causes), causes
    return not causes


# ---- compiling ----


def test_the_lws_rules_compile_and_are_counted() -> None:
    assert COMPILED.errors == ()
    assert COMPILED.count == 7


@dataclass(frozen=True)
class BadRule:
    name: str
    entry: dict[str, Any]
    field: str
    message: str


BAD_RULES = [
    BadRule(
        "syntax error",
        rule("self.a +"),
        "x-kubernetes-validations[0].rule",
        'Invalid value: "self.a +": compilation failed: ERROR: <input>:1:9: Syntax error:',
    ),
    BadRule(
        "type error",
        rule("size(self) == 'x'"),
        "x-kubernetes-validations[0].rule",
        "Invalid value: \"size(self) == 'x'\": compilation failed: ERROR: <input>:1:12: found no matching overload",
    ),
    BadRule(
        "not a bool",
        rule("self.replicas + 1"),
        "x-kubernetes-validations[0].rule",
        'Invalid value: "self.replicas + 1": must evaluate to a bool',
    ),
    BadRule(
        "unknown function",
        rule("self.replicas.frobnicate()"),
        "x-kubernetes-validations[0].rule",
        "compilation failed: ERROR: <input>:1:25: undeclared reference to 'frobnicate'",
    ),
    BadRule("empty rule", rule(" "), "x-kubernetes-validations[0].rule", "Required value: rule is not specified"),
    BadRule(
        "unknown reason",
        rule("true", reason="FieldValueWrong"),
        "x-kubernetes-validations[0].reason",
        'Unsupported value: "FieldValueWrong": supported values: "FieldValueDuplicate", "FieldValueForbidden", '
        '"FieldValueInvalid", "FieldValueRequired"',
    ),
    BadRule(
        "optionalOldSelf without oldSelf",
        rule("true", optionalOldSelf=True),
        "x-kubernetes-validations[0].optionalOldSelf",
        "Forbidden: may not be set if oldSelf is not used in rule",
    ),
    BadRule(
        "message with a line break",
        rule("true", message="a\nb"),
        "x-kubernetes-validations[0].message",
        'Invalid value: "a\\nb": message must not contain line breaks',
    ),
    BadRule(
        "bad messageExpression",
        rule("true", messageExpression="size(self)"),
        "x-kubernetes-validations[0].messageExpression",
        'Invalid value: "size(self)": messageExpression must evaluate to a string',
    ),
    BadRule(
        "fieldPath to nowhere",
        rule("true", fieldPath=".nope"),
        "x-kubernetes-validations[0].fieldPath",
        'Invalid value: ".nope": fieldPath must be a valid path to a field of the schema',
    ),
]


@pytest.mark.parametrize("case", BAD_RULES, ids=[c.name for c in BAD_RULES])
def test_a_bad_rule_is_reported_against_the_crd(case: BadRule) -> None:
    node = {
        "type": "object",
        "properties": {"replicas": {"type": "integer"}},
        "x-kubernetes-validations": [case.entry],
    }
    compiled = cel.compile_rules(
        {"type": "object", "properties": {"spec": node}}, path="spec.versions[0].schema.openAPIV3Schema"
    )
    assert len(compiled.errors) == 1, compiled.errors
    cause = compiled.errors[0]
    assert cause.field == f"spec.versions[0].schema.openAPIV3Schema.properties[spec].{case.field}"
    assert case.message in cause.message
    assert compiled.count == 0
    assert (
        cel.check_rules({"type": "object", "properties": {"spec": node}})[0].field
        == f"properties[spec].{case.field}"
    )


def test_transition_rules_are_refused_under_atomic_lists_but_allowed_under_map_lists() -> None:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "x-kubernetes-validations": [rule("self.name == oldSelf.name")],
    }
    atomic = {"type": "object", "properties": {"l": {"type": "array", "items": item}}}
    keyed = {
        "type": "object",
        "properties": {
            "l": {
                "type": "array",
                "items": item,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            }
        },
    }
    [cause] = cel.check_rules(atomic)
    assert cause.field == "properties[l].items.x-kubernetes-validations[0].rule"
    assert "oldSelf cannot be used on the uncorrelatable portion of the schema" in cause.message
    assert cel.check_rules(keyed) == []


def test_old_self_in_a_string_literal_does_not_make_a_transition_rule() -> None:
    assert cel.uses_old_self("self.x == oldSelf.x")
    assert not cel.uses_old_self("self.x != 'oldSelf'")


# ---- evaluating the LWS rules ----


def test_a_valid_lws_passes_every_rule() -> None:
    assert cel.evaluate(COMPILED, lws(sgs=2)) == []


@pytest.mark.parametrize("name", ["2cube", "Upper", "a.b", "trailing-"])
def test_root_rule_rejects_names_that_are_not_dns_1035_labels(name: str) -> None:
    causes = cel.evaluate(COMPILED, lws(name=name))
    assert causes == [errors.Cause("", 'Invalid value: name must be a DNS-1035 label', "FieldValueInvalid")]


def test_root_rules_see_only_name_and_generate_name_of_metadata() -> None:
    compiled = one_rule(
        {"type": "object"},
        "!has(self.metadata.labels) && !has(self.metadata.namespace) && "
        "self.metadata.name == 'x' && self.kind == 'K'",
    )
    assert (
        cel.evaluate(compiled, {"kind": "K", "metadata": {"name": "x", "namespace": "n", "labels": {"a": "b"}}})
        == []
    )


@pytest.mark.parametrize(
    ("replicas", "size", "ok"),
    [(3, 4, True), (100000, 1000000, False), (2147483647, 1, True), (2147483647, 2, False)],
)
def test_replicas_times_size_is_bounded_by_maxint32_in_int64_arithmetic(replicas: int, size: int, ok: bool) -> None:
    causes = cel.evaluate(COMPILED, lws(replicas=replicas, size=size))
    assert lines(causes) == (
        [] if ok else ['spec: Invalid value: replicas * size must not exceed 2147483647']
    )


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0, True),
        (5, True),
        (-1, False),
        ("0%", True),
        ("25%", True),
        ("100%", True),
        ("101%", False),
        ("25", False),
        ("%", False),
        ("x5%", False),
    ],
)
def test_int_or_string_percent_rule(value: int | str, ok: bool) -> None:
    obj = lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": value, "maxUnavailable": value}})
    causes = cel.evaluate(COMPILED, obj)
    base = "spec.rolloutStrategy.rollingUpdateConfiguration"
    assert lines(causes) == (
        []
        if ok
        else [
            f'{base}.maxSurge: Invalid value: {schema.show(value)}: invalid percent',
            f'{base}.maxUnavailable: Invalid value: {schema.show(value)}: failed rule: {PERCENT}',
        ]
    )


def test_transition_rule_is_skipped_on_create_and_enforced_on_update() -> None:
    old = lws(sgs=2)
    assert cel.evaluate(COMPILED, lws(sgs=4)) == []
    assert cel.evaluate(COMPILED, lws(sgs=2), old) == []
    causes = cel.evaluate(COMPILED, lws(sgs=4), old)
    assert lines(causes) == [
        'spec.leaderWorkerTemplate.subGroupPolicy: Invalid value: subGroupSize is immutable'
    ]


def test_transition_rule_is_skipped_when_the_old_object_lacks_the_value() -> None:
    assert cel.evaluate(COMPILED, lws(sgs=2), lws()) == []


def test_field_path_and_message_expression_shape_the_cause() -> None:
    causes = cel.evaluate(COMPILED, lws(size=2, sgs=0))
    base = "spec.leaderWorkerTemplate"
    assert lines(causes) == [
        f'{base}.subGroupPolicy.subGroupSize: Invalid value: subGroupSize must be equal or greater than 1',
    ]
    causes = cel.evaluate(COMPILED, lws(size=2, sgs=3))
    assert lines(causes) == [f'{base}: Invalid value: subGroupSize cannot be larger than size 2']


def test_unchanged_values_are_ratcheted_on_update() -> None:
    bad = lws(replicas=100000, size=1000000)
    assert cel.evaluate(COMPILED, bad, copy.deepcopy(bad)) == []
    assert len(cel.evaluate(COMPILED, bad, copy.deepcopy(bad), ratchet=False)) == 1
    assert len(cel.evaluate(COMPILED, bad, lws())) == 1


# ---- evaluation details ----


def test_a_rule_that_errors_yields_a_cause_not_an_exception() -> None:
    compiled = one_rule(
        {"type": "object", "properties": {"a": {"type": "integer"}}},
        "self.b > 0",
        message="b must be positive",
    )
    causes = cel.evaluate(compiled, {"a": 1}, path="spec")
    assert lines(causes) == ['spec: Invalid value: "object": no such key: b evaluating rule: b must be positive']
    overflow = one_rule({"type": "integer"}, "self * self > 0")
    wrapped = {"type": "object", "properties": {"n": overflow.schema}}
    [cause] = cel.evaluate(cel.compile_rules(wrapped), {"n": 2**62})
    assert cause.field == "n" and "integer overflow evaluating rule: self * self > 0" in cause.message


def test_a_dynamic_overload_mismatch_is_worded_as_kubernetes_does() -> None:
    compiled = one_rule(surge(), "self > 0")
    [cause] = cel.evaluate(compiled, "25%")
    assert cause.message == (
        "Invalid value: \"\": 'no such overload': call arguments did not match a supported "
        "operator, function or macro signature for rule: self > 0"
    )


def test_absent_and_null_values_are_not_validated() -> None:
    node = {
        "type": "object",
        "properties": {"a": {"type": "string", "nullable": True, "x-kubernetes-validations": [rule("self == 'x'")]}},
    }
    compiled = cel.compile_rules(node)
    assert cel.evaluate(compiled, {}) == [] and cel.evaluate(compiled, {"a": None}) == []
    assert len(cel.evaluate(compiled, {"a": "y"})) == 1


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("FieldValueForbidden", "Forbidden: no"),
        ("FieldValueRequired", "Required value: no"),
        ("FieldValueDuplicate", 'Duplicate value: "object"'),
        ("FieldValueInvalid", 'Invalid value: no'),
    ],
)
def test_reason_selects_the_kind_of_cause(reason: str, message: str) -> None:
    compiled = one_rule({"type": "object"}, "false", message="no", reason=reason)
    assert cel.evaluate(compiled, {}) == [errors.Cause("", message, reason)]


def test_message_expression_falls_back_to_message_when_it_fails_or_is_blank() -> None:
    failing = one_rule({"type": "object"}, "false", message="fallback", messageExpression="self.missing")
    blank = one_rule({"type": "object"}, "false", messageExpression="' '")
    assert cel.evaluate(failing, {})[0].message == 'Invalid value: fallback'
    assert cel.evaluate(blank, {})[0].message == 'Invalid value: failed rule: false'


def test_optional_old_self_rule_runs_on_create_with_an_empty_optional() -> None:
    compiled = one_rule(
        {"type": "integer"},
        "!oldSelf.hasValue() || self >= oldSelf.value()",
        optionalOldSelf=True,
        message="may only grow",
    )
    wrapped = cel.compile_rules({"type": "object", "properties": {"n": compiled.schema}})
    assert cel.evaluate(wrapped, {"n": 1}) == []
    assert cel.evaluate(wrapped, {"n": 5}, {"n": 3}) == []
    assert lines(cel.evaluate(wrapped, {"n": 2}, {"n": 3})) == ['n: Invalid value: 2: may only grow']


def test_rules_on_map_values_and_list_items_name_the_key_and_index() -> None:
    node = {
        "type": "object",
        "properties": {
            "labels": {
                "type": "object",
                "additionalProperties": {"type": "string", "x-kubernetes-validations": [rule("size(self) <= 3")]},
            },
            "ports": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [rule("self > 0")]}},
        },
    }
    causes = cel.evaluate(cel.compile_rules(node), {"labels": {"app": "long"}, "ports": [1, 0]}, path="spec")
    assert [c.field for c in causes] == ["spec.labels[app]", "spec.ports[1]"]


def test_transition_rules_in_map_lists_correlate_items_by_key() -> None:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
        "x-kubernetes-validations": [rule("self.v >= oldSelf.v", message="v may not decrease")],
    }
    node = {
        "type": "object",
        "properties": {
            "l": {
                "type": "array",
                "items": item,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            }
        },
    }
    compiled = cel.compile_rules(node)
    old = {"l": [{"name": "a", "v": 5}, {"name": "b", "v": 1}]}
    causes = cel.evaluate(compiled, {"l": [{"name": "b", "v": 0}, {"name": "a", "v": 6}, {"name": "c", "v": 0}]}, old)
    assert lines(causes) == ['l[0]: Invalid value: v may not decrease']


def test_field_path_may_name_map_keys_and_quoted_properties() -> None:
    node = {
        "type": "object",
        "properties": {
            "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
            "a-b": {"type": "string"},
        },
        "x-kubernetes-validations": [rule("false", fieldPath=".limits['cpu']"), rule("false", fieldPath="['a-b']")],
    }
    causes = cel.evaluate(cel.compile_rules(node), {}, path="spec")
    assert [c.field for c in causes] == ["spec.limits[cpu]", "spec.a-b"]


def test_number_fields_are_doubles_and_integers_are_int64() -> None:
    assert holds(
        "type(self.n) == double && self.n + 0.5 == 2.5",
        {"n": 2},
        {"type": "object", "properties": {"n": {"type": "number"}}},
    )
    assert holds(
        "type(self.i) == int && self.i == 9223372036854775807",
        {"i": 2**63 - 1},
        {"type": "object", "properties": {"i": {"type": "integer"}}},
    )


def test_blocking_cause_stands_in_for_rules_when_types_are_wrong() -> None:
    wrong = [errors.Cause("spec.replicas", "...", "FieldValueTypeInvalid")]
    assert cel.blocking_cause([errors.Cause("spec.replicas", "...", "FieldValueInvalid")]) is None
    blocked = cel.blocking_cause(wrong)
    assert blocked is not None and "some validation rules were not checked" in blocked.message


def test_rule_cache_compiles_each_crd_version_once() -> None:
    cache = cel.RuleCache(max_entries=2)
    first = cache.get(("lws", "v1", "1"), LWS)
    assert cache.get(("lws", "v1", "1"), {}) is first
    cache.get(("a", "v1", "1"), {})
    cache.get(("b", "v1", "1"), {})
    assert len(cache) == 2 and cache.get(("lws", "v1", "1"), {}).count == 0
    cache.forget(("lws", "v1", "1"))
    assert len(cache) == 2 - 1


# ---- the Kubernetes CEL libraries ----

STRINGS = [
    "'hello'.charAt(1) == 'e'",
    "'héllo'.charAt(1) == 'é'",
    "'hello'.indexOf('l') == 2",
    "'hello'.indexOf('z') == -1",
    "'hello'.lastIndexOf('l') == 3",
    "'HeLLo'.lowerAscii() == 'hello'",
    "'hello'.upperAscii() == 'HELLO'",
    "'a.b.c'.replace('.', '-') == 'a-b-c'",
    "'a.b.c'.replace('.', '-', 1) == 'a-b.c'",
    "'a,b,c'.split(',') == ['a', 'b', 'c']",
    "'a,b,c'.split(',', 2) == ['a', 'b,c']",
    "'hello'.substring(1, 3) == 'el'",
    "'hello'.substring(3) == 'lo'",
    "'  x \\t'.trim() == 'x'",
    "['a', 'b'].join('-') == 'a-b'",
    "['a', 'b'].join() == 'ab'",
]
MATCHES = [
    "'abc'.matches('b')",
    "!'abc'.matches('^b')",
    "'abc'.matches('^a.c$')",
    "'my-lws'.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    "!'2cube'.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
]
LISTS = [
    "[1, 2, 2].isSorted()",
    "![2, 1].isSorted()",
    "['a', 'b'].isSorted()",
    "[].isSorted()",
    "[1, 2, 3].sum() == 6",
    "[1.5, 2.5].sum() == 4.0",
    "[].sum() == 0",
    "[3, 1, 2].min() == 1",
    "[3, 1, 2].max() == 3",
    "['b', 'a'].min() == 'a'",
    "[1, 2, 1].indexOf(1) == 0",
    "[1, 2, 1].lastIndexOf(1) == 2",
    "[1, 2].indexOf(3) == -1",
    "[true, 1].indexOf(1) == 1",
    "[1, 2].indexOf(2.0) == 1",
]
REGEX = [
    "'abc123'.find('[0-9]+') == '123'",
    "'abc'.find('[0-9]+') == ''",
    "'a1b2c3'.findAll('[0-9]') == ['1', '2', '3']",
    "'a1b2c3'.findAll('[0-9]', 2) == ['1', '2']",
]
CORE = [
    "int('42') == 42",
    "int('-7') + 1 == -6",
    "size('abc') == 3",
    "size([1, 2]) == 2",
    "size({'a': 1}) == 1",
    "'abc'.size() == 3",
    "has(self.a) && !has(self.z)",
    "self.l.all(x, x > 0)",
    "self.l.exists(x, x == 2)",
    "self.l.exists_one(x, x == 2)",
    "self.l.filter(x, x > 1) == [2, 3]",
    "self.l.map(x, x * 2) == [2, 4, 6]",
    "type(self.a) == int",
    "type(self.s) == string",
    "type(self.l) == list",
    "self.?z.orValue(7) == 7",
    "cel.bind(x, self.a * 2, x + x == 4)",
    "self.s.startsWith('he') && self.s.endsWith('lo') && self.s.contains('ll')",
    "9223372036854775807 > 2147483647 * 2147483647",
]


@pytest.mark.parametrize("expression", STRINGS + MATCHES + LISTS + REGEX + CORE)
def test_kubernetes_cel_function(expression: str) -> None:
    assert holds(expression, {"a": 1, "s": "hello", "l": [1, 2, 3]})


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("[].min() == 0", "min called on empty list"),
        ("[].max() == 0", "max called on empty list"),
        ("[9223372036854775807, 1].sum() > 0", "integer overflow"),
        ("[1, 'a'].isSorted()", "no such overload"),
        ("[1, 2.5].sum() > 0", "no such overload"),
        ("int('x') == 0", "cannot convert string to int"),
        ("9223372036854775807 + 1 > 0", "integer overflow"),
        ("'abc'.charAt(10) == ''", "charAt"),
        ("{'a': 1}['b'] == 1", "no such key: b"),
        ("[1][3] == 1", "index out of bounds: 3"),
        ("1 / 0 == 1", "division by zero"),
    ],
)
def test_kubernetes_cel_function_errors_become_causes(expression: str, error: str) -> None:
    compiled = one_rule({"type": "object"}, expression)
    [cause] = cel.evaluate(compiled, {})
    assert error in cause.message and "rule: " in cause.message


def test_self_has_the_type_of_its_schema_node() -> None:
    assert cel_ext.self_type({"type": "integer"}).name() == "INT"
    assert cel_ext.self_type({"type": "array", "items": {"type": "string"}}).name() == "LIST<STRING>"
    assert (
        cel_ext.self_type({"type": "object", "additionalProperties": {"type": "integer"}}).name()
        == "MAP<STRING, INT>"
    )
    assert cel_ext.self_type({"x-kubernetes-int-or-string": True}).name() == "DYN"
    assert cel_ext.self_type({"type": "string", "nullable": True}).name() == "DYN"


def test_cel_equal_keeps_bools_apart_from_numbers() -> None:
    assert cel_ext.cel_equal(1, 1.0) and not cel_ext.cel_equal(True, 1)
    assert cel_ext.cel_equal({"a": [1]}, {"a": [1.0]}) and not cel_ext.cel_equal([1], [1, 2])


def test_thirty_rules_evaluate_quickly() -> None:
    import time

    node = {"type": "object", "x-kubernetes-validations": [rule(f"self.spec.replicas + {i} >= 0") for i in range(30)]}
    compiled = cel.compile_rules(node)
    obj = lws()
    start = time.perf_counter()
    for _ in range(20):
        assert cel.evaluate(compiled, obj) == []
    assert (time.perf_counter() - start) / 20 < 0.05  # measured ~1 ms; generous for slow CI machines


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "replicas",
                    "size",
                    "leaderWorkerTemplate",
                    "subGroupPolicy",
                    "subGroupSize",
                    "rolloutStrategy",
                    "rollingUpdateConfiguration",
                    "maxSurge",
                    "name",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(JSON, JSON)
def test_rules_never_raise_whatever_the_object(spec: Any, old_spec: Any) -> None:
    new, old = lws(), lws()
    new["spec"], old["spec"] = spec, old_spec
    for cause in cel.evaluate(COMPILED, new, old) + cel.evaluate(COMPILED, new):
        assert cause.reason == "FieldValueInvalid" and cause.message.startswith("Invalid value: ")


def test_cel_rule_failures_show_a_scalar_value_and_omit_an_object(sim_api: SimAPI) -> None:
    """crd/lws-validation/size-zero and name-not-dns1035 (the LWS CRD of manifests/crd/): kube-apiserver
    1.37 words a failed rule on a scalar `Invalid value: 0: <message>` and on an object `Invalid value:
    <message>` (it used to print the schema type, `Invalid value: "object"`)."""
    from pathlib import Path

    import yaml

    crd = yaml.safe_load((Path(__file__).resolve().parents[4] / "manifests/crd/leaderworkersets.yaml").read_text())
    assert sim_api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd).ok
    path = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets"
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}

    def lws(name: str, size: int) -> dict[str, object]:
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": name},
                "spec": {"leaderWorkerTemplate": {"size": size, "workerTemplate": template}}}

    size = sim_api.request("POST", path, json=lws("ok", 0)).json()["details"]["causes"]
    assert [c["message"] for c in size] == [
        "Invalid value: 0: spec.leaderWorkerTemplate.size must be >= 1 (size must be equal or greater than 1)"]
    name = sim_api.request("POST", path, json=lws("1abc", 1)).json()["details"]["causes"]
    assert name[0]["field"] == "metadata.name"
    assert name[0]["message"].startswith("Invalid value: metadata.name must be a DNS-1035 label")
