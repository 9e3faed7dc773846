"""NamespaceLifecycle admission: what a create into a missing or terminating namespace is answered.

Found by the held-out fidelity corpus (issue 33): every controller keeps writing events, Services and
status while a test's namespace goes, and kube-apiserver's refusal names the object being created with a
NamespaceTerminating cause (apiserver admission/plugin/namespace/lifecycle, `admission.NewForbidden`).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SimAPI

HOLD = "test.lwsconf.dev/hold"


@pytest.fixture
def terminating(sim_api: SimAPI) -> str:
    """A namespace being deleted, kept terminating by a ConfigMap with a finalizer (no controllers run here)."""
    assert sim_api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": "going"}}).status_code == 201
    held = {"metadata": {"name": "held", "finalizers": [HOLD]}}
    assert sim_api.request("POST", "/api/v1/namespaces/going/configmaps", json=held).status_code == 201
    assert sim_api.request("DELETE", "/api/v1/namespaces/going").status_code == 200
    return "going"


def refusal(sim_api: SimAPI, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = sim_api.request("POST", path, json=body)
    assert reply.status_code == 403, reply.text
    status: dict[str, Any] = reply.json()
    return status


def test_a_create_in_a_terminating_namespace_names_the_object_and_the_namespace_terminating_cause(
        sim_api: SimAPI, terminating: str) -> None:
    status = refusal(sim_api, f"/api/v1/namespaces/{terminating}/configmaps", {"metadata": {"name": "late"}})
    assert status["reason"] == "Forbidden"
    assert status["message"] == ('configmaps "late" is forbidden: unable to create new content in namespace going '
                                 "because it is being terminated")
    assert status["details"] == {"name": "late", "kind": "configmaps", "causes": [
        {"reason": "NamespaceTerminating", "message": "namespace going is being terminated",
         "field": "metadata.namespace"}]}


def test_a_generated_name_create_is_named_by_its_prefix_and_a_group_is_given(
        sim_api: SimAPI, terminating: str) -> None:
    status = refusal(sim_api, f"/apis/apps/v1/namespaces/{terminating}/statefulsets",
                     {"metadata": {"generateName": "sts-"}, "spec": {}})
    assert status["message"].startswith('statefulsets.apps "sts-" is forbidden: unable to create new content')
    assert status["details"]["group"] == "apps" and status["details"]["name"] == "sts-"


def test_updates_in_a_terminating_namespace_are_still_admitted(sim_api: SimAPI, terminating: str) -> None:
    reply = sim_api.request("PATCH", f"/api/v1/namespaces/{terminating}/configmaps/held",
                            data='{"data":{"k":"v"}}', headers={"Content-Type": "application/merge-patch+json"})
    assert reply.status_code == 200, reply.text


def test_a_create_in_a_missing_namespace_is_not_found_for_the_namespace(sim_api: SimAPI) -> None:
    reply = sim_api.request("POST", "/api/v1/namespaces/nowhere/configmaps", json={"metadata": {"name": "c"}})
    assert reply.status_code == 404 and reply.json()["message"] == 'namespaces "nowhere" not found'


def test_deleting_a_namespace_marks_it_terminating_without_a_grace_period(sim_api: SimAPI) -> None:
    """The namespace REST's Delete sets deletionTimestamp and the phase itself; unlike the generic store's
    markAsDeleting it writes no deletionGracePeriodSeconds (pkg/registry/core/namespace/storage, 1.37.2)."""
    assert sim_api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": "gone"}}).status_code == 201
    reply = sim_api.request("DELETE", "/api/v1/namespaces/gone", json={"propagationPolicy": "Background"})
    assert reply.status_code == 200, reply.text
    meta = reply.json()["metadata"]
    assert meta["deletionTimestamp"] and reply.json()["status"]["phase"] == "Terminating"
    assert "deletionGracePeriodSeconds" not in meta, meta

