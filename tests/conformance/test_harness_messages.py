"""The conformance harness's field assertion: its failures name each wrong key with both values, in full.

Conformance failures are read by people who did not write the test, so a message must say where, what was
observed and what the contract expects, without pytest's truncated, unlabelled `==` diff.
"""

from __future__ import annotations

import pytest

from conformance.harness import assert_fields, mismatches

KEY = "leaderworkerset.sigs.k8s.io/group-key"


def test_matching_fields_pass_and_extra_keys_are_allowed_unless_exact() -> None:
    assert_fields("pod p labels", {"a": "1"}, {"a": "1", "b": "2"})
    assert mismatches({"a": "1"}, {"a": "1", "b": "2"}, exact=True) == ["b is '2', want absent"]


def test_message_names_the_object_the_key_and_both_values_untruncated() -> None:
    want, seen = "6a4c" + "0" * 36, "37f6" + "1" * 36
    with pytest.raises(AssertionError) as failure:
        assert_fields("worker StatefulSet lbl-0 metadata.labels", {KEY: want}, {KEY: seen},
                      why={KEY: "sha1('ns/lbl-0')"})
    assert str(failure.value).splitlines()[0] == \
        f"worker StatefulSet lbl-0 metadata.labels: {KEY} is '{seen}', want '{want}' (sha1('ns/lbl-0'))"


def test_missing_keys_and_a_missing_mapping_are_reported_as_missing() -> None:
    assert mismatches({"x": "1", "y": True}, None) == ["x is missing, want '1'", "y is missing, want True"]
    assert mismatches({"x": None}, {}) == ["x is missing, want None"]
