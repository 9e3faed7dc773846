"""The emulated multi-node inference server (`emulator.py`) that serving scenarios deploy.

The emulator is a sibling of the probe (`lwsconf/probe/`): one stdlib-only program that workload
builders put in a ConfigMap and mount into a stock python image, so the same file runs on sim, kind
and real clusters. It behaves like a multi-node vLLM deployment as Kubernetes sees it (rendezvous
through LWS_LEADER_ADDRESS/LWS_GROUP_SIZE, health, OpenAI-shaped answers, vLLM metric names, group
failure when a member goes away, graceful drain on SIGTERM) without any model or accelerator.
Nothing here may import the rest of lwsconf or a third-party package: `.importlinter` and
tests/serving/test_emulator.py check it.
"""

from __future__ import annotations

from pathlib import Path

PROGRAM = Path(__file__).with_name("emulator.py")


def source() -> str:
    """The emulator's program text, for a ConfigMap."""
    return PROGRAM.read_text()
