"""Quantities and a pod's effective request, counted as kube-scheduler counts them.

Expected values follow resource.Quantity (exact parsing, MilliValue/Value rounding up) and
k8s.io/component-helpers resource.PodRequests (init containers, sidecars, overhead, limits as
default requests).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from lwsconf.sim.controllers.scheduler import resource_requests as rr

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"


def pod(name: str, *, requests: dict[str, str] | None = None, **spec: Any) -> Obj:
    ctr: Obj = {"name": "c", "resources": {"requests": requests or {}}}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [ctr], **spec}}


@pytest.mark.parametrize(("text", "value"), [
    ("100m", Fraction(1, 10)), ("1", Fraction(1)), ("1.5", Fraction(3, 2)), (".5", Fraction(1, 2)),
    ("1Ki", Fraction(1024)), ("2Gi", Fraction(2 * 2**30)), ("1e3", Fraction(1000)), ("1E3", Fraction(1000)),
    ("1E", Fraction(10**18)), ("5M", Fraction(5 * 10**6)), ("+2k", Fraction(2000)), ("-1", Fraction(-1)),
    (8, Fraction(8)), (0.25, Fraction(1, 4)),
])
def test_quantities_parse_exactly(text: object, value: Fraction) -> None:
    assert rr.parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1x", "1.2.3", "Gi", "1 Gi", True, None])
def test_malformed_quantities_are_rejected(text: object) -> None:
    with pytest.raises(ValueError, match="quantity"):
        rr.parse_quantity(text)


def test_cpu_counts_in_millicores_rounded_up_and_other_resources_in_units() -> None:
    assert rr.amount_of("cpu", "0.1") == 100
    assert rr.amount_of("cpu", "1n") == 1
    assert rr.amount_of("memory", "1Mi") == 2**20
    assert rr.amount_of("memory", "1.5") == 2
    assert rr.amount_of(GPU, "bogus") == 0


def test_effective_request_is_max_of_init_containers_and_sum_of_containers_plus_overhead() -> None:
    p = pod("p", requests={"cpu": "1", "memory": "1Gi"}, overhead={"cpu": "100m"}, initContainers=[
        {"name": "big-init", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}},
        {"name": "small-init", "resources": {"requests": {"cpu": "200m"}}},
    ])
    p["spec"]["containers"].append({"name": "c2", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}})
    assert rr.pod_requests(p) == {"cpu": 3100, "memory": 2 * 2**30}


def test_sidecars_run_beside_later_init_containers_and_the_app() -> None:
    p = pod("p", requests={"cpu": "1"}, initContainers=[
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "migrate", "resources": {"requests": {"cpu": "2"}}},
    ])
    assert rr.pod_requests(p) == {"cpu": 2500}  # max(1 + 0.5, 2 + 0.5)


def test_extended_resource_requests_default_to_limits() -> None:
    p = pod("p")
    p["spec"]["containers"][0]["resources"] = {"limits": {GPU: "2"}, "requests": {"cpu": "1"}}
    assert rr.pod_requests(p) == {"cpu": 1000, GPU: 2}


def test_scoring_counts_missing_cpu_and_memory_requests_as_defaults() -> None:
    assert rr.pod_requests(pod("p", requests={"memory": "1Gi"}), nonzero=True) == {
        "cpu": rr.DEFAULT_MILLI_CPU, "memory": 2**30}
