"""Endpoints for replay tests that need no API server: each answers from a script."""

from __future__ import annotations

from typing import Any

from lwsconf.fidelity.model import Answer


class Changing:
    """A server whose answers go through `bodies`, one per read (the last one repeats); `reads` counts them."""

    name = "changing"

    def __init__(self, bodies: list[dict[str, Any]]) -> None:
        self.bodies = bodies
        self.reads = 0

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        body = self.bodies[min(self.reads, len(self.bodies) - 1)]
        self.reads += 1
        return Answer(200, body)
