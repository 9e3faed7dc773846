"""Kubernetes resource quantities and what a pod requests, as kube-scheduler counts them.

Pure arithmetic, kept apart from the filter predicates (`filters.py`) because more than the
filters need it: the scheduler's snapshot sums what each node already holds, scoring counts the
nonzero defaults. Quantities (`500m`, `1Gi`, `2e3`) parse exactly (resource.Quantity); a pod's
effective request covers containers, init containers, sidecars, pod-level requests and overhead
(k8s.io/component-helpers resource.PodRequests). Objects are the plain JSON dicts of the REST API.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

Obj = dict[str, Any]
Resources = dict[str, int]
"""Resource name -> amount: cpu in millicores, everything else in whole units (memory in bytes)."""

# --- quantities ---------------------------------------------------------------------------------

_QUANTITY = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
_SCALE = {"Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
          "Pi": Fraction(2**50), "Ei": Fraction(2**60), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6),
          "m": Fraction(1, 1000), "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
          "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18)}


def parse_quantity(value: object) -> Fraction:
    """The exact value of a Kubernetes quantity (`"500m"`, `"1Gi"`, `"2e3"`, `8`).

    Raises:
        ValueError: the value is not a quantity (the message quotes it).
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    if isinstance(value, (int, float)):
        return Fraction(str(value))
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r} (expected e.g. 500m, 2, 1Gi, 1e3)")
    sign, number, exponent, suffix = match.groups()
    amount = Fraction(number)
    if exponent is not None:
        amount *= Fraction(10) ** int(exponent)
    elif suffix:
        amount *= _SCALE[suffix]
    return -amount if sign == "-" else amount


def amount_of(resource: str, value: object) -> int:
    """A quantity as the scheduler counts it: millicores for cpu, whole units otherwise, rounded up
    (resource.Quantity's MilliValue/Value round up too). Malformed values count as 0."""
    if isinstance(value, str):
        return _amount_of_text(resource, value)
    return _amount(resource, value)


@functools.lru_cache(maxsize=4096)
def _amount_of_text(resource: str, value: str) -> int:
    """Cached: every scheduling attempt counts the same few quantity strings of every placed pod."""
    return _amount(resource, value)


def _amount(resource: str, value: object) -> int:
    try:
        exact = parse_quantity(value)
    except ValueError:
        return 0
    return math.ceil(exact * 1000) if resource == "cpu" else math.ceil(exact)


def resources_of(quantities: Mapping[str, object] | None) -> Resources:
    return {name: amount_of(name, q) for name, q in (quantities or {}).items()}


def add_resources(into: Resources, more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, 0) + amount


def _max(into: Resources, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = max(into.get(name, 0), amount)


# --- what a pod requests ------------------------------------------------------------------------

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
"""Scoring counts a container without a cpu/memory request as this much (schedutil.GetNonzeroRequests)."""


def container_requests(container: Obj, *, nonzero: bool = False) -> Resources:
    """`resources.requests`, falling back to `limits` per resource as API defaulting does; with
    `nonzero`, a missing cpu/memory request counts as 100m/200Mi (for scoring only)."""
    res = container.get("resources") or {}
    quantities = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    out = resources_of(quantities)
    if nonzero:
        out.setdefault("cpu", DEFAULT_MILLI_CPU)
        out.setdefault("memory", DEFAULT_MEMORY)
    return out


def pod_requests(pod: Obj, *, nonzero: bool = False) -> Resources:
    """The pod's effective request, as k8s.io/component-helpers resource.PodRequests computes it:
    max(sum of containers + sidecars, each init container + the sidecars started before it),
    plus `spec.overhead`. Pod-level `spec.resources.requests` win for the resources they name."""
    spec = pod.get("spec") or {}
    total: Resources = {}
    for ctr in spec.get("containers") or ():
        add_resources(total, container_requests(ctr, nonzero=nonzero))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for ctr in spec.get("initContainers") or ():
        reqs = container_requests(ctr, nonzero=nonzero)
        if ctr.get("restartPolicy") == "Always":  # a sidecar keeps running beside the app
            add_resources(total, reqs)
            add_resources(sidecars, reqs)
            reqs = dict(sidecars)
        else:
            add_resources(reqs, sidecars)
        _max(init_peak, reqs)
    _max(total, init_peak)
    pod_level = resources_of((spec.get("resources") or {}).get("requests"))
    total.update({k: v for k, v in pod_level.items() if k in ("cpu", "memory")})
    add_resources(total, resources_of(spec.get("overhead")))
    return total
