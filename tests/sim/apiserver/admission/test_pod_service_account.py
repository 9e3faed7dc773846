"""The `default` service account is set by the ServiceAccount admission plugin on CREATE only.

On kube-apiserver a pod update (PUT) whose spec omits serviceAccountName changes that field from
"default" to "", which pod update validation refuses (422: "pod updates may not change fields other
than ..."). The sim used to re-default it on every write and accepted the update. Found by the
differential corpus (`lwsconf fidelity`, crud/crud-pods/replace) against kube-apiserver 1.37.2.
"""

from __future__ import annotations

import json

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


# --- the API token volume (plugin/pkg/admission/serviceaccount `mountServiceAccountToken`, 1.37.2) -------------

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _pod(name: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec}}


def test_a_new_pod_gets_the_kube_api_access_volume_mounted_in_every_container(sim_api: SimAPI) -> None:
    body = _pod("p", initContainers=[{"name": "init", "image": "busybox:1.36"}])
    reply = sim_api.request("POST", PODS, json=body)
    assert reply.status_code == 201, reply.text
    spec = reply.json()["spec"]
    [volume] = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    mount = {"name": volume["name"], "readOnly": True, "mountPath": MOUNT}
    assert spec["containers"][0]["volumeMounts"] == spec["initContainers"][0]["volumeMounts"] == [mount]
    owned = json.dumps(reply.json()["metadata"]["managedFields"])
    assert "kube-api-access" not in owned and "f:volumes" not in owned  # admission runs after the field manager


def test_no_token_volume_when_the_pod_or_its_account_opts_out_or_the_path_is_taken(sim_api: SimAPI) -> None:
    opted_out = sim_api.request("POST", PODS, json=_pod("a", automountServiceAccountToken=False)).json()
    assert "volumes" not in opted_out["spec"]
    account = {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False,
               "imagePullSecrets": [{"name": "pull"}]}
    assert sim_api.request("POST", "/api/v1/namespaces/default/serviceaccounts", json=account).status_code == 201
    quiet = sim_api.request("POST", PODS, json=_pod("b", serviceAccountName="quiet")).json()["spec"]
    assert "volumes" not in quiet and quiet["imagePullSecrets"] == [{"name": "pull"}]
    own = _pod("c", volumes=[{"name": "mine", "emptyDir": {}}])
    own["spec"]["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": MOUNT}]  # type: ignore[index]
    taken = sim_api.request("POST", PODS, json=own).json()["spec"]
    assert [v["name"] for v in taken["volumes"]] == ["mine"]


def test_a_pod_naming_a_missing_service_account_is_refused(sim_api: SimAPI) -> None:
    reply = sim_api.request("POST", PODS, json=_pod("p", serviceAccountName="nobody"))
    assert reply.status_code == 403, reply.text
    assert reply.json()["message"] == ('pods "p" is forbidden: error looking up service account default/nobody: '
                                       'serviceaccount "nobody" not found')
