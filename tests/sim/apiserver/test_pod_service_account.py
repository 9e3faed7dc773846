"""The `default` service account is set by the ServiceAccount admission plugin on CREATE only.

On kube-apiserver a pod update (PUT) whose spec omits serviceAccountName changes that field from
"default" to "", which pod update validation refuses (422: "pod updates may not change fields other
than ..."). The sim used to re-default it on every write and accepted the update. Found by the
differential corpus (`lwsconf fidelity`, crud/crud-pods/replace) against kube-apiserver 1.37.2.
"""

from __future__ import annotations

from tests.conftest import SimAPI

PODS = "/api/v1/namespaces/default/pods"


def test_update_omitting_service_account_is_refused(sim_api: SimAPI) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
    created = sim_api.request("POST", PODS, json=pod).json()
    assert created["spec"]["serviceAccountName"] == created["spec"]["serviceAccount"] == "default"
    again = {**pod, "metadata": {"name": "p", "labels": {"x": "y"},
                                 "resourceVersion": created["metadata"]["resourceVersion"]}}
    reply = sim_api.request("PUT", f"{PODS}/p", json=again)
    assert reply.status_code == 422, reply.text
    assert "pod updates may not change fields" in reply.json()["message"]
    kept = {**created, "metadata": {**created["metadata"], "labels": {"x": "y"}}}
    assert sim_api.request("PUT", f"{PODS}/p", json=kept).status_code == 200
