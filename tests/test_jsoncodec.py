"""lwsconf.jsoncodec gives the standard library's results where orjson alone would differ."""

from __future__ import annotations

import json

import pytest

from lwsconf import jsoncodec


def test_dumps_is_compact_json_that_reads_back_the_same() -> None:
    obj = {"metadata": {"name": "x-0", "labels": {"a": "b"}}, "spec": {"replicas": 3, "ratio": 0.5, "on": True,
                                                                       "none": None, "list": [1, "two"]}}
    assert jsoncodec.dumps(obj) == json.dumps(obj, separators=(",", ":")).encode()
    assert json.loads(jsoncodec.dumps({"name": "é"})) == {"name": "é"}  # UTF-8, not an escape


def test_dumps_falls_back_for_what_orjson_refuses() -> None:
    assert jsoncodec.dumps({"big": 2**70}) == b'{"big":1180591620717411303424}'
    assert jsoncodec.dumps({1: "one"}) == b'{"1":"one"}'


def test_loads_falls_back_to_the_standard_library() -> None:
    assert jsoncodec.loads(b'{"a": [1, 2]}') == {"a": [1, 2]}
    assert jsoncodec.loads("[1]") == [1]
    assert repr(jsoncodec.loads(b"NaN")) == "nan"
    with pytest.raises(json.JSONDecodeError) as raised:
        jsoncodec.loads(b"{")
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(b"{")
    assert str(raised.value) == str(expected.value)


def test_copy_is_deep_and_falls_back_for_other_values() -> None:
    obj = {"a": {"b": [1, {"c": 2}]}}
    copied = jsoncodec.copy(obj)
    copied["a"]["b"][1]["c"] = 3
    assert obj == {"a": {"b": [1, {"c": 2}]}}
    odd = {"big": 2**70, "set": {1}}
    assert jsoncodec.copy(odd) == odd and jsoncodec.copy(odd)["set"] is not odd["set"]
