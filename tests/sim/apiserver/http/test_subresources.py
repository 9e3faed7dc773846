"""The `scale` subresource as kube-apiserver 1.37.2 serves it: the selector it reports and the checks on its
writes (found by the differential corpus, `lwsconf fidelity`); each test names the corpus interaction."""

from __future__ import annotations

from typing import Any

from tests.conftest import SimAPI

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                  "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_deployment_scale_selector_comes_from_spec(sim_api: SimAPI) -> None:
    """subresources/scale-subresource/get-scale: Scale.status.selector is spec.selector as a string."""
    assert sim_api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=DEPLOYMENT).status_code == 201
    scale = sim_api.request("GET", "/apis/apps/v1/namespaces/default/deployments/d/scale").json()
    assert scale["status"] == {"replicas": 0, "selector": "a=b"}


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_scale_writes_check_the_name_and_word_a_negative_count_as_kube_apiserver(sim_api: SimAPI) -> None:
    """subresources/scale-subresource/scale-name-mismatch and patch-scale-negative: the UPDATE handler's
    checkName (400), and ValidateScale's ValidateNonnegativeField wording."""
    assert sim_api.request("POST", DEPLOYMENTS, json=_deployment()).status_code == 201
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "other"}, "spec": {"replicas": 1}}
    mismatch = sim_api.request("PUT", f"{DEPLOYMENTS}/web/scale", json=scale)
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == "the name of the object (other) does not match the name on the URL (web)"
    negative = sim_api.request("PATCH", f"{DEPLOYMENTS}/web/scale", headers=MERGE, data='{"spec": {"replicas": -2}}')
    assert negative.status_code == 422
    assert negative.json()["message"] == ('Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -2: '
                                          "must be greater than or equal to 0")
