"""The token of a pod's projected `serviceAccountToken` volume source, from the TokenRequest API.

kube-apiserver's ServiceAccount admission gives every pod (unless automounting is off) a projected
`kube-api-access-*` volume: a `serviceAccountToken` source, the `kube-root-ca.crt` ConfigMap and the
namespace through the downward API. The kubelet fills the token by asking the API server:
`POST serviceaccounts/NAME/token`, bound to the pod (`boundObjectRef`), with the source's audience (none:
the API server's own) and lifetime (default 3607 s, kubelet's for kube-api-access). Our agents wrote an
empty file there, which only the sim's API server let pass unnoticed; on `--cluster=local` the token
is real, so in-pod clients can authenticate. An API server that does not serve TokenRequest (404; the
sim's does not) leaves the file empty, as before.
"""

from __future__ import annotations

from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors

DEFAULT_EXPIRATION = 3607
"""Seconds: what the kubelet asks for kube-api-access tokens (an hour plus the 7 s it uses to spot them)."""

Obj = dict[str, Any]


def token_source(pod: Obj, container: Obj) -> Obj | None:
    """The first projected serviceAccountToken source among the volumes `container` mounts, if any."""
    mounted = {m.get("name") for m in container.get("volumeMounts") or ()}
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if volume.get("name") not in mounted:
            continue
        for source in (volume.get("projected") or {}).get("sources") or ():
            if source.get("serviceAccountToken") is not None:
                return dict(source["serviceAccountToken"])
    return None


def token_request(pod: Obj, source: Obj) -> Obj:
    meta = pod.get("metadata") or {}
    spec: Obj = {"audiences": [source["audience"]] if source.get("audience") else [],
                 "expirationSeconds": int(source.get("expirationSeconds") or DEFAULT_EXPIRATION),
                 "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": meta.get("name"),
                                    "uid": meta.get("uid")}}
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


async def fetch(client: kc.Client, pod: Obj, container: Obj) -> str:
    """The token for `container`'s projected source, "" when it mounts none or the server has no TokenRequest.

    Raises:
        errors.KubeClientError: the server refused for another reason (the launch is retried).
    """
    source = token_source(pod, container)
    if source is None:
        return ""
    meta = pod.get("metadata") or {}
    account = str((pod.get("spec") or {}).get("serviceAccountName") or "default")
    path = f"/api/v1/namespaces/{meta.get('namespace')}/serviceaccounts/{account}/token"
    try:
        answer = await client.request("POST", path, body=token_request(pod, source))
    except errors.ApiError as exc:
        if exc.status in (404, 405):  # not served (the sim's API server)
            return ""
        raise
    return str((answer.get("status") or {}).get("token") or "")
