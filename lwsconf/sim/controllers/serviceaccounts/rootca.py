"""The root CA publisher: the `kube-root-ca.crt` ConfigMap in every namespace.

kube-controller-manager's root-ca-cert-publisher (pkg/controller/certificates/rootcacertpublisher)
writes the CA bundle that verifies the API server (`ca.crt`, the sim's self-signed certificate here) with
one annotation saying what it is for, creates it in each namespace, and puts data and annotation back
when someone changes them (other annotations and labels are kept). Pods read it through their
`kube-api-access-*` volume.
"""

from __future__ import annotations

import copy

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.serviceaccounts.per_namespace import Obj, PerNamespace

NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


def desired(ca: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": {"ca.crt": ca}}


def repair(current: Obj, ca: str) -> Obj | None:
    """The ConfigMap with its data and description restored, or None when both are as they must be
    (`syncNamespace`: equal data and a non-empty description annotation)."""
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    if current.get("data") == {"ca.crt": ca} and annotations.get(DESCRIPTION_ANNOTATION):
        return None
    fixed = copy.deepcopy(current)
    fixed["data"] = {"ca.crt": ca}
    fixed["metadata"].setdefault("annotations", {})[DESCRIPTION_ANNOTATION] = DESCRIPTION
    return fixed


def controller(client: kc.Client, *, informers: kubeclient.SharedInformers | None = None) -> PerNamespace:
    """The controller, publishing the CA its own client trusts; start it with `await controller(c).run(stop)`."""
    ca = (client.ca_pem or b"").decode()
    return PerNamespace(client, name=NAME, gvr=kc.CONFIGMAPS, informers=informers,
                        desired=lambda: desired(ca), repair=lambda current: repair(current, ca))
