"""Which DisaggregatedSet features a cluster can run at all, read from the API it serves (issue 34).

Why: LWS-DISAGGREGATED is a default conformance profile, but an implementation may serve no DisaggregatedSet API
(a plain LWS install) or upstream's v0.9.0 form of it, whose schema has no `spec.slices`, `spec.placementPolicy`
or `roles[].scaling` and no DisaggregatedSetRoleScaler kind (docs/disaggregatedset-contract.md section 7). A
test of a field the served schema prunes would fail for a reason the implementation never claimed, so those
features are withdrawn with the reason and the suite reports their tests NOT_SUPPORTED (as Gateway API's suite
does for what an implementation does not support). Reads the CRDs when it may; when it may not, it withdraws
only what discovery shows missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes import client

from lwsconf import crds, disaggapi
from lwsconf.features import Feature

ALL = (Feature.DISAGGREGATED_OBJECT_MODEL, Feature.DISAGGREGATED_VALIDATION, Feature.DISAGGREGATED_SCALING,
       Feature.DISAGGREGATED_SERVICES, Feature.DISAGGREGATED_ROLLOUT, Feature.DISAGGREGATED_SLICES,
       Feature.DISAGGREGATED_PLACEMENT, Feature.DISAGGREGATED_EXTERNAL_SCALING, Feature.DISAGGREGATED_STATUS)
"""Every feature of the LWS-DISAGGREGATED profile (tests/test_disaggserved.py keeps it complete)."""
_SPEC_FIELDS = {Feature.DISAGGREGATED_SLICES: "slices", Feature.DISAGGREGATED_PLACEMENT: "placementPolicy"}


def _served_kinds(api: client.ApiClient) -> set[str] | None:
    """The kinds served at disaggregatedset.x-k8s.io/v1, or None when the group version is not served."""
    found = crds.served_resources(api, disaggapi.GROUP, disaggapi.VERSION)
    return None if found is None else {str(r.kind) for r in found if "/" not in str(r.name)}


def _spec_schema(api: client.ApiClient) -> Mapping[str, Any] | None:
    """The served DisaggregatedSet CRD's `spec` schema, or None when it cannot be read (no permission)."""
    try:
        crd: Any = client.CustomObjectsApi(api).get_cluster_custom_object(
            "apiextensions.k8s.io", "v1", "customresourcedefinitions", disaggapi.CRD_NAME)
    except client.ApiException:
        return None
    for version in crd.get("spec", {}).get("versions") or []:
        if version.get("name") == disaggapi.VERSION:
            spec: Mapping[str, Any] | None = (
                version.get("schema", {}).get("openAPIV3Schema", {}).get("properties", {}).get("spec"))
            return spec
    return None


def unsupported(api: client.ApiClient) -> dict[Feature, str]:
    """The LWS-DISAGGREGATED features this cluster's served API cannot carry, each with the reason."""
    try:
        kinds = _served_kinds(api)
    except client.ApiException as exc:  # e.g. 403: a kubeconfig that may not read discovery; say so, never crash
        return dict.fromkeys(ALL, f"cannot read which kinds the cluster serves at {disaggapi.API_VERSION}: HTTP "
                                  f"{exc.status} {exc.reason}")
    if kinds is None or disaggapi.KIND not in kinds:
        why = (f"the cluster serves no {disaggapi.KIND} kind at {disaggapi.API_VERSION} (the implementation installs "
               "no DisaggregatedSet CRD)")
        return dict.fromkeys(ALL, why)
    out: dict[Feature, str] = {}
    spec = _spec_schema(api)
    if spec is not None:
        fields = spec.get("properties") or {}
        for feature, name in _SPEC_FIELDS.items():
            if name not in fields:
                out[feature] = (f"the served {disaggapi.KIND} schema has no spec.{name} (upstream v0.9.0's form; "
                                "the field arrived in v0.10.0)")
        role = ((fields.get("roles") or {}).get("items") or {}).get("properties") or {}
        if "scaling" not in role:
            out[Feature.DISAGGREGATED_EXTERNAL_SCALING] = (
                f"the served {disaggapi.KIND} schema has no spec.roles[].scaling (upstream v0.9.0's form)")
    if Feature.DISAGGREGATED_EXTERNAL_SCALING not in out and disaggapi.SCALER_KIND not in kinds:
        out[Feature.DISAGGREGATED_EXTERNAL_SCALING] = (
            f"the cluster serves no {disaggapi.SCALER_KIND} kind at {disaggapi.API_VERSION}")
    return out
