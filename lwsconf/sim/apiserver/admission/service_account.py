"""The ServiceAccount admission plugin's work on a Pod CREATE: the API token volume and the pull secrets.

kube-apiserver (plugin/pkg/admission/serviceaccount, 1.37.2) gives every new pod whose token is automounted
(the pod's `automountServiceAccountToken`, else its ServiceAccount's, else true) a projected volume
`kube-api-access-<5 random characters>` (a bound token, the `kube-root-ca.crt` ConfigMap's `ca.crt`, the
namespace through the downward API) and mounts it read-only at /var/run/secrets/kubernetes.io/serviceaccount
in every init and app container that has nothing mounted there. A pod without image pull secrets takes
its ServiceAccount's. Mirror pods are left alone. The held-out fidelity corpus (issue 33) found 306
interactions where the sim's pods lacked this volume.

The plugin runs after the field manager (the handler records managedFields first), so nothing it adds is
owned by the writer. The `serviceAccountName` default itself is set with the other pod defaults
(`defaults_pods`). Pure: the caller looks the ServiceAccount up.

One accepted difference: kube-apiserver refuses (403) a pod whose ServiceAccount does not exist, waiting up to
ten lookups for `default`, which kube-controller-manager creates in every new namespace. The sim refuses a
missing account other than `default` the same way, but admits a pod before `default` exists, since an
API server run without controllers (the sim's API-only tests) would refuse every pod; on a cluster the sim's
serviceaccount controller creates `default` as kube-controller-manager does.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, objects

VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
TOKEN_EXPIRATION_SECONDS = 3607
"""serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and 7 s, which the kubelet recognises."""
DEFAULT_ACCOUNT = "default"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

Obj = dict[str, Any]


def token_volume(name: str) -> Obj:
    """The projected volume `TokenVolumeSource` describes, with its explicit defaultMode (0644)."""
    return {"name": name, "projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}


def should_automount(spec: Obj, account: Obj | None) -> bool:
    """The pod's preference, else its ServiceAccount's, else true."""
    if isinstance(spec.get("automountServiceAccountToken"), bool):
        return bool(spec["automountServiceAccountToken"])
    if account is not None and isinstance(account.get("automountServiceAccountToken"), bool):
        return bool(account["automountServiceAccountToken"])
    return True


def mount_token(spec: Obj) -> None:
    """`mountServiceAccountToken`: an existing `kube-api-access-*` volume is reused; each container without a
    mount at MOUNT_PATH gets one; the volume is added last when some container needed it."""
    volumes: list[Any] = spec["volumes"] if isinstance(spec.get("volumes"), list) else []
    existing = next((v.get("name") for v in volumes
                     if isinstance(v, dict) and str(v.get("name") or "").startswith(VOLUME_PREFIX)), None)
    name = existing or objects.generated_name(VOLUME_PREFIX)  # names.SimpleNameGenerator, as the plugin's
    needed = False
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or ():
            if not isinstance(container, dict):
                continue
            mounts: list[Any] = container["volumeMounts"] if isinstance(container.get("volumeMounts"), list) else []
            if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}]
            needed = True
    if existing is None and needed:
        spec["volumes"] = [*volumes, token_volume(name)]


def admit_pod(pod: Obj, namespace: str, account: Obj | None) -> None:
    """The plugin's `Admit` of a Pod CREATE in `namespace`, given its ServiceAccount as stored (None: missing).

    Raises:
        StatusError: 403 for a missing ServiceAccount other than `default` (see the module's note).
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec")
    if not isinstance(spec, dict) or MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return
    name = str(spec.get("serviceAccountName") or DEFAULT_ACCOUNT)
    if account is None and name != DEFAULT_ACCOUNT:
        raise errors.forbidden("pods", "", objects.admission_name(pod),
                               f"error looking up service account {namespace}/{name}: "
                               f'serviceaccount "{name}" not found')
    if should_automount(spec, account):
        mount_token(spec)
    if not spec.get("imagePullSecrets") and account is not None and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": s.get("name", "")} for s in account["imagePullSecrets"]
                                    if isinstance(s, dict)]
