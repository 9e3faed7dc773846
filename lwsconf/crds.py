"""Creating a CustomResourceDefinition the suite ships, for the callers that install one.

`lwsconf.reference.install_crd` (the LWS CRD: create, or replace what is there with ours) and
`lwsconf.podgroups.install_crd` (the PodGroup CRD: create when absent, never replace one that exists) share
the create-or-409 step; each waits for its CRD in its own way afterwards. Upstream's installer
(`lwsconf/upstream/install.py`) keeps its own create-or-replace: it applies webhook configurations the same
way, with a field manager, and reports failures as its own `InstallError`.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

__all__ = ["create_crd"]


def create_crd(api: client.ApiClient, body: dict[str, Any], *, replace_existing: bool) -> bool:
    """Create CRD `body`. When one of its name exists (HTTP 409), replace it with `body` at the live
    resourceVersion if `replace_existing`, else leave it as it is. Other API errors are raised.

    Returns:
        True when this call created the CRD.
    """
    ext = client.ApiextensionsV1Api(api)
    try:
        ext.create_custom_resource_definition(body)  # type: ignore[arg-type]  # the client sends dicts as they are
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        if replace_existing:
            name = body["metadata"]["name"]
            live = ext.read_custom_resource_definition(name)
            body = {**body, "metadata": {**body["metadata"],
                                         "resourceVersion": live.metadata.resource_version if live.metadata else None}}
            ext.replace_custom_resource_definition(name, body)  # type: ignore[arg-type]
        return False
    return True


def served_resources(api: client.ApiClient, group: str, version: str) -> list[client.V1APIResource] | None:
    """The resources discovery lists at `group`/`version` (subresources included), or None when the group version
    is not served (HTTP 404)."""
    try:
        found = client.CustomObjectsApi(api).get_api_resources(group, version)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return list(found.resources or [])
