"""The reference's DisaggregatedSet CRDs: generated from the LWS CRD (committed = generated), and served by an API
server the way the contract's section 5 says (schema, defaults, the CEL rules), checked on the sim."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from lwsconf import disaggapi, disaggcrds
from lwsconf.timeouts import Timeouts
from lwsconf.waits import core
from tests.conftest import SimAPI
from tests.reconciler.disaggregated.test_slices import _role

CRD_DIR = Path(__file__).resolve().parents[3] / "manifests" / "crd"


def test_the_committed_crds_are_what_the_builder_makes() -> None:
    assert disaggcrds.main(["--check"]) == 0, "run python -m lwsconf.disaggcrds and commit the result"
    for path, text in disaggcrds.rendered(CRD_DIR).items():
        assert path.read_text() == text


@pytest.fixture
def served(sim_api: SimAPI) -> Iterator[client.CustomObjectsApi]:
    ext = client.ApiextensionsV1Api(sim_api.api)
    for name in ("disaggregatedsets.yaml", "disaggregatedsetrolescalers.yaml"):
        ext.create_custom_resource_definition(yaml.safe_load((CRD_DIR / name).read_text()))
    api = client.CustomObjectsApi(sim_api.api)

    def served_now() -> None:
        for plural in (disaggapi.PLURAL, disaggapi.SCALER_PLURAL):
            try:
                api.list_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, "default", plural)
            except client.ApiException as exc:
                raise core.NotYet(f"{plural}: HTTP {exc.status}") from None

    core.wait_until(served_now, what="the DisaggregatedSet CRDs to be served", timeout=Timeouts().create, poll=0.05)
    yield api


def _ds(name: str, *roles: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.KIND, "metadata": {"name": name},
            "spec": {"roles": list(roles), **spec}}


def _create(api: client.CustomObjectsApi, body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = api.create_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, "default",
                                                              disaggapi.PLURAL, body)
    return out


def _refused(api: client.CustomObjectsApi, body: dict[str, Any]) -> str:
    with pytest.raises(client.ApiException) as info:
        _create(api, body)
    assert info.value.status == 422, info.value.body
    return str(info.value.body)


def test_a_valid_set_is_stored_with_the_schema_defaults(served: client.CustomObjectsApi) -> None:
    made = _create(served, _ds("ok", _role("prefill", 1), _role("decode", 2), placementPolicy={}))
    assert made["spec"]["slices"] == 1 and made["spec"]["placementPolicy"] == {"type": "None"}
    lwt = made["spec"]["roles"][0]["spec"]["leaderWorkerTemplate"]
    assert lwt["restartPolicy"] == "RecreateGroupOnPodRestart", "the LWS schema's defaults inside a role (1.3)"


@pytest.mark.parametrize(("spec", "needle"), [
    ({"roles": [_role("a", 1)]}, "should have at least 2 items"),                                        # D-V3
    ({"roles": [_role(f"r{i}", 1) for i in range(11)]}, "must have at most 10 items"),                   # D-V4
    ({"roles": [_role("a", 1), _role("a", 1)]}, "Duplicate value"),                                      # D-V5
    ({"roles": [_role("Prefill", 1), _role("b", 1)]}, "should match"),                                   # D-V6
    ({"roles": [_role("a", 0), _role("b", 1)]}, "replicas must be zero for all non-External roles"),     # D-V10
    ({"roles": [_role("a", 1), _role("b", 1)], "slices": 0}, "greater than or equal to 1"),              # D-V12
    ({"roles": [_role("a", 1), _role("b", 1)], "placementPolicy": {"type": "Nearby"}}, "Unsupported value"),
    ({"roles": [_role("a", 1), _role("b", 1)], "placementPolicy": {"type": "ExclusiveSlice"}},
     "topology is required when type is not None"),                                                      # D-V23
    ({"roles": [{**_role("a", 1), "scaling": {"mode": "External"}}, _role("b", 1)], "slices": 2},
     "spec.slices > 1 is not supported"),                                                                # D-V20
])
def test_bad_sets_are_refused(served: client.CustomObjectsApi, spec: dict[str, Any], needle: str) -> None:
    assert needle in _refused(served, _ds("bad", **spec))


def test_partition_is_refused_and_zero_is_not(served: client.CustomObjectsApi) -> None:
    """D-V14 (upstream E2); partition 0 is admitted."""
    role = _role("a", 1)
    role["spec"]["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"partition": 1}}
    assert "partition is not supported by DisaggregatedSet" in _refused(served, _ds("part", role, _role("b", 1)))
    ok = copy.deepcopy(role)
    ok["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["partition"] = 0
    _create(served, _ds("part0", ok, _role("b", 1)))


def test_external_roles_are_exempt_from_the_all_or_nothing_rule(served: client.CustomObjectsApi) -> None:
    """D-V10 (v0.10.0+): the rule counts non-External roles only."""
    _create(served, _ds("ext", {**_role("a", 0), "scaling": {"mode": "External"}}, _role("b", 2)))


def test_the_scaler_has_a_scale_subresource_before_any_write(served: client.CustomObjectsApi) -> None:
    """Upstream H1: GET /scale works on a scaler nobody scaled (spec.replicas defaults to 0)."""
    served.create_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, "default", disaggapi.SCALER_PLURAL,
                                           {"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.SCALER_KIND,
                                            "metadata": {"name": "ds-decode"}, "spec": {}})
    scale = served.get_namespaced_custom_object_scale(disaggapi.GROUP, disaggapi.VERSION, "default",
                                                      disaggapi.SCALER_PLURAL, "ds-decode")
    assert scale["spec"].get("replicas", 0) == 0 and scale["kind"] == "Scale"
