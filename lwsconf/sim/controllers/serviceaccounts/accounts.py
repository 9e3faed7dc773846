"""The serviceaccount controller: a `default` ServiceAccount in every active namespace.

kube-controller-manager's (pkg/controller/serviceaccount/serviceaccounts_controller.go `syncNamespace`)
creates `{metadata: {name: default}}` in each namespace whose phase is Active, again whenever it is
deleted, and leaves an existing one as it is. Pods default to this account, and the ServiceAccount
admission plugin reads its `automountServiceAccountToken` and `imagePullSecrets`.
"""

from __future__ import annotations

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.sim.controllers.serviceaccounts.per_namespace import PerNamespace

SERVICEACCOUNTS = kc.GVR("", "v1", "serviceaccounts")
DEFAULT = "default"


def controller(client: kc.Client, *, informers: kubeclient.SharedInformers | None = None) -> PerNamespace:
    """The controller; start it with `await controller(client).run(stop)`."""
    return PerNamespace(client, name=DEFAULT, gvr=SERVICEACCOUNTS, active_only=True, informers=informers,
                        desired=lambda: {"apiVersion": "v1", "kind": "ServiceAccount"})
