"""Kubernetes resource quantities (`500m`, `1Gi`, `2e3`) as exact fractions.

Validation needs them to reject malformed requests and `requests > limits`; defaulting needs them to
compute a pod's QoS class, which compares sums of CPU and memory exactly (`1000m` equals `1`). Floats
would make `0.1 + 0.2` differ from `300m`, so values are `fractions.Fraction`. No I/O here.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

QUANTITY_FMT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
QUANTITY_ERROR = f"quantities must match the regular expression '{QUANTITY_FMT}'"

_NUMBER = re.compile(r"^([+-]?)([0-9]+(\.[0-9]*)?|\.[0-9]+)(.*)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}
_EXPONENT = re.compile("^[eE]([-+]?[0-9]+)$")


def parse(value: Any) -> Fraction | None:
    """The exact value of a quantity given as a string or JSON number; None when malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):  # NaN and infinities are no quantity (JSON cannot carry them; the fuzz test can)
        return Fraction(str(value)) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = _NUMBER.match(value)
    if match is None:
        return None
    sign, number, suffix = match.group(1), match.group(2), match.group(4)
    scale = _suffix_scale(suffix)
    if scale is None:
        return None
    amount = Fraction(number) * scale
    return -amount if sign == "-" else amount


def _suffix_scale(suffix: str) -> Fraction | None:
    if suffix in _BINARY:
        return Fraction(_BINARY[suffix])
    if suffix in _DECIMAL:
        return _DECIMAL[suffix]
    exp = _EXPONENT.match(suffix)
    if exp is not None:
        return Fraction(10) ** int(exp.group(1))
    return None


def is_positive(value: Any) -> bool:
    parsed = parse(value)
    return parsed is not None and parsed > 0


def to_string(value: Any) -> Any:
    """A JSON-number quantity as the string the apiserver would serialize (`0.5` -> `500m`).

    Strings and other values are returned unchanged: the typed v37 client only accepts string
    quantities, and the real server never emits numbers there.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    amount = parse(value)
    if amount is None:  # NaN or an infinity: left for validation to refuse
        return value
    for suffix, scale in (("", 1), ("m", 1000), ("u", 10**6), ("n", 10**9)):
        scaled = amount * scale
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return f"{-((-amount.numerator * 10**9) // amount.denominator)}n"  # rounded up, as Kubernetes does
