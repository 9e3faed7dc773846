"""Volcano's PodGroup CRD, installed for runs that claim LWSGangScheduling (docs/lws-contract.md section 4.13).

An LWS implementation configured for Volcano gang scheduling creates one `scheduling.volcano.sh/v1beta1`
PodGroup per group; it cannot do so unless the cluster serves that kind. The suite runs no Volcano: it
installs its own PodGroup CRD (`manifests/volcano/podgroups.yaml`, written from Volcano's published API
types) so the objects can be created and read through the API, while pods keep the default scheduler.
A cluster that already serves PodGroups (Volcano installed) is left alone. Used by the pytest plugin
(`fixtures/implementations/`) and by upstream's manager set-up (`lwsconf/upstream/manager.py`), which
turns gang scheduling on only when the kind is served: upstream's pod reconciler creates the PodGroup
before a group's worker StatefulSet, so without the CRD no group would ever get its workers.
"""

from __future__ import annotations

import yaml
from kubernetes import client

from lwsconf import crds, lwsapi, project_files
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core

CRD_FILE = project_files.project_dir("manifests") / "volcano" / "podgroups.yaml"
CRD_NAME = f"{lwsapi.PODGROUP_PLURAL}.{lwsapi.VOLCANO_GROUP}"


def served(api: client.ApiClient) -> bool:
    """Whether the cluster serves scheduling.volcano.sh/v1beta1 podgroups (the group's discovery lists it)."""
    resources = crds.served_resources(api, lwsapi.VOLCANO_GROUP, lwsapi.VOLCANO_VERSION)
    return resources is not None and any(r.name == lwsapi.PODGROUP_PLURAL for r in resources)


def install_crd(api: client.ApiClient, timeouts: Timeouts) -> bool:
    """Create our PodGroup CRD unless the kind is served already; wait until PodGroups can be listed.

    Returns:
        True when this call created the CRD, False when the cluster served PodGroups already.
    """
    if served(api):
        return False
    # a PodGroup CRD that exists already but does not serve yet is left as it is, never replaced
    crds.create_crd(api, yaml.safe_load(CRD_FILE.read_text()), replace_existing=False)
    custom = client.CustomObjectsApi(api)

    def listable() -> None:
        try:
            custom.list_namespaced_custom_object(lwsapi.VOLCANO_GROUP, lwsapi.VOLCANO_VERSION, "default",
                                                 lwsapi.PODGROUP_PLURAL, limit=1)
        except client.ApiException as exc:
            if exc.status in (404, 503):
                raise core.NotYet(f"listing PodGroups answered HTTP {exc.status}") from None
            raise

    core.wait_until(listable, what=f"CRD {CRD_NAME} to serve PodGroups", timeout=timeouts.create,
                    poll=timeouts.poll_interval)
    return True
