"""OpenAPI v3 documents of built-in group-versions: what kubectl's apply and explain read from a server.

The sim serves Kubernetes' published documents of the release it answers as (`lwsconf sim openapi fetch`,
`lwsconf/sim/apiserver/schema/openapi_cache.py`), with paths limited to the resources it serves. apps/v1 and batch/v1
are served whole, so their paths (operations, parameters, media types, GVK tags: what kubectl's client-side
validation and patch-type choice read) and info must be what kube-apiserver gives. The `/openapi/v3` index is
left out: its hashes and its list of group-versions differ by design (the sim serves fewer), as does api/v1
(the sim lacks limitranges, podtemplates, replicationcontrollers, resourcequotas, componentstatuses, ...).
"""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import get
from lwsconf.fidelity.model import Scenario

_ENUMS = ("body.components",)
"""A live kube-apiserver adds to enum-typed fields an `enum` list and 'Possible enum values' to their description,
from the Go types' +enum markers; the published spec files the sim serves have neither (measured on 1.37.2: apps/v1
39 enum lists and 36 descriptions, batch/v1 35 and 34, no other difference in components). kubectl explain then
prints no ENUM line on the sim. The components are left out of the comparison for that reason alone."""

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("openapi", "openapi-documents", (
        get("apps-v1", "/openapi/v3/apis/apps/v1", vary=_ENUMS),
        get("batch-v1", "/openapi/v3/apis/batch/v1", vary=_ENUMS),
    )),
)
