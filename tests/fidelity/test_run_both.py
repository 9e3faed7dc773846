"""`run_both` replays the two servers at the same time, and one side's failure stops the other with its servers
stopped (the held-out corpus waits on controllers on both sides: in turn, the replay took the sum of both)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lwsconf.controlplane import versions
from lwsconf.fidelity import cli, servers
from lwsconf.fidelity.model import Answer, Scenario, Step

STEPS = tuple(Step(f"read-{i}", "GET", "/api/v1/namespaces/${ns}/configmaps") for i in range(20))
SCENARIO = Scenario("t", "s", STEPS)


class Server:
    """An endpoint that answers every read 200; it can fail on one read (setting `failed`), or wait at its fourth
    read until `hold` is set."""

    def __init__(self, name: str, meet: threading.Barrier | None = None, fail_at: int | None = None,
                 hold: threading.Event | None = None, failed: threading.Event | None = None) -> None:
        self.name, self.meet, self.fail_at, self.hold, self.failed = name, meet, fail_at, hold, failed
        self.reads = 0
        self.open = False
        self.stopped = False

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        if request["method"] == "GET":
            self.reads += 1
            if self.reads == 3 and self.meet is not None:
                self.meet.wait()  # both sides are mid-replay at once, or this times out
            if self.reads == 4 and self.hold is not None:
                self.hold.wait(10)  # until the other side has failed
            if self.reads == self.fail_at:
                if self.failed is not None:
                    self.failed.set()
                raise OSError(f"{self.name} went away")
        return Answer(200, {"kind": "ConfigMapList", "items": []}) if request["method"] == "GET" else Answer(201)

    @contextlib.contextmanager
    def serving(self) -> Iterator[Server]:
        self.open = True
        try:
            yield self
        finally:
            self.open, self.stopped = False, True


def patch_servers(monkeypatch: pytest.MonkeyPatch, sim: Server, real: Server) -> None:
    monkeypatch.setattr(servers, "sim", lambda controllers, nodes=False: sim.serving())
    monkeypatch.setattr(servers, "real", lambda release, controllers: real.serving())


def test_both_servers_are_replayed_at_the_same_time(monkeypatch: pytest.MonkeyPatch) -> None:
    meet = threading.Barrier(2, timeout=10)
    sim, real = Server("sim", meet), Server("real", meet)
    patch_servers(monkeypatch, sim, real)
    results = cli.run_both(versions.RELEASES[0], [SCENARIO])
    assert len(results) == len(STEPS) and all(r.identical for r in results)
    assert sim.reads == real.reads == len(STEPS)
    assert sim.stopped and real.stopped


def test_a_failing_side_stops_the_other_at_its_next_step_and_its_error_is_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    meet = threading.Barrier(2, timeout=10)
    failed = threading.Event()
    sim, real = Server("sim", meet, fail_at=5, failed=failed), Server("real", meet, hold=failed)
    patch_servers(monkeypatch, sim, real)
    with pytest.raises(OSError, match="sim went away"):
        cli.run_both(versions.RELEASES[0], [SCENARIO])
    assert real.reads == 4  # stopped before its next step
    assert sim.stopped and real.stopped and not sim.open and not real.open
