"""Answers the differential corpus (`lwsconf fidelity`, against kube-apiserver 1.37.2) found the sim
giving differently; each test names the corpus interaction and the kube-apiserver behaviour."""

from __future__ import annotations

from tests.conftest import SimAPI


def test_unknown_resource_is_the_plain_not_found_status(sim_api: SimAPI) -> None:
    """requests/bad-requests/unknown-resource: kube-apiserver answers a path it does not serve with
    NotFound "the server could not find the requested resource" and empty details."""
    reply = sim_api.request("GET", "/api/v1/namespaces/default/frobnicators")
    assert reply.status_code == 404
    assert reply.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": "the server could not find the requested resource", "reason": "NotFound",
                            "details": {}, "code": 404}


CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                  "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


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


def test_deployment_status_is_an_empty_object_and_statefulset_min_ready_seconds_is_omitted(sim_api: SimAPI) -> None:
    """crud/crud-deployments/create and crud/crud-statefulsets/create: DeploymentStatus is a struct (always
    written, `{}` when empty); StatefulSetSpec.minReadySeconds is omitempty and not defaulted."""
    created = sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=DEPLOYMENT).json()
    assert created["status"] == {}
    sts = {**DEPLOYMENT, "kind": "StatefulSet", "spec": {**DEPLOYMENT["spec"], "serviceName": "d"}}
    created = sim_api.request("POST", "/apis/apps/v1/namespaces/default/statefulsets", json=sts).json()
    assert "minReadySeconds" not in created["spec"]


def test_pod_conditions_written_without_probe_time_read_back_null(sim_api: SimAPI) -> None:
    """subresources/status-subresource/pod-status-ready: PodCondition.lastProbeTime is a metav1.Time
    value, serialised as null when a client leaves it out."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert sim_api.request("POST", "/api/v1/namespaces/default/pods", json=pod).status_code == 201
    patched = sim_api.request("PATCH", "/api/v1/namespaces/default/pods/p/status",
                              data='{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}',
                              headers={"Content-Type": "application/strategic-merge-patch+json"}).json()
    ready = next(c for c in patched["status"]["conditions"] if c["type"] == "Ready")
    assert "lastProbeTime" in ready and ready["lastProbeTime"] is None


PODS = "/api/v1/namespaces/default/pods"


def test_marking_for_deletion_bumps_generation_and_a_removed_pod_is_answered_as_marked(sim_api: SimAPI) -> None:
    """deletion/delete-propagation/delete-orphan, crud/crud-pods/delete, deletion/delete-grace/*: setting
    deletionTimestamp increments a tracked generation (rest.BeforeDelete, markAsDeleting), and a pod
    deleted at once is answered with its deletionTimestamp and deletionGracePeriodSeconds 0."""
    created = sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=DEPLOYMENT).json()
    assert created["metadata"]["generation"] == 1
    marked = sim_api.request("DELETE", "/apis/apps/v1/namespaces/default/deployments/d",
                             json={"propagationPolicy": "Orphan"}).json()
    assert marked["metadata"]["generation"] == 2 and marked["metadata"]["finalizers"] == ["orphan"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert sim_api.request("POST", PODS, json=pod).status_code == 201
    gone = sim_api.request("DELETE", f"{PODS}/p").json()
    assert gone["kind"] == "Pod" and gone["metadata"]["deletionGracePeriodSeconds"] == 0
    assert gone["metadata"]["deletionTimestamp"] and gone["metadata"]["generation"] == 2
    assert sim_api.request("GET", f"{PODS}/p").status_code == 404


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


def test_deployment_scale_selector_comes_from_spec(sim_api: SimAPI) -> None:
    """subresources/scale-subresource/get-scale: Scale.status.selector is spec.selector as a string."""
    assert sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=DEPLOYMENT).status_code == 201
    scale = sim_api.request("GET", "/apis/apps/v1/namespaces/default/deployments/d/scale").json()
    assert scale["status"] == {"replicas": 0, "selector": "a=b"}


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


def test_cel_rule_failures_show_a_scalar_value_and_omit_an_object(sim_api: SimAPI) -> None:
    """crd/lws-validation/size-zero and name-not-dns1035 (the LWS CRD of manifests/crd/): kube-apiserver
    1.37 words a failed rule on a scalar `Invalid value: 0: <message>` and on an object `Invalid value:
    <message>` (it used to print the schema type, `Invalid value: "object"`)."""
    from pathlib import Path

    import yaml

    crd = yaml.safe_load((Path(__file__).resolve().parents[3] / "manifests/crd/leaderworkersets.yaml").read_text())
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


def test_strict_decoding_errors_name_the_kind_and_version(sim_api: SimAPI) -> None:
    """requests/field-validation/unknown-strict: kube-apiserver's decoder prefixes the strict error with
    `ConfigMap in version "v1" cannot be handled as a ConfigMap: `."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "colour": "blue"}
    reply = sim_api.request("POST", CMS, json=body, params={"fieldValidation": "Strict"})
    assert reply.status_code == 400
    assert reply.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding '
                                       'error: unknown field "colour"')


def test_field_selector_errors_are_worded_as_kube_apiserver(sim_api: SimAPI) -> None:
    """selectors/selectors-fields/unsupported-*."""
    pods = sim_api.request("GET", "/api/v1/namespaces/default/pods", params={"fieldSelector": "spec.containers=x"})
    assert (pods.status_code, pods.json()["message"]) == (400, "field label not supported: spec.containers")
    cms = sim_api.request("GET", CMS, params={"fieldSelector": "data.a=1"})
    assert cms.json()["message"] == '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'


def test_a_put_omitting_defaulted_fields_does_not_bump_generation(sim_api: SimAPI) -> None:
    """crud/crud-deployments/replace: the spec is compared once defaults are applied, so re-sending
    the created body with a new label keeps generation 1; a real spec change bumps it."""
    path = "/apis/apps/v1/namespaces/default/deployments"
    created = sim_api.request("POST", path, json=DEPLOYMENT).json()
    relabelled = {**DEPLOYMENT, "metadata": {"name": "d", "labels": {"x": "y"},
                                             "resourceVersion": created["metadata"]["resourceVersion"]}}
    updated = sim_api.request("PUT", f"{path}/d", json=relabelled).json()
    assert updated["metadata"]["generation"] == 1 and updated["metadata"]["labels"] == {"x": "y"}
    scaled = sim_api.request("PATCH", f"{path}/d", json={"spec": {"replicas": 3}},
                             headers={"Content-Type": "application/merge-patch+json"}).json()
    assert scaled["metadata"]["generation"] == 2
