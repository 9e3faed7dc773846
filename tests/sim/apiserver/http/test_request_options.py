"""Request options (`dryRun`, `fieldValidation`, the DeleteOptions body) as kube-apiserver 1.37.2 reads and
validates them (found by the differential corpus, `lwsconf fidelity`); each test names the corpus interaction."""

from __future__ import annotations

from tests.conftest import SimAPI

CMS = "/api/v1/namespaces/default/configmaps"


def test_dry_run_create_has_no_resource_version_and_dry_run_update_keeps_the_stored_one(sim_api: SimAPI) -> None:
    """requests/dry-run/create-dry and update-dry: nothing is stored by a dry run, so a created object
    has no resourceVersion, and an updated one shows the stored object's."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    dry = sim_api.request("POST", CMS, json=cm, params={"dryRun": "All"}).json()
    assert "resourceVersion" not in dry["metadata"]
    stored = sim_api.request("POST", CMS, json=cm).json()
    updated = sim_api.request("PUT", f"{CMS}/c", json={**cm, "data": {"a": "2"}}, params={"dryRun": "All"}).json()
    assert updated["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert updated["data"] == {"a": "2"}


def test_delete_options_errors_are_invalid_delete_options(sim_api: SimAPI) -> None:
    """deletion/delete-propagation/bad-policy and orphan-and-orphan-dependents: ValidateDeleteOptions
    answers 422 Invalid on DeleteOptions.meta.k8s.io, without a details name."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert sim_api.request("POST", CMS, json=cm).status_code == 201
    bad = sim_api.request("DELETE", f"{CMS}/c", json={"propagationPolicy": "Sideways"})
    assert bad.status_code == 422
    assert bad.json()["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                                     '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')
    assert bad.json()["details"] == {"group": "meta.k8s.io", "kind": "DeleteOptions", "causes": [
        {"reason": "FieldValueNotSupported", "field": "propagationPolicy", "message": 'Unsupported value: "Sideways": '
         'supported values: "Foreground", "Background", "Orphan", "nil"'}]}
    both = sim_api.request("DELETE", f"{CMS}/c", json={"propagationPolicy": "Orphan", "orphanDependents": False})
    assert both.status_code == 422 and "orphanDependents and deletionPropagation cannot be both set" in both.text
    assert sim_api.request("GET", f"{CMS}/c").status_code == 200


def test_unsupported_dry_run_and_field_validation_values_are_invalid_options(sim_api: SimAPI) -> None:
    """requests/dry-run/bad-dry-run-value, requests/field-validation/bad-field-validation-value: 422
    Invalid on CreateOptions.meta.k8s.io (UpdateOptions, PatchOptions for PUT and PATCH)."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    dry = sim_api.request("POST", CMS, json=cm, params={"dryRun": "Some"})
    assert dry.status_code == 422
    assert dry.json()["message"] == ('CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: '
                                     'supported values: "All"')
    loud = sim_api.request("POST", CMS, json=cm, params={"fieldValidation": "Loud"})
    assert loud.status_code == 422
    assert loud.json()["details"]["causes"] == [{"reason": "FieldValueNotSupported", "field": "fieldValidation",
                                                 "message": 'Unsupported value: "Loud": supported values: "", '
                                                            '"Ignore", "Strict", "Warn"'}]
