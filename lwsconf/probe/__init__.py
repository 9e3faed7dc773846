"""The probe workload conformance tests run in their containers (see `probe.py`).

`source()` returns the program text, which the workload builders put in a ConfigMap and mount into
a stock python image, so the same program runs on sim, kind and real clusters.
"""

from __future__ import annotations

from pathlib import Path

PROGRAM = Path(__file__).with_name("probe.py")


def source() -> str:
    return PROGRAM.read_text()
