"""JSON patches of mutating webhooks follow gopkg.in/evanphx/json-patch.v4 (what kube-apiserver applies them with).

Expected words and rules are that library's `patch.go`; the differential test
(`test_webhooks_vs_kube_apiserver.py`) checks one of them against a real kube-apiserver.
"""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.sim.apiserver.policies.webhooks.patching import PatchFailed, apply

DOC = {"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"k": "v"}, "list": [1, 2]}


def test_patch_is_applied_to_a_copy() -> None:
    out = apply(DOC, [{"op": "add", "path": "/data/x", "value": "y"}, {"op": "remove", "path": "/list/0"},
                      {"op": "add", "path": "/list/-", "value": 3}, {"op": "add", "path": "/metadata/labels/b~1c",
                                                                      "value": "2"}])
    assert out == {"metadata": {"name": "c", "labels": {"a": "1", "b/c": "2"}}, "data": {"k": "v", "x": "y"},
                   "list": [2, 3]}
    assert DOC["data"] == {"k": "v"} and DOC["list"] == [1, 2]


def test_v4_replace_of_a_missing_object_key_adds_it() -> None:
    assert apply(DOC, [{"op": "replace", "path": "/data/new", "value": "n"}])["data"] == {"k": "v", "new": "n"}


def test_v4_test_of_a_missing_key_against_null_passes() -> None:
    assert apply(DOC, [{"op": "test", "path": "/data/none", "value": None}]) == DOC


@pytest.mark.parametrize(("op", "words"), [
    ({"op": "remove", "path": "/data/missing"},
     "error in remove for path: '/data/missing': Unable to remove nonexistent key: missing: missing value"),
    ({"op": "add", "path": "/spec/x", "value": 1}, 'add operation does not apply: doc is missing path: "/spec/x": '
                                                   "missing value"),
    ({"op": "remove", "path": "/spec/x"}, 'remove operation does not apply: doc is missing path: "/spec/x": '
                                          "missing value"),
    ({"op": "replace", "path": "/list/5", "value": 1},
     "replace operation does not apply: doc is missing key: /list/5: missing value"),
    ({"op": "test", "path": "/data/k", "value": "other"}, "testing value /data/k failed: test failed"),
    ({"op": "add", "path": "/list/9", "value": 1},
     "error in add for path: '/list/9': Unable to access invalid index: 9: invalid index referenced"),
    ({"op": "frobnicate", "path": "/x"}, "Unexpected kind: frobnicate"),
])
def test_a_patch_that_does_not_apply_fails_in_v4_words(op: dict[str, Any], words: str) -> None:
    with pytest.raises(PatchFailed) as failed:
        apply(DOC, [op])
    assert str(failed.value) == words
