"""Which DisaggregatedSet features a cluster can carry, read from what it serves (`lwsconf.disaggserved`): nothing
served withdraws the whole profile; upstream v0.9.0's schema (no slices, placement or scaling; no scaler kind)
withdraws the three features it lacks; our CRDs withdraw nothing. On a real (sim) API server, no controllers."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from kubernetes import client

from lwsconf import crds, disaggapi, disaggserved, profiles, reference
from lwsconf.features import Feature
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core
from tests.conftest import SimAPI

T = Timeouts(create=30, poll_interval=0.05)


def test_the_list_is_the_profile() -> None:
    assert frozenset(disaggserved.ALL) == profiles.LWS_DISAGGREGATED.features


def test_a_cluster_without_the_api_withdraws_every_feature(sim_api: SimAPI) -> None:
    missing = disaggserved.unsupported(sim_api.api)
    assert set(missing) == set(disaggserved.ALL)
    assert all("serves no DisaggregatedSet" in why for why in missing.values()), missing


def test_our_crds_carry_every_feature(sim_api: SimAPI) -> None:
    reference.install_disaggregated_crds(sim_api.api, T)
    assert disaggserved.unsupported(sim_api.api) == {}


def _v090_shaped(crd: dict[str, Any]) -> dict[str, Any]:
    """Our set CRD without the fields v0.10.0 added (contract section 7)."""
    out = copy.deepcopy(crd)
    spec = out["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for name in ("slices", "placementPolicy"):
        spec["properties"].pop(name)
    spec["properties"]["roles"]["items"]["properties"].pop("scaling")
    spec.pop("x-kubernetes-validations")
    return out


def test_a_v090_schema_withdraws_slices_placement_and_external_scaling(sim_api: SimAPI) -> None:
    path = reference.DISAGGREGATED_CRD_FILES[0]
    client.ApiextensionsV1Api(sim_api.api).create_custom_resource_definition(
        _v090_shaped(yaml.safe_load(path.read_text())))  # type: ignore[arg-type]

    def served() -> None:
        try:
            client.CustomObjectsApi(sim_api.api).list_namespaced_custom_object(
                disaggapi.GROUP, disaggapi.VERSION, "default", disaggapi.PLURAL)
        except client.ApiException as exc:
            raise core.NotYet(f"HTTP {exc.status}") from None
    core.wait_until(served, what="the v0.9.0-shaped CRD to be served", timeout=T.create, poll=T.poll_interval)
    missing = disaggserved.unsupported(sim_api.api)
    assert set(missing) == {Feature.DISAGGREGATED_SLICES, Feature.DISAGGREGATED_PLACEMENT,
                            Feature.DISAGGREGATED_EXTERNAL_SCALING}, missing
    assert "spec.slices" in missing[Feature.DISAGGREGATED_SLICES]


def test_a_discovery_error_withdraws_the_profile_with_the_reason(sim_api: SimAPI,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A kubeconfig that may not read discovery (403) gets the features withdrawn, the HTTP status said, no crash."""
    def forbidden(*args: object) -> None:
        raise client.ApiException(status=403, reason="Forbidden")
    monkeypatch.setattr(crds, "served_resources", forbidden)
    missing = disaggserved.unsupported(sim_api.api)
    assert set(missing) == set(disaggserved.ALL)
    assert all("HTTP 403 Forbidden" in why for why in missing.values()), missing
