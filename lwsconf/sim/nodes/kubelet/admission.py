"""Kubelet admission: does a pod bound to this node fit what the node has left? No I/O here.

Like the kubelet's predicate admit handler (pkg/kubelet/lifecycle/predicate.go), a pod that does not
fit is rejected at once: it goes to phase Failed with reason `OutOf<resource>` (e.g. `OutOfcpu`,
`OutOfnvidia.com/gpu`) and a message naming requested, used and capacity, or `NodeAffinity` when its
nodeSelector does not match the node's labels. A pod's request per resource is the scheduler's
effective request: max(sum over app containers, max over init containers) plus pod overhead, with
requests falling back to limits.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

Obj = dict[str, Any]

_SUFFIX: dict[str, int | Decimal] = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def parse_quantity(value: Any) -> Decimal:
    """"500m" -> 0.5, "2Gi" -> 2147483648, 3 -> 3.

    Raises:
        QuantityError: not a quantity (the message shows the value).
    """
    parsed = _parse_text(str(value).strip())
    if parsed is None:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (examples: 500m, 2, 4Gi, 1e3)")
    if parsed.is_nan():
        raise QuantityError(f"{value!r} is not a Kubernetes quantity")
    return parsed


@functools.lru_cache(maxsize=1024)
def _parse_text(text: str) -> Decimal | None:
    """None when `text` is no quantity, NaN when Decimal rejects it. Cached: every admission sums
    the same few request strings of all the node's pods."""
    match = _QUANTITY.match(text)
    if match is None:
        return None
    try:
        return Decimal(match.group(1)) * Decimal(_SUFFIX[match.group(2) or ""])
    except InvalidOperation:
        return Decimal("NaN")


def _container_requests(container: Obj) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    out: dict[str, Decimal] = {}
    for name, quantity in merged.items():
        try:
            out[name] = parse_quantity(quantity)
        except QuantityError:
            continue
    return out


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    """The pod's effective request per resource (plus `pods: 1`)."""
    spec = pod.get("spec") or {}
    total: dict[str, Decimal] = {}
    sidecars: dict[str, Decimal] = {}
    for init in spec.get("initContainers") or []:
        if init.get("restartPolicy") == "Always":
            for name, qty in _container_requests(init).items():
                sidecars[name] = sidecars.get(name, Decimal(0)) + qty
    for container in spec.get("containers") or []:
        for name, qty in _container_requests(container).items():
            total[name] = total.get(name, Decimal(0)) + qty
    for name, qty in sidecars.items():
        total[name] = total.get(name, Decimal(0)) + qty
    for init in spec.get("initContainers") or []:
        if init.get("restartPolicy") != "Always":
            for name, qty in _container_requests(init).items():
                total[name] = max(total.get(name, Decimal(0)), qty)
    for name, qty in (spec.get("overhead") or {}).items():
        try:
            total[name] = total.get(name, Decimal(0)) + parse_quantity(qty)
        except QuantityError:
            continue
    total["pods"] = Decimal(1)
    return total


def container_extended(container: Obj) -> dict[str, int]:
    """Extended (device) resources of one container: names with a '/' outside kubernetes.io."""
    out: dict[str, int] = {}
    for name, qty in _container_requests(container).items():
        if "/" in name and not name.startswith(("kubernetes.io/", "requests.", "hugepages-")) and qty > 0:
            out[name] = int(qty)
    return out


def fit(pod: Obj, others: Iterable[Obj], allocatable: Mapping[str, str]) -> tuple[str, str] | None:
    """None if `pod` fits next to `others` (the node's admitted, non-terminal pods), else (reason, message)."""
    used: dict[str, Decimal] = {}
    for other in others:
        for name, qty in pod_requests(other).items():
            used[name] = used.get(name, Decimal(0)) + qty
    for name, requested in sorted(pod_requests(pod).items()):
        if requested <= 0:
            continue
        capacity = _capacity(allocatable, name)
        if capacity is None:
            if "/" in name or name in ("cpu", "memory", "pods"):
                capacity = Decimal(0)
            else:
                continue  # ephemeral-storage and others the layout does not mention are not checked
        in_use = used.get(name, Decimal(0))
        if requested + in_use > capacity:
            return (f"OutOf{name}", f"Node didn't have enough resource: {name}, requested: {_show(requested)}, "
                                    f"used: {_show(in_use)}, capacity: {_show(capacity)}")
    return None


def _capacity(allocatable: Mapping[str, str], name: str) -> Decimal | None:
    if name not in allocatable:
        return None
    try:
        return parse_quantity(allocatable[name])
    except QuantityError:
        return None


def _show(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value.normalize())


def selector_mismatch(pod: Obj, labels: Mapping[str, str]) -> tuple[str, str] | None:
    """(NodeAffinity, message) when spec.nodeSelector names a label the node lacks or has otherwise."""
    for key, value in ((pod.get("spec") or {}).get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return ("NodeAffinity", f"Predicate NodeAffinity failed: node label {key}={labels.get(key)!r}, "
                                    f"pod wants {value!r}")
    return None
