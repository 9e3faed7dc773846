"""Label and field selector parsing, matching and canonical rendering."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwsconf.sim.apiserver.apimachinery import errors, selectors
from tests.conftest import SimAPI

LabelSelector = selectors.LabelSelector
FieldSelector = selectors.FieldSelector


def _bad_request(text: str) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as info:
        LabelSelector.parse(text)
    assert info.value.code == 400
    return info.value


# --- label selectors: parsing ----------------------------------------------------------------------

@pytest.mark.parametrize("text, labels, expected", [
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "web"}, True),
    ("app=web", {"app": "db"}, False),
    ("app!=web", {"app": "db"}, True),
    ("app!=web", {}, True),
    ("app in (web,db)", {"app": "db"}, True),
    ("app in (web,db)", {}, False),
    ("app notin (web)", {"app": "db"}, True),
    ("app notin (web)", {"app": "web"}, False),
    ("app", {"app": ""}, True),
    ("app", {"other": "x"}, False),
    ("!app", {"other": "x"}, True),
    ("!app", {"app": "x"}, False),
    ("app=web,tier in (front)", {"app": "web", "tier": "front"}, True),
    ("app=web,tier in (front)", {"app": "web", "tier": "back"}, False),
    ("app=", {"app": ""}, True),
    ("app=", {}, False),
], ids=lambda v: repr(v))
def test_requirement_forms_match_like_the_apiserver(text: str, labels: dict[str, str], expected: bool) -> None:
    assert LabelSelector.parse(text).matches(labels) is expected


def test_notin_matches_objects_without_the_key() -> None:
    assert LabelSelector.parse("env notin (prod)").matches({"app": "x"})


def test_empty_selector_matches_everything_including_no_labels() -> None:
    sel = LabelSelector.parse("")
    assert sel.is_empty() and sel.matches(None) and sel.matches({"a": "b"})
    assert LabelSelector.parse("   ").is_empty()


def test_whitespace_is_tolerated_around_operators_and_values() -> None:
    sel = LabelSelector.parse("  a = b ,  c  in ( x , y ) , ! d , e notin(z)")
    assert str(sel) == "a=b,c in (x,y),!d,e notin (z)"


def test_string_form_is_sorted_by_key_with_sorted_values() -> None:
    sel = LabelSelector.parse("z=1,a in (c,b,b),m")
    assert str(sel) == "a in (b,c),m,z=1"


def test_prefixed_keys_are_accepted() -> None:
    sel = LabelSelector.parse("leaderworkerset.sigs.k8s.io/name=lws1")
    assert sel.matches({"leaderworkerset.sigs.k8s.io/name": "lws1"})


_VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
               "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
               "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.mark.parametrize("text, message", [
    # the first three as kube-apiserver 1.37.2 answered them (lwsconf fidelity selectors/selectors-labels/
    # invalid-operator and invalid-value, deletion/delete-collection/deletecollection-bad-selector)
    ("tier>>web", "unable to parse requirement: found '>', expected: identifier"),
    ("tier=-bad-", f'unable to parse requirement: values[0][tier]: Invalid value: "-bad-": {_VALUE_RULE}'),
    ("==", "found '==', expected: !, identifier, or 'end of string'"),
    # the rest follow apimachinery pkg/labels/selector.go's parser
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a in x", "unable to parse requirement: found 'x' expected: '('"),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ("a,", "found '', expected: identifier after ','"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("/x=y", 'unable to parse requirement: <nil>: Invalid value: "/x": prefix part must be non-empty'),
    (f"{'k' * 64}=v", f'unable to parse requirement: <nil>: Invalid value: "{"k" * 64}": name part must be no '
                      "more than 63 characters"),
    ("a in (ok,not ok)", "unable to parse requirement: found 'ok', expected: ',' or ')'"),
    ("x>y", 'unable to parse requirement: values[0]: Invalid value: "y": for \'Gt\', \'Lt\' operators, the value '
            "must be an integer"),
], ids=lambda v: repr(v))
def test_bad_label_selectors_are_worded_as_kube_apiserver(text: str, message: str) -> None:
    assert _bad_request(text).message == message


def test_an_empty_in_set_is_the_empty_value_and_gt_lt_compare_integers() -> None:
    """selectors/selectors-labels/empty-in-set: kube-apiserver reads `tier in ()` as `tier in ("")`
    (parseValues), and answers a list."""
    assert LabelSelector.parse("tier in ()").matches({"tier": ""})
    assert not LabelSelector.parse("tier in ()").matches({"tier": "web"})
    assert LabelSelector.parse("n>3").matches({"n": "4"}) and not LabelSelector.parse("n<3").matches({"n": "x"})
    assert str(LabelSelector.parse("n>3")) == "n>3"


def test_equality_terms_are_equals_and_single_value_in() -> None:
    sel = LabelSelector.parse("a=1,b in (2),c in (3,4),d!=5,e")
    assert sel.equality_terms() == [("a", "1"), ("b", "2")]


# --- label selectors: object form ------------------------------------------------------------------

def test_from_dict_combines_match_labels_and_expressions() -> None:
    sel = LabelSelector.from_dict({
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                             {"key": "legacy", "operator": "DoesNotExist"}],
    })
    assert str(sel) == "app=web,!legacy,tier in (a,b)"
    assert sel.matches({"app": "web", "tier": "b"})
    assert not sel.matches({"app": "web", "tier": "b", "legacy": "1"})


def test_from_empty_dict_matches_everything() -> None:
    assert LabelSelector.from_dict({}).is_empty()
    assert LabelSelector.from_dict({"matchLabels": None}).matches({"x": "y"})


@pytest.mark.parametrize("sel, fragment", [
    ({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}, "not a valid label selector"),
    ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "values set can't be empty"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "must be empty"),
    ({"matchLabels": {"a": 1}}, "must be a string"),
    ({"matchLabels": ["a"]}, "matchLabels must be a map"),
    ({"matchExpressions": {"key": "a"}}, "matchExpressions must be a list"),
], ids=["operator", "in-empty", "exists-values", "label-type", "labels-type", "expressions-type"])
def test_from_dict_rejects_malformed_selectors(sel: dict[str, Any], fragment: str) -> None:
    with pytest.raises(errors.StatusError) as info:
        LabelSelector.from_dict(sel)
    assert info.value.code == 400 and fragment in info.value.message


_keys = st.from_regex(r"\A([a-z0-9]{1,5}(\.[a-z0-9]{1,5})?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?\Z")
_values = st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?\Z")


@st.composite
def _selector_dicts(draw: st.DrawFn) -> dict[str, Any]:
    expressions = []
    for key in draw(st.lists(_keys, max_size=4)):
        op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
        values = draw(st.lists(_values | st.just(""), min_size=1, max_size=3)) if op in ("In", "NotIn") else []
        expressions.append({"key": key, "operator": op, "values": values})
    labels = draw(st.dictionaries(_keys, _values | st.just(""), max_size=3))
    return {"matchLabels": labels, "matchExpressions": expressions}


@given(_selector_dicts())
def test_parse_of_the_string_form_round_trips(sel_dict: dict[str, Any]) -> None:
    sel = LabelSelector.from_dict(sel_dict)
    assert LabelSelector.parse(str(sel)) == sel


@given(_selector_dicts(), st.dictionaries(_keys, _values, max_size=4))
def test_string_form_selects_the_same_labels_as_the_object_form(sel_dict: dict[str, Any],
                                                                labels: dict[str, str]) -> None:
    sel = LabelSelector.from_dict(sel_dict)
    assert LabelSelector.parse(str(sel)).matches(labels) == sel.matches(labels)


@given(st.text(max_size=30))
def test_parse_raises_only_bad_request_on_arbitrary_text(text: str) -> None:
    try:
        LabelSelector.parse(text)
    except errors.StatusError as err:
        assert err.code == 400


# --- field selectors -------------------------------------------------------------------------------

POD = {
    "metadata": {"name": "p1", "namespace": "ns"},
    "spec": {"nodeName": "node-1", "hostNetwork": True},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize("text, expected", [
    ("metadata.name=p1", True),
    ("metadata.name==p1", True),
    ("metadata.name!=p1", False),
    ("spec.nodeName=node-1,status.phase=Running", True),
    ("spec.nodeName=node-1,status.phase!=Running", False),
    ("spec.hostNetwork=true", True),
    ("spec.schedulerName=", True),
    ("spec.schedulerName!=", False),
    ("", True),
], ids=lambda v: repr(v))
def test_field_terms_compare_the_string_form_of_the_field(text: str, expected: bool) -> None:
    assert FieldSelector.parse(text).matches(POD) is expected


def test_missing_field_compares_as_empty_string() -> None:
    assert FieldSelector.parse("spec.nodeName=").matches({"spec": {}})
    assert not FieldSelector.parse("spec.nodeName=").matches(POD)


def test_absent_boolean_fields_read_false_like_the_apiserver() -> None:
    assert FieldSelector.parse("spec.unschedulable=false").matches({"spec": {}})
    assert FieldSelector.parse("spec.unschedulable=true").matches({"spec": {"unschedulable": True}})


def test_core_event_source_selects_on_source_component() -> None:
    event = {"source": {"component": "kubelet"}, "involvedObject": {"kind": "Pod", "name": "p1"}}
    assert FieldSelector.parse("source=kubelet,involvedObject.kind=Pod").matches(event)


def test_escaped_commas_and_equals_are_part_of_the_value() -> None:
    sel = FieldSelector.parse(r"metadata.name=a\,b\=c\\d,status.phase!=x")
    assert sel.terms[0].value == "a,b=c\\d"
    assert str(sel) == r"metadata.name=a\,b\=c\\d,status.phase!=x"
    assert sel.equality_terms() == [("metadata.name", "a,b=c\\d")]


@pytest.mark.parametrize("text", ["nooperator", "=x", r"a=b\q", "a=b=c", "a=b\\"])
def test_bad_field_selectors_are_bad_requests(text: str) -> None:
    with pytest.raises(errors.StatusError) as info:
        FieldSelector.parse(text)
    assert info.value.code == 400 and repr(text) in info.value.message


@pytest.mark.parametrize("plural, group, field", [
    ("pods", "", "spec.nodeName"),
    ("pods", "", "status.nominatedNodeName"),
    ("events", "", "involvedObject.uid"),
    ("events", "", "reportingComponent"),
    ("events", "events.k8s.io", "regarding.name"),
    ("events", "events.k8s.io", "reportingController"),
    ("nodes", "", "spec.unschedulable"),
    ("namespaces", "", "status.phase"),
    ("secrets", "", "type"),
    ("statefulsets", "apps", "metadata.namespace"),
    ("leaderworkersets", "leaderworkerset.x-k8s.io", "metadata.name"),
])
def test_supported_field_labels_pass(plural: str, group: str, field: str) -> None:
    FieldSelector.parse(f"{field}=x").check_supported(plural, group)


@pytest.mark.parametrize("plural, group, field", [
    ("statefulsets", "apps", "status.replicas"),
    ("replicasets", "apps", "status.replicas"),
    ("pods", "", "spec.containers"),
    ("events", "events.k8s.io", "involvedObject.name"),
    ("events", "", "regarding.name"),
    ("leaderworkersets", "leaderworkerset.x-k8s.io", "spec.replicas"),
])
def test_unsupported_field_labels_are_rejected_as_kube_apiserver_words_it(plural: str, group: str,
                                                                           field: str) -> None:
    """Kinds with their own field label conversion say `field label not supported: X`; the others get
    apimachinery's default conversion's `"X" is not a known field selector: only ...` (kube-apiserver 1.37)."""
    with pytest.raises(errors.StatusError) as info:
        FieldSelector.parse(f"{field}=x").check_supported(plural, group)
    assert info.value.code == 400
    assert info.value.message in (f"field label not supported: {field}",
                                  f'"{field}" is not a known field selector: only "metadata.name", '
                                  '"metadata.namespace"')


def test_crd_selectable_fields_can_be_added() -> None:
    FieldSelector.parse("spec.size=2").check_supported("leaderworkersets", "leaderworkerset.x-k8s.io",
                                                       extra=["spec.size"])


_field_values = st.text(alphabet=st.sampled_from("ab,=\\ -"), max_size=8)


@given(st.lists(st.tuples(st.sampled_from(["metadata.name", "status.phase", "spec.nodeName"]),
                          _field_values, st.booleans()), max_size=4))
def test_field_selector_string_form_round_trips(terms: list[tuple[str, str, bool]]) -> None:
    sel = FieldSelector(tuple(selectors.FieldTerm(f, v, n) for f, v, n in terms))
    assert FieldSelector.parse(str(sel)) == sel


def test_a_field_selector_term_without_operator_is_named_in_sorted_order() -> None:
    """selectors/selectors-fields/set-based-field: pkg/fields/selector.go sorts the terms before
    splitting them, so kube-apiserver 1.37.2 names 'b)' of 'metadata.name in (a,b)'."""
    with pytest.raises(errors.StatusError) as caught:
        FieldSelector.parse("metadata.name in (a,b)")
    assert caught.value.message == "invalid selector: 'metadata.name in (a,b)'; can't understand 'b)'"


CMS = "/api/v1/namespaces/default/configmaps"


def test_field_selector_errors_are_worded_as_kube_apiserver(sim_api: SimAPI) -> None:
    """selectors/selectors-fields/unsupported-*."""
    pods = sim_api.request("GET", "/api/v1/namespaces/default/pods", params={"fieldSelector": "spec.containers=x"})
    assert (pods.status_code, pods.json()["message"]) == (400, "field label not supported: spec.containers")
    cms = sim_api.request("GET", CMS, params={"fieldSelector": "data.a=1"})
    assert cms.json()["message"] == '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'
